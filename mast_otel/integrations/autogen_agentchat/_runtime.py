"""Carry a team run across an agent runtime the program started itself.

A team's own runtime is started inside the run (see ``_run``), so its tasks inherit the run's context. A runtime
the program created and started earlier runs its message loop in the program's context instead. Every agent of a
team is registered under the team's id as its key, and every message between them is addressed with it (the
recipient's key for a send, the topic's source for a publish): the runtime's processing of a message (a task of
its own) then runs in the context of the run that team is in. Only the run travels, never the sender's agent
turn, so a recipient's turn is not mistaken for part of the sender's.
"""

from __future__ import annotations

from typing import Any

from mast_otel.integrations.lifecycle import Call, Traced

from ._state import RunState, attached, current_run

# team id -> the run it is in; a team runs once at a time (autogen refuses a second run while one is going).
RUNS: dict[str, RunState] = {}


def _team_of(envelope: Any) -> str | None:
    address = getattr(envelope, "recipient", None) or getattr(envelope, "topic_id", None)
    key = getattr(address, "key", None) or getattr(address, "source", None)
    return key if isinstance(key, str) else None


def processing(recorder: Any) -> Traced:
    """``SingleThreadedAgentRuntime._process_send`` / ``_process_publish``: handlers run in their team's run."""

    def begin(_: Any, call: Call) -> RunState | None:
        if not RUNS or current_run() is not None:
            return None  # nothing running, or the team's own runtime: already in its run
        team = _team_of(call.get("message_envelope"))
        run = RUNS.get(team) if team is not None else None
        return run if run is not None and run.context is not None else None

    return Traced(
        "autogen_agentchat.runtime", begin, inside=lambda run: attached(run.context), params=("message_envelope",)
    )
