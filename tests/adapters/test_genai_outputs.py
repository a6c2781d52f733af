"""What a user reads off a GenAI-conventions conversation beyond its message list: who each message goes to, what
kind it is, the tool calls' arguments and results, each handoff's reason and the span it lands on, the task, the
agents and the conversation's name; then the conventions' corner cases the captures do not reach (workflow agents
that never call a model, transfers whose target never ran, a transfer recorded several ways, edges, retried
exports), on synthetic traces in the frameworks' shapes (../shared/notes/genai-conventions.md).

The captures' oracle is the framework's record (tests/data/genai) and the scripted run behind it: the same
three-agent refund desk everywhere (triage -> billing, which calls lookup_order(A17), -> reviewer)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, NotAConversation, adapt
from mast_otel.spans import SpanRecord
from tests.adapters._fixtures import handoffs, messages, recipients
from tests.adapters.test_genai import (
    WITH_CONTENT,
    WITHOUT_CONTENT,
    _parts,
    _Trace,
    adk_run,
    capture,
    conversation_of,
    tools,
)

RUNTIME = "<runtime>"  # who a tool-calling answer goes to: the framework runs the tool
# The scripted run's tools, as the frameworks name them (a tool-call-only answer reads as its tool's name).
TOOL_NAMES = frozenset({"lookup_order", "transfer_to_agent", "handoff_to_agent", "handoff_to_billing",
                        "handoff_to_reviewer", "ask_billing", "ask_reviewer"})  # fmt: skip
TASK = "I was charged twice for order A17. Please refund the duplicate charge."
PROPOSAL = "Order A17 was charged twice: refund the duplicate 49.00 EUR"

# Who each message goes to, worked out by hand from the record and the conventions: the task to the first agent;
# an answer that calls a tool (ADK's and Agent Framework's billing answer calls the transfer too) to the runtime;
# any other answer back to the agent that invoked its speaker (Pydantic AI runs billing inside triage's tool and
# reviewer inside billing's), or to the user for agents run side by side (ADK, Strands, Agent Framework).
_SIDE_BY_SIDE = [("user", ("triage",)), ("triage", (RUNTIME,)), ("billing", (RUNTIME,)), ("billing", (RUNTIME,)),
                 ("reviewer", ("user",))]  # fmt: skip
_STRANDS = [("user", ("triage",)), ("triage", (RUNTIME,)), ("triage", ("user",)), ("billing", (RUNTIME,)),
            ("billing", (RUNTIME,)), ("billing", ("user",)), ("reviewer", ("user",))]  # fmt: skip
_NESTED = [("user", ("triage",)), ("triage", (RUNTIME,)), ("billing", (RUNTIME,)), ("billing", (RUNTIME,)),
           ("reviewer", ("billing",)), ("billing", ("triage",)), ("triage", ("user",))]  # fmt: skip
RECIPIENTS = {"agent-framework": _SIDE_BY_SIDE, "google-adk": _SIDE_BY_SIDE, "strands": _STRANDS,
              "pydantic-ai": _NESTED}  # fmt: skip
# The conversation's name: the workflow's own name where the root records one, else the root span's name.
NAMES = {"agent_framework": "refund_desk", "google_adk-content": "triage", "google_adk-default": "triage",
         "google_adk-legacy": "invocation", "pydantic_ai": "invoke_agent triage",
         "strands": "invoke_swarm"}  # fmt: skip


def _name_for(capture_name: str) -> str:
    return next(v for k, v in NAMES.items() if capture_name == k or capture_name.startswith(f"{k}-"))


def _origin(adapted: Adapted, spans: list[SpanRecord], record: SpanRecord) -> SpanRecord:
    (span,) = [s for s in spans if s.span_id == adapted.original(record.span_id)]
    return span


@pytest.mark.parametrize("name", WITH_CONTENT)
def test_each_message_goes_to_the_runtime_the_caller_or_the_user(name: str) -> None:
    spans, record, _ = capture(name)
    adapted = conversation_of(spans)
    assert recipients(adapted.records) == RECIPIENTS[record["framework"]]


@pytest.mark.parametrize("name", WITHOUT_CONTENT)
def test_without_content_an_answer_goes_to_the_runtime_only_where_its_tool_call_is_recorded(name: str) -> None:
    spans, record, _ = capture(name)
    adapted = conversation_of(spans)
    expected = [(s, to) for s, to in RECIPIENTS[record["framework"]] if s != "user"]
    if record["framework"] != "pydantic-ai":  # the others leave the tool calls out with the text
        expected = [(s, ("user",)) for s, _ in expected]
    assert recipients(adapted.records) == expected


@pytest.mark.parametrize("name", [*WITH_CONTENT, *WITHOUT_CONTENT])
def test_a_tool_only_answer_is_a_tool_call_message_naming_its_tools(name: str) -> None:
    spans, _, _ = capture(name)
    adapted = conversation_of(spans)
    for m in adapted.messages:
        content, calls = m.get(sc.MESSAGE_CONTENT), m.get(sc.MESSAGE_TOOL_CALLS)
        tool_only = content in TOOL_NAMES
        assert m.get(sc.MESSAGE_KIND) == (sc.KIND_TOOL_CALL if tool_only else sc.KIND_MESSAGE), m.attributes
        if tool_only:
            assert calls == content
        elif calls is not None:  # a text answer that also calls a tool: the text stays the content
            assert calls in TOOL_NAMES and calls not in content


@pytest.mark.parametrize("name", [n for n in WITH_CONTENT if n != "strands-default"])
def test_a_tool_calls_arguments_and_result_are_the_frameworks(name: str) -> None:
    """Strands' default records them on span events (gen_ai.tool.message), which are not read."""
    spans, _, _ = capture(name)
    (call,) = [r for r in conversation_of(spans).records if r.span_type == sc.SPAN_TYPE_TOOL_CALL]
    assert json.loads(call.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS)) == {"order_id": "A17"}
    assert "order A17: paid once, 49.00 EUR" in call.get(sc.GEN_AI_TOOL_CALL_RESULT)
    assert call.get(sc.TOOL_SUCCESS) is True


