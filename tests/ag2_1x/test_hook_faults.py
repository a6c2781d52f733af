"""An AG2 1.x release that renamed a hooked method: each hook removed in turn, after and before AG2's import.
mast-otel leaves AG2 1.x unpatched (all hooks or none, docs/robustness.md), never raises, and the triage run gives
what it gives without mast-otel."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.ag2_1x.conftest import SKIP_REASON

pytest.importorskip("ag2.network", reason=SKIP_REASON)


from tests.fault_injection import hook_fault_tests


def program() -> dict[str, Any]:
    """The triage example on AG2's scripted model: AG2's own write-ahead log of the channel (messages, routing,
    how it closed)."""
    from tests.ag2_1x.test_lifecycle import triage_record

    record = asyncio.run(triage_record())
    return {
        "messages": [(m.sender, m.recipients, m.text, m.routing) for m in record.messages],
        "closed": (record.close_kind, record.close_reason),
    }


# Each hook removed in turn, after and before the import: the program is what it is without mast-otel.
test_hook_missing_after_import, test_hook_missing_before_import = hook_fault_tests(
    "ag2_1x", "ag2",
    "tests.ag2_1x.test_hook_faults:program", "mast_otel.integrations.ag2_1x:HOOKS",
)
