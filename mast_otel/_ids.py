"""Ids that draw nothing from the program's randomness.

A program that seeds ``random`` or fixes ``uuid.uuid4``'s sequence (LangGraph's own tests do, to pin message ids)
must get the same values with mast-otel on as without. Both are process-wide streams: a conversation id taken
from ``uuid.uuid4()``, or a span id from the OpenTelemetry SDK's default ``RandomIdGenerator`` (which calls
``random.getrandbits``), shifts every value the program draws after it. So mast-otel takes every id it makes
from ``os.urandom``, which has no state a program can seed or patch.

- :func:`new_conversation_id`: the conversation id when the framework gives none.
- :class:`UrandomIdGenerator`: span and trace ids, for the provider mast-otel installs and for mast-otel's own
  tracer on a provider the program passed in that uses the SDK's default generator (:func:`private_ids`).
"""

from __future__ import annotations

import os

from opentelemetry import trace
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator


def new_conversation_id() -> str:
    """32 hex digits from ``os.urandom`` (the shape ``uuid.uuid4().hex`` had), touching neither ``uuid`` nor
    ``random``."""
    return os.urandom(16).hex()


class UrandomIdGenerator(IdGenerator):
    """Span and trace ids from ``os.urandom``: as random as the SDK's default, with no shared seedable state."""

    def generate_span_id(self) -> int:
        span_id = int.from_bytes(os.urandom(8), "big")
        while span_id == trace.INVALID_SPAN_ID:
            span_id = int.from_bytes(os.urandom(8), "big")
        return span_id

    def generate_trace_id(self) -> int:
        trace_id = int.from_bytes(os.urandom(16), "big")
        while trace_id == trace.INVALID_TRACE_ID:
            trace_id = int.from_bytes(os.urandom(16), "big")
        return trace_id

    def is_trace_id_random(self) -> bool:
        return True


_URANDOM = UrandomIdGenerator()


def private_ids(tracer: trace.Tracer) -> trace.Tracer:
    """Give ``tracer`` (mast-otel's own, fresh from ``get_tracer``) ids from ``os.urandom`` when it would draw them
    from the global ``random`` (an SDK tracer with the SDK's default generator); returns ``tracer``.

    Only this tracer object changes: the SDK hands each ``get_tracer`` call a new ``Tracer`` holding the provider's
    generator, so the program's own spans keep drawing exactly as they did. A generator the program chose (an
    X-Ray one, say) is a decision about its ids, and is kept.
    """
    if type(getattr(tracer, "id_generator", None)) is RandomIdGenerator:
        tracer.id_generator = _URANDOM  # type: ignore[attr-defined]
    return tracer