@pytest.mark.parametrize("name", WITHOUT_CONTENT)
def test_without_content_a_tool_call_carries_no_arguments(name: str) -> None:
    spans, record, _ = capture(name)
    calls = [r for r in conversation_of(spans).records if r.span_type == sc.SPAN_TYPE_TOOL_CALL]
    assert tools(calls) == [tuple(t) for t in record["tools"]]
    assert all("A17" not in c.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS) for c in calls)


@pytest.mark.parametrize("name", [*WITH_CONTENT, *WITHOUT_CONTENT])
def test_a_handoff_lands_on_the_span_that_records_it_with_its_reason(name: str) -> None:
    spans, record, settings = capture(name)
    adapted = conversation_of(spans)
    framework = record["framework"]
    reasons = []
    for h in adapted.handoffs:
        source, target, origin = h.get(sc.HANDOFF_FROM), h.get(sc.HANDOFF_TO), _origin(adapted, spans, h)
        reasons.append(h.get(sc.HANDOFF_REASON))
        if framework in ("google-adk", "strands"):  # the transfer tool the source ran
            assert origin.get(sc.GEN_AI_TOOL_NAME) in ("transfer_to_agent", "handoff_to_agent")
            assert origin.name.startswith("execute_tool")
            arguments = origin.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS, origin.get("gcp.vertex.agent.tool_call_args"))
            if settings["content_captured"] and arguments is not None:  # not Strands' default: on events
                assert json.loads(arguments)["agent_name"] == target
        elif framework == "pydantic-ai":  # the delegated agent's own run, nested in the caller's tool; the way
            # back: the caller's next model answer
            assert origin.get(sc.GEN_AI_OPERATION_NAME) in ("invoke_agent", "chat")
            if origin.get(sc.GEN_AI_OPERATION_NAME) == "invoke_agent":
                assert origin.get(sc.GEN_AI_AGENT_NAME) == target
        elif settings["content_captured"]:  # Agent Framework: the source's answer calling handoff_to_<target>
            assert origin.get(sc.GEN_AI_OPERATION_NAME) == "chat"
            assert f"handoff_to_{target}" in origin.get(sc.GEN_AI_OUTPUT_MESSAGES)
        else:  # Agent Framework without content: the executor's send to the target
            assert (origin.name, origin.get("message.destination_executor_id")) == ("message.send", target)
        assert source != target
    # Strands' latest conventions record handoff_to_agent's arguments: its message is the reason.
    recorded = settings["content_captured"] and name.startswith("strands-latest")
    assert reasons == ([TASK, PROPOSAL] if recorded else [None] * len(record["handoffs"]))


@pytest.mark.parametrize("name", [*WITH_CONTENT, *WITHOUT_CONTENT])
def test_the_root_names_the_task_the_agents_and_the_handoffs(name: str) -> None:
    spans, record, settings = capture(name)
    root = conversation_of(spans).records[0]
    assert root.get(sc.CONVERSATION_TASK) == (record["messages"][0][1] if settings["content_captured"] else None)
    assert root.get(sc.GEN_AI_WORKFLOW_NAME) == _name_for(name)
    in_order = list(dict.fromkeys(record["agents"]))  # Pydantic AI's record lists an agent at each return
    agents = [a for a in root.get(sc.CONVERSATION_AGENTS) if a != "user"]  # (the user first, with the task)
    assert agents[: len(in_order)] == in_order
    assert root.get(sc.CONVERSATION_HANDOFFS) == len(record["handoffs"])


@pytest.mark.parametrize("name", WITH_CONTENT)
def test_each_answer_lands_on_its_speakers_model_call(name: str) -> None:
    spans, _, _ = capture(name)
    adapted = conversation_of(spans)
    by_id = {s.span_id: s for s in spans}
    for m in adapted.messages[1:]:  # after the task
        span = _origin(adapted, spans, m)
        assert span.get(sc.GEN_AI_OPERATION_NAME) in ("chat", "generate_content") or span.name == "call_llm"
        node: SpanRecord | None = span
        while node is not None and node.get(sc.GEN_AI_OPERATION_NAME) != "invoke_agent":
            node = by_id.get(node.parent_span_id or "")
        assert node is not None and node.get(sc.GEN_AI_AGENT_NAME) == m.get(sc.MESSAGE_SENDER)


# --- the conventions' corner cases -----------------------------------------------------------------------------


def _agent(t: _Trace, name: str, parent: SpanRecord | None, **attrs: Any) -> SpanRecord:
    return t.add(f"invoke_agent {name}", parent, gen_ai__operation__name="invoke_agent", gen_ai__agent__name=name,
                 **attrs)  # fmt: skip


