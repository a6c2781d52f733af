"""A LangGraph release that renamed a hooked function: every LangGraph hook removed in turn, after and before
LangGraph's import (the tool node's hooks are applied when the program imports it). mast-otel leaves LangGraph
unpatched (all hooks or none, docs/robustness.md), never raises, and the graph gives what it gives without
mast-otel."""

from __future__ import annotations

from typing import Any

import pytest

from tests.langgraph.conftest import SKIP_REASON

pytest.importorskip("langgraph_supervisor", reason=SKIP_REASON)


from examples.scripted_openai import ScriptedOpenAI
from tests.fault_injection import hook_fault_tests


def program() -> list[tuple[str, Any, Any]]:
    """A supervisor handing off to a researcher with a tool, against the scripted server: the graph's messages."""
    from tests.langgraph import scenarios

    task = {"messages": [{"role": "user", "content": scenarios.supervisor_example.TASK}]}
    with ScriptedOpenAI(scenarios.supervisor_example.SCRIPT) as server:
        out = scenarios.supervisor(server.base_url).invoke(task)
    return [(m.type, m.name, m.content) for m in out["messages"]]


# Each hook removed in turn, after and before the import: the program is what it is without mast-otel.
test_hook_missing_after_import, test_hook_missing_before_import = hook_fault_tests(
    "langgraph", "langgraph.pregel",
    "tests.langgraph.test_hook_faults:program", "mast_otel.integrations.langgraph:HOOKS",
)
