"""An autogen-agentchat release that renamed a hooked method: every hook removed in turn, after and before
autogen-agentchat's import. mast-otel leaves it unpatched (all hooks or none, docs/robustness.md), never raises,
and every team gives what it gives without mast-otel."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tests.autogen_agentchat.conftest import SKIP_REASON

pytest.importorskip("autogen_agentchat", reason=SKIP_REASON)


from examples.scripted_openai import ScriptedOpenAI
from tests.fault_injection import hook_fault_tests

_BOUND = 6.0  # seconds; a scripted team run takes well under one


def _bounded(make: Any, base_url: str, task: str) -> Any:
    """One team run on an event loop of its own thread, given ``_BOUND`` seconds: a team whose framework lost a
    method it needs can wait forever, cancellation included (with or without mast-otel), and then its outcome is
    "hung" (the thread is left behind, a daemon)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            result = asyncio.run(make(base_url).run(task=task))
            box["result"] = ([(type(m).__name__, m.source, m.to_text()) for m in result.messages], result.stop_reason)
        except Exception as exc:
            box["result"] = ("raised", type(exc).__qualname__, str(exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(_BOUND)
    return box.get("result", "hung")


def program() -> list[Any]:
    """Each team type once against the scripted server (the hooks cover all of them): autogen's own TaskResult,
    its messages and stop reason (or what the run raised). After a team hangs the rest are not run (a framework
    that lost that method hangs them all, and each hang costs the whole bound), and say so: the same outcome is
    required with and without mast-otel, so a team that hangs only with mast-otel still fails the comparison."""
    from tests.autogen_agentchat import scenarios as s

    results: list[Any] = []
    for make in (s.round_robin, s.selector, s.swarm, s.graph_flow, s.magentic_one):
        if "hung" in results:
            results.append("not run: an earlier team hung")
            continue
        with ScriptedOpenAI(s.SCRIPT) as server:
            results.append(_bounded(make, server.base_url, s.TASK))
    return results


# Each hook removed in turn, after and before the import: the program is what it is without mast-otel.
test_hook_missing_after_import, test_hook_missing_before_import = hook_fault_tests(
    "autogen_agentchat", "autogen_agentchat",
    "tests.autogen_agentchat.test_hook_faults:program", "mast_otel.integrations.autogen_agentchat:HOOKS",
)
