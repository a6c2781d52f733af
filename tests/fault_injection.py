"""Break every recorder entry point at once (shared by every integration's fault-injection tests)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from mast_otel import recorder
from mast_otel._safety import recording_failures, reset_recording_failures

ENTRY_POINTS: tuple[tuple[type, str], ...] = (
    (recorder.Recorder, "start_conversation"),
    (recorder.Recorder, "end_conversation"),
    (recorder.Recorder, "terminate"),
    (recorder.Recorder, "start_agent_turn"),
    (recorder.Recorder, "message"),
    (recorder.Recorder, "start_handoff"),
    (recorder.Recorder, "handoff"),
    (recorder.Recorder, "start_tool_call"),
    (recorder.Recorder, "current"),
    (recorder.Conversation, "count_broadcast"),
    (recorder.AgentTurn, "end"),
    (recorder.AgentTurn, "fail"),
    (recorder.Handoff, "end"),
    (recorder.ToolCall, "set_result"),
)


class InjectedFailure(RuntimeError):
    pass


def _raise(*_: Any, **__: Any) -> Any:
    raise InjectedFailure("injected recorder failure")


def break_recorder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every entry point raises from now on (undone with the monkeypatch)."""
    for owner, name in ENTRY_POINTS:
        monkeypatch.setattr(owner, name, _raise)


@contextmanager
def recorder_broken() -> Iterator[dict[str, int]]:
    """Inside the block every recorder entry point raises; the dict yielded is filled, on leaving, with the
    recording failures counted inside it (``{kind: count}``)."""
    failures: dict[str, int] = {}
    reset_recording_failures()
    with pytest.MonkeyPatch.context() as monkeypatch:
        break_recorder(monkeypatch)
        try:
            yield failures
        finally:
            failures.update(recording_failures())
            reset_recording_failures()
