"""An AG2 1.x release that renamed a hooked method: each hook removed in turn, after and before AG2's import.
mast-otel leaves AG2 1.x unpatched (all hooks or none, docs/robustness.md), never raises, and the triage run gives
what it gives without mast-otel."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.ag2_1x.conftest import SKIP_REASON

pytest.importorskip("ag2.network", reason=SKIP_REASON)

from opentelemetry.sdk.trace import TracerProvider

import mast_otel
from mast_otel.integrations.ag2_1x import HOOKS
from tests.fault_injection import assert_hook_fault_harmless, assert_hook_fault_harmless_before_import


def program() -> dict[str, Any]:
    """The triage example on AG2's scripted model: AG2's own write-ahead log of the channel (messages, routing,
    how it closed)."""
    from tests.ag2_1x.test_lifecycle import triage_record

    record = asyncio.run(triage_record())
    return {
        "messages": [(m.sender, m.recipients, m.text, m.routing) for m in record.messages],
        "closed": (record.close_kind, record.close_reason),
    }


@pytest.mark.parametrize("hook", HOOKS, ids=lambda hook: hook.target)
def test_a_missing_hook_after_import_leaves_the_program_alone(hook: Any, tracer_provider: TracerProvider) -> None:
    assert_hook_fault_harmless(
        hook, HOOKS, "ag2_1x", program, lambda: mast_otel.instrument(tracer_provider=tracer_provider),
        mast_otel.uninstrument,
    )  # fmt: skip


@pytest.mark.parametrize("hook", HOOKS, ids=lambda hook: hook.target)
def test_a_missing_hook_before_import_leaves_the_program_alone(hook: Any) -> None:
    assert_hook_fault_harmless_before_import(
        hook, "ag2_1x", "ag2", "tests.ag2_1x.test_hook_faults:program", "mast_otel.integrations.ag2_1x:HOOKS"
    )
