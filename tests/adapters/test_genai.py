"""The GenAI-conventions adapter on real captures (tests/data/genai, recorded by ``python -m tests.genai.record``
from the frameworks' own runs, each with the framework's own record of the run) and on synthetic traces in the
shapes ../shared/notes/genai-conventions.md lists (Google ADK's, until a capture is recorded).

The oracle is the framework's record: its message list (a tool-call-only answer as the tool's name), its
handoffs and its tool calls. Runs without content are adapted for their structure and never sent to the judge;
the verdict names the framework's switch."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, NotAConversation, adapt, foreign_units
from mast_otel.judge.foreign import EXTRA_FRAMEWORK, EXTRA_SOURCE, judge_spans, structural_signals
from mast_otel.judge.model import ModeLabel, Verdict
from mast_otel.spans import SpanRecord, from_otlp_json
from tests.adapters._fixtures import handoffs, messages
from tests.genai.runs import FRAMEWORKS

GENAI = Path(__file__).resolve().parents[1] / "data" / "genai"
# framework -> the variable or option a no-content verdict must name (the one its own run set)
SWITCHES = {f.framework: f.switch for f in FRAMEWORKS.values()}


def capture(name: str) -> tuple[list[SpanRecord], dict[str, Any], dict[str, Any]]:
    """(spans, the framework's record, the settings it ran with) of a recorded run."""
    data = json.loads((GENAI / f"{name}.json").read_text(encoding="utf-8"))
    return from_otlp_json(json.dumps(data["otlp"])), data["record"], data["settings"]


def _captures(with_content: bool) -> list[str]:
    found = []
    for path in sorted(GENAI.glob("*.json")):
        settings = json.loads(path.read_text(encoding="utf-8"))["settings"]
        if bool(settings["content_captured"]) == with_content:
            found.append(path.stem)
    return found


WITH_CONTENT = _captures(True)
WITHOUT_CONTENT = _captures(False)


def conversation_of(spans: list[SpanRecord]) -> Adapted:
    """The one conversation the collector would hold in these spans (a framework's other traces, such as Agent
    Framework's one-span ``workflow.build``, are not conversations)."""
    found = [a for unit in foreign_units(spans) if isinstance(a := adapt(unit), Adapted)]
    assert len(found) == 1, found
    return found[0]


def tools(records: Sequence[SpanRecord]) -> list[tuple[str, str]]:
    return [(str(r.get(sc.GEN_AI_AGENT_NAME)), str(r.get(sc.GEN_AI_TOOL_NAME)))
            for r in records if r.span_type == sc.SPAN_TYPE_TOOL_CALL]  # fmt: skip


def test_the_captures_are_there() -> None:
    assert len(WITH_CONTENT) >= 3 and len(WITHOUT_CONTENT) >= 2, (WITH_CONTENT, WITHOUT_CONTENT)


@pytest.mark.parametrize("name", WITH_CONTENT)
def test_a_real_run_reads_as_the_frameworks_record(name: str) -> None:
    spans, record, _ = capture(name)
    adapted = conversation_of(spans)
    assert (adapted.source, adapted.framework) == ("genai", record["framework"])
    assert adapted.no_content is None
    assert messages(adapted.records) == [tuple(m) for m in record["messages"]]  # order, senders and text
    assert handoffs(adapted.records) == [tuple(h) for h in record["handoffs"]]
    assert tools(adapted.records) == [tuple(t) for t in record["tools"]]
    assert set(record["agents"]) <= set(adapted.records[0].get(sc.CONVERSATION_AGENTS))
    # The labels go on the framework's own root: the span the collector holds as the unit.
    (unit,) = [u for u in foreign_units(spans) if u[0].span_id == adapted.root_span_id]
    assert unit[0].parent_span_id is None
    assert set(adapted.origin.values()) <= {s.span_id for s in spans}


@pytest.mark.parametrize("name", WITHOUT_CONTENT)
def test_a_run_without_content_keeps_its_structure_and_names_the_switch(name: str) -> None:
    spans, record, _ = capture(name)
    adapted = conversation_of(spans)
    assert adapted.framework == record["framework"]
    assert adapted.no_content is not None and SWITCHES[record["framework"]] in adapted.no_content
    assert handoffs(adapted.records) == [tuple(h) for h in record["handoffs"]]
    # One message per model answer, in the record's order, its text unknown (the task is not there either).
    assert [s for s, _ in messages(adapted.records)] == [s for s, _ in record["messages"] if s != "user"]
    assert all(text == "" for _, text in messages(adapted.records) if text not in _called(record))


def _called(record: dict[str, Any]) -> set[str]:
    """What a tool-calling answer reads as without content where the framework still records the tool's name."""
    return {text for _, text in record["messages"]}


class _Citing:
    """Cites every message one agent sent as 1.3; counts its calls."""

    name = "citing"

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.calls = 0

    def judge(self, spans: Sequence[SpanRecord], *, partial: bool = False) -> Verdict:
        self.calls += 1
        cited = tuple(s.span_id for s in spans if s.get(sc.MESSAGE_SENDER) == self.agent)
        return Verdict(status=sc.JUDGE_OK, source=sc.SOURCE_LLM, modes=(ModeLabel("1.3", cited, "repeats"),))


def _judged(name: str) -> tuple[list[SpanRecord], list[SpanRecord], dict[str, Any], _Citing, Verdict]:
    """(spans, the conversation's unit, the framework's record, the judge, its verdict) of a recorded run."""
    spans, record, _ = capture(name)
    (unit,) = [u for u in foreign_units(spans) if isinstance(adapt(u), Adapted)]
    judge = _Citing("billing")
    return spans, unit, record, judge, judge_spans(judge, unit)


@pytest.mark.parametrize("name", WITH_CONTENT)
def test_evidence_lands_on_the_frameworks_llm_spans(name: str) -> None:
    spans, _, record, judge, verdict = _judged(name)
    assert judge.calls == 1
    assert (verdict.extra[EXTRA_SOURCE], verdict.extra[EXTRA_FRAMEWORK]) == ("genai", record["framework"])
    by_id = {s.span_id: s for s in spans}
    cited = [by_id[i] for i in verdict.modes[0].evidence_span_ids]  # KeyError: a span the user does not have
    assert len(cited) == sum(sender == "billing" for sender, _ in record["messages"])
    # The model calls (ADK's legacy schema: its call_llm span, which holds the client's generate_content span).
    assert all(s.get(sc.GEN_AI_OPERATION_NAME) in (sc.OP_CHAT, sc.OP_GENERATE_CONTENT) or s.name == "call_llm"
               for s in cited)  # fmt: skip


@pytest.mark.parametrize("name", WITHOUT_CONTENT)
def test_without_content_the_judge_is_not_called_and_the_signals_still_run(name: str) -> None:
    _, unit, record, judge, verdict = _judged(name)
    assert judge.calls == 0
    assert verdict.status == sc.JUDGE_SKIPPED and verdict.extra[EXTRA_SOURCE] == "genai"
    assert SWITCHES[record["framework"]] in verdict.status_reason
    ids = {s.span_id for s in unit}
    for signal in structural_signals(unit):  # computed on the adapted structure, pointing at the user's spans
        assert set(signal.evidence_span_ids) <= ids


# --- Google ADK's shapes (the notes), and the conventions' corner cases ---------------------------------------
TRACE = "0af7651916cd43dd8448eb211c80319c"


class _Trace:
    """Builds one trace's spans in start order."""

    def __init__(self) -> None:
        self.spans: list[SpanRecord] = []

    def add(self, name: str, parent: SpanRecord | None, events: tuple[Any, ...] = (), **attrs: Any) -> SpanRecord:
        n = len(self.spans) + 1
        span = SpanRecord(TRACE, f"{n:016x}", parent.span_id if parent else None, name, 10 * n, 10 * n + 5_000,
                          {k.replace("__", "."): v for k, v in attrs.items()}, events=events)  # fmt: skip
        self.spans.append(span)
        return span


def _parts(role: str, text: str = "", call: str = "") -> str:
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    if call:
        parts.append({"type": "tool_call", "id": "c1", "name": call, "arguments": {}})
    return json.dumps([{"role": role, "parts": parts}])


def adk_run(*, content: bool) -> list[SpanRecord]:
    """ADK 2.x's default schema: invoke_workflow root, sibling invoke_agent spans, generate_content LLM spans
    and tool spans carrying gen_ai.agent.name, transfer_to_agent naming the next agent (args with content on)."""
    t = _Trace()
    root = t.add("invoke_workflow desk", None, gen_ai__operation__name="invoke_workflow",
                 gen_ai__agent__name="triage", gen_ai__conversation__id="session-1")  # fmt: skip

    def llm(parent: SpanRecord, agent: str, task: str, answer: str = "", call: str = "") -> None:
        attrs: dict[str, Any] = {"gen_ai.operation.name": "generate_content", "gen_ai.agent.name": agent,
                                 "gen_ai.system": "gcp.vertex.agent", "gcp.vertex.agent.llm_request": "{}"}  # fmt: skip
        if content:
            attrs[sc.GEN_AI_INPUT_MESSAGES] = _parts("user", task)
            attrs[sc.GEN_AI_OUTPUT_MESSAGES] = _parts("model", answer, call)
        t.spans.append(SpanRecord(TRACE, f"{len(t.spans) + 1:016x}", parent.span_id, "generate_content m",
                                  10 * len(t.spans) + 10, 10 * len(t.spans) + 15, attrs))  # fmt: skip

    task = "I was charged twice for A17."
    triage = t.add("invoke_agent triage", root, gen_ai__operation__name="invoke_agent", gen_ai__agent__name="triage",
                   gen_ai__conversation__id="session-1")  # fmt: skip
    llm(triage, "triage", task, call="transfer_to_agent")
    args = {sc.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps({"agent_name": "billing", "transfer_reason": "a refund"})}
    t.add("execute_tool transfer_to_agent", triage, gen_ai__operation__name="execute_tool",
          gen_ai__tool__name="transfer_to_agent", gen_ai__agent__name="triage",
          **(args if content else {}))  # fmt: skip
    billing = t.add("invoke_agent billing", root, gen_ai__operation__name="invoke_agent",
                    gen_ai__agent__name="billing")  # fmt: skip
    llm(billing, "billing", task, call="lookup_order")
    t.add("execute_tool lookup_order", billing, gen_ai__operation__name="execute_tool",
          gen_ai__tool__name="lookup_order", gen_ai__agent__name="billing")  # fmt: skip
    llm(billing, "billing", task, answer="Refund 49.00 EUR.")
    return t.spans


def test_adk_default_schema() -> None:
    spans = adk_run(content=True)
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted) and adapted.framework == "google-adk" and adapted.no_content is None
    assert adapted.root_span_id == spans[0].span_id  # the invoke_workflow root: ADK's own span carries the labels
    assert messages(adapted.records) == [("user", "I was charged twice for A17."), ("triage", "transfer_to_agent"),
                                         ("billing", "lookup_order"), ("billing", "Refund 49.00 EUR.")]  # fmt: skip
    (handoff,) = [r for r in adapted.records if r.span_type == sc.SPAN_TYPE_HANDOFF]
    assert (handoff.get(sc.HANDOFF_FROM), handoff.get(sc.HANDOFF_TO)) == ("triage", "billing")
    assert handoff.get(sc.HANDOFF_REASON) == "a refund"  # the transfer's own reason, where ADK recorded it
    assert adapted.original(handoff.span_id) == spans[3].span_id  # on the transfer_to_agent span
    assert tools(adapted.records) == [("billing", "lookup_order")]