def _chat(t: _Trace, parent: SpanRecord, said: str = "", call: str = "", **attrs: Any) -> SpanRecord:
    return t.add("chat", parent, gen_ai__operation__name="chat",
                 gen_ai__output__messages=_parts("assistant", said, call), **attrs)  # fmt: skip


def _tool(t: _Trace, name: str, parent: SpanRecord, **attrs: Any) -> SpanRecord:
    return t.add(f"execute_tool {name}", parent, gen_ai__operation__name="execute_tool", gen_ai__tool__name=name,
                 **attrs)  # fmt: skip


def _ends(t: _Trace, ends: dict[str, int]) -> None:
    """Sets when the spans of the given ids end (nanoseconds); the others end in start order after them all."""
    t.spans[:] = [dataclasses.replace(s, end_ns=ends.get(s.span_id, s.end_ns)) for s in t.spans]


def _adapted(spans: list[SpanRecord]) -> Adapted:
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted), adapted
    return adapted


def _workflow(t: _Trace, **attrs: Any) -> SpanRecord:
    return t.add("invoke_workflow desk", None, gen_ai__operation__name="invoke_workflow", **attrs)


# Each framework known by one sign it leaves alone; the verdict of a run without content names its switch (spans
# with no scope: the switch of the framework's own tracing).
_SWITCH_NAMES = {
    "strands": "gen_ai_unredacted_attributes",
    "google-adk": "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    "agent-framework": "ENABLE_SENSITIVE_DATA",
    "pydantic-ai": "include_content",
}
SIGNS = [
    ("strands", {"gen_ai.system": "strands-agents"}),
    ("strands", {"gen_ai.provider.name": "strands-agents"}),  # the latest conventions
    ("google-adk", {"gen_ai.system": "gcp.vertex.agent"}),
    ("google-adk", {"gcp.vertex.agent.invocation_id": "e-1"}),
    ("agent-framework", {"gen_ai.provider.name": "microsoft.agent_framework"}),
    ("agent-framework", {"gen_ai.system": "microsoft.agent_framework"}),
    ("pydantic-ai", {"pydantic_ai.all_messages": "[]"}),
    ("pydantic-ai", {"logfire.msg": "triage run"}),
]


@pytest.mark.parametrize(("framework", "sign"), SIGNS)
def test_an_agent_used_as_a_tool_names_its_framework_and_its_switch(framework: str, sign: dict[str, Any]) -> None:
    """Agents as tools (no workflow span): the framework is told by what it writes on its agent spans."""
    t = _Trace()
    boss = t.add("invoke_agent boss", None, **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "boss",
                                              **sign})  # fmt: skip
    t.add("chat", boss, gen_ai__operation__name="chat")
    tool = _tool(t, "helper", boss)
    helper = _agent(t, "helper", tool)
    t.add("chat", helper, gen_ai__operation__name="chat")
    adapted = _adapted(t.spans)
    assert adapted.framework == framework
    assert adapted.no_content is not None and _SWITCH_NAMES[framework] in adapted.no_content
    assert handoffs(adapted.records) == [("boss", "helper")]
    assert tools(adapted.records) == []  # the tool ran an agent: a delegation


@pytest.mark.parametrize("root_operation", ["invoke_swarm", "invoke_graph"])
def test_a_strands_multi_agent_root_alone_tells_strands(root_operation: str) -> None:
    t = _Trace()
    root = t.add(root_operation, None, gen_ai__operation__name=root_operation)
    for name in ("a", "b"):
        t.add("chat", _agent(t, name, root), gen_ai__operation__name="chat")
    assert _adapted(t.spans).framework == "strands"


def test_the_provider_names_the_framework_before_the_model_vendor() -> None:
    """gen_ai.provider.name is the newer key; where both are written the provider decides."""
    t = _Trace()
    root = _workflow(t, gen_ai__provider__name="strands-agents", gen_ai__system="openai")
    for name in ("a", "b"):
        _chat(t, _agent(t, name, root), "hi")
    assert _adapted(t.spans).framework == "strands"


def test_an_unknown_framework_gets_the_generic_switch() -> None:
    t = _Trace()
    root = _workflow(t)
    for name in ("a", "b"):
        t.add("chat", _agent(t, name, root), gen_ai__operation__name="chat")
    adapted = _adapted(t.spans)
    assert adapted.framework == "unknown"
    assert str(adapted.no_content).startswith("unknown recorded no message content")
    assert "turn on the instrumentation's message-content capture" in str(adapted.no_content)


def test_an_orchestrator_that_never_speaks_is_structure_not_a_speaker() -> None:
    """ADK's SequentialAgent: an invoke_agent span with no model call or tool run of its own and no output of its
    own, only other agents' runs inside it: not an agent of the conversation; the task goes to the first agent
    that speaks, each sub-agent answers the pipeline that ran it, and the turn passes between the sub-agents."""
    t = _Trace()
    root = _workflow(t, gen_ai__agent__name="pipeline")
    pipeline = _agent(t, "pipeline", root)
    writer = _agent(t, "writer", pipeline)
    _chat(t, writer, "Draft.", gen_ai__input__messages=_parts("user", "Write the notice."))
    editor = _agent(t, "editor", pipeline)
    _chat(t, editor, "Edited.")
    adapted = _adapted(t.spans)
    assert adapted.records[0].get(sc.CONVERSATION_AGENTS) == ("user", "writer", "editor")
    assert recipients(adapted.records) == [("user", ("writer",)), ("writer", ("pipeline",)), ("editor", ("pipeline",))]
    assert handoffs(adapted.records) == [("writer", "editor")]


