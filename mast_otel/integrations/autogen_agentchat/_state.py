"""What one team run, one agent turn and one speaker selection carry, and how they travel.

autogen-agentchat runs a team on an agent runtime: the group chat manager and every participant handle messages
in tasks the runtime creates, and tasks copy the context they are created in. The run's state therefore rides in
the OpenTelemetry context next to the recorder's conversation: the runtime is started inside that context, so the
manager and the participants of *this* team find *this* run, whatever else shares the event loop.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context

from mast_otel.recorder import AgentTurn, Conversation, Handoff

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


@contextmanager
def attached(context: Any) -> Iterator[None]:
    """``context`` attached for the block (a run's, a selection's): the ``inside`` of a traced call."""
    token = otel_context.attach(context)
    try:
        yield
    finally:
        otel_context.detach(token)


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
