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
- (not a table) ``STORE.verdicts``: verdicts reached but not yet written with their release (see
  :mod:`.verdicts`), so a crash in between never judges (or bills) the conversation twice.
- ``quarantine``: segments that could not be read back (a corrupted row), set aside with the reason instead of
  being retried forever; they are counted and logged, and stay for an operator to inspect.

A full disk: a reserve file (``STORE.reserve``, ``reserve`` bytes) is kept next to the database. When a write
fails for lack of space the reserve is given up and :attr:`SQLiteStore.disk_full` is set: ingest refuses (the
receivers answer retryable errors) while releases and exports go on in the freed space, emptying the store;
:meth:`SQLiteStore.reclaim` gives the freed pages back to the file system and takes the reserve again.

About 490 lines: the schema and every statement against it stay in one place (a reader checking what one
transaction writes needs all of them); the reserve file (:mod:`.disk_reserve`), the trace filter
(:mod:`.trace_filter`) and the verdict journal (:mod:`.verdicts`) are modules of their own.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from .disk_reserve import DiskReserve, ReserveTooSmall
from .trace_filter import TraceFilter
from .verdicts import VerdictJournal

__all__ = ["NewSegment", "OutRow", "SQLiteStore", "SpanStore", "StoreError", "StoredSegment", "Tomb"]

_log = logging.getLogger(__name__)
_RESOURCE_CACHE = 4096


class StoreError(Exception):
    """The store file cannot be opened or read (corrupt, not a database, unreadable): one line for the operator."""


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and "full" in str(exc)


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
    def quarantine(self, segment_ids: Sequence[int], stage: str, reason: str) -> int: ...
    def save_verdict(self, trace_id: bytes, unit: str, verdict: str, at: float) -> None: ...
    def claim_verdict(self, trace_id: bytes, unit: str, at: float) -> None: ...
    def verdict(self, trace_id: bytes, unit: str) -> str | None: ...
    @property
    def disk_full(self) -> bool: ...
    def reclaim(self) -> bool: ...
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
CREATE TABLE IF NOT EXISTS quarantine (
    id INTEGER PRIMARY KEY, segment INTEGER NOT NULL, at REAL NOT NULL, stage TEXT NOT NULL, reason TEXT NOT NULL,
    resource BLOB, data BLOB);