def test_an_agent_run_that_answers_by_its_own_output_speaks_when_it_ends() -> None:
    """An instrumentation that writes agent and tool spans only (Agno's, LlamaIndex's official GenAI ones): each
    tool run stands for the answer that asked for it, the agent's own output is its last answer, said when its run
    ends; a delegate runs inside the delegating tool, and the delegating agent answering again is the way back. A
    wrapper whose output another agent wrote (its messages' name) is structure."""
    t = _Trace()
    lead = _agent(t, "lead", None, gen_ai__output__messages=_parts("assistant", "Refunded."))
    delegate = _tool(t, "delegate_task_to_member", lead, gen_ai__tool__call__arguments='{"member_id": "helper"}')
    wrapper = _agent(t, "call_agent", delegate, gen_ai__output__messages=json.dumps(
        [{"role": "assistant", "name": "helper", "parts": [{"type": "text", "content": "Found it."}]}]))
    helper = _agent(t, "helper", wrapper, gen_ai__output__messages=_parts("assistant", "Found it."))
    _tool(t, "lookup_order", helper)
    # each run ends after what runs inside it: the helper, its wrapper, the delegation, then the lead
    _ends(t, {helper.span_id: 100, wrapper.span_id: 101, delegate.span_id: 102, lead.span_id: 1_000})
    adapted = _adapted(t.spans)
    assert adapted.records[0].get(sc.CONVERSATION_AGENTS) == ("lead", "helper")  # no task recorded: no user
    assert messages(adapted.records) == [("lead", "delegate_task_to_member"), ("helper", "lookup_order"),
                                         ("helper", "Found it."), ("lead", "Refunded.")]  # fmt: skip
    assert handoffs(adapted.records) == [("lead", "helper"), ("helper", "lead")]
    assert tools(adapted.records) == [("helper", "lookup_order")]


def test_an_agent_run_whose_turn_ended_in_a_transfer_says_nothing_after_it() -> None:
    """LlamaIndex's AgentWorkflow under its official instrumentation: an agent's output after its handoff is the
    handoff tool's result, not an answer; with content off too, a turn that ended in a transfer has no answer."""
    for output in (_parts("assistant", "Agent b is now handling the request."), None):
        t = _Trace()
        root = _workflow(t)
        extra = {} if output is None else {"gen_ai__output__messages": output}
        a = _agent(t, "a", root, **extra)
        _tool(t, "handoff", a, gen_ai__tool__call__arguments='{"to_agent": "b"}')
        answer = {} if output is None else {"gen_ai__output__messages": _parts("assistant", "Done.")}
        b = _agent(t, "b", root, **answer)
        _tool(t, "lookup_order", b)
        _ends(t, {a.span_id: 40, b.span_id: 1_000})
        adapted = _adapted(t.spans)
        said = [sender for sender, _ in messages(adapted.records)]
        assert said == ["a", "b", "b"], output  # a's call of handoff; b's lookup_order, then its answer
        assert handoffs(adapted.records) == [("a", "b")]


def test_an_agent_that_was_invoked_but_never_spoke_is_handed_to_and_from() -> None:
    """A Strands Graph whose middle node failed before its model call: the order of the agents is the record."""
    t = _Trace()
    root = t.add("invoke_graph", None, gen_ai__operation__name="invoke_graph")
    _chat(t, _agent(t, "triage", root), "To billing.")
    _agent(t, "billing", root)  # no model call under it
    _chat(t, _agent(t, "reviewer", root), "Approved.")
    adapted = _adapted(t.spans)
    assert adapted.records[0].get(sc.CONVERSATION_AGENTS)[:3] == ("triage", "billing", "reviewer")
    assert handoffs(adapted.records) == [("triage", "billing"), ("billing", "reviewer")]
    assert messages(adapted.records) == [("triage", "To billing."), ("reviewer", "Approved.")]


def test_agents_invoked_that_never_answered_are_no_conversation() -> None:
    t = _Trace()
    root = t.add("invoke_swarm", None, gen_ai__operation__name="invoke_swarm",
                 gen_ai__input__messages=_parts("user", "Plan it."))  # fmt: skip
    for name in ("planner", "doer"):
        _agent(t, name, root)
    # agents invoked, none answered: no multi-agent conversation (the task alone says nothing of the agents)
    assert adapt(t.spans) == NotAConversation("genai", "0 agent(s) replied; not a multi-agent conversation")


def test_a_run_whose_agents_only_called_tools_still_has_content() -> None:
    t = _Trace()
    root = _workflow(t)
    a = _agent(t, "a", root)
    _chat(t, a, call="search", gen_ai__input__messages=_parts("user", "Find it."))
    _chat(t, _agent(t, "b", root), call="fetch")
    adapted = _adapted(t.spans)
    assert adapted.no_content is None
    assert messages(adapted.records) == [("user", "Find it."), ("a", "search"), ("b", "fetch")]


def test_answers_without_a_recorded_task_are_content() -> None:
    t = _Trace()
    root = _workflow(t)
    for name in ("a", "b"):
        _chat(t, _agent(t, name, root), f"{name} says hi")
    adapted = _adapted(t.spans)
    assert adapted.no_content is None and adapted.records[0].get(sc.CONVERSATION_TASK) is None


