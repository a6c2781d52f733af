"""A program that sets its own trace processors after ``instrument()`` (``set_trace_processors``, the SDK's
documented way to send its traces elsewhere), uninstruments and instruments again, or does either in the middle of
a run: every run is recorded once, the program's processors are exactly its own, and nothing is left behind.
The oracle is the SDK's own record of each run (``RunResult.new_items``, its ``RunHooks`` callbacks)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.openai_agents.conftest import SKIP_REASON, CapturingProcessor

pytest.importorskip("agents", reason=SKIP_REASON)

from agents import Agent, add_trace_processor, function_tool, set_trace_processors, set_tracing_disabled
from agents.tracing import get_trace_provider
from opentelemetry.sdk.trace import SpanProcessor

from mast_otel.integrations.openai_agents import MastTraceProcessor, OpenAIAgentsInstrumentor, _registration
from tests.openai_agents import scenarios as sn
from tests.openai_agents.record import Conversation, assert_matches_sdk


def _processors() -> tuple[Any, ...]:
    return get_trace_provider()._multi_processor._processors  # type: ignore[attr-defined,no-any-return]


@pytest.fixture
def program_processors(user_processor: CapturingProcessor) -> Iterator[None]:
    """The session's processor list is put back after a test that replaced it."""
    yield
    set_trace_processors([user_processor])  # type: ignore[list-item]


class _StartedRoots(SpanProcessor):
    """Counts the conversation roots mast-otel starts (one left open would never reach the exporter)."""

    def __init__(self) -> None:
        self.count = 0

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if span.name.startswith("invoke_workflow"):
            self.count += 1


async def _recorded_once(server: Any, spans: Any, tracer_provider: Any, runs: int = 1) -> None:
    """``runs`` triage runs, each recorded exactly once and matching what the SDK says happened."""
    started = _StartedRoots()
    tracer_provider.add_span_processor(started)
    for _ in range(runs):
        server.reset()
        hooks = sn.RecordingHooks()
        result = await sn.run(sn.triage_agents(sn.model_for("chat_completions", server.base_url)), "Refund A17",
                              hooks=hooks)  # fmt: skip
        got = spans()
        assert result.final_output == "Refund for A17 issued."
        assert_matches_sdk(Conversation(got, got.roots[-1]), result.new_items, "billing_agent", hooks)
    assert len(spans().roots) == started.count == runs, "each run recorded once"
    assert _mine().open_entries == 0


def _mine() -> MastTraceProcessor:
    processor = OpenAIAgentsInstrumentor().processor
    assert processor is not None
    return processor


async def test_processors_set_after_instrument_keep_mast_otel_after_them(
    instrumentor: Any, program_processors: None, scripted: Any, spans: Any, tracer_provider: Any
) -> None:
    theirs = CapturingProcessor()
    set_trace_processors([theirs])  # type: ignore[list-item]
    assert _processors() == (theirs, _mine()), "the program's list, in its order, with mast-otel's after it"
    await _recorded_once(scripted(sn.triage_script()), spans, tracer_provider, runs=2)
    assert len(theirs.ended) > 5, "the program's own processor gets the SDK's spans"


async def test_a_list_that_already_holds_mast_otel_is_set_as_given(
    instrumentor: Any, program_processors: None, scripted: Any, spans: Any, tracer_provider: Any
) -> None:
    theirs = CapturingProcessor()
    set_trace_processors([_mine(), theirs])  # type: ignore[list-item]
    assert _processors() == (_mine(), theirs)
    add_trace_processor(_mine())  # registered twice: still recorded once
    await _recorded_once(scripted(sn.triage_script()), spans, tracer_provider)


async def test_uninstrument_then_instrument_records_again(
    user_processor: CapturingProcessor, program_processors: None, tracer_provider: Any, scripted: Any, spans: Any
) -> None:
    inst = OpenAIAgentsInstrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    inst.uninstrument()
    set_trace_processors([user_processor])  # type: ignore[list-item]  # while off: mast-otel's processor dropped
    server = scripted(sn.triage_script())
    await sn.run(sn.triage_agents(sn.model_for("chat_completions", server.base_url)), "Refund A17")
    assert spans().all == []
    inst.instrument(tracer_provider=tracer_provider)
    try:
        await _recorded_once(server, spans, tracer_provider)
        inst.uninstrument()
        inst.instrument(tracer_provider=tracer_provider)
        assert [p for p in _processors() if isinstance(p, MastTraceProcessor)] == [_mine()], "registered once"
    finally:
        inst.uninstrument()


def _tool_agent(model: Any, during: Callable[[], None]) -> Agent[Any]:
    @function_tool
    def reconfigure() -> str:
        """Reconfigure tracing."""
        during()
        return "reconfigured"

    return Agent(name="worker", instructions="ROLE_WORKER.", tools=[reconfigure], model=model)


_WORKER_SCRIPT = {"rules": [{"match": "ROLE_WORKER.", "replies": [{"tool": "reconfigure", "args": {}}, "done"]}]}


async def test_processors_replaced_mid_run_lose_nothing_and_leave_nothing(
    instrumentor: Any, program_processors: None, scripted: Any, spans: Any
) -> None:
    theirs = CapturingProcessor()
    server = scripted(_WORKER_SCRIPT)
    hooks = sn.RecordingHooks()
    agent = _tool_agent(sn.model_for("chat_completions", server.base_url), lambda: set_trace_processors([theirs]))
    result = await sn.run(agent, "go", hooks=hooks)
    got = spans()
    assert result.final_output == "done"
    assert_matches_sdk(Conversation(got, got.root), result.new_items, "worker", hooks)
    assert got.root.end_time is not None
    assert _mine().open_entries == 0


async def test_uninstrument_mid_run_leaves_nothing_behind(
    user_processor: CapturingProcessor, program_processors: None, tracer_provider: Any, scripted: Any, spans: Any
) -> None:
    inst = OpenAIAgentsInstrumentor()
    server = scripted(_WORKER_SCRIPT)
    agent = _tool_agent(sn.model_for("chat_completions", server.base_url), inst.uninstrument)
    inst.instrument(tracer_provider=tracer_provider)
    try:
        result = await sn.run(agent, "go")
    finally:
        inst.uninstrument()
    assert result.final_output == "done"
    assert spans().root.end_time is not None, "the run in flight is still ended"
    assert _mine().open_entries == 0


async def test_tracing_disabled_is_said_once(
    instrumentor: Any, scripted: Any, spans: Any, caplog: pytest.LogCaptureFixture
) -> None:
    _registration._warned.clear()
    server = scripted(sn.triage_script())
    try:
        with caplog.at_level(logging.WARNING, logger="mast_otel"):
            set_tracing_disabled(True)
            set_tracing_disabled(True)
            result = await sn.run(sn.triage_agents(sn.model_for("chat_completions", server.base_url)), "Refund A17")
    finally:
        set_tracing_disabled(False)
    assert result.final_output == "Refund for A17 issued."
    assert spans().all == [], "the SDK made no spans"
    said = [r for r in caplog.records if "tracing is disabled" in r.getMessage()]
    assert len(said) == 1 and "set_tracing_disabled(True)" in said[0].getMessage()
