"""The LangGraph integration's contract: entry points, uninstrument, no change to the program, failures contained."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.langgraph.conftest import SKIP_REASON

pytest.importorskip("langgraph_supervisor", reason=SKIP_REASON)

from langgraph.graph import END, START, MessagesState, StateGraph
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.sdk.trace import TracerProvider

import mast_otel
from examples.scripted_openai import ScriptedOpenAI
from mast_otel import semconv as sc
from mast_otel.integrations.langgraph import AGENT_METADATA_KEY, LangGraphInstrumentor
from mast_otel.recorder import Recorder
from tests.fault_injection import INSIDE_A_RUN, assert_failures_only_from, recorder_broken
from tests.langgraph import scenarios
from tests.lifecycle_checks import (
    assert_content_left_out,
    assert_entry_point_registered,
    assert_uninstrument_restores,
    example_console_output,
    exported_by_zero_code_run,
    never_sampled,
)
from tests.span_query import attr

REPO = Path(__file__).resolve().parents[2]
INPUT = {"messages": [{"role": "user", "content": scenarios.supervisor_example.TASK}]}


def _patched() -> list[Any]:
    from langgraph.prebuilt import tool_node
    from langgraph.pregel import _runner, main

    return [
        vars(main.Pregel)["stream"],
        vars(main.Pregel)["astream"],
        vars(_runner)["run_with_retry"],
        vars(_runner)["arun_with_retry"],
        vars(tool_node.ToolNode)["_execute_tool_sync"],
        vars(tool_node.ToolNode)["_execute_tool_async"],
    ]


def _contents(out: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    return [(m.type, m.name, m.content) for m in out["messages"]]


def test_entrypoint_is_registered() -> None:
    assert_entry_point_registered("mast_langgraph", LangGraphInstrumentor)


def test_uninstrument_restores_every_method(tracer_provider: TracerProvider, spans: Any) -> None:
    assert_uninstrument_restores(LangGraphInstrumentor(), tracer_provider, _patched)
    scenarios.routed_team().invoke(INPUT)
    assert spans().all == []


def test_mast_otel_instrument_covers_langgraph(tracer_provider: TracerProvider, spans: Any) -> None:
    mast_otel.instrument(tracer_provider=tracer_provider)
    try:
        scenarios.routed_team().invoke(INPUT)
    finally:
        mast_otel.uninstrument()
    assert attr(spans().root, sc.MAST_FRAMEWORK) == "langgraph"


def test_result_is_unchanged_and_not_recording_changes_nothing() -> None:
    with ScriptedOpenAI(scenarios.supervisor_example.SCRIPT) as server:
        plain = scenarios.supervisor(server.base_url).invoke(INPUT)
        provider, exporter = never_sampled()
        inst = LangGraphInstrumentor()
        inst.instrument(tracer_provider=provider)
        try:
            server.reset()
            traced = scenarios.supervisor(server.base_url).invoke(INPUT)
        finally:
            inst.uninstrument()
    assert exporter.get_finished_spans() == ()
    assert _contents(traced) == _contents(plain)


def test_suppressed_instrumentation_records_nothing(instrumentor: Any, spans: Any) -> None:
    with suppress_instrumentation():
        out = scenarios.routed_team().invoke(INPUT)
    assert spans().all == []
    assert out["messages"][-1].content == "Ship it."


_BOOM = RuntimeError("the node failed")


def _failing(state: MessagesState) -> dict[str, Any]:
    raise _BOOM


def test_exception_propagates_unchanged(instrumentor: Any, spans: Any) -> None:
    builder = StateGraph(MessagesState)
    builder.add_node("worker", _failing, metadata={AGENT_METADATA_KEY: True})
    builder.add_edge(START, "worker")
    builder.add_edge("worker", END)
    with pytest.raises(RuntimeError) as raised:
        builder.compile().invoke(INPUT)
    assert raised.value is _BOOM
    got = spans()
    assert attr(got.root, sc.TERMINATION_REASON) == sc.TERMINATION_ERROR
    assert attr(got.root, sc.ERROR_TYPE) == "RuntimeError"
    (turn,) = got.turns
    assert attr(turn, sc.ERROR_TYPE) == "RuntimeError"


def test_recording_failure_is_counted_and_the_run_is_unchanged(
    instrumentor: Any, spans: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = scenarios.routed_team()

    def broken(*args: Any, **kwargs: Any) -> None:
        raise ValueError("recording bug")

    monkeypatch.setattr(Recorder, "message", broken)
    before = sum(mast_otel.recording_failures().values())
    out = plain.invoke(INPUT)
    assert sum(mast_otel.recording_failures().values()) > before
    assert [m.content for m in out["messages"]][-1] == "Ship it."
    assert attr(spans().root, sc.TERMINATION_REASON) == sc.TERMINATION_COMPLETED  # the rest is still recorded


def _run_sync(server: ScriptedOpenAI) -> Any:
    return scenarios.swarm(server.base_url).invoke(INPUT, {"configurable": {"thread_id": "1"}})


def _run_stream(server: ScriptedOpenAI) -> Any:
    return list(scenarios.supervisor(server.base_url).stream(INPUT, stream_mode="values"))[-1]


@pytest.mark.parametrize(
    ("script", "run"),
    [(scenarios.SWARM_SCRIPT, _run_sync), (scenarios.supervisor_example.SCRIPT, _run_stream)],
    ids=["invoke", "stream"],
)
@pytest.mark.parametrize("spare", [(), INSIDE_A_RUN], ids=["all", "inside_a_run"])
def test_every_recorder_entry_point_raising_changes_nothing(
    instrumentor: Any, script: Any, run: Any, spare: tuple[str, ...]
) -> None:
    with ScriptedOpenAI(script) as server:
        with suppress_instrumentation():
            plain = run(server)
        server.reset()
        with recorder_broken(spare) as failures:
            traced = run(server)
    assert _contents(traced) == _contents(plain)  # the oracle: LangGraph's own message list
    assert_failures_only_from(failures, "langgraph")


@pytest.mark.parametrize("spare", [(), INSIDE_A_RUN], ids=["all", "inside_a_run"])
async def test_every_recorder_entry_point_raising_changes_nothing_async(instrumentor: Any, spare: Any) -> None:
    with ScriptedOpenAI(scenarios.supervisor_example.SCRIPT) as server:
        with suppress_instrumentation():
            plain = await scenarios.supervisor(server.base_url).ainvoke(INPUT)
        server.reset()
        with recorder_broken(spare) as failures:
            traced = await scenarios.supervisor(server.base_url).ainvoke(INPUT)
    assert _contents(traced) == _contents(plain)
    assert_failures_only_from(failures, "langgraph")


def test_content_capture_off(tracer_provider: TracerProvider, spans: Any) -> None:
    inst = LangGraphInstrumentor()
    inst.instrument(tracer_provider=tracer_provider, config=mast_otel.CaptureConfig(capture_content=False))
    try:
        with ScriptedOpenAI(scenarios.SWARM_SCRIPT) as server:
            scenarios.swarm(server.base_url).invoke(INPUT, {"configurable": {"thread_id": "1"}})
    finally:
        inst.uninstrument()
    got = spans()
    assert_content_left_out(got)
    assert [attr(h, sc.HANDOFF_TO) for h in got.handoffs] == ["alice", "bob"]  # structure stays


def test_zero_code_opentelemetry_instrument_exports_otlp() -> None:
    """``opentelemetry-instrument python app.py``: the entry point instruments LangGraph, spans reach a receiver."""
    program = (  # no instrument() call in it
        "from examples import langgraph_supervisor as ex\n"
        "from examples.scripted_openai import ScriptedOpenAI\n"
        "with ScriptedOpenAI(ex.SCRIPT) as s:\n"
        "    ex.build(s.base_url).invoke({'messages': [{'role': 'user', 'content': ex.TASK}]})\n"
    )
    received = exported_by_zero_code_run(program, "langgraph-zero-code")
    (root,) = [s for s in received if s.is_conversation_root]
    assert root.service_name == "langgraph-zero-code"
    assert root.get(sc.MAST_FRAMEWORK) == "langgraph"
    assert root.get(sc.CONVERSATION_HANDOFFS) == 5


def test_example_runs_offline_as_a_script() -> None:
    """``python examples/langgraph_supervisor.py --console``: the file must not shadow the package it is named after."""
    printed = example_console_output("langgraph_supervisor.py")
    assert "handoff supervisor -> researcher  reason=tool_call" in printed
    assert "invoke_workflow LangGraph  reason=completed" in printed