def test_an_answer_calling_two_tools_names_both_in_order() -> None:
    t = _Trace()
    root = _workflow(t)
    two = json.dumps([{"role": "assistant", "parts": [
        {"type": "tool_call", "id": "c1", "name": "lookup_order", "arguments": {}},
        {"type": "tool_call", "id": "c2", "name": "refund", "arguments": {}}]}])  # fmt: skip
    t.add("chat", _agent(t, "billing", root), gen_ai__operation__name="chat", gen_ai__output__messages=two)
    _chat(t, _agent(t, "reviewer", root), "Approved.")
    (first, _) = _adapted(t.spans).messages
    assert first.get(sc.MESSAGE_TOOL_CALLS).split(", ") == ["lookup_order", "refund"]
    assert first.get(sc.MESSAGE_CONTENT).split(", ") == ["lookup_order", "refund"]
    assert tuple(first.get(sc.MESSAGE_RECIPIENTS)) == (RUNTIME,)


def test_an_agent_used_as_a_tool_named_after_it_is_a_delegation_on_its_own_span() -> None:
    """ADK's AgentTool and Strands' agents-as-tools name the tool after the agent it runs."""
    t = _Trace()
    root = _agent(t, "triage", None)
    _chat(t, root, call="billing")
    tool = _tool(t, "billing", root)
    billing = _agent(t, "billing", tool)
    _chat(t, billing, "Refunded.")
    adapted = _adapted(t.spans)
    (handoff,) = adapted.handoffs
    assert (handoff.get(sc.HANDOFF_FROM), handoff.get(sc.HANDOFF_TO)) == ("triage", "billing")
    assert adapted.original(handoff.span_id) == billing.span_id
    assert tools(adapted.records) == []


def test_a_tool_is_named_by_its_attribute_else_by_its_span() -> None:
    """Older Pydantic AI names its tool spans ``running tool``; some frameworks leave gen_ai.tool.name off."""
    t = _Trace()
    root = _workflow(t)
    a = _agent(t, "a", root)
    _chat(t, a, call="lookup_order")
    t.add("running tool", a, gen_ai__operation__name="execute_tool", gen_ai__tool__name="lookup_order")
    b = _agent(t, "b", root)
    _chat(t, b, call="refund")
    t.add("execute_tool refund", b, gen_ai__operation__name="execute_tool")
    assert tools(_adapted(t.spans).records) == [("a", "lookup_order"), ("b", "refund")]


def test_a_handoff_tool_named_for_its_target_is_a_handoff_not_a_tool_call() -> None:
    """A ``handoff_to_<agent>`` tool span (Agent Framework's handoff tools, where a span records them)."""
    t = _Trace()
    root = _workflow(t)
    triage = _agent(t, "triage", root)
    _chat(t, triage, "Passing you on.")
    tool = _tool(t, "handoff_to_billing", triage)
    _tool(t, "handoff_to_nobody", triage)  # not an agent of this run: an ordinary tool
    _chat(t, _agent(t, "billing", root), "Refunded.")
    adapted = _adapted(t.spans)
    (handoff,) = adapted.handoffs
    assert (handoff.get(sc.HANDOFF_FROM), handoff.get(sc.HANDOFF_TO)) == ("triage", "billing")
    assert adapted.original(handoff.span_id) == tool.span_id
    assert tools(adapted.records) == [("triage", "handoff_to_nobody")]


@pytest.mark.parametrize("arguments_key", ["gen_ai.tool.call.arguments", "gcp.vertex.agent.tool_call_args"])
def test_a_transfer_whose_target_never_ran_is_still_a_handoff_with_its_reason(arguments_key: str) -> None:
    """ADK (its current and its legacy key for the arguments): the run ended before the target started."""
    t = _Trace()
    root = _workflow(t)
    triage = _agent(t, "triage", root)
    _chat(t, triage, "Hello.")
    _chat(t, _agent(t, "billing", root), call="transfer_to_agent")
    args = json.dumps({"agent_name": "reviewer", "transfer_reason": "needs approval"})
    transfer = _tool(t, "transfer_to_agent", t.spans[-2], **{arguments_key: args})
    adapted = _adapted(t.spans)
    assert [(h.get(sc.HANDOFF_FROM), h.get(sc.HANDOFF_TO), h.get(sc.HANDOFF_REASON)) for h in adapted.handoffs] == [
        ("triage", "billing", None), ("billing", "reviewer", "needs approval")]  # fmt: skip
    assert adapted.original(adapted.handoffs[1].span_id) == transfer.span_id


def test_a_transfer_names_its_target_even_when_another_agent_runs_next() -> None:
    """The transfer is a handoff from its source to the agent it named, when that agent starts; an agent the
    framework runs in between is a change of agent."""
    t = _Trace()
    root = _workflow(t)
    triage = _agent(t, "triage", root)
    _chat(t, triage, call="transfer_to_agent")
    _tool(t, "transfer_to_agent", triage, gen_ai__tool__call__arguments=json.dumps({"agent_name": "billing"}))
    _chat(t, _agent(t, "reviewer", root), "Approved.")
    _chat(t, _agent(t, "billing", root), "Refunded.")
    assert handoffs(_adapted(t.spans).records) == [("triage", "reviewer"), ("triage", "billing")]


