"""An autogen-agentchat release that renamed a hooked method: every hook removed in turn, after and before
autogen-agentchat's import. mast-otel leaves it unpatched (all hooks or none, docs/robustness.md), never raises,
and every team gives what it gives without mast-otel."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.autogen_agentchat.conftest import SKIP_REASON

pytest.importorskip("autogen_agentchat", reason=SKIP_REASON)

from opentelemetry.sdk.trace import TracerProvider

import mast_otel
from examples.scripted_openai import ScriptedOpenAI
from mast_otel.integrations.autogen_agentchat import HOOKS
from tests.fault_injection import assert_hook_fault_harmless, assert_hook_fault_harmless_before_import


def program() -> list[Any]:
    """Each team type once against the scripted server (the hooks cover all of them): autogen's own TaskResult,
    its messages and stop reason."""
    from tests.autogen_agentchat import scenarios as s

    async def teams() -> list[Any]:
        results = []
        for make in (s.round_robin, s.selector, s.swarm, s.graph_flow, s.magentic_one):
            with ScriptedOpenAI(s.SCRIPT) as server:
                result = await make(server.base_url).run(task=s.TASK)
            results.append(([(type(m).__name__, m.source, m.to_text()) for m in result.messages], result.stop_reason))
        return results

    return asyncio.run(teams())


@pytest.mark.parametrize("hook", HOOKS, ids=lambda hook: hook.target)
def test_a_missing_hook_after_import_leaves_the_program_alone(hook: Any, tracer_provider: TracerProvider) -> None:
    assert_hook_fault_harmless(
        hook, HOOKS, "autogen_agentchat", program, lambda: mast_otel.instrument(tracer_provider=tracer_provider),
        mast_otel.uninstrument,
    )  # fmt: skip


@pytest.mark.parametrize("hook", HOOKS, ids=lambda hook: hook.target)
def test_a_missing_hook_before_import_leaves_the_program_alone(hook: Any) -> None:
    assert_hook_fault_harmless_before_import(
        hook, "autogen_agentchat", "autogen_agentchat", "tests.autogen_agentchat.test_hook_faults:program",
        "mast_otel.integrations.autogen_agentchat:HOOKS",
    )  # fmt: skip
