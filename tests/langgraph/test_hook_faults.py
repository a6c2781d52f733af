"""A LangGraph release that renamed a hooked function: every LangGraph hook removed in turn, after and before
LangGraph's import (the tool node's hooks are applied when the program imports it). mast-otel leaves LangGraph
unpatched (all hooks or none, docs/robustness.md), never raises, and the graph gives what it gives without
mast-otel."""

from __future__ import annotations

from typing import Any

import pytest

from tests.langgraph.conftest import SKIP_REASON

pytest.importorskip("langgraph_supervisor", reason=SKIP_REASON)

from opentelemetry.sdk.trace import TracerProvider

import mast_otel
from examples.scripted_openai import ScriptedOpenAI
from mast_otel.integrations.langgraph import HOOKS
from tests.fault_injection import assert_hook_fault_harmless, assert_hook_fault_harmless_before_import


def program() -> list[tuple[str, Any, Any]]:
    """A supervisor handing off to a researcher with a tool, against the scripted server: the graph's messages."""
    from tests.langgraph import scenarios

    task = {"messages": [{"role": "user", "content": scenarios.supervisor_example.TASK}]}
    with ScriptedOpenAI(scenarios.supervisor_example.SCRIPT) as server:
        out = scenarios.supervisor(server.base_url).invoke(task)
    return [(m.type, m.name, m.content) for m in out["messages"]]


@pytest.mark.parametrize("hook", HOOKS, ids=lambda hook: hook.target)
def test_a_missing_hook_after_import_leaves_the_program_alone(hook: Any, tracer_provider: TracerProvider) -> None:
    assert_hook_fault_harmless(
        hook, HOOKS, "langgraph", program, lambda: mast_otel.instrument(tracer_provider=tracer_provider),
        mast_otel.uninstrument,
    )  # fmt: skip


@pytest.mark.parametrize("hook", HOOKS, ids=lambda hook: hook.target)
def test_a_missing_hook_before_import_leaves_the_program_alone(hook: Any) -> None:
    assert_hook_fault_harmless_before_import(
        hook, "langgraph", "langgraph.pregel", "tests.langgraph.test_hook_faults:program",
        "mast_otel.integrations.langgraph:HOOKS",
    )  # fmt: skip