def test_adk_default_schema_without_content() -> None:
    spans = adk_run(content=False)
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted)
    assert adapted.no_content is not None
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY" in adapted.no_content
    assert handoffs(adapted.records) == [("triage", "billing")]  # the next agent: the structure is there
    assert [r.get(sc.HANDOFF_REASON) for r in adapted.records if r.span_type == sc.SPAN_TYPE_HANDOFF] == [None]


def test_agent_names_are_inherited_from_the_nearest_agent_span() -> None:
    """Strands and Agent Framework name the agent on invoke_agent only: its model and tool spans speak for it."""
    t = _Trace()
    root = t.add("invoke_graph", None, gen_ai__operation__name="invoke_graph")
    for agent in ("writer", "editor"):
        a = t.add(f"invoke_agent {agent}", root, gen_ai__operation__name="invoke_agent", gen_ai__agent__name=agent)
        cycle = t.add("execute_event_loop_cycle", a, gen_ai__operation__name="execute_event_loop_cycle")
        t.add("chat", cycle, gen_ai__operation__name="chat", gen_ai__output__messages=_parts("assistant", agent * 2))
        t.add("execute_tool search", cycle, gen_ai__operation__name="execute_tool", gen_ai__tool__name="search")
    adapted = adapt(t.spans)
    assert isinstance(adapted, Adapted) and adapted.framework == "strands"
    assert messages(adapted.records) == [("writer", "writerwriter"), ("editor", "editoreditor")]
    assert handoffs(adapted.records) == [("writer", "editor")]  # a Graph records only the order of its agents
    assert tools(adapted.records) == [("writer", "search"), ("editor", "search")]


