"""The rules the OpenLLMetry captures of frameworks that are no graph (tests/data/captures/agno_openllmetry: Agno
traced by opentelemetry-instrumentation-agno, its model calls by opentelemetry-instrumentation-openai) added to the
OpenLLMetry adapter, each named by the kind of evidence it reads, each case changing one thing in a real capture:

- a model call with no entity path speaks for the nearest span above it that names an agent (``gen_ai.agent.name``,
  else a ``<namespace>.team.name`` attribute: a team whose leader answers as the team);
- a ``traceloop.span.kind=tool`` span is a tool call (named by ``gen_ai.tool.name`` else ``traceloop.entity.name``,
  its arguments and result from ``traceloop.entity.input`` / ``.output``);
- a transfer, handoff or delegation tool among them is a handoff to the agent its arguments name, with its reason;
- the root's ``traceloop.entity.input`` in plain text is the task.

And two the GenAI adapter applies, from tests/data/captures/crewai_openllmetry (CrewAI traced by
opentelemetry-instrumentation-crewai + -openai: ``invoke_agent`` spans, so the GenAI adapter reads it):

- a span recording the task it was assigned (``<namespace>.task.description``) gives the task, before the
  model's first user message (the prompt the framework built around it);
- in a run where no span is a tool's, each tool call a model answer asks for (transfers aside) is a tool call, its
  result the ``tool_call_response`` a later model call was sent for its id.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, adapt, foreign_units
from mast_otel.spans import SpanRecord, from_otlp_json
from tests.adapters._fixtures import handoffs

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"


def _team() -> tuple[list[SpanRecord], dict[str, Any]]:
    data = json.loads((CAPTURES / "agno_openllmetry" / "team.json").read_text(encoding="utf-8"))
    return from_otlp_json(json.dumps(data["otlp"])), data["expect"]


def _adapted(spans: list[SpanRecord]) -> list[Adapted]:
    return [a for unit in foreign_units(spans) if isinstance(a := adapt(unit), Adapted)]


def _changed(spans: list[SpanRecord], match: Any, **attributes: Any) -> list[SpanRecord]:
    """The spans, each that ``match`` picks with ``attributes`` set (a value None removes the key)."""
    out = []
    for s in spans:
        if match(s):
            attrs = {k: v for k, v in {**s.attributes, **attributes}.items() if v is not None}
            s = dataclasses.replace(s, attributes=attrs)
        out.append(s)
    return out


def _agents(adapted: Adapted) -> list[str]:
    return sorted(a for a in adapted.records[0].get(sc.CONVERSATION_AGENTS) or () if a != "user")


def _calls(adapted: Adapted) -> list[SpanRecord]:
    return [r for r in adapted.records if r.span_type == sc.SPAN_TYPE_TOOL_CALL]


def test_a_model_call_speaks_for_the_agent_span_above_it_or_the_team_its_workflow_names() -> None:
    spans, expect = _team()
    (adapted,) = _adapted(spans)
    assert adapted.source == "openllmetry" and adapted.framework == "agno"
    assert _agents(adapted) == sorted(expect["agents"])
    # the workflow span no longer names its team: the leader's answers are no agent's, its members still speak
    (unnamed,) = _adapted(_changed(spans, lambda s: s.get("traceloop.span.kind") == "workflow",
                                   **{"agno.team.name": None}))  # fmt: skip
    assert _agents(unnamed) == ["Researcher", "Writer"]
    # no agent span names its agent: the team alone speaks, no conversation
    assert _adapted(_changed(spans, lambda s: s.get("traceloop.span.kind") == "agent",
                             **{sc.GEN_AI_AGENT_NAME: None})) == []  # fmt: skip


def test_a_tool_kind_span_is_a_tool_call_with_its_entity_input_and_output() -> None:
    spans, expect = _team()
    (adapted,) = _adapted(spans)
    (call,) = _calls(adapted)
    assert (call.get(sc.GEN_AI_AGENT_NAME), call.get(sc.GEN_AI_TOOL_NAME)) == tuple(expect["tool_calls"][0])
    assert json.loads(str(call.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS))) == {"order_id": "A17"}
    assert "49.00 EUR" in str(call.get(sc.GEN_AI_TOOL_CALL_RESULT))
    # named by its entity when it has no gen_ai.tool.name
    renamed = _changed(spans, lambda s: s.get(sc.GEN_AI_TOOL_NAME) == "lookup_order", **{sc.GEN_AI_TOOL_NAME: None})
    assert [c.get(sc.GEN_AI_TOOL_NAME) for c in _calls(_adapted(renamed)[0])] == ["lookup_order"]


def test_a_delegation_tool_span_is_a_handoff_with_its_reason_not_a_tool_call() -> None:
    spans, expect = _team()
    (adapted,) = _adapted(spans)
    assert handoffs(adapted.records) == [tuple(h) for h in expect["handoffs"]]
    reasons = [r.get(sc.HANDOFF_REASON) for r in adapted.records if r.span_type == sc.SPAN_TYPE_HANDOFF]
    assert reasons == ["Find the charges on order A17.", None, "Write the refund note for order A17.", None]
    # a tool of another name (no transfer word) is an ordinary tool call; the turns still pass, with no reason
    plain = _changed(spans, lambda s: s.get(sc.GEN_AI_TOOL_NAME) == "delegate_task_to_member",
                     **{sc.GEN_AI_TOOL_NAME: "notify_member", "traceloop.entity.name": "notify_member"})  # fmt: skip
    (read,) = _adapted(plain)
    assert [c.get(sc.GEN_AI_TOOL_NAME) for c in _calls(read)].count("notify_member") == 2
    assert handoffs(read.records) == [tuple(h) for h in expect["handoffs"]]
    assert not any(r.get(sc.HANDOFF_REASON) for r in read.records if r.span_type == sc.SPAN_TYPE_HANDOFF)


def test_the_roots_plain_text_entity_input_is_the_task() -> None:
    spans, expect = _team()
    (adapted,) = _adapted(spans)
    assert adapted.records[0].get(sc.CONVERSATION_TASK) == expect["task"]
    # with no input on the root, the task is the first user message a model was sent (the leader's prompt)
    (prompted,) = _adapted(_changed(spans, lambda s: s.get("traceloop.span.kind") == "workflow",
                                    **{"traceloop.entity.input": None}))  # fmt: skip
    assert expect["task"] in str(prompted.records[0].get(sc.CONVERSATION_TASK))


def _crew() -> tuple[list[SpanRecord], dict[str, Any]]:
    data = json.loads((CAPTURES / "crewai_openllmetry" / "hierarchical.json").read_text(encoding="utf-8"))
    return from_otlp_json(json.dumps(data["otlp"])), data["expect"]


def test_the_task_a_span_was_assigned_comes_before_the_prompt_built_around_it() -> None:
    spans, expect = _crew()
    (adapted,) = _adapted(spans)
    assert adapted.source == "genai" and adapted.records[0].get(sc.CONVERSATION_TASK) == expect["task"]
    key = "crewai.task.description"
    (prompted,) = _adapted(_changed(spans, lambda s: key in s.attributes, **{key: None}))
    task = str(prompted.records[0].get(sc.CONVERSATION_TASK))
    assert task != expect["task"] and expect["task"] in task  # the model's first user message: the built prompt


def test_with_no_tool_span_the_tool_calls_a_model_asked_for_are_the_tool_calls() -> None:
    spans, expect = _crew()
    assert not any(s.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_EXECUTE_TOOL for s in spans)
    (adapted,) = _adapted(spans)
    (call,) = _calls(adapted)  # the delegations are handoffs, not tool calls
    assert (call.get(sc.GEN_AI_AGENT_NAME), call.get(sc.GEN_AI_TOOL_NAME)) == tuple(expect["tool_calls"][0])
    assert json.loads(str(call.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS))) == {"order_id": "A17"}
    assert call.get(sc.GEN_AI_TOOL_CALL_RESULT) == "Order A17: charged 49.00 EUR twice on 2026-11-02."
    # a run with a tool span of its own reads its tools from those spans only, never twice from the answers
    first = next(s for s in spans if s.name == "openai.chat")
    attributes = {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME: "other"}
    tool = dataclasses.replace(first, span_id="00000000000000f1", name="execute_tool other", attributes=attributes)
    (spanned,) = _adapted([*spans, tool])
    assert [c.get(sc.GEN_AI_TOOL_NAME) for c in _calls(spanned)] == ["other"]


def test_a_graphs_transfer_tool_is_the_handoff_its_goto_span_records_not_a_tool_call() -> None:
    """LangGraph traced by opentelemetry-instrumentation-langchain (langgraph_openllmetry/supervisor): the
    supervisor's ``transfer_to_<agent>`` calls are ``execute_tool`` spans, and the handoff each makes is a ``goto``
    span; the graph's own history has them as the turn passing on, not as tools used. Renamed so that no transfer
    tool is seen (``lookup_<agent>``), the same spans are tool calls."""
    data = json.loads((CAPTURES / "langgraph_openllmetry" / "supervisor.json").read_text(encoding="utf-8"))
    spans, expect = from_otlp_json(json.dumps(data["otlp"])), data["expect"]
    tools = [s for s in spans if s.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_EXECUTE_TOOL]
    assert {str(s.get(sc.GEN_AI_TOOL_NAME)) for s in tools} == {"transfer_to_researcher", "transfer_to_writer",
                                                                 "lookup_order"}  # fmt: skip
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted)
    assert [(c.get(sc.GEN_AI_AGENT_NAME), c.get(sc.GEN_AI_TOOL_NAME)) for c in _calls(adapted)] == [
        tuple(t) for t in expect["tool_calls"]
    ]
    assert handoffs(adapted.records) == [tuple(h) for h in expect["handoffs"]]
    renamed = [
        dataclasses.replace(s, attributes={**s.attributes, sc.GEN_AI_TOOL_NAME: "lookup_" + str(s.get(
            sc.GEN_AI_TOOL_NAME)).removeprefix("transfer_to_")}) if str(s.get(sc.GEN_AI_TOOL_NAME)).startswith(
            "transfer_to_") else s
        for s in spans
    ]  # fmt: skip
    again = adapt(renamed)
    assert isinstance(again, Adapted)
    assert [c.get(sc.GEN_AI_TOOL_NAME) for c in _calls(again)] == ["lookup_researcher", "lookup_order",
                                                                    "lookup_writer"]  # fmt: skip


# --- OpenLLMetry's vocabulary, translated into the GenAI conventions (openllmetry.as_genai) ----------------------


def _graph_run(*, goto: bool = True, chat_path: str = "b.agent", tool: dict[str, Any] | None = None,
               root_input: str | None = None) -> list[SpanRecord]:  # fmt: skip
    """A graph's run in OpenLLMetry's words: a workflow span, node a's model call, a goto span (a Command to node
    b, no transfer tool), node b's model call, and a tool span of node b."""
    out = '[{"role": "assistant", "parts": [{"type": "text", "content": "%s"}]}]'
    root_attrs = {"traceloop.span.kind": "workflow", "traceloop.workflow.name": "G", "traceloop.entity.path": ""}
    if root_input is not None:
        root_attrs["traceloop.entity.input"] = root_input
    spans = [SpanRecord("t", "r", None, "G.workflow", 0, 1000, root_attrs)]
    spans.append(SpanRecord("t", "c1", "r", "chat", 10, 20, {sc.GEN_AI_OPERATION_NAME: "chat",
                                                              "traceloop.entity.path": "a.agent",
                                                              sc.GEN_AI_OUTPUT_MESSAGES: out % "To b."}))  # fmt: skip
    if goto:
        spans.append(SpanRecord("t", "g", "r", "goto b", 30, 31, {sc.GEN_AI_OPERATION_NAME: "goto",
                                                                   "langgraph.command.goto_node": "b"}))  # fmt: skip
    spans.append(SpanRecord("t", "c2", "r", "chat", 40, 50, {sc.GEN_AI_OPERATION_NAME: "chat",
                                                              "traceloop.entity.path": chat_path,
                                                              sc.GEN_AI_OUTPUT_MESSAGES: out % "Done."}))  # fmt: skip
    if tool is not None:
        spans.append(SpanRecord("t", "tool", "r", "tool span", 60, 70, tool))
    return spans


