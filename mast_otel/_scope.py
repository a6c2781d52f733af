"""Where the recorder keeps its state in the OpenTelemetry context: the open conversation, the kind of scope
the current span opened, and the suppression flag.

The context (contextvars) rather than a thread-local or a global, so asyncio tasks and threads started with
``contextvars.copy_context()`` see the conversation and the parent span of the code that started them.
"""

from __future__ import annotations

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span

__all__ = [
    "CONVERSATION_KEY",
    "SCOPE_CONVERSATION",
    "SCOPE_KEY",
    "SCOPE_TOOL",
    "SCOPE_TURN",
    "SUPPRESS_KEY",
    "Suppressed",
    "attach_scope",
    "detach",
]

CONVERSATION_KEY = otel_context.create_key("mast-otel-conversation")
SCOPE_KEY = otel_context.create_key("mast-otel-scope")
SUPPRESS_KEY = otel_context.create_key("mast-otel-suppress")
SCOPE_CONVERSATION = "conversation"
SCOPE_TURN = "turn"
SCOPE_TOOL = "tool"


class Suppressed:
    """``Recorder.suppressed()``: a plain class, cheaper than a generator context manager on every selection."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = otel_context.attach(otel_context.set_value(SUPPRESS_KEY, True))

    def __exit__(self, *exc_info: object) -> None:
        detach(self._token)


def attach_scope(span: Span, scope: str, context: Context | None = None) -> object:
    """Make ``span`` current in ``context`` (default: the current one), marked as opening ``scope`` (what a
    conversation started inside it joins or nests under); returns the token to detach."""
    return otel_context.attach(trace.set_span_in_context(span, otel_context.set_value(SCOPE_KEY, scope, context)))


def detach(token: object | None) -> None:
    if token is None:
        return
    try:
        otel_context.detach(token)  # type: ignore[arg-type]
    except Exception:  # a token from another context (cancelled async generator): nothing left to restore
        pass
