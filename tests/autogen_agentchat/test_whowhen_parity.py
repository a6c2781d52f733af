"""A Who&When hand-crafted run replays into the spans a live Magentic-One run gives.

A real ``MagenticOneGroupChat`` runs against the scripted server; its own record (``TaskResult.messages`` and the
progress ledgers the server handed the orchestrator) is written down the way Who&When's hand-crafted logs write a
Magentic-One run (``human``, ``Orchestrator (thought)`` with the plan and every ``Updated Ledger:``,
``Orchestrator (-> X)``, the participants, ``Orchestrator (termination condition)``). That log is replayed, and the
two span sets are compared on names, kinds, parents and attributes. Known differences, asserted as such: the log's
names (``human``, ``Orchestrator``) for autogen's (``user``, ``MagenticOneOrchestrator``); the ledger updates are
messages in the log (live, they are model calls, no message); an instruction is addressed to its agent (live, to
the group); the replay's own root attributes (origin, labels) and ``mast.replay.role``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.autogen_agentchat.conftest import SKIP_REASON

pytest.importorskip("autogen_agentchat", reason=SKIP_REASON)

from mast_otel import semconv as sc
from mast_otel.replay import spans_for_record
from mast_otel.spans import SpanRecord
from mast_otel.whowhen import parse_run, to_step_record
from tests.autogen_agentchat import scenarios as s
from tests.autogen_agentchat.record import chat_messages, served_ledgers
from tests.span_query import attr, parent_id, span_id

ORCHESTRATOR = "MagenticOneOrchestrator"
NAMES = {"user": "human", ORCHESTRATOR: "Orchestrator"}  # autogen's -> the log's


def _as_hand_crafted_log(result: Any, ledgers: list[dict[str, Any]], participants: list[str]) -> dict[str, Any]:
    messages = chat_messages(result)
    ledger = iter(ledgers)
    history: list[dict[str, str]] = []
    for i, m in enumerate(messages):
        text = m.to_text()
        if m.source == "user":
            history.append({"role": "human", "content": text})
        elif m.source in participants:
            history.append({"role": m.source, "content": text})
        elif "We are working to address" in text:  # the task ledger: the plan
            history.append({"role": "Orchestrator (thought)", "content": "Initial plan:\n\n" + text})
        else:
            update = "Updated Ledger:\n" + json.dumps(next(ledger))
            history.append({"role": "Orchestrator (thought)", "content": update})
            nxt = messages[i + 1].source if i + 1 < len(messages) else None
            role = f"Orchestrator (-> {nxt})" if nxt in participants else "Orchestrator (termination condition)"
            history.append({"role": role, "content": text})
    return {"question": s.TASK, "question_ID": "live", "ground_truth": "", "is_corrected": False, "history": history,
            "mistake_agent": participants[0], "mistake_step": "1", "mistake_reason": "none: a parity check"}


def _span_type(span: SpanRecord | Any) -> Any:
    return span.get(sc.MAST_SPAN_TYPE) if isinstance(span, SpanRecord) else attr(span, sc.MAST_SPAN_TYPE)


async def test_a_replayed_log_of_a_live_magentic_one_run_has_its_span_shapes(
    instrumentor: Any, server: Any, spans: Any
) -> None:
    team = s.magentic_one(server.base_url)
    participants = [p.name for p in team._participants]
    result = await team.run(task=s.TASK)
    live = spans()
    log = _as_hand_crafted_log(result, served_ledgers(server), participants)
    replayed = spans_for_record(to_step_record(parse_run(log, "live.json")))
    by_id = {r.span_id: r for r in replayed}

    def rtype(kind: str) -> list[SpanRecord]:
        return [r for r in replayed if r.get(sc.MAST_SPAN_TYPE) == kind]

    # Root: the same team, task, participants, framework and ending.
    (root,) = rtype(sc.SPAN_TYPE_CONVERSATION)
    for key in (sc.CONVERSATION_TEAM_TYPE, sc.MAST_FRAMEWORK, sc.CONVERSATION_TASK, sc.TERMINATION_REASON,
                sc.TERMINATION_DETAIL, sc.GEN_AI_WORKFLOW_NAME):  # fmt: skip
        assert root.get(key) == attr(live.root, key), key
    assert list(root.get(sc.CONVERSATION_PARTICIPANTS)) == list(attr(live.root, sc.CONVERSATION_PARTICIPANTS))
    assert root.name == live.root.name
    ours_only = {k for k in root.attributes if k.startswith(("mast.replay.", "mast.reference."))}
    assert set(root.attributes) - ours_only == set(live.root.attributes or {})

    # Messages: one for one once the log's ledger updates are set aside, same sender, kind, class and parent.
    ledger_updates = [m for m in rtype(sc.SPAN_TYPE_MESSAGE)
                      if str(m.get(sc.MESSAGE_CONTENT, "")).startswith("Updated Ledger:")]  # fmt: skip
    messages = sorted((m for m in rtype(sc.SPAN_TYPE_MESSAGE) if m not in ledger_updates),
                      key=lambda m: int(m.get(sc.MESSAGE_INDEX)))  # fmt: skip
    live_messages = live.messages
    assert len(messages) == len(live_messages) == len(chat_messages(result))
    turns = {span_id(t): t for t in live.turns}
    for ours, theirs in zip(messages, live_messages, strict=True):
        sender = str(attr(theirs, sc.MESSAGE_SENDER))
        assert ours.get(sc.MESSAGE_SENDER) == NAMES.get(sender, sender)
        assert (ours.get(sc.MESSAGE_KIND), ours.get(sc.MESSAGE_TYPE)) == (attr(theirs, sc.MESSAGE_KIND),
                                                                         attr(theirs, sc.MESSAGE_TYPE))  # fmt: skip
        assert set(ours.attributes) - {sc.REPLAY_ROLE} == set(theirs.attributes or {}), ours.name
        live_parent = turns.get(parent_id(theirs))
        our_parent = by_id[ours.parent_span_id or ""]
        assert _span_type(our_parent) == (sc.SPAN_TYPE_AGENT_TURN if live_parent else sc.SPAN_TYPE_CONVERSATION)
        recipients = [NAMES.get(r, r) for r in attr(theirs, sc.MESSAGE_RECIPIENTS)]
        if str(ours.get(sc.REPLAY_ROLE)).startswith("Orchestrator (->"):
            assert set(ours.get(sc.MESSAGE_RECIPIENTS)) < set(recipients)  # to its agent; live, to the group
        else:
            assert list(ours.get(sc.MESSAGE_RECIPIENTS)) == recipients
    assert [m.get(sc.MESSAGE_CONTENT) for m in messages[2:]] == [attr(m, sc.MESSAGE_CONTENT) for m in live_messages[2:]]

    # Turns and handoffs: the same agents, in order, the same ledger reason on each handoff.
    assert [t.get(sc.GEN_AI_AGENT_NAME) for t in sorted(rtype(sc.SPAN_TYPE_AGENT_TURN), key=lambda t: t.start_ns)] \
        == [attr(t, sc.GEN_AI_AGENT_NAME) for t in live.turns]  # fmt: skip
    handoffs = sorted(rtype(sc.SPAN_TYPE_HANDOFF), key=lambda h: h.start_ns)
    keys = (sc.HANDOFF_TO, sc.HANDOFF_REASON, sc.HANDOFF_STATED_REASON, sc.HANDOFF_CANDIDATES)
    assert [tuple(h.get(k) for k in keys) for h in handoffs] == [tuple(attr(h, k) for k in keys) for h in live.handoffs]
    assert {h.get(sc.HANDOFF_FROM) for h in handoffs} == {"Orchestrator"}
    assert {attr(h, sc.HANDOFF_FROM) for h in live.handoffs} == {ORCHESTRATOR}
    for ours, theirs in zip(handoffs, live.handoffs, strict=True):
        assert set(ours.attributes) - {sc.HANDOFF_DETAIL} == set(theirs.attributes or {})
