"""The CrewAI integration's contract: entry points, uninstrument, no change to the program, failures contained,
and the run through a real collector process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.crewai.conftest import SKIP_REASON

pytest.importorskip("crewai", reason=SKIP_REASON)

from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.sdk.trace import TracerProvider

import mast_otel
from examples.scripted_openai import ScriptedOpenAI
from mast_otel import semconv as sc
from mast_otel.integrations.crewai import CrewAIInstrumentor
from mast_otel.recorder import Recorder
from tests.collector_roundtrip import assert_in_order, judged_run
from tests.crewai import scenarios
from tests.fault_injection import INSIDE_A_RUN, assert_failures_only_from, recorder_broken
from tests.lifecycle_checks import (
    assert_content_left_out,
    assert_entry_point_registered,
    assert_uninstrument_restores,
    example_console_output,
)
from tests.span_query import attr


def _patched() -> list[Any]:
    from crewai.agent.core import Agent
    from crewai.agents import agent_executor
    from crewai.crew import Crew
    from crewai.task import Task
    from crewai.tools.base_tool import BaseTool, Tool

    return [
        vars(Crew)["kickoff"],
        vars(Crew)["akickoff"],
        vars(Task)["_execute_core"],
        vars(Agent)["execute_task"],
        vars(BaseTool)["run"],
        vars(Tool)["run"],
        vars(agent_executor)["handle_max_iterations_exceeded"],
    ]


def _run(base_url: str) -> list[tuple[str, str]]:
    out = scenarios.sequential(base_url).kickoff()
    return [(t.agent, t.raw) for t in out.tasks_output]


def test_entrypoint_is_registered() -> None:
    assert_entry_point_registered("mast_crewai", CrewAIInstrumentor)


def test_uninstrument_restores_every_method(tracer_provider: TracerProvider, spans: Any) -> None:
    assert_uninstrument_restores(CrewAIInstrumentor(), tracer_provider, _patched)
    with ScriptedOpenAI(scenarios.SEQUENTIAL_SCRIPT) as server:
        _run(server.base_url)
    assert spans().all == []


def test_mast_otel_instrument_covers_crewai_and_changes_no_result(tracer_provider: TracerProvider, spans: Any) -> None:
    with ScriptedOpenAI(scenarios.SEQUENTIAL_SCRIPT) as server:
        plain = _run(server.base_url)
        server.reset()
        mast_otel.instrument(tracer_provider=tracer_provider)
        try:
            traced = _run(server.base_url)
        finally:
            mast_otel.uninstrument()
    assert traced == plain
    assert attr(spans().root, sc.MAST_FRAMEWORK) == "crewai"


def test_suppressed_instrumentation_records_nothing(instrumentor: Any, spans: Any) -> None:
    with ScriptedOpenAI(scenarios.SEQUENTIAL_SCRIPT) as server, suppress_instrumentation():
        _run(server.base_url)
    assert spans().all == []


def test_exception_propagates_unchanged(instrumentor: Any, spans: Any) -> None:
    boom = RuntimeError("the crew failed")

    def fail(output: Any) -> Any:
        raise boom

    with ScriptedOpenAI(scenarios.SEQUENTIAL_SCRIPT) as server:
        crew = scenarios.sequential(server.base_url)
        crew.tasks[0].callback = fail  # CrewAI calls a task's callback with its output, and lets it raise
        with pytest.raises(RuntimeError) as raised:
            crew.kickoff()
    assert raised.value is boom
    root = spans().root
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_ERROR
    assert attr(root, sc.ERROR_TYPE) == "RuntimeError"


def test_recording_failure_is_counted_and_the_run_is_unchanged(
    instrumentor: Any, spans: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise ValueError("recording bug")

    monkeypatch.setattr(Recorder, "handoff", broken)
    before = sum(mast_otel.recording_failures().values())
    with ScriptedOpenAI(scenarios.SEQUENTIAL_SCRIPT) as server:
        outputs = _run(server.base_url)
    assert sum(mast_otel.recording_failures().values()) > before
    assert [a for a, _ in outputs] == ["Researcher", "Writer", "Editor"]
    assert attr(spans().root, sc.TERMINATION_REASON) == sc.TERMINATION_COMPLETED


def _outputs(out: Any) -> list[tuple[str, str]]:
    return [(t.agent, t.raw) for t in out.tasks_output]


@pytest.mark.parametrize(
    ("script", "build"),
    [
        (scenarios.SEQUENTIAL_SCRIPT, scenarios.sequential),
        (scenarios.hierarchical_example.SCRIPT, scenarios.hierarchical),  # delegation tools
        (scenarios.LOOP_SCRIPT, scenarios.looping),  # max_iter
    ],
    ids=["sequential", "hierarchical", "max_iter"],
)
@pytest.mark.parametrize("spare", [(), INSIDE_A_RUN], ids=["all", "inside_a_run"])
def test_every_recorder_entry_point_raising_changes_nothing(
    instrumentor: Any, script: Any, build: Any, spare: tuple[str, ...]
) -> None:
    with ScriptedOpenAI(script) as server:
        with suppress_instrumentation():
            plain = build(server.base_url).kickoff()
        server.reset()
        with recorder_broken(spare) as failures:
            traced = build(server.base_url).kickoff()
    # the oracle: CrewAI's own result, task by task
    assert (traced.raw, _outputs(traced)) == (plain.raw, _outputs(plain))
    assert_failures_only_from(failures, "crewai")


@pytest.mark.parametrize("spare", [(), INSIDE_A_RUN], ids=["all", "inside_a_run"])
async def test_every_recorder_entry_point_raising_changes_nothing_async(instrumentor: Any, spare: Any) -> None:
    with ScriptedOpenAI(scenarios.SEQUENTIAL_SCRIPT) as server:
        with suppress_instrumentation():
            plain = await scenarios.sequential(server.base_url).akickoff()
        server.reset()
        with recorder_broken(spare) as failures:
            traced = await scenarios.sequential(server.base_url).akickoff()
    assert (traced.raw, _outputs(traced)) == (plain.raw, _outputs(plain))
    assert_failures_only_from(failures, "crewai")


def test_content_capture_off(tracer_provider: TracerProvider, spans: Any) -> None:
    inst = CrewAIInstrumentor()
    inst.instrument(tracer_provider=tracer_provider, config=mast_otel.CaptureConfig(capture_content=False))
    try:
        with ScriptedOpenAI(scenarios.hierarchical_example.SCRIPT) as server:
            scenarios.hierarchical(server.base_url).kickoff()
    finally:
        inst.uninstrument()
    got = spans()
    assert_content_left_out(got)
    assert [attr(h, sc.HANDOFF_TO) for h in got.handoffs if attr(h, sc.HANDOFF_REASON) == sc.HANDOFF_DELEGATION] == [
        "Researcher", "Writer"
    ]  # fmt: skip


@pytest.mark.integration
def test_hierarchical_crew_comes_out_judged_through_a_real_collector(tmp_path: Path) -> None:
    result: dict[str, Any] = {}

    def run(provider: TracerProvider) -> None:
        inst = CrewAIInstrumentor()
        inst.instrument(tracer_provider=provider)
        try:
            with ScriptedOpenAI(scenarios.hierarchical_example.SCRIPT) as server:
                result["out"] = scenarios.hierarchical(server.base_url).kickoff()
        finally:
            inst.uninstrument()

    judged = judged_run(tmp_path, "crewai-app", run)
    assert judged.root.get(sc.JUDGE_STATUS) == sc.JUDGE_SKIPPED  # no model: signals, no labels
    assert judged.root.get(sc.CONVERSATION_PROCESS) == "hierarchical"
    (task_output,) = result["out"].tasks_output
    # The transcript: the task, each delegation (request, the coworker's answer), the manager's output, in order.
    script = scenarios.hierarchical_example.SCRIPT["rules"]
    delegated = [r["args"]["task"] for r in script[0]["replies"] if isinstance(r, dict)]
    answers = [script[1]["replies"][0], script[2]["replies"][0]]
    expected = [task_output.description, delegated[0], answers[0], delegated[1], answers[1], task_output.raw]
    assert_in_order(judged.transcript, expected)
    assert "(reason: delegation" in judged.transcript


def test_example_runs_offline_as_a_script() -> None:
    printed = example_console_output("crewai_hierarchical.py")
    assert "handoff Manager -> Researcher  reason=delegation" in printed
    assert "invoke_workflow crew  reason=completed" in printed
