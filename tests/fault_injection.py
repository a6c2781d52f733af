"""Break every recorder entry point at once (shared by the AG2 and MetaGPT fault-injection tests)."""

from __future__ import annotations

from typing import Any

import pytest

from mast_otel import recorder

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
