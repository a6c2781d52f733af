"""Workflow channels against AG2's own record: the triage example's handoff chain and Finish, a run that hits
``max_turns``, and two channels running at once on one hub."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.ag2_1x.conftest import SKIP_REASON

pytest.importorskip("ag2.network", reason=SKIP_REASON)

import mast_otel
from mast_otel import semconv as sc
from tests.ag2_1x import scenarios
from tests.ag2_1x.oracle import (
    assert_messages_match,
    assert_turn_handoffs,
    handoffs_of,
    of_conversation,
    recorded_run,
    root_of,
    wal_record,
)
from tests.span_query import attr, parent_id, span_id


async def test_triage_handoff_chain_and_finish(instrumentor: Any, span_exporter: Any) -> None:
    from examples.ag2_1x_triage import TASK, run

    hub, metadata = await run()
    record = await wal_record(hub, metadata.channel_id)
    await hub.close()
    spans = span_exporter.get_finished_spans()

    assert_messages_match(spans, record)
    assert_turn_handoffs(spans, record)
    routing = [m.routing for m in record.messages if m.routing.get("kind") == "handoff"]
    assert [(h[1], h[3]) for h in handoffs_of(spans, record.channel_id) if h[2] == sc.HANDOFF_TOOL_CALL] == [
        (r["target"], f"{r['tool']}: {r['reason']}") for r in routing
    ]
    assert [r["target"] for r in routing] == ["refunds", "reviewer"]
    graph_moves = [h for h in handoffs_of(spans, record.channel_id) if h[2] == sc.HANDOFF_ROUTING]
    assert [h[3] for h in graph_moves] == [
        "FromSpeaker(agent_id='customer') -> AgentTarget(agent_id='triage')",
        "FromSpeaker(agent_id='reviewer') -> AgentTarget(agent_id='refunds')",
    ]

    root = root_of(spans, record.channel_id)
    finish = record.messages[-1].routing
    assert finish["kind"] == "finish" and record.close_reason == finish["reason"] == "resolved"
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_FINISH
    assert attr(root, sc.TERMINATION_DETAIL) == f"{finish['reason']}: {finish['summary']}"
    assert attr(root, sc.TERMINATION_AGENT) == record.messages[-1].sender
    assert attr(root, sc.CONVERSATION_TASK) == TASK == record.messages[0].text
    assert attr(root, sc.CONVERSATION_ROUNDS) == len(record.messages)
    assert attr(root, sc.CONVERSATION_MAX_ROUNDS) == 10
    assert attr(root, "mast.conversation.type") == "workflow"
    assert list(attr(root, "mast.conversation.participants")) == ["customer", "triage", "refunds", "reviewer"]

    # One turn per ask: every message but the customer's seed is the reply of one turn of its sender.
    turns = of_conversation(spans, record.channel_id, sc.SPAN_TYPE_AGENT_TURN)
    assert [attr(t, sc.GEN_AI_AGENT_NAME) for t in turns] == record.senders[1:]
    assert all(parent_id(t) == span_id(root) for t in turns)
    # Tools, routing tools included, inside the turn that ran them, with arguments and results.
    tools = of_conversation(spans, record.channel_id, sc.SPAN_TYPE_TOOL_CALL)
    assert [attr(t, sc.GEN_AI_TOOL_NAME) for t in tools] == ["route_to_refunds", "route_to_reviewer", "finish"]
    by_id = {span_id(t): t for t in turns}
    assert [attr(by_id[parent_id(t)], sc.GEN_AI_AGENT_NAME) for t in tools] == ["triage", "refunds", "refunds"]
    assert json.loads(attr(tools[0], sc.GEN_AI_TOOL_CALL_ARGUMENTS)) == {"reason": routing[0]["reason"]}
    assert json.loads(attr(tools[0], sc.GEN_AI_TOOL_CALL_RESULT)) == {
        "target": "refunds",
        "reason": routing[0]["reason"],
    }
    assert json.loads(attr(tools[2], sc.GEN_AI_TOOL_CALL_RESULT)) == {
        "summary": finish["summary"],
        "reason": finish["reason"],
    }
    assert mast_otel.recording_failures() == {}


async def test_max_turns(instrumentor: Any, span_exporter: Any) -> None:
    record, spans = await recorded_run(span_exporter, scenarios.ping_pong, ("user", "writer", "editor"), max_turns=4)
    channel_id = record.channel_id

    assert record.close_reason == "max_turns" and len(record.messages) == 4
    assert_messages_match(spans, record)
    assert_turn_handoffs(spans, record)
    assert len(handoffs_of(spans, channel_id)) == len(record.messages) - 1, "nobody takes over the last turn"
    root = root_of(spans, channel_id)
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_MAX_TURNS
    assert attr(root, sc.CONVERSATION_MAX_ROUNDS) == 4


async def test_two_channels_at_once_on_one_hub(instrumentor: Any, span_exporter: Any) -> None:
    hub = await scenarios.open_hub()
    ids = await asyncio.gather(
        scenarios.ping_pong(hub, ("u1", "a1", "b1"), max_turns=4),
        scenarios.ping_pong(hub, ("u2", "a2", "b2"), max_turns=5),
    )
    records = [await wal_record(hub, i) for i in ids]
    await hub.close()
    spans = span_exporter.get_finished_spans()

    roots = [root_of(spans, i) for i in ids]
    assert roots[0].context.trace_id != roots[1].context.trace_id
    for record, root, names in zip(records, roots, (("u1", "a1", "b1"), ("u2", "a2", "b2")), strict=True):
        assert_messages_match(spans, record)
        assert_turn_handoffs(spans, record)
        assert set(attr(root, sc.CONVERSATION_AGENTS)) == set(names)
        mine = [s for s in spans if attr(s, sc.GEN_AI_CONVERSATION_ID) == record.channel_id]
        assert {s.context.trace_id for s in mine} == {root.context.trace_id}
        turns = of_conversation(spans, record.channel_id, sc.SPAN_TYPE_AGENT_TURN)
        assert [attr(t, sc.GEN_AI_AGENT_NAME) for t in turns] == record.senders[1:]
    assert [attr(r, sc.CONVERSATION_ROUNDS) for r in roots] == [4, 5]


async def test_graph_terminate_target(instrumentor: Any, span_exporter: Any) -> None:
    record, spans = await recorded_run(span_exporter, scenarios.sign_off)
    channel_id = record.channel_id

    assert record.close_reason == "approved"
    assert_messages_match(spans, record)
    assert_turn_handoffs(spans, record)
    *_, last = handoffs_of(spans, channel_id)
    assert last == (
        "reviewer",
        sc.HANDOFF_TO_TERMINATE,
        sc.HANDOFF_ROUTING,
        "FromSpeaker(agent_id='reviewer') -> TerminateTarget(reason='approved')",
    )
    root = root_of(spans, channel_id)
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_HANDOFF
    assert attr(root, sc.TERMINATION_DETAIL) == record.close_reason
