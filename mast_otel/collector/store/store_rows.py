"""The rows that cross the :class:`~.store.SpanStore` protocol: what the pipeline hands the store and gets back.

Plain frozen values with no behaviour beyond :meth:`Tomb.ids`, so the assembler, the release path and the exporter
can build and read them without knowing which store (or which database) keeps them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LogRow", "NewSegment", "OutRow", "StoredSegment", "Tomb"]


@dataclass(frozen=True, slots=True)
class NewSegment:
    """One Export request's ``ScopeSpans``, as received, about to be held."""

    resource: int
    received: float
    data: bytes  # a serialized ScopeSpans
    exported: bool = False  # a copy went to the outbox at once (passthrough): never export these spans again


@dataclass(frozen=True, slots=True)
class StoredSegment:
    """A held segment read back (after a restart, or to release some of its spans)."""

    id: int
    resource: int
    received: float
    data: bytes
    exported: bool = False


@dataclass(frozen=True, slots=True)
class OutRow:
    """Spans ready for the downstream, labelled: one outbox row."""

    resource: int
    data: bytes  # a serialized ScopeSpans
    spans: int
    id: int = 0  # set when read back


@dataclass(frozen=True, slots=True)
class Tomb:
    """Spans released together. ``unit`` is the conversation key (None: spans outside any conversation)."""

    trace_id: bytes
    span_ids: bytes  # 8-byte ids, concatenated
    at: float
    unit: str | None = None
    conv_ids: str = ""  # comma-separated conversation ids
    verdict: str | None = None  # JSON

    def ids(self) -> set[bytes]:
        b = self.span_ids
        return {b[i : i + 8] for i in range(0, len(b), 8)}


@dataclass(frozen=True, slots=True)
class LogRow:
    """One log record that names a span (trace id + span id), kept for the judge of that span's conversation."""

    trace_id: bytes
    span_id: bytes
    received: float
    data: bytes  # a serialized LogRecord
    owner: str = ""  # whose record it is: tenant and service (what its evidence may tie, .trace_groups)
