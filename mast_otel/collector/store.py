"""Durable storage: SQLite in WAL mode behind the small :class:`SpanStore` protocol.

Each Export request is written, in one committed transaction, *before* it is acknowledged, so a killed collector
loses nothing it acknowledged. The unit of storage is the request's own ``ScopeSpans`` protobuf, stored as
received (a *segment*): one row per request and scope rather than per span, so persisting costs about what the
request weighs. Spans are addressed by their byte range inside a segment; the assembler keeps those ranges in
memory and the store never decodes a span to store it.

Tables:

- ``resource``: each distinct OTLP Resource (+ schema URL) once.
- ``segment``: held ``ScopeSpans`` blobs, spans waiting for their conversation. A segment is deleted when every
  span in it has been released (the assembler counts what is left in each).
- ``outbox``: ``ScopeSpans`` blobs ready for the downstream, labelled; deleted once the downstream acknowledged.
- ``tomb``: one row per release (a judged conversation, a late span, spans outside any conversation): the span
  ids released, the conversation ids and the verdict. It marks those spans as done in their segments (a restart
  skips them), drops duplicate deliveries, and tells a late span which conversation it belonged to. Kept for
  ``tombstone_ttl`` and never less than the oldest held segment needs.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["NewSegment", "OutRow", "SQLiteStore", "SpanStore", "StoredSegment", "Tomb"]


@dataclass(frozen=True, slots=True)
class NewSegment:
    resource: int
    received: float
    data: bytes  # a serialized ScopeSpans
    exported: bool = False  # a copy went to the outbox at once (passthrough): never export these spans again


@dataclass(frozen=True, slots=True)
class StoredSegment:
    id: int
    resource: int
    received: float
    data: bytes
    exported: bool = False


@dataclass(frozen=True, slots=True)
class OutRow:
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
    ) -> list[int]: ...
    def segment(self, segment_id: int) -> StoredSegment: ...
    def segments(self) -> Iterator[StoredSegment]: ...
    def tombs(self, trace_id: bytes) -> list[Tomb]: ...
    def outbox(self, max_spans: int, max_bytes: int) -> list[OutRow]: ...
    def counts(self) -> tuple[int, int]: ...
    def gc(self, before: float) -> int: ...
    def close(self) -> None: ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS resource (
    id INTEGER PRIMARY KEY, digest BLOB NOT NULL UNIQUE, resource BLOB NOT NULL, schema TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS segment (
    id INTEGER PRIMARY KEY AUTOINCREMENT, resource INTEGER NOT NULL, received REAL NOT NULL,
    exported INTEGER NOT NULL, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT, resource INTEGER NOT NULL, spans INTEGER NOT NULL, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS tomb (
    id INTEGER PRIMARY KEY, trace_id BLOB NOT NULL, unit TEXT, span_ids BLOB NOT NULL, conv_ids TEXT NOT NULL,
    verdict TEXT, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS tomb_trace ON tomb(trace_id);
CREATE INDEX IF NOT EXISTS tomb_at ON tomb(at);
"""