def test_a_goto_span_alone_is_the_handoff_and_its_evidence() -> None:
    (read,) = _adapted(_graph_run())
    assert handoffs(read.records) == [("a", "b")] and read.original(read.handoffs[0].span_id) == "g"
    (unrouted,) = _adapted(_graph_run(goto=False))  # the change of speaker alone: evidence on b's answer
    assert handoffs(unrouted.records) == [("a", "b")] and unrouted.original(unrouted.handoffs[0].span_id) == "c2"
    nowhere = _graph_run()
    nowhere[2] = dataclasses.replace(nowhere[2], attributes={sc.GEN_AI_OPERATION_NAME: "goto"})  # no node named
    (read,) = _adapted(nowhere)
    assert read.original(read.handoffs[0].span_id) == "c2"
    assert (read.source, read.framework, read.records[0].get(sc.MAST_FRAMEWORK)) == (
        "openllmetry", "langgraph", "langgraph")  # (no scope: the graph this adapter reads)  # fmt: skip
    assert read.records[0].get(sc.MAST_SOURCE) == "openllmetry"
    assert read.records[0].get(sc.GEN_AI_WORKFLOW_NAME) == "G"


def test_a_graphs_tool_speaks_for_its_node_unless_it_names_its_agent() -> None:
    base = {"traceloop.span.kind": "tool", "traceloop.entity.path": "b.tools", "traceloop.entity.name": "lookup",
            "traceloop.entity.input": '{"inputs": {"q": 1}}', "traceloop.entity.output": "42"}  # fmt: skip
    (read,) = _adapted(_graph_run(tool=base))
    (call,) = _calls(read)
    assert (call.get(sc.GEN_AI_AGENT_NAME), call.get(sc.GEN_AI_TOOL_NAME)) == ("b", "lookup")
    assert (call.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS), call.get(sc.GEN_AI_TOOL_CALL_RESULT)) == ('{"q": 1}', "42")
    (named,) = _adapted(_graph_run(tool={**base, sc.GEN_AI_AGENT_NAME: "a"}))
    assert _calls(named)[0].get(sc.GEN_AI_AGENT_NAME) == "a"
    # an execute_tool span is named by gen_ai.tool.name, else by its span's name, never by the entity
    (genai,) = _adapted(_graph_run(tool={**base, sc.GEN_AI_OPERATION_NAME: "execute_tool"}))
    assert _calls(genai)[0].get(sc.GEN_AI_TOOL_NAME) == "tool span"


def test_a_graphs_input_is_its_first_message_or_its_plain_text() -> None:
    (read,) = _adapted(_graph_run(root_input='{"inputs": {"messages": [{"role": "user", "content": "Go."}]}}'))
    assert read.records[0].get(sc.CONVERSATION_TASK) == "Go."
    # plain text: read by the rule for every convention (a run's own record of its input, `<namespace>.input`)
    (plain,) = _adapted(_graph_run(root_input="Go."))
    assert plain.records[0].get(sc.CONVERSATION_TASK) == "Go."
    (state,) = _adapted(_graph_run(root_input='{"inputs": {"topic": "x"}}'))  # a graph state: no request
    assert state.records[0].get(sc.CONVERSATION_TASK) is None
    # a node's path with one part is the node; one the model call speaks for another node from
    (deep,) = _adapted(_graph_run(chat_path="b.agent.x.y"))
    assert [m.get(sc.MESSAGE_SENDER) for m in deep.messages] == ["a", "b"]