def test_content_from_the_older_per_message_events_and_the_details_event() -> None:
    from mast_otel.spans import SpanEvent

    t = _Trace()
    root = t.add("invoke_swarm", None, (SpanEvent("gen_ai.user.message", {"content": '[{"text": "Plan it."}]'}),),
                 gen_ai__operation__name="invoke_swarm")  # fmt: skip
    one = t.add("invoke_agent a", root, gen_ai__operation__name="invoke_agent", gen_ai__agent__name="a")
    choice = SpanEvent("gen_ai.choice", {"message": '[{"text": "First."}, {"toolUse": {"name": "f", "input": {}}}]'})
    t.add("chat", one, (choice,), gen_ai__operation__name="chat")
    two = t.add("invoke_agent b", root, gen_ai__operation__name="invoke_agent", gen_ai__agent__name="b")
    details = SpanEvent("gen_ai.client.inference.operation.details",
                        {sc.GEN_AI_OUTPUT_MESSAGES: _parts("assistant", "Second.")})  # fmt: skip
    t.add("chat", two, (details,), gen_ai__operation__name="chat")
    adapted = adapt(t.spans)
    assert isinstance(adapted, Adapted)
    assert messages(adapted.records) == [("user", "Plan it."), ("a", "First."), ("b", "Second.")]
    assert [r.get(sc.MESSAGE_TOOL_CALLS) for r in adapted.messages] == [None, "f", None]


