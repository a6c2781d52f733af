"""An OpenAI Agents SDK release that renamed a hooked method: each hook removed in turn, after and before the SDK's
import. mast-otel leaves the SDK alone (all hooks or none, docs/robustness.md), never raises, and the run gives
what it gives without mast-otel."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.openai_agents.conftest import SKIP_REASON

pytest.importorskip("agents", reason=SKIP_REASON)


from examples.scripted_openai import ScriptedOpenAI
from tests.fault_injection import hook_fault_tests


def program() -> dict[str, Any]:
    """A program that sends the SDK's traces to its own (empty) processor list, then a triage run with a handoff
    and a tool: the SDK's own result."""
    from agents import set_trace_processors

    from tests.openai_agents import scenarios as sn

    set_trace_processors([])
    with ScriptedOpenAI(sn.triage_script()) as server:
        model = sn.model_for("chat_completions", server.base_url)
        result = asyncio.run(sn.run(sn.triage_agents(model), "Refund A17"))
    return {
        "output": result.final_output,
        "last_agent": result.last_agent.name,
        "items": [item.type for item in result.new_items],
    }


@pytest.fixture
def session_processors(user_processor: Any) -> Any:
    yield
    from agents import set_trace_processors

    set_trace_processors([user_processor])


# Each hook removed in turn, after and before the import: the program is what it is without mast-otel.
test_hook_missing_after_import, test_hook_missing_before_import = hook_fault_tests(
    "openai_agents", "agents",
    "tests.openai_agents.test_hook_faults:program", "mast_otel.integrations.openai_agents:HOOKS",
    fixtures=["session_processors"],
)
