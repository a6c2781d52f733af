"""A CrewAI release that renamed a hooked method: every CrewAI hook removed in turn, after and before CrewAI's
import. mast-otel leaves CrewAI unpatched (all hooks or none, docs/robustness.md), never raises, and the crew
gives what it gives without mast-otel."""

from __future__ import annotations

from typing import Any

import pytest

from tests.crewai.conftest import SKIP_REASON

pytest.importorskip("crewai", reason=SKIP_REASON)

from opentelemetry.sdk.trace import TracerProvider

import mast_otel
from examples.scripted_openai import ScriptedOpenAI
from mast_otel.integrations.crewai import HOOKS
from tests.fault_injection import assert_hook_fault_harmless, assert_hook_fault_harmless_before_import


def program() -> list[tuple[str, str]]:
    """A sequential crew with a tool, against the scripted server: each task's agent and output, as CrewAI has them."""
    from tests.crewai import scenarios

    with ScriptedOpenAI(scenarios.SEQUENTIAL_SCRIPT) as server:
        out = scenarios.sequential(server.base_url).kickoff()
    return [(t.agent, t.raw) for t in out.tasks_output]


@pytest.mark.parametrize("hook", HOOKS, ids=lambda hook: hook.target)
def test_a_missing_hook_after_import_leaves_the_program_alone(hook: Any, tracer_provider: TracerProvider) -> None:
    assert_hook_fault_harmless(
        hook, HOOKS, "crewai", program, lambda: mast_otel.instrument(tracer_provider=tracer_provider),
        mast_otel.uninstrument,
    )  # fmt: skip


@pytest.mark.parametrize("hook", HOOKS, ids=lambda hook: hook.target)
def test_a_missing_hook_before_import_leaves_the_program_alone(hook: Any) -> None:
    assert_hook_fault_harmless_before_import(
        hook, "crewai", "crewai", "tests.crewai.test_hook_faults:program", "mast_otel.integrations.crewai:HOOKS"
    )