@pytest.mark.parametrize("arguments", ["not json", json.dumps(["billing"]), json.dumps("billing")])
def test_a_transfer_with_unreadable_arguments_is_resolved_by_the_next_agent(arguments: str) -> None:
    t = _Trace()
    root = _workflow(t)
    triage = _agent(t, "triage", root)
    _chat(t, triage, call="transfer_to_agent")
    _tool(t, "transfer_to_agent", triage, gen_ai__tool__call__arguments=arguments)
    _chat(t, _agent(t, "billing", root), "Refunded.")
    adapted = _adapted(t.spans)
    assert [(h.get(sc.HANDOFF_FROM), h.get(sc.HANDOFF_TO), h.get(sc.HANDOFF_REASON)) for h in adapted.handoffs] == [
        ("triage", "billing", None)]  # fmt: skip


@pytest.mark.parametrize(("first_reason", "second_reason"), [(None, "a refund"), ("a refund", None)])
def test_a_transfer_made_twice_is_one_handoff_with_the_reason_either_call_gave(
    first_reason: str | None, second_reason: str | None
) -> None:
    """The model retried its transfer_to_agent call: one handoff, on the first call, reason from either."""
    t = _Trace()
    root = _workflow(t)
    triage = _agent(t, "triage", root)
    calls = []
    for reason in (first_reason, second_reason):
        _chat(t, triage, call="transfer_to_agent")
        args = {"agent_name": "billing", **({"transfer_reason": reason} if reason else {})}
        calls.append(_tool(t, "transfer_to_agent", triage, gen_ai__tool__call__arguments=json.dumps(args)))
    _chat(t, _agent(t, "billing", root), "Refunded.")
    adapted = _adapted(t.spans)
    (handoff,) = adapted.handoffs
    assert (handoff.get(sc.HANDOFF_FROM), handoff.get(sc.HANDOFF_TO), handoff.get(sc.HANDOFF_REASON)) == (
        "triage", "billing", "a refund")  # fmt: skip
    assert adapted.original(handoff.span_id) == calls[0].span_id


def test_a_transfer_first_recorded_without_its_target_takes_it_from_the_next_record() -> None:
    """A first call whose arguments were cut, then the retry naming the target, then the run ends."""
    t = _Trace()
    root = _workflow(t)
    _chat(t, _agent(t, "reviewer", root), "Ready.")
    triage = _agent(t, "triage", root)
    _chat(t, triage, call="transfer_to_agent")
    first = _tool(t, "transfer_to_agent", triage, gen_ai__tool__call__arguments='{"agent_na')
    _tool(t, "transfer_to_agent", triage, gen_ai__tool__call__arguments=json.dumps({"agent_name": "billing"}))
    adapted = _adapted(t.spans)
    assert handoffs(adapted.records) == [("reviewer", "triage"), ("triage", "billing")]
    assert adapted.original(adapted.handoffs[1].span_id) == first.span_id


def test_transfers_to_different_targets_are_different_handoffs() -> None:
    """A second transfer naming another agent replaces the first: the agent that runs is the last one named."""
    t = _Trace()
    root = _workflow(t)
    triage = _agent(t, "triage", root)
    _chat(t, triage, call="transfer_to_agent")
    _tool(t, "transfer_to_agent", triage, gen_ai__tool__call__arguments=json.dumps({"agent_name": "reviewer"}))
    args = json.dumps({"agent_name": "billing", "transfer_reason": "refund"})
    second = _tool(t, "transfer_to_agent", triage, gen_ai__tool__call__arguments=args)
    _chat(t, _agent(t, "billing", root), "Refunded.")
    _chat(t, _agent(t, "reviewer", root), "Approved.")
    adapted = _adapted(t.spans)
    assert [(h.get(sc.HANDOFF_FROM), h.get(sc.HANDOFF_TO), h.get(sc.HANDOFF_REASON)) for h in adapted.handoffs] == [
        ("triage", "billing", "refund"), ("billing", "reviewer", None)]  # fmt: skip
    assert adapted.original(adapted.handoffs[0].span_id) == second.span_id


# --- Agent Framework's workflow spans ---------------------------------------------------------------------------


def _af_run() -> tuple[_Trace, SpanRecord]:
    t = _Trace()
    root = t.add("workflow.run", None, workflow__id="wf-1", workflow__name="desk")
    return t, root


def _af_agent(t: _Trace, root: SpanRecord, name: str, said: str = "", call: str = "") -> SpanRecord:
    executor = t.add(f"executor.process {name}", root, executor__id=name)
    agent = _agent(t, name, executor, gen_ai__provider__name="microsoft.agent_framework")
    _chat(t, agent, said, call)
    return executor


def test_a_handoff_the_model_called_for_lands_on_its_answer_even_when_the_target_never_ran_again() -> None:
    """The run stopped (a turn limit) right after triage handed back to billing, which had spoken before: the
    handoff is kept, on triage's answer (its first record; the send and the edge record it again)."""
    t, root = _af_run()
    _af_agent(t, root, "billing", "Refund proposed.")
    triage = _af_agent(t, root, "triage", "Back to billing.", call="handoff_to_billing")
    answer = t.spans[-1]
    t.add("message.send", triage, message__destination_executor_id="billing")
    t.add("edge_group.process", root, message__source_id="triage", message__target_id="billing")
    adapted = _adapted(t.spans)
    assert handoffs(adapted.records) == [("billing", "triage"), ("triage", "billing")]
    assert adapted.original(adapted.handoffs[1].span_id) == answer.span_id