def test_a_delegation_is_a_handoff_by_nesting_and_not_a_tool_call() -> None:
    """Pydantic AI: an agent run inside another agent's tool."""
    t = _Trace()
    boss = t.add("invoke_agent boss", None, gen_ai__operation__name="invoke_agent", gen_ai__agent__name="boss")
    t.add("chat", boss, gen_ai__operation__name="chat", gen_ai__agent__name="boss",
          gen_ai__output__messages=_parts("assistant", call="ask_helper"))  # fmt: skip
    tool = t.add("execute_tool ask_helper", boss, gen_ai__operation__name="execute_tool",
                 gen_ai__tool__name="ask_helper", gen_ai__agent__name="boss")  # fmt: skip
    helper = t.add("invoke_agent helper", tool, gen_ai__operation__name="invoke_agent", gen_ai__agent__name="helper")
    t.add("chat", helper, gen_ai__operation__name="chat", gen_ai__agent__name="helper",
          gen_ai__output__messages=_parts("assistant", "Done."))  # fmt: skip
    adapted = adapt(t.spans)
    assert isinstance(adapted, Adapted)
    assert handoffs(adapted.records) == [("boss", "helper")]
    assert tools(adapted.records) == []
    (reply,) = [r for r in adapted.messages if r.get(sc.MESSAGE_SENDER) == "helper"]
    assert tuple(reply.get(sc.MESSAGE_RECIPIENTS)) == ("boss",)  # back to the agent that invoked it


def test_the_way_back_from_a_delegation_is_a_handoff() -> None:
    """The delegating agent answers again once the agent it ran inside its tool has answered: the turn came back
    (a change of speaker between model answers, no agent started in between)."""
    t = _Trace()
    boss = t.add("invoke_agent boss", None, gen_ai__operation__name="invoke_agent", gen_ai__agent__name="boss")
    t.add("chat", boss, gen_ai__operation__name="chat", gen_ai__agent__name="boss",
          gen_ai__output__messages=_parts("assistant", call="ask_helper"))  # fmt: skip
    tool = t.add("execute_tool ask_helper", boss, gen_ai__operation__name="execute_tool",
                 gen_ai__tool__name="ask_helper", gen_ai__agent__name="boss")  # fmt: skip
    helper = t.add("invoke_agent helper", tool, gen_ai__operation__name="invoke_agent", gen_ai__agent__name="helper")
    t.add("chat", helper, gen_ai__operation__name="chat", gen_ai__agent__name="helper",
          gen_ai__output__messages=_parts("assistant", "Done."))  # fmt: skip
    last = t.add("chat", boss, gen_ai__operation__name="chat", gen_ai__agent__name="boss",
                 gen_ai__output__messages=_parts("assistant", "All done."))  # fmt: skip
    adapted = adapt(t.spans)
    assert isinstance(adapted, Adapted)
    assert handoffs(adapted.records) == [("boss", "helper"), ("helper", "boss")]
    back = max(adapted.handoffs, key=lambda r: r.get(sc.HANDOFF_INDEX))
    assert adapted.original(back.span_id) == last.span_id  # on the answer that took the turn back


def test_fewer_than_two_agents_is_not_a_conversation() -> None:
    t = _Trace()
    one = t.add("invoke_agent solo", None, gen_ai__operation__name="invoke_agent", gen_ai__agent__name="solo")
    t.add("chat", one, gen_ai__operation__name="chat", gen_ai__output__messages=_parts("assistant", "Hi."))
    refused = adapt(t.spans)
    assert isinstance(refused, NotAConversation) and refused.source == "genai" and "1 agent" in refused.reason


def test_a_frameworks_invoke_workflow_is_never_a_mast_otel_root() -> None:
    from mast_otel.spans import conversation_roots

    spans = adk_run(content=True)
    assert not spans[0].is_conversation_root and conversation_roots(spans) == []
    assert [u[0].span_id for u in foreign_units(spans)] == [spans[0].span_id]  # held, as a foreign root
