"""Carry a team run across an agent runtime the program started itself.

A team's own runtime is started inside the run (see ``_run``), so its tasks inherit the run's context. A runtime
the program created and started earlier runs its message loop in the program's context instead. Every agent of a
team is registered under the team's id as its key, and every message between them is addressed with it (the
recipient's key for a send, the topic's source for a publish): the runtime's processing of a message (a task of
its own) then runs in the context of the run that team is in. Only the run travels, never the sender's agent
turn, so a recipient's turn is not mistaken for part of the sender's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from opentelemetry import context as otel_context

from ._state import RunState, current_run

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]

# team id -> the run it is in; a team runs once at a time (autogen refuses a second run while one is going).
RUNS: dict[str, RunState] = {}


def _team_of(envelope: Any) -> str | None:
    address = getattr(envelope, "recipient", None) or getattr(envelope, "topic_id", None)
    key = getattr(address, "key", None) or getattr(address, "source", None)
    return key if isinstance(key, str) else None


def processing(recorder: Any) -> Wrapper:
    """``SingleThreadedAgentRuntime._process_send`` / ``_process_publish``: handlers run in their team's run."""

    async def wrapper(wrapped: Callable[..., Awaitable[Any]], instance: Any, args: Any, kwargs: Any) -> Any:
        if not RUNS or current_run() is not None:
            return await wrapped(*args, **kwargs)  # nothing running, or the team's own runtime: already in its run
        team = _team_of(args[0] if args else kwargs.get("message_envelope"))
        run = RUNS.get(team) if team is not None else None
        if run is None or run.context is None:
            return await wrapped(*args, **kwargs)
        token = otel_context.attach(run.context)
        try:
            return await wrapped(*args, **kwargs)
        finally:
            otel_context.detach(token)

    return wrapper