def test_a_send_back_to_an_agent_that_spoke_before_is_a_handoff_on_the_send() -> None:
    """Without content the model's handoff call is unknown; the executor's send names the target."""
    t, root = _af_run()
    triage = _af_agent(t, root, "triage")
    t.add("message.send", triage, message__type="AgentExecutorRequest")  # a send with no destination: not a hop
    billing = _af_agent(t, root, "billing")
    send = t.add("message.send", billing, message__destination_executor_id="triage")
    t.add("edge_group.process", root, message__source_id="billing", message__target_id="auditor")  # not an agent
    t.add("edge_group.process", root, message__source_id="internal:billing", message__target_id="billing")
    adapted = _adapted(t.spans)
    assert handoffs(adapted.records) == [("triage", "billing"), ("billing", "triage")]
    assert adapted.original(adapted.handoffs[1].span_id) == send.span_id
    assert adapted.framework == "agent-framework" and "ENABLE_SENSITIVE_DATA=true" in str(adapted.no_content)


def test_an_edge_names_its_own_source_and_target() -> None:
    """An edge group delivering triage's message to reviewer after billing spoke (a fan-out): from triage."""
    t, root = _af_run()
    _af_agent(t, root, "triage", "Both of you, please.")
    _af_agent(t, root, "billing", "Refund proposed.")
    edge = t.add("edge_group.process", root, message__source_id="triage", message__target_id="reviewer")
    t.add("edge_group.process", root, message__source_id="billing", message__target_id="billing")  # a self-loop
    _af_agent(t, root, "reviewer", "Approved.")
    adapted = _adapted(t.spans)
    assert handoffs(adapted.records) == [("triage", "billing"), ("triage", "reviewer")]
    assert adapted.original(adapted.handoffs[1].span_id) == edge.span_id


def test_a_hop_recorded_by_edge_and_send_is_one_handoff_on_the_first() -> None:
    t, root = _af_run()
    triage = _af_agent(t, root, "triage", "Over to billing.")
    send = t.add("message.send", triage, message__destination_executor_id="billing")
    t.add("edge_group.process", root, message__source_id="triage", message__target_id="billing")
    _af_agent(t, root, "billing", "Refunded.")
    adapted = _adapted(t.spans)
    assert handoffs(adapted.records) == [("triage", "billing")]
    assert adapted.original(adapted.handoffs[0].span_id) == send.span_id
    assert adapted.records[0].get(sc.GEN_AI_WORKFLOW_NAME) == "desk"


# --- bad data ---------------------------------------------------------------------------------------------------


def test_a_span_delivered_twice_changes_no_handoff() -> None:
    """An exporter's retry delivers one agent span twice: the agents after it are still read."""
    t = _Trace()
    root = t.add("invoke_graph", None, gen_ai__operation__name="invoke_graph")
    for name in ("triage", "billing", "reviewer"):
        agent = _agent(t, name, root)
        _chat(t, agent, f"{name} done.")
        if name == "billing":
            t.spans.append(agent)  # the same span again
    adapted = _adapted(t.spans)
    assert handoffs(adapted.records) == [("triage", "billing"), ("billing", "reviewer")]
    assert {sender for sender, _ in messages(adapted.records)} == {"triage", "billing", "reviewer"}


def test_one_agent_under_a_workflow_is_not_a_conversation() -> None:
    t = _Trace()
    root = _workflow(t, gen_ai__agent__name="solo")
    _chat(t, _agent(t, "solo", root), "Hi.")
    _chat(t, t.spans[-1], "Hi again.", gen_ai__agent__name="other")  # a model span naming an agent never invoked
    refused = adapt(t.spans)
    assert isinstance(refused, NotAConversation) and refused.reason.startswith("1 agent(s)")


@pytest.mark.parametrize("name", ["llm", "chat gpt-4o-mini"])
def test_a_model_call_is_known_by_its_operation_whatever_its_name(name: str) -> None:
    t = _Trace()
    root = _workflow(t)
    for agent in ("a", "b"):
        t.add(name, _agent(t, agent, root), gen_ai__operation__name="chat",
              gen_ai__output__messages=_parts("assistant", f"{agent} here"))  # fmt: skip
    assert messages(_adapted(t.spans).records) == [("a", "a here"), ("b", "b here")]


@pytest.mark.parametrize("name", ["chat gpt-4o-mini", "generate_content gemini-2.0-flash", "text_completion davinci"])
def test_a_model_call_without_its_operation_is_known_by_its_span_name(name: str) -> None:
    """Older instrumentations left gen_ai.operation.name off; the span name starts with the operation."""
    t = _Trace()
    root = _workflow(t)
    for agent in ("a", "b"):
        t.add(name, _agent(t, agent, root), gen_ai__output__messages=_parts("assistant", f"{agent} here"))
    assert messages(_adapted(t.spans).records) == [("a", "a here"), ("b", "b here")]


def test_a_workflow_root_naming_its_first_agent_is_no_caller() -> None:
    """ADK's invoke_workflow carries its first agent's name; its agents run side by side, so the last agent's
    answer goes to the user, not back to the first agent."""
    spans = adk_run(content=True)
    assert spans[0].get(sc.GEN_AI_AGENT_NAME) == "triage"
    adapted = _adapted(spans)
    assert recipients(adapted.records)[-1] == ("billing", ("user",))


def test_a_tool_whose_span_holds_its_own_calls_is_still_a_tool_call() -> None:
    """A tool that makes an HTTP request (traced by the HTTP client's instrumentation, no GenAI operation): the
    request is neither an agent nor a message."""
    t = _Trace()
    root = _workflow(t)
    billing = _agent(t, "billing", root)
    _chat(t, billing, call="lookup_order")
    tool = _tool(t, "lookup_order", billing)
    t.add("GET /orders/A17", tool, http__request__method="GET")
    _chat(t, billing, "Refund due.")
    _chat(t, _agent(t, "reviewer", root), "Approved.")
    adapted = _adapted(t.spans)
    assert tools(adapted.records) == [("billing", "lookup_order")]
    assert messages(adapted.records) == [
        ("billing", "lookup_order"),
        ("billing", "Refund due."),
        ("reviewer", "Approved."),
    ]


