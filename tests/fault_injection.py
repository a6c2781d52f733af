"""Break every recorder entry point at once (shared by every integration's fault-injection tests)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry import context as otel_context

from mast_otel import recorder
from mast_otel._safety import recording_failures, reset_recording_failures

ENTRY_POINTS: tuple[tuple[type, str], ...] = (
    (recorder.Recorder, "start_conversation"),
    (recorder.Recorder, "set_task"),
    (recorder.Recorder, "end_conversation"),
    (recorder.Recorder, "terminate"),
    (recorder.Recorder, "event"),
    (recorder.Recorder, "broadcast_copy"),
    (recorder.Recorder, "start_agent_turn"),
    (recorder.Recorder, "message"),
    (recorder.Recorder, "start_handoff"),
    (recorder.Recorder, "handoff"),
    (recorder.Recorder, "start_tool_call"),
    (recorder.Recorder, "current"),
    (recorder.Conversation, "count_broadcast"),
    (recorder.AgentTurn, "end"),
    (recorder.AgentTurn, "fail"),
    (recorder.AgentTurn, "detach"),
    (recorder.Handoff, "end"),
    (recorder.Handoff, "fail"),
    (recorder.ToolCall, "set_arguments"),
    (recorder.ToolCall, "set_result"),
)


class InjectedFailure(RuntimeError):
    pass


def _raise(*_: Any, **__: Any) -> Any:
    raise InjectedFailure("injected recorder failure")


def break_recorder(monkeypatch: pytest.MonkeyPatch, spare: tuple[str, ...] = ()) -> None:
    """Every entry point (but those named in ``spare``) raises from now on (undone with the monkeypatch)."""
    for owner, name in ENTRY_POINTS:
        if name not in spare:
            monkeypatch.setattr(owner, name, _raise)


# Conversations still open, so every hook inside a run meets a recorder that raises (not only the run's begin).
INSIDE_A_RUN = ("start_conversation", "end_conversation", "current")


@contextmanager
def recorder_broken(spare: tuple[str, ...] = ()) -> Iterator[dict[str, int]]:
    """Inside the block every recorder entry point (but ``spare``) raises; the dict yielded is filled, on
    leaving, with the recording failures counted inside it (``{kind: count}``). Leaving checks the program's
    OpenTelemetry context is what it was."""
    failures: dict[str, int] = {}
    reset_recording_failures()
    before = otel_context.get_current()
    with pytest.MonkeyPatch.context() as monkeypatch:
        break_recorder(monkeypatch, spare)
        try:
            yield failures
        finally:
            failures.update(recording_failures())
            reset_recording_failures()
    # A hook that failed half-way must not leave a span of ours attached to the program's context.
    assert otel_context.get_current() == before, "a recording failure left mast-otel's context attached"


def assert_failures_only_from(failures: dict[str, int], framework: str) -> None:
    """Some recording failures were counted, each in ``framework``'s own hooks (``{framework}.<hook>``)."""
    assert failures and all(kind.startswith(f"{framework}.") for kind in failures), failures
