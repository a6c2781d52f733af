"""Durable storage: what the rest of the collector sees of it, the small :class:`SpanStore` protocol.

Each Export request is written, in one committed transaction, *before* it is acknowledged, so a killed collector
loses nothing it acknowledged. The unit of storage is the request's own ``ScopeSpans`` protobuf, stored as
received (a *segment*): one row per request and scope rather than per span, so persisting costs about what the
request weighs. Spans are addressed by their byte range inside a segment; the assembler keeps those ranges in
memory and the store never decodes a span to store it. A release writes its labelled spans to the outbox, a
tombstone naming the spans it released (with the verdict) and the deletion of the segments it emptied, in one
transaction; the exporter deletes outbox rows once the downstream acknowledged them.

Every name the collector and its tests import is importable from here; the work is done in modules of one job
each:

- :mod:`.store_rows`: the rows that cross the protocol (:class:`NewSegment`, :class:`StoredSegment`,
  :class:`OutRow`, :class:`Tomb`, :class:`LogRow`).
- :mod:`.sqlite_store`: :class:`SQLiteStore`, every statement against the tables and the counts kept of them.
- :mod:`.store_schema`: the tables, the connection settings, :class:`StoreError` for a file that is not a store.
- :mod:`.wal_checkpointer`: WAL checkpoints on a background thread, off the Export path.
- :mod:`.resource_cache`: recently used ``resource`` rows, both ways.
- :mod:`.trace_filter`: a two-generation Bloom filter answering "may this trace have tombstones?" from memory.
- :mod:`.verdicts`: the verdict journal (``STORE.verdicts``), so a conversation is judged (billed) at most once.
- :mod:`.disk_full` and :mod:`.disk_reserve`: disk-full mode (ingest refuses, delivery goes on in the space the
  reserve file frees) and the reserve files themselves.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from mast_otel.collector.store.sqlite_store import DELIVERY_ROOM, SQLiteStore
from mast_otel.collector.store.store_rows import LogRow, NewSegment, OutRow, StoredSegment, Tomb
from mast_otel.collector.store.store_schema import StoreError

__all__ = [
    "DELIVERY_ROOM", "LogRow", "NewSegment", "OutRow", "SQLiteStore", "SpanStore", "StoreError", "StoredSegment",
    "Tomb",
]  # fmt: skip


class SpanStore(Protocol):
    """Where spans wait. Methods are thread-safe; :meth:`write` is one committed transaction."""

    def resource_id(self, resource: bytes, schema: str) -> int: ...
    def resource(self, resource_id: int) -> tuple[bytes, str]: ...
    def write(
        self,
        *,
        segments: Sequence[NewSegment] = (),
        outbox: Sequence[OutRow] = (),
        tombs: Sequence[Tomb] = (),
        drop_segments: Sequence[int] = (),
        drop_outbox: Sequence[int] = (),
        log_outbox: Sequence[OutRow] = (),
        log_records: Sequence[LogRow] = (),
        drop_log_outbox: Sequence[int] = (),
    ) -> list[int]: ...
    def segment(self, segment_id: int) -> StoredSegment: ...
    def segments(self) -> Iterator[StoredSegment]: ...
    def tombs(self, trace_id: bytes) -> list[Tomb]: ...
    def outbox(self, max_spans: int, max_bytes: int) -> list[OutRow]: ...
    def log_outbox(self, max_records: int, max_bytes: int) -> list[OutRow]: ...
    def log_records(self, trace_id: bytes) -> list[LogRow]: ...

    def all_log_records(self) -> Iterator[LogRow]: ...
    def counts(self) -> tuple[int, int]: ...
    def oldest_held(self) -> float | None: ...
    def gc(self, before: float) -> int: ...
    def quarantine(self, segment_ids: Sequence[int], stage: str, reason: str) -> int: ...
    def save_verdict(self, trace_id: bytes, unit: str, verdict: str, at: float) -> None: ...
    def claim_verdict(self, trace_id: bytes, unit: str, at: float) -> None: ...
    def verdict(self, trace_id: bytes, unit: str) -> str | None: ...
    @property
    def log_queued(self) -> int: ...
    @property
    def disk_full(self) -> bool: ...
    @property
    def tight(self) -> bool: ...
    def room_to_release(self, size: int = 0) -> bool: ...
    def reclaim(self) -> bool: ...
    def close(self) -> None: ...
