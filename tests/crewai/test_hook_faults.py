"""A CrewAI release that renamed a hooked method: every CrewAI hook removed in turn, after and before CrewAI's
import. mast-otel leaves CrewAI unpatched (all hooks or none, docs/robustness.md), never raises, and the crew
gives what it gives without mast-otel."""

from __future__ import annotations

import pytest

from tests.crewai.conftest import SKIP_REASON

pytest.importorskip("crewai", reason=SKIP_REASON)


from examples.scripted_openai import ScriptedOpenAI
from tests.fault_injection import hook_fault_tests


def program() -> list[tuple[str, str]]:
    """A sequential crew with a tool, against the scripted server: each task's agent and output, as CrewAI has them."""
    from tests.crewai import scenarios

    with ScriptedOpenAI(scenarios.SEQUENTIAL_SCRIPT) as server:
        out = scenarios.sequential(server.base_url).kickoff()
    return [(t.agent, t.raw) for t in out.tasks_output]


# Each hook removed in turn, after and before the import: the program is what it is without mast-otel.
test_hook_missing_after_import, test_hook_missing_before_import = hook_fault_tests(
    "crewai", "crewai",
    "tests.crewai.test_hook_faults:program", "mast_otel.integrations.crewai:HOOKS",
)
