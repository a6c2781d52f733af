"""What one team run, one agent turn and one speaker selection carry, and how they travel.

autogen-agentchat runs a team on an agent runtime: the group chat manager and every participant handle messages
in tasks the runtime creates, and tasks copy the context they are created in. The run's state therefore rides in
the OpenTelemetry context next to the recorder's conversation: the runtime is started inside that context, so the
manager and the participants of *this* team find *this* run, whatever else shares the event loop.
"""

from __future__ import annotations

import logging
import sys
import threading
import traceback
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context

from mast_otel.recorder import AgentTurn, Conversation, Handoff

_log = logging.getLogger("mast_otel.integrations.autogen_agentchat")

RUN_KEY = otel_context.create_key("mast-otel-autogen-run")
TURN_KEY = otel_context.create_key("mast-otel-autogen-turn")
SELECTION_KEY = otel_context.create_key("mast-otel-autogen-selection")


@dataclass(eq=False)
class RunState:
    """One ``run_stream`` of one team: its conversation and what its manager learns along the way."""

    conversation: Conversation
    team_type: str
    manager_name: str
    participants: tuple[str, ...]
    fired: list[str] = field(default_factory=list)  # stop-condition classes that returned a StopMessage
    edges: dict[str, list[str]] = field(default_factory=dict)  # graph target -> satisfied edges into it
    context: Any = None  # the OpenTelemetry context the run's work runs in (its conversation, this state)


@dataclass(eq=False)
class TurnState:
    """One participant activation: the events that belong to its next chat message rather than being messages."""

    agent: str
    turn: AgentTurn
    tool_calls: list[dict[str, str]] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    chunks: int = 0


@dataclass(eq=False)
class Selection:
    """One speaker selection in progress: the handoff it opened and what the selector said."""

    handoff: Handoff | None
    source: str
    answers: list[str] = field(default_factory=list)  # a selector LLM's raw answer per attempt
    ledger: dict[str, Any] | None = None  # Magentic-One's progress ledger, as parsed


def current_run() -> RunState | None:
    run = otel_context.get_value(RUN_KEY)
    return run if isinstance(run, RunState) else None


def current_turn() -> TurnState | None:
    turn = otel_context.get_value(TURN_KEY)
    return turn if isinstance(turn, TurnState) else None


def current_selection() -> Selection | None:
    selection = otel_context.get_value(SELECTION_KEY)
    return selection if isinstance(selection, Selection) else None


class Failures:
    """Recording failures: counted, logged once, never raised (instrumentation must not change the program)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def record(self, where: str) -> None:
        """Call from an ``except`` block. Logs the exception's type and where it was raised, never its text
        (an exception about a message may quote the message)."""
        with self._lock:
            self.count += 1
            first = self.count == 1
        if first:
            exc = sys.exc_info()[1]
            frames = traceback.extract_tb(exc.__traceback__) if exc is not None else []
            at = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
            _log.warning(
                "mast-otel could not record an autogen-agentchat %s (%s at %s); counting further failures",
                where,
                type(exc).__name__,
                at,
            )


FAILURES = Failures()