def test_an_operation_recorded_as_a_list_does_not_stop_the_adapter() -> None:
    """Bad data: gen_ai.operation.name written as an array is no operation (it stopped the adapter with a
    TypeError); the span is read by its name like one without."""
    t = _Trace()
    root = _workflow(t)
    for agent in ("a", "b"):
        t.add("chat gpt-4o-mini", _agent(t, agent, root), gen_ai__operation__name=["chat"],
              gen_ai__output__messages=_parts("assistant", f"{agent} here"))  # fmt: skip
    assert messages(_adapted(t.spans).records) == [("a", "a here"), ("b", "b here")]


def test_a_handoff_call_the_model_repeated_is_one_handoff_on_its_first_answer() -> None:
    t, root = _af_run()
    executor = t.add("executor.process triage", root, executor__id="triage")
    triage = _agent(t, "triage", executor)
    first = _chat(t, triage, call="handoff_to_billing")
    _chat(t, triage, call="handoff_to_billing")
    _af_agent(t, root, "billing", "Refunded.")
    adapted = _adapted(t.spans)
    assert handoffs(adapted.records) == [("triage", "billing")]
    assert adapted.original(adapted.handoffs[0].span_id) == first.span_id


@pytest.mark.parametrize("recorded_as", ["the model's call", "a tool span"])
def test_a_handoff_recorded_once_at_the_end_of_the_run_is_kept(recorded_as: str) -> None:
    """The run stopped right after triage handed back to billing (which had spoken): the one record of it."""
    t = _Trace()
    root = _workflow(t)
    _chat(t, _agent(t, "billing", root), "Refund proposed.")
    triage = _agent(t, "triage", root)
    if recorded_as == "the model's call":
        record = _chat(t, triage, call="handoff_to_billing")
    else:  # without content the model's call is not recorded; the tool's span is
        _chat(t, triage)
        record = _tool(t, "handoff_to_billing", triage)
    adapted = _adapted(t.spans)
    assert handoffs(adapted.records) == [("billing", "triage"), ("triage", "billing")]
    assert adapted.original(adapted.handoffs[1].span_id) == record.span_id


def test_a_tool_span_without_its_name_is_named_by_its_span_and_stands_for_the_answer_that_asked() -> None:
    """An agent run with no model call of its own whose tool span carries no ``gen_ai.tool.name``: the tool is the
    span's name after its operation, the unrecorded answer that asked for it names it too."""
    t = _Trace()
    root = _workflow(t)
    a = _agent(t, "a", root, gen_ai__output__messages=_parts("assistant", "Found."))
    t.add("execute_tool lookup_order", a, gen_ai__operation__name="execute_tool")
    _chat(t, _agent(t, "b", root), "Thanks.")
    _ends(t, {a.span_id: 35})
    adapted = _adapted(t.spans)
    assert tools(adapted.records) == [("a", "lookup_order")]
    assert messages(adapted.records)[:2] == [("a", "lookup_order"), ("a", "Found.")]


@pytest.mark.parametrize(("output", "speaks"), [
    (json.dumps([{"role": "assistant", "name": "inner", "parts": [{"type": "text", "content": "x"}]},
                 {"role": "assistant", "name": "outer", "parts": [{"type": "text", "content": "y"}]}]), True),
    (json.dumps([{"role": "assistant", "name": "outer", "parts": [{"type": "text", "content": "Mine."}]}]), True),
    ("[]", False),
    (None, False),
])  # fmt: skip
def test_an_orchestrator_speaks_only_by_an_output_of_its_own(output: str | None, speaks: bool) -> None:
    """Messages written by several authors, or by the orchestrator itself, are an output of its own; an output
    recorded as nothing, or none at all, leaves it structure."""
    t = _Trace()
    root = _workflow(t)
    outer = _agent(t, "outer", root, **({"gen_ai__output__messages": output} if output is not None else {}))
    _chat(t, _agent(t, "inner", outer), "Done.")
    _chat(t, _agent(t, "other", root), "Also done.")
    adapted = _adapted(t.spans)
    agents = adapted.records[0].get(sc.CONVERSATION_AGENTS)
    assert ("outer" in agents) == speaks and ("outer" in [s for s, _ in messages(adapted.records)]) == speaks


def test_a_call_of_a_tool_named_as_an_agent_of_the_run_is_a_delegation_not_a_tool_call() -> None:
    """smolagents' managed agents under the official instrumentation: no span is a tool's, and the manager's
    model calls the researcher as a tool by its name; the researcher's own run (nested) is the handoff."""
    t = _Trace()
    manager = _agent(t, "manager", None)
    _chat(t, manager, call="researcher")
    researcher = _agent(t, "researcher", manager)
    _chat(t, researcher, call="lookup_order")
    _chat(t, researcher, "Found.")
    _chat(t, manager, "Refunded.")
    adapted = _adapted(t.spans)
    assert tools(adapted.records) == [("researcher", "lookup_order")]
    assert handoffs(adapted.records) == [("manager", "researcher"), ("researcher", "manager")]