"""


class SQLiteStore:
    """:class:`SpanStore` on one SQLite connection (WAL; ``:memory:`` for tests), serialized by a lock.

    ``sync="normal"`` makes a commit durable against a killed process (it is in the WAL file); ``"full"``
    also against power loss, at one fsync per commit.
    """

    def __init__(self, path: str, *, sync: str = "normal", reserve: int = 0) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._memory = path == ":memory:" or path.startswith("file::memory:")
        self._reserve = DiskReserve(None if self._memory else path, reserve)
        self._full = False
        try:
            self._open(sync)
        except sqlite3.OperationalError as exc:
            if not is_disk_full(exc) or not (self._give_up_reserve() or self._give_up_open_reserve()):
                raise StoreError(f"cannot open the store {path}: {exc}") from None
            try:
                self._open(sync)  # the reserve's space lets the store open; it starts in disk-full mode
            except sqlite3.OperationalError as again:
                if not is_disk_full(again) or not self._give_up_open_reserve():
                    raise StoreError(f"cannot open the store {path}: {again}") from None
                self._open(sync)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open the store {path}: {exc} (move the file away to start empty)") from None
        if not self._full:
            try:
                self._full = not self._reserve.fit(holding=self._bytes > 0)
            except ReserveTooSmall as exc:
                self.close()
                raise StoreError(f"cannot set aside a reserve for the store {path}: {exc}") from None

    def _open(self, sync: str) -> None:
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA auto_vacuum=INCREMENTAL")  # new files only: lets reclaim() shrink the file
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
        if not self._memory:
            self._db.execute("PRAGMA wal_autocheckpoint=0")
            self._checkpointer = threading.Thread(target=self._checkpoint_loop, name="sqlite-checkpoint", daemon=True)
            self._checkpointer.start()
        self._resources: OrderedDict[bytes, int] = OrderedDict()
        self._resource_rows: OrderedDict[int, tuple[bytes, str]] = OrderedDict()
        seg_bytes = self._db.execute("SELECT total(length(data)) FROM segment").fetchone()[0]
        out_spans, out_bytes = self._db.execute("SELECT total(spans), total(length(data)) FROM outbox").fetchone()
        self._queued = int(out_spans)
        self._filter = TraceFilter()
        for trace_id, at in self._db.execute("SELECT trace_id, at FROM tomb"):
            self._filter.add(bytes(trace_id), float(at))
        self._bytes = int(seg_bytes) + int(out_bytes)
        self._verdicts = VerdictJournal(None if self._memory else self.path + ".verdicts")

    # -- disk space ----------------------------------------------------------------------------------------------
    @property
    def disk_full(self) -> bool:
        return self._full

    def _give_up_open_reserve(self) -> bool:
        """Opening the store failed on a full disk with the main reserve already spent: free the opening reserve."""
        self._full = True
        return self._reserve.give_up_open()

    def _give_up_reserve(self) -> bool:
        """The disk is full: free the reserve so releases and exports can proceed. False if there was none."""
        held = self._reserve.held
        if not self._full:
            if held:
                _log.error("the store's disk is full: refusing new spans (retryable) and delivering the stored "
                           "ones using the %d-byte reserve; free disk space or restore the downstream",
                           self._reserve.size)  # fmt: skip
            else:
                _log.error("the store's disk is full and there is no reserve to give up (store_reserve=0 or spent): "
                           "refusing new spans (retryable); stored spans are delivered as space allows")  # fmt: skip
        self._full = True
        return self._reserve.give_up()

    def reclaim(self) -> bool:
        """While the disk is full: return freed pages to the file system, then retake the reserve once twice its
        size is free again (so new spans have room). True when the store accepts spans again."""
        if not self._full:
            return True
        with self._lock:
            try:
                self._db.execute("PRAGMA incremental_vacuum").fetchall()
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlite3.Error:
                return False
        if self._reserve.path is not None and not (self._reserve.room_to_retake() and self._reserve.take()):
            return False
        self._full = False
        _log.info("the store's disk has room again; accepting spans")
        return True

    # -- resources -----------------------------------------------------------------------------------------------
    def resource_id(self, resource: bytes, schema: str) -> int:
        digest = hashlib.blake2b(resource + b"\x00" + schema.encode(), digest_size=16).digest()
        with self._lock:
            found = self._resources.get(digest)
            if found is not None:
                self._resources.move_to_end(digest)
                return found
            self._db.execute(
                "INSERT OR IGNORE INTO resource (digest, resource, schema) VALUES (?,?,?)", (digest, resource, schema)
            )
            (row_id,) = self._db.execute("SELECT id FROM resource WHERE digest = ?", (digest,)).fetchone()
            self._remember(digest, int(row_id), (resource, schema))
            return int(row_id)

    def _remember(self, digest: bytes | None, row_id: int, row: tuple[bytes, str]) -> None:
        if digest is not None:
            self._resources[digest] = row_id
            while len(self._resources) > _RESOURCE_CACHE:
                self._resources.popitem(last=False)
        self._resource_rows[row_id] = row
        while len(self._resource_rows) > _RESOURCE_CACHE:
            self._resource_rows.popitem(last=False)

    def resource(self, resource_id: int) -> tuple[bytes, str]:
        with self._lock:
            found = self._resource_rows.get(resource_id)
            if found is not None:
                self._resource_rows.move_to_end(resource_id)
                return found
            row = self._db.execute("SELECT resource, schema FROM resource WHERE id = ?", (resource_id,)).fetchone()
            if row is None:
                raise KeyError(f"resource {resource_id} is not in the store")
            found = (bytes(row[0]), str(row[1]))
            self._remember(None, resource_id, found)
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
        """Insert and delete in one transaction; returns the new segment ids, in order.

        When the disk is full, new spans (segments) are refused; anything else (a release, an export) gives up the
        reserve and is tried once more in the space it freed."""
        args = (segments, outbox, tombs, drop_segments, drop_outbox)
        try:
            return self._write(*args)
        except sqlite3.OperationalError as exc:
            if not is_disk_full(exc):
                raise
            freed = self._give_up_reserve()
            if segments or not freed:
                raise
        return self._write(*args)

    def _write(
        self,
        segments: Sequence[NewSegment],
        outbox: Sequence[OutRow],
        tombs: Sequence[Tomb],
        drop_segments: Sequence[int],
        drop_outbox: Sequence[int],
    ) -> list[int]:
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
                if self._db.in_transaction:  # SQLite rolls back by itself on some errors (a full disk)
                    cur.execute("ROLLBACK")
                raise
            for t in tombs:
                self._filter.add(t.trace_id, t.at)
                if t.unit is not None:
                    self._verdicts.released(t.trace_id, t.unit)
            self._bytes += sum(len(s.data) for s in segments) + sum(len(o.data) for o in outbox) - freed
            self._queued += sum(o.spans for o in outbox) - unqueued
            if self._full and not self._memory:  # give the WAL's space back at once: every page counts now
                try:
                    self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                except sqlite3.Error:
                    pass
        return ids

    # -- verdicts and quarantine ---------------------------------------------------------------------------------
    def save_verdict(self, trace_id: bytes, unit: str, verdict: str, at: float) -> None:
        self._verdicts.save(trace_id, unit, verdict, at)  # not behind the store's lock: see .verdicts

    def claim_verdict(self, trace_id: bytes, unit: str, at: float) -> None:
        self._verdicts.claim(trace_id, unit, at)

    def verdict(self, trace_id: bytes, unit: str) -> str | None:
        return self._verdicts.get(trace_id, unit)

    def quarantine(self, segment_ids: Sequence[int], stage: str, reason: str) -> int:
        """Move segments to the quarantine table (with their resource); returns the bytes taken off pending."""
        moved = 0
        with self._lock:
            cur = self._db.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                for sid in segment_ids:
                    cur.execute(
                        "INSERT INTO quarantine (segment, at, stage, reason, resource, data) SELECT s.id, ?, ?, ?, "
                        "r.resource, s.data FROM segment s LEFT JOIN resource r ON r.id = s.resource WHERE s.id = ?",
                        (time.time(), stage, reason[:1000], sid),
                    )
                    row = cur.execute("DELETE FROM segment WHERE id = ? RETURNING length(data)", (sid,)).fetchone()
                    moved += int(row[0] or 0) if row else 0
                cur.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:  # SQLite rolls back by itself on some errors (a full disk)
                    cur.execute("ROLLBACK")
                raise
            self._bytes -= moved
        return moved

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
            try:
                yield self.segment(sid)
            except sqlite3.DatabaseError as exc:  # one damaged row must not strand the others
                _log.error("segment %d of the store is unreadable (%s); skipped", sid, exc)

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
            self._verdicts.compact(horizon)
            self._filter.collected(horizon)
            # Resources no stored span uses any more (the caller holds the pipeline lock: no ingest in between).
            unused = self._db.execute(
                "DELETE FROM resource WHERE id NOT IN (SELECT resource FROM segment) AND id NOT IN "
                "(SELECT resource FROM outbox)"
            ).rowcount
            if unused:
                self._resources.clear()
                self._resource_rows.clear()
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
        self._verdicts.close()
