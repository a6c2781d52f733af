"""Real OpenAI Agents SDK runs against the scripted server, through Chat Completions and the Responses API,
streamed and not; the SDK's own record of each run is the oracle."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.openai_agents.conftest import SKIP_REASON

pytest.importorskip("agents", reason=SKIP_REASON)

from agents import InputGuardrailTripwireTriggered, MaxTurnsExceeded, RunConfig, Runner
from opentelemetry.sdk.trace import TracerProvider

from mast_otel import semconv as sc
from tests.openai_agents import scenarios as sn
from tests.openai_agents.record import Conversation, assert_matches_sdk
from tests.span_query import attr, parent_id, span_id

BOTH = pytest.mark.parametrize("api", sn.APIS)
EVERY = pytest.mark.parametrize(("api", "mode"), [(a, m) for a in sn.APIS for m in sn.MODES])


@EVERY
async def test_triage_hands_off_to_billing_which_refunds(
    instrumentor: Any, scripted: Any, spans: Any, api: str, mode: str
) -> None:
    server = scripted(sn.triage_script())
    hooks = sn.RecordingHooks()
    result = await sn.run(
        sn.triage_agents(sn.model_for(api, server.base_url)), "Refund order A17", mode=mode, hooks=hooks
    )
    assert result.last_agent.name == "billing_agent"

    s = spans()
    conv = Conversation(s, s.root)
    assert_matches_sdk(conv, result.new_items, "billing_agent", hooks)
    assert s.root.name == "invoke_workflow Agent workflow"
    assert attr(s.root, sc.MAST_FRAMEWORK) == "openai-agents"
    assert attr(s.root, sc.CONVERSATION_TASK) == "Refund order A17"
    assert attr(s.root, sc.TERMINATION_REASON) == sc.TERMINATION_COMPLETED
    (handoff,) = conv.handoffs
    assert attr(handoff, sc.HANDOFF_CANDIDATES) == ("billing_agent", "faq_agent")
    # The transcript: the user's request, triage's transfer call, what billing received, its tool call, its answer.
    got = [
        (attr(m, sc.MESSAGE_SENDER), attr(m, sc.MESSAGE_RECIPIENTS), attr(m, sc.MESSAGE_KIND)) for m in conv.messages
    ]
    assert got == [
        ("user", ("triage_agent",), "message"),
        ("triage_agent", ("<runtime>",), "tool_call"),
        ("triage_agent", ("billing_agent",), "message"),
        ("billing_agent", ("<runtime>",), "tool_call"),
        ("billing_agent", ("user",), "message"),
    ]
    assert attr(conv.messages[2], sc.MESSAGE_CONTENT) == (
        "[handed over: 3 items of conversation history; the request] Refund order A17"
    )
    assert len(server.requests) == 3


@BOTH
async def test_a_chain_of_two_handoffs_keeps_the_llms_reason(
    instrumentor: Any, scripted: Any, spans: Any, api: str
) -> None:
    server = scripted(sn.CHAIN_SCRIPT)
    hooks = sn.RecordingHooks()
    result = await sn.run(sn.chain_agents(sn.model_for(api, server.base_url)), "B2 is damaged", hooks=hooks)
    s = spans()
    conv = Conversation(s, s.root)
    assert_matches_sdk(conv, result.new_items, "refund_specialist", hooks)
    _, second = conv.handoffs
    assert (attr(second, sc.HANDOFF_FROM), attr(second, sc.HANDOFF_TO)) == ("orders_agent", "refund_specialist")
    assert json.loads(attr(second, sc.HANDOFF_DETAIL).partition("(")[2][:-1]) == {"reason": "order B2 arrived damaged"}
    assert attr(s.root, sc.CONVERSATION_HANDOFFS) == 2
    # Each agent's turn is a sibling under the root, in the order the SDK ran them.
    assert [parent_id(t) for t in conv.turns] == [span_id(s.root)] * 3


@EVERY
async def test_max_turns_exceeded_ends_with_max_turns(
    instrumentor: Any, scripted: Any, spans: Any, api: str, mode: str
) -> None:
    server = scripted(sn.LOOP_SCRIPT)
    hooks = sn.RecordingHooks()
    with pytest.raises(MaxTurnsExceeded) as raised:
        await sn.run(sn.loop_agent(sn.model_for(api, server.base_url)), "check C3", hooks=hooks, max_turns=2, mode=mode)
    s = spans()
    conv = Conversation(s, s.root)
    details = raised.value.run_data
    assert details is not None
    assert_matches_sdk(conv, details.new_items, details.last_agent.name, hooks)
    assert attr(s.root, sc.TERMINATION_REASON) == sc.TERMINATION_MAX_TURNS
    assert attr(s.root, sc.TERMINATION_DETAIL) == "max_turns=2"
    assert attr(s.root, sc.TERMINATION_AGENT) == "looping_agent"


@EVERY
async def test_an_input_guardrail_tripwire_ends_with_guardrail(
    instrumentor: Any, scripted: Any, spans: Any, api: str, mode: str
) -> None:
    server = scripted(sn.GUARD_SCRIPT)
    with pytest.raises(InputGuardrailTripwireTriggered) as raised:
        await sn.run(sn.guarded_agent(sn.model_for(api, server.base_url)), "Do my homework", mode=mode)
    s = spans()
    conv = Conversation(s, s.root)
    name = raised.value.guardrail_result.guardrail.get_name()
    (check,) = conv.tools(sc.TOOL_TYPE_GUARDRAIL)
    assert attr(check, sc.GEN_AI_TOOL_NAME) == name == "no_homework"
    assert attr(check, sc.GUARDRAIL_TRIGGERED) is True
    assert attr(check, sc.TOOL_SUCCESS) is False
    assert attr(s.root, sc.TERMINATION_REASON) == sc.TERMINATION_GUARDRAIL
    assert attr(s.root, sc.TERMINATION_DETAIL) == "guardrail no_homework: tripwire triggered"
    assert attr(s.root, sc.TERMINATION_AGENT) == "tutor_agent"


async def test_a_guardrail_that_passes_is_recorded_and_the_run_completes(
    instrumentor: Any, scripted: Any, spans: Any
) -> None:
    server = scripted(sn.GUARD_SCRIPT)
    result = await sn.run(sn.guarded_agent(sn.model_for("chat_completions", server.base_url)), "Explain fractions")
    s = spans()
    conv = Conversation(s, s.root)
    assert_matches_sdk(conv, result.new_items, "tutor_agent")
    (check,) = conv.tools(sc.TOOL_TYPE_GUARDRAIL)
    assert (attr(check, sc.GUARDRAIL_TRIGGERED), attr(check, sc.GEN_AI_TOOL_CALL_RESULT)) == (False, "passed")
    assert attr(s.root, sc.TERMINATION_REASON) == sc.TERMINATION_COMPLETED


@BOTH
async def test_an_agent_used_as_a_tool_is_a_delegated_nested_conversation(
    instrumentor: Any, scripted: Any, spans: Any, api: str
) -> None:
    server = scripted(sn.AS_TOOL_SCRIPT)
    hooks = sn.RecordingHooks()
    result = await sn.run(sn.manager_agents(sn.model_for(api, server.base_url)), "Translate hello", hooks=hooks)
    s = spans()
    outer_root, inner_root = s.roots
    outer = Conversation(s, outer_root)
    assert_matches_sdk(outer, result.new_items, "manager_agent", hooks)
    (tool,) = outer.tools()
    assert parent_id(inner_root) == span_id(tool), "the nested run hangs under the tool call that ran it"
    assert attr(inner_root, sc.CONVERSATION_PARENT_ID) == outer.id
    (delegation,) = outer.handoffs
    assert attr(delegation, sc.HANDOFF_REASON) == sc.HANDOFF_DELEGATION
    assert (attr(delegation, sc.HANDOFF_FROM), attr(delegation, sc.HANDOFF_TO)) == ("manager_agent", "translator_agent")
    inner = Conversation(s, inner_root)
    got = [
        (attr(m, sc.MESSAGE_SENDER), attr(m, sc.MESSAGE_RECIPIENTS), attr(m, sc.MESSAGE_CONTENT))
        for m in inner.messages
    ]
    assert got == [("manager_agent", ("translator_agent",), "hello"), ("translator_agent", ("manager_agent",), "hola")]
    assert attr(tool, sc.GEN_AI_TOOL_CALL_RESULT) == "hola"


async def test_two_runs_in_one_event_loop_stay_apart(instrumentor: Any, scripted: Any, spans: Any) -> None:
    server = scripted({"rules": sn.triage_script("_A")["rules"] + sn.triage_script("_B")["rules"]})
    model = sn.model_for("chat_completions", server.base_url)
    first, second = await sn.run_both(
        sn.run(sn.triage_agents(model, "_A"), "Refund A17 (run A)"),
        sn.run(sn.triage_agents(model, "_B"), "Refund A17 (run B)", mode="run_streamed"),
    )
    s = spans()
    assert len(s.roots) == 2
    by_task = {attr(r, sc.CONVERSATION_TASK): r for r in s.roots}
    for task, result in (("Refund A17 (run A)", first), ("Refund A17 (run B)", second)):
        root = by_task[task]
        conv = Conversation(s, root)
        assert_matches_sdk(conv, result.new_items, "billing_agent")
        # No crossed parents: every span of this conversation descends from its own root, in its own trace.
        ids = {span_id(x) for x in conv.all}
        for x in conv.all:
            assert x.context.trace_id == root.context.trace_id
            if x is not root:
                assert parent_id(x) in ids
    outputs = {Conversation(s, r).outputs()[-1][1] for r in s.roots}
    assert outputs == {"Refund for A17 issued_A.", "Refund for A17 issued_B."}


def test_run_sync_is_a_conversation_under_the_callers_span(
    instrumentor: Any, scripted: Any, spans: Any, tracer_provider: TracerProvider
) -> None:
    server = scripted(sn.triage_script())
    tracer = tracer_provider.get_tracer("caller")
    with tracer.start_as_current_span("handle request") as caller:
        result = Runner.run_sync(sn.triage_agents(sn.model_for("responses", server.base_url)), "Refund A17")
    s = spans()
    assert parent_id(s.root) == caller.get_span_context().span_id
    assert_matches_sdk(Conversation(s, s.root), result.new_items, "billing_agent")


async def test_a_tool_error_that_ends_the_run_is_termination_error(
    instrumentor: Any, scripted: Any, spans: Any
) -> None:
    from agents import Agent, function_tool

    class Broken(RuntimeError):
        pass

    failure = Broken("inventory service down")

    @function_tool(failure_error_function=None)
    def check_stock(sku: str) -> str:
        """Check stock."""
        raise failure

    server = scripted({"rules": [{"match": "ROLE_STOCK.", "replies": [{"tool": "check_stock", "args": {"sku": "X"}}]}]})
    agent = Agent(
        name="stock_agent",
        instructions="ROLE_STOCK.",
        tools=[check_stock],
        model=sn.model_for("chat_completions", server.base_url),
    )
    with pytest.raises(Exception) as raised:
        await sn.run(agent, "Is X in stock?")
    assert raised.value is failure or raised.value.__cause__ is failure or failure in _chain(raised.value)
    s = spans()
    assert attr(s.root, sc.TERMINATION_REASON) == sc.TERMINATION_ERROR
    assert attr(s.root, sc.TERMINATION_AGENT) == "stock_agent"
    (tool,) = Conversation(s, s.root).tools()
    assert attr(tool, sc.TOOL_SUCCESS) is False


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in out:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


async def test_the_sdks_sensitive_data_switch_keeps_content_out(instrumentor: Any, scripted: Any, spans: Any) -> None:
    server = scripted(sn.triage_script())
    config = RunConfig(trace_include_sensitive_data=False)
    agent = sn.triage_agents(sn.model_for("chat_completions", server.base_url))
    result = await sn.run(agent, "Refund A17, card 4111", run_config=config)
    s = spans()
    content_keys = {
        sc.MESSAGE_CONTENT,
        sc.MESSAGE_TOOL_CALLS,
        sc.CONVERSATION_TASK,
        sc.GEN_AI_TOOL_CALL_ARGUMENTS,
        sc.GEN_AI_TOOL_CALL_RESULT,
        sc.HANDOFF_DETAIL,
    }
    assert not [(x.name, k) for x in s.all for k in (x.attributes or {}) if k in content_keys]
    assert "4111" not in json.dumps([dict(x.attributes or {}) for x in s.all], default=str)
    conv = Conversation(s, s.root)
    # The structure is still there: turns, the handoff, the tool call, one message per model call.
    assert [attr(t, sc.GEN_AI_AGENT_NAME) for t in conv.turns] == ["triage_agent", "billing_agent"]
    assert [(attr(h, sc.HANDOFF_FROM), attr(h, sc.HANDOFF_TO)) for h in conv.handoffs] == [
        ("triage_agent", "billing_agent")
    ]
    assert [attr(t, sc.GEN_AI_TOOL_NAME) for t in conv.tools()] == ["refund"]
    assert result.last_agent.name == attr(s.root, sc.TERMINATION_AGENT)


async def test_content_is_redacted_before_it_leaves(instrumentor: Any, scripted: Any, spans: Any) -> None:
    server = scripted(sn.triage_script())
    secret = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4"
    await sn.run(sn.triage_agents(sn.model_for("responses", server.base_url)), f"Refund A17, my key is {secret}")
    dumped = json.dumps([dict(x.attributes or {}) for x in spans().all], default=str)
    assert secret not in dumped
    assert "Refund A17, my key is" in dumped


async def test_two_awaited_runs_are_two_conversations(instrumentor: Any, scripted: Any, spans: Any) -> None:
    server = scripted(sn.triage_script())
    agent = sn.triage_agents(sn.model_for("chat_completions", server.base_url))
    await sn.run(agent, "first")
    server.reset()
    await asyncio.sleep(0)
    await sn.run(agent, "second")
    roots = spans().roots
    assert [attr(r, sc.CONVERSATION_TASK) for r in roots] == ["first", "second"]
    assert len({attr(r, sc.GEN_AI_CONVERSATION_ID) for r in roots}) == 2


async def test_spans_carry_the_sdks_own_start_and_end_times(
    instrumentor: Any, user_processor: Any, scripted: Any, spans: Any
) -> None:
    from mast_otel.integrations.openai_agents._content import iso_to_ns

    server = scripted(sn.triage_script())
    await sn.run(sn.triage_agents(sn.model_for("chat_completions", server.base_url)), "Refund A17")
    sdk = {x.span_data.type: [] for x in user_processor.ended if hasattr(x, "span_data")}
    for x in user_processor.ended:
        if hasattr(x, "span_data"):
            sdk[x.span_data.type].append((iso_to_ns(x.started_at), iso_to_ns(x.ended_at)))
    s = spans()
    conv = Conversation(s, s.root)
    assert [(t.start_time, t.end_time) for t in conv.turns] == sorted(sdk["agent"])
    assert [(t.start_time, t.end_time) for t in conv.tools()] == sdk["function"]
    assert [(s.root.start_time, s.root.end_time)] == sdk["task"]
    # Messages sit at the model call's start (its input) or end (its output).
    calls = {stamp for span in sdk["generation"] for stamp in span}
    assert {m.start_time for m in conv.messages} <= calls


async def test_mast_otels_own_capture_setting_keeps_content_out(user_processor: Any, scripted: Any) -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import mast_otel

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    server = scripted(sn.triage_script())
    mast_otel.instrument(tracer_provider=provider, capture_content=False)
    try:
        await sn.run(sn.triage_agents(sn.model_for("responses", server.base_url)), "Refund A17, card 4111")
    finally:
        mast_otel.uninstrument()
    finished = exporter.get_finished_spans()
    assert any(attr(x, sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_HANDOFF for x in finished)
    assert "4111" not in json.dumps([dict(x.attributes or {}) for x in finished], default=str)
    assert not [x for x in finished if attr(x, sc.MESSAGE_CONTENT) or attr(x, sc.GEN_AI_TOOL_CALL_ARGUMENTS)]


async def test_an_output_guardrail_tripwire_ends_with_guardrail(instrumentor: Any, scripted: Any, spans: Any) -> None:
    from agents import Agent, GuardrailFunctionOutput, OutputGuardrail, OutputGuardrailTripwireTriggered

    async def no_refund_promises(_ctx: Any, _agent: Any, output: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered="guarantee" in str(output))

    server = scripted({"rules": [{"match": "ROLE_SALES.", "replies": ["We guarantee a full refund."]}]})
    agent = Agent(
        name="sales_agent",
        instructions="ROLE_SALES.",
        output_guardrails=[OutputGuardrail(guardrail_function=no_refund_promises, name="no_refund_promises")],
        model=sn.model_for("chat_completions", server.base_url),
    )
    with pytest.raises(OutputGuardrailTripwireTriggered):
        await sn.run(agent, "Can I get my money back?")
    s = spans()
    conv = Conversation(s, s.root)
    (check,) = conv.tools(sc.TOOL_TYPE_GUARDRAIL)
    assert (attr(check, sc.GEN_AI_TOOL_NAME), attr(check, sc.GUARDRAIL_TRIGGERED)) == ("no_refund_promises", True)
    assert attr(s.root, sc.TERMINATION_REASON) == sc.TERMINATION_GUARDRAIL
    assert attr(s.root, sc.TERMINATION_DETAIL) == "guardrail no_refund_promises: tripwire triggered"
    assert conv.outputs() == [("sales_agent", "We guarantee a full refund.")]


async def test_without_task_spans_the_trace_gives_the_root(instrumentor: Any, scripted: Any, spans: Any) -> None:
    server = scripted(sn.triage_script())
    config = RunConfig(workflow_name="refund desk", tracing={"include_task_and_turn_spans": False})
    result = await sn.run(
        sn.triage_agents(sn.model_for("chat_completions", server.base_url)), "Refund A17", run_config=config
    )
    s = spans()
    assert s.root.name == "invoke_workflow refund desk"
    assert_matches_sdk(Conversation(s, s.root), result.new_items, "billing_agent")
    assert attr(s.root, sc.TERMINATION_REASON) == sc.TERMINATION_COMPLETED


@BOTH
async def test_a_tool_call_and_a_transfer_in_one_answer(instrumentor: Any, scripted: Any, spans: Any, api: str) -> None:
    """The handoff's detail is the transfer call, not the function tool asked for beside it."""
    both = {
        "tools": [
            {"tool": "lookup_order", "args": {"order_id": "B2"}},
            {"tool": "transfer_to_refund_specialist", "args": {"reason": "damaged"}},
        ]
    }
    script = {
        "rules": [
            {"match": "ROLE_TRIAGE.", "replies": [{"tool": "transfer_to_orders_agent", "args": {}}]},
            {"match": "ROLE_ORDERS.", "replies": [both]},
            {"match": "ROLE_REFUNDS.", "replies": ["B2 refunded."]},
        ]
    }
    server = scripted(script)
    hooks = sn.RecordingHooks()
    result = await sn.run(sn.chain_agents(sn.model_for(api, server.base_url)), "B2 is damaged", hooks=hooks)
    s = spans()
    conv = Conversation(s, s.root)
    assert_matches_sdk(conv, result.new_items, "refund_specialist", hooks)
    assert attr(conv.handoffs[1], sc.HANDOFF_DETAIL) == 'transfer_to_refund_specialist({"reason": "damaged"})'
    assert [attr(t, sc.GEN_AI_TOOL_NAME) for t in conv.tools()] == ["lookup_order"]