class _TraceFilter:
    """ "May this trace have tombstones?", answered from memory: two generations of a Bloom filter.

    Most spans belong to traces nothing was released from yet; this spares their tombstone lookup (a query per
    trace per request). False positives cost a query; there are no false negatives: a generation is dropped only
    once garbage collection removed every tombstone written while it was current.
    """

    _BITS = 1 << 24  # 2 MiB per generation; ~1e-4 false positives at 100k traces

    def __init__(self) -> None:
        self._cur = bytearray(self._BITS // 8)
        self._prev = bytearray(self._BITS // 8)
        self._cur_since = float("-inf")  # the oldest tombstone time the current generation may hold
        self._latest = float("-inf")

    def _positions(self, trace_id: bytes) -> tuple[int, int]:
        h = hashlib.blake2b(trace_id, digest_size=8).digest() if len(trace_id) < 16 else trace_id
        mask = self._BITS - 1
        return int.from_bytes(h[0:4], "little") & mask, int.from_bytes(h[4:8], "little") & mask

    def add(self, trace_id: bytes, at: float) -> None:
        for p in self._positions(trace_id):
            self._cur[p >> 3] |= 1 << (p & 7)
        self._latest = max(self._latest, at)

    def may_have(self, trace_id: bytes) -> bool:
        a, b = self._positions(trace_id)
        for bits in (self._cur, self._prev):
            if bits[a >> 3] & (1 << (a & 7)) and bits[b >> 3] & (1 << (b & 7)):
                return True
        return False

    def collected(self, horizon: float) -> None:
        """Every tombstone older than ``horizon`` is gone: rotate when that covers the previous generation."""
        if horizon > self._cur_since:
            self._prev, self._cur = self._cur, bytearray(self._BITS // 8)
            self._cur_since = self._latest


class SQLiteStore:
    """:class:`SpanStore` on one SQLite connection (WAL; ``:memory:`` for tests), serialized by a lock.

    ``sync="normal"`` makes a commit durable against a killed process (it is in the WAL file); ``"full"``
    also against power loss, at one fsync per commit.
    """

    def __init__(self, path: str, *, sync: str = "normal") -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={'FULL' if sync == 'full' else 'NORMAL'}")
        self._db.execute("PRAGMA temp_store=MEMORY")
        self._db.execute("PRAGMA cache_size=-16384")
        self._db.execute("PRAGMA journal_size_limit=67108864")
        self._db.executescript(_SCHEMA)
        # Checkpoints (copying the WAL into the database) would cost every Nth Export about half its time; a
        # second connection does them in the background instead (PASSIVE: never blocks the writer).
        self._stop = threading.Event()
        self._checkpointer: threading.Thread | None = None
        if path != ":memory:" and not path.startswith("file::memory:"):
            self._db.execute("PRAGMA wal_autocheckpoint=0")
            self._checkpointer = threading.Thread(target=self._checkpoint_loop, name="sqlite-checkpoint", daemon=True)
            self._checkpointer.start()
        self._resources: dict[bytes, int] = {
            bytes(d): int(i) for i, d in self._db.execute("SELECT id, digest FROM resource")
        }
        self._resource_rows: dict[int, tuple[bytes, str]] = {}
        seg_bytes = self._db.execute("SELECT total(length(data)) FROM segment").fetchone()[0]
        out_spans, out_bytes = self._db.execute("SELECT total(spans), total(length(data)) FROM outbox").fetchone()
        self._queued = int(out_spans)
        self._filter = _TraceFilter()
        for trace_id, at in self._db.execute("SELECT trace_id, at FROM tomb"):
            self._filter.add(bytes(trace_id), float(at))
        self._bytes = int(seg_bytes) + int(out_bytes)

    # -- resources -----------------------------------------------------------------------------------------------
    def resource_id(self, resource: bytes, schema: str) -> int:
        digest = hashlib.blake2b(resource + b"\x00" + schema.encode(), digest_size=16).digest()
        found = self._resources.get(digest)
        if found is not None:
            return found
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO resource (digest, resource, schema) VALUES (?,?,?)", (digest, resource, schema)
            )
            (row_id,) = self._db.execute("SELECT id FROM resource WHERE digest = ?", (digest,)).fetchone()
            self._resources[digest] = int(row_id)
            self._resource_rows[int(row_id)] = (resource, schema)
            return int(row_id)

    def resource(self, resource_id: int) -> tuple[bytes, str]:
        found = self._resource_rows.get(resource_id)
        if found is not None:
            return found
        with self._lock:
            row = self._db.execute("SELECT resource, schema FROM resource WHERE id = ?", (resource_id,)).fetchone()
        if row is None:
            raise KeyError(f"resource {resource_id} is not in the store")
        found = (bytes(row[0]), str(row[1]))
        self._resource_rows[resource_id] = found
        return found

    # -- the one write path ----------------------------------------------------------------------------------------
    def write(
        self,
        *,
        segments: Sequence[NewSegment] = (),
        outbox: Sequence[OutRow] = (),
        tombs: Sequence[Tomb] = (),
        drop_segments: Sequence[int] = (),
        drop_outbox: Sequence[int] = (),
    ) -> list[int]:
        """Insert and delete in one transaction; returns the new segment ids, in order."""
        ids: list[int] = []
        with self._lock:
            cur = self._db.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                for s in segments:
                    cur.execute(
                        "INSERT INTO segment (resource, received, exported, data) VALUES (?,?,?,?)",
                        (s.resource, s.received, s.exported, s.data),
                    )
                    ids.append(int(cur.lastrowid or 0))
                for o in outbox:
                    cur.execute(
                        "INSERT INTO outbox (resource, spans, data) VALUES (?,?,?)", (o.resource, o.spans, o.data)
                    )
                for t in tombs:
                    cur.execute(
                        "INSERT INTO tomb (trace_id, unit, span_ids, conv_ids, verdict, at) VALUES (?,?,?,?,?,?)",
                        (t.trace_id, t.unit, t.span_ids, t.conv_ids, t.verdict, t.at),
                    )
                freed = 0
                for sid in drop_segments:
                    row = cur.execute("DELETE FROM segment WHERE id = ? RETURNING length(data)", (sid,)).fetchone()
                    freed += int(row[0]) if row else 0
                unqueued = 0
                for oid in drop_outbox:
                    row = cur.execute(
                        "DELETE FROM outbox WHERE id = ? RETURNING spans, length(data)", (oid,)
                    ).fetchone()
                    if row:
                        unqueued += int(row[0])
                        freed += int(row[1])
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            for t in tombs:
                self._filter.add(t.trace_id, t.at)
            self._bytes += sum(len(s.data) for s in segments) + sum(len(o.data) for o in outbox) - freed
            self._queued += sum(o.spans for o in outbox) - unqueued
        return ids

    # -- reads -----------------------------------------------------------------------------------------------------
    def segment(self, segment_id: int) -> StoredSegment:
        with self._lock:
            row = self._db.execute(
                "SELECT resource, received, data, exported FROM segment WHERE id = ?", (segment_id,)
            ).fetchone()
        if row is None:
            raise KeyError(f"segment {segment_id} is not in the store")
        return StoredSegment(segment_id, int(row[0]), float(row[1]), bytes(row[2]), bool(row[3]))

    def segments(self) -> Iterator[StoredSegment]:
        """Every held segment, oldest first (what a restarted collector reloads)."""
        with self._lock:
            ids = [int(r[0]) for r in self._db.execute("SELECT id FROM segment ORDER BY id")]
        for sid in ids:
            yield self.segment(sid)

    def tombs(self, trace_id: bytes) -> list[Tomb]:
        if not self._filter.may_have(trace_id):
            return []
        with self._lock:
            rows = self._db.execute(
                "SELECT span_ids, at, unit, conv_ids, verdict FROM tomb WHERE trace_id = ?", (trace_id,)
            ).fetchall()
        return [Tomb(trace_id, bytes(r[0]), float(r[1]), r[2], r[3], r[4]) for r in rows]

    def outbox(self, max_spans: int, max_bytes: int) -> list[OutRow]:
        """Oldest outbox rows up to ``max_spans`` spans and about ``max_bytes`` (always at least one row)."""
        out: list[OutRow] = []
        spans = size = 0
        with self._lock:
            cur = self._db.execute("SELECT id, resource, spans, data FROM outbox ORDER BY id")
            for oid, rid, n, data in cur:
                if out and (spans + n > max_spans or size + len(data) > max_bytes):
                    break
                out.append(OutRow(int(rid), bytes(data), int(n), int(oid)))
                spans += n
                size += len(data)
            cur.close()
        return out

    def counts(self) -> tuple[int, int]:
        """(spans queued for the downstream, bytes not yet exported: held segments + outbox)."""
        return self._queued, self._bytes

    def gc(self, before: float) -> int:
        """Forget tombstones older than ``before``, but never one a held segment may still need."""
        with self._lock:
            oldest = self._db.execute("SELECT min(received) FROM segment").fetchone()[0]
            horizon = before if oldest is None else min(before, float(oldest) - 1.0)
            removed = int(self._db.execute("DELETE FROM tomb WHERE at < ?", (horizon,)).rowcount)
            self._filter.collected(horizon)
            return removed

    def _checkpoint_loop(self, interval: float = 0.5) -> None:
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=5)
        try:
            while not self._stop.wait(interval):
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error:
                    pass  # busy or locked: the next round catches up
        finally:
            db.close()

    def close(self) -> None:
        self._stop.set()
        if self._checkpointer is not None:
            self._checkpointer.join(5)
        with self._lock:
            try:
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:
                pass
            self._db.close()
