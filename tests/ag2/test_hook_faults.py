"""A framework release that renamed a hooked method: every AG2 Classic hook removed in turn, after and before
AG2's import. mast-otel leaves AG2 unpatched (all hooks or none, docs/robustness.md), never raises, and the
program runs as it does without mast-otel."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from autogen.io import IOConsole, IOStream

from tests.ag2.scenarios import round_robin_group, scripted_agent
from tests.fault_injection import hook_fault_tests

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class _Printed(IOConsole):
    """AG2's console output, kept: AG2 prints through a logging handler bound to the first ``sys.stdout`` it saw,
    so redirecting ``sys.stdout`` does not catch it; its own IOStream does."""

    def __init__(self) -> None:
        self.text: list[str] = []

    def send(self, message: Any) -> None:
        def keep(*objects: Any, sep: str = " ", end: str = "\n", flush: bool = False) -> None:
            self.text.append(sep.join(map(str, objects)) + end)

        message.print(keep)


def program() -> dict[str, Any]:
    """A round-robin group chat and an async two-agent chat, printing as AG2 does: what AG2 itself recorded."""
    printed = _Printed()
    with IOStream.set_default(printed):
        user, manager, groupchat = round_robin_group({"a": ["x1", "x2"], "b": ["y1 TERMINATE"]}, max_round=6)
        chat = user.initiate_chat(manager, message="hi")
        alice, bob = scripted_agent("alice", ["a1"]), scripted_agent("bob", ["b1"])
        pair = asyncio.run(alice.a_initiate_chat(bob, message="hello", max_turns=2))
    assert printed.text, "AG2 printed the conversation"
    return {
        "group": groupchat.messages, "history": chat.chat_history, "pair": pair.chat_history,
        "printed": _UUID.sub("<run id>", "".join(printed.text)),  # AG2 prints a fresh run id per run
    }  # fmt: skip


# Each hook removed in turn, after and before the import: the program is what it is without mast-otel.
test_hook_missing_after_import, test_hook_missing_before_import = hook_fault_tests(
    "ag2", "autogen",
    "tests.ag2.test_hook_faults:program", "mast_otel.integrations.ag2:HOOKS",
)
