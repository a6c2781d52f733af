"""Carry a team run across an agent runtime the program started itself.

A team's own runtime is started inside the run (see ``_run``), so its tasks inherit the run's context. A runtime
the program created and started earlier runs its message loop in the program's context instead; there the run has
to travel with the messages: each envelope the runtime queues remembers the run it was sent from, and the runtime's
processing of that envelope (a task of its own) runs in that run's context. Only the run travels, never the
sender's agent turn, so a recipient's turn is not mistaken for part of the sender's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from opentelemetry import context as otel_context

from ._state import FAILURES, current_run

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]
_RUN_ATTR = "_mast_otel_run"


def envelopes(recorder: Any) -> Wrapper:
    """``SendMessageEnvelope`` / ``PublishMessageEnvelope`` / ``ResponseMessageEnvelope.__init__``."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
        wrapped(*args, **kwargs)
        run = current_run()
        if run is not None:
            try:
                setattr(instance, _RUN_ATTR, run)
            except Exception:
                FAILURES.record("runtime message")

    return wrapper


def processing(recorder: Any) -> Wrapper:
    """``SingleThreadedAgentRuntime._process_send`` / ``_process_publish`` / ``_process_response``."""

    async def wrapper(wrapped: Callable[..., Awaitable[Any]], instance: Any, args: Any, kwargs: Any) -> Any:
        envelope = args[0] if args else kwargs.get("message_envelope")
        run = getattr(envelope, _RUN_ATTR, None)
        if run is None or run.context is None or current_run() is run:
            return await wrapped(*args, **kwargs)  # the team's own runtime: already in the run's context
        token = otel_context.attach(run.context)
        try:
            return await wrapped(*args, **kwargs)
        finally:
            otel_context.detach(token)

    return wrapper
