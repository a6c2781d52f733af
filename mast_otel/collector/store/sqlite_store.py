"""The :class:`~.store.SpanStore` on SQLite: every statement against the store's tables, and the counts kept of them.

One connection, serialized by a lock, in WAL mode (``:memory:`` for tests). Everything one transaction writes is
in :meth:`SQLiteStore.write`, so a reader checking what a release or an Export commits needs this module alone.
What is not a statement lives next door: the tables and the connection settings (:mod:`.store_schema`), the
background WAL checkpoints (:mod:`.wal_checkpointer`), the remembered resource rows (:mod:`.resource_cache`), the
Bloom filter that spares most traces a tombstone query (:mod:`.trace_filter`), the verdict journal
(:mod:`.verdicts`), and disk-full mode with its reserve files (:mod:`.disk_full`, :mod:`.disk_reserve`).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from mast_otel.collector.store.disk_full import DiskFullMode, is_disk_full
from mast_otel.collector.store.disk_reserve import DiskReserve, ReserveTooSmall
from mast_otel.collector.store.resource_cache import ResourceCache, resource_digest
from mast_otel.collector.store.store_rows import LogRow, NewSegment, OutRow, StoredSegment, Tomb
from mast_otel.collector.store.store_schema import StoreError, open_database
from mast_otel.collector.store.trace_filter import TraceFilter
from mast_otel.collector.store.verdicts import VerdictJournal
from mast_otel.collector.store.wal_checkpointer import WalCheckpointer

__all__ = ["DELIVERY_ROOM", "SQLiteStore"]

# The operator's log names the store, whichever of its modules speaks (the name is in every collector log line).
_log = logging.getLogger("mast_otel.collector.store.api")
# What a full disk keeps free for delivery: the exporter's deletes and the WAL checkpoints that follow them.
DELIVERY_ROOM = 256 * 1024


class SQLiteStore:
    """:class:`~.store.SpanStore` on one SQLite connection (WAL; ``:memory:`` for tests), serialized by a lock.

    ``sync="normal"`` makes a commit durable against a killed process (it is in the WAL file); ``"full"``
    also against power loss, at one fsync per commit. ``reserve`` bytes are set aside next to the file for a
    full disk (:mod:`.disk_full`).
    """

    def __init__(self, path: str, *, sync: str = "normal", reserve: int = 0) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._memory = path == ":memory:" or path.startswith("file::memory:")
        self._reserve = DiskReserve(None if self._memory else path, reserve)
        self._disk_full = DiskFullMode(self._reserve)
        try:
            self._open(sync)
        except sqlite3.OperationalError as exc:
            if not is_disk_full(exc) or not (self._disk_full.enter() or self._disk_full.enter_to_open()):
                raise StoreError(f"cannot open the store {path}: {exc}") from None
            try:
                self._open(sync)  # the reserve's space lets the store open; it starts in disk-full mode
            except sqlite3.OperationalError as again:
                if not is_disk_full(again) or not self._disk_full.enter_to_open():
                    raise StoreError(f"cannot open the store {path}: {again}") from None
                self._open(sync)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open the store {path}: {exc} (move the file away to start empty)") from None
        if not self._disk_full.on:
            try:
                self._disk_full.fit_reserve(holding=self._bytes > 0)
            except ReserveTooSmall as exc:
                self.close()
                raise StoreError(f"cannot set aside a reserve for the store {path}: {exc}") from None

    def _open(self, sync: str) -> None:
        """Connect, then load what the store keeps in memory about the file (tried again on a full disk)."""
        self._db = open_database(self.path, sync)
        self._checkpointer = None if self._memory else WalCheckpointer.start(self.path, self._db)
        self._resources = ResourceCache()
        seg_bytes = self._db.execute("SELECT total(length(data)) FROM segment").fetchone()[0]
        out_spans, out_bytes = self._db.execute("SELECT total(spans), total(length(data)) FROM outbox").fetchone()
        self._queued = int(out_spans)
        log_out, log_out_bytes = self._db.execute(
            "SELECT total(records), total(length(data)) FROM log_outbox"
        ).fetchone()
        self._log_rows, log_bytes = self._db.execute("SELECT count(*), total(length(data)) FROM log_record").fetchone()
        self.log_queued = int(log_out)
        self._filter = TraceFilter()
        for trace_id, at in self._db.execute("SELECT trace_id, at FROM tomb"):
            self._filter.add(bytes(trace_id), float(at))
        self._bytes = int(seg_bytes) + int(out_bytes) + int(log_out_bytes) + int(log_bytes)
        self._verdicts = VerdictJournal(None if self._memory else self.path + ".verdicts")

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any error; the caller holds the lock."""
        cur = self._db.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            yield cur
            cur.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:  # SQLite rolls back by itself on some errors (a full disk)
                cur.execute("ROLLBACK")
            raise

    # -- disk space ----------------------------------------------------------------------------------------------
    @property
    def disk_full(self) -> bool:
        return self._disk_full.on

    @property
    def tight(self) -> bool:
        """The disk is full, or has less free than twice the reserves and the delivery room.

        Then every commit is checkpointed out of the WAL at once (TRUNCATE), and releases are written one at a
        time: a WAL holding committed pages the database has not grown into yet would need that room again at
        the next checkpoint, and after a kill -9 on a full disk it could never get it."""
        if self._memory:
            return False
        if self._disk_full.on:
            return True
        r = self._reserve
        return r.path is not None and r.free_bytes() < 2 * (r.size + r.open_size) + DELIVERY_ROOM

    def room_to_release(self, size: int = 0) -> bool:
        """Whether a release of about ``size`` bytes may be written now: always, unless the disk is full.

        On a full disk a release writes its spans again (outbox rows) before their segment is freed, so releases
        could spend the whole space the reserve freed. Then a kill -9 leaves a store whose WAL holds pages the
        database cannot grow into, and whose deletes (the exporter's) find no room for their own WAL frames:
        delivery stops for good. So a release is written only once the WAL is checkpointed to empty and the disk
        keeps :data:`DELIVERY_ROOM` free beyond twice the release (its WAL frames, then its pages)."""
        if not self._disk_full.on or self._memory:
            return True
        with self._lock:
            try:
                busy, wal_frames, _ = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.Error:
                return False
        if busy or wal_frames > 0:
            return False
        return self._reserve.free_bytes() >= DELIVERY_ROOM + 2 * size

    def reclaim(self) -> bool:
        """While the disk is full: return freed pages to the file system, then retake the reserve once twice its
        size is free again (so new spans have room). True when the store accepts spans again."""
        if not self._disk_full.on:
            return True
        with self._lock:
            try:
                self._db.execute("PRAGMA incremental_vacuum").fetchall()
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlite3.Error:
                return False
        return self._disk_full.leave()

    # -- resources -----------------------------------------------------------------------------------------------
    def resource_id(self, resource: bytes, schema: str) -> int:
        digest = resource_digest(resource, schema)
        with self._lock:
            found = self._resources.id_of(digest)
            if found is not None:
                return found
            self._db.execute(
                "INSERT OR IGNORE INTO resource (digest, resource, schema) VALUES (?,?,?)", (digest, resource, schema)
            )
            (row_id,) = self._db.execute("SELECT id FROM resource WHERE digest = ?", (digest,)).fetchone()
            self._resources.remember(digest, int(row_id), (resource, schema))
            return int(row_id)

    def resource(self, resource_id: int) -> tuple[bytes, str]:
        with self._lock:
            found = self._resources.row_of(resource_id)
            if found is not None:
                return found
            row = self._db.execute("SELECT resource, schema FROM resource WHERE id = ?", (resource_id,)).fetchone()
            if row is None:
                raise KeyError(f"resource {resource_id} is not in the store")
            found = (bytes(row[0]), str(row[1]))
            self._resources.remember(None, resource_id, found)
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
        log_outbox: Sequence[OutRow] = (),
        log_records: Sequence[LogRow] = (),
        drop_log_outbox: Sequence[int] = (),
    ) -> list[int]:
        """Insert and delete in one transaction; returns the new segment ids, in order.

        When the disk is full, new spans (segments) and new log records are refused; anything else (a release, an
        export) gives up the reserve and is tried once more in the space it freed. A tombstone also deletes the log
        records kept for the spans it names (their conversation is judged: they are no longer needed)."""
        logs = (log_outbox, log_records, drop_log_outbox)
        args = (segments, outbox, tombs, drop_segments, drop_outbox, logs)
        try:
            return self._write(*args)
        except sqlite3.OperationalError as exc:
            if not is_disk_full(exc):
                raise
            freed = self._disk_full.enter()
            if segments or log_records or (log_outbox and not drop_log_outbox) or not freed:  # new data: refused
                raise
        return self._write(*args)

    def _write(
        self,
        segments: Sequence[NewSegment],
        outbox: Sequence[OutRow],
        tombs: Sequence[Tomb],
        drop_segments: Sequence[int],
        drop_outbox: Sequence[int],
        logs: tuple[Sequence[OutRow], Sequence[LogRow], Sequence[int]] = ((), (), ()),
    ) -> list[int]:
        ids: list[int] = []
        log_outbox, log_records, drop_log_outbox = logs
        with self._lock:
            with self._transaction() as cur:
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
                log_change = self._write_logs(cur, tombs, log_outbox, log_records, drop_log_outbox)
                freed += log_change[0]
            for t in tombs:
                self._filter.add(t.trace_id, t.at)
                if t.unit is not None:
                    self._verdicts.released(t.trace_id, t.unit)
            self._bytes += sum(len(s.data) for s in segments) + sum(len(o.data) for o in outbox) - freed
            self._bytes += sum(len(o.data) for o in log_outbox) + sum(len(r.data) for r in log_records)
            self._queued += sum(o.spans for o in outbox) - unqueued
            self.log_queued += sum(o.spans for o in log_outbox) - log_change[1]
            self._log_rows += len(log_records) - log_change[2]
            if self.tight:  # give the WAL's space back at once: every page counts now
                try:
                    self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                except sqlite3.Error:
                    pass
        return ids

    def _write_logs(
        self,
        cur: sqlite3.Cursor,
        tombs: Sequence[Tomb],
        log_outbox: Sequence[OutRow],
        log_records: Sequence[LogRow],
        drop_log_outbox: Sequence[int],
    ) -> tuple[int, int, int]:
        """The log statements of a write: (bytes freed, records unqueued, log_record rows deleted)."""
        freed = unqueued = deleted = 0
        for o in log_outbox:
            cur.execute(
                "INSERT INTO log_outbox (resource, records, data) VALUES (?,?,?)", (o.resource, o.spans, o.data)
            )
        for r in log_records:
            cur.execute(
                "INSERT INTO log_record (trace_id, span_id, received, data, owner) VALUES (?,?,?,?,?)",
                (r.trace_id, r.span_id, r.received, r.data, r.owner),
            )
        for oid in drop_log_outbox:
            row = cur.execute("DELETE FROM log_outbox WHERE id = ? RETURNING records, length(data)", (oid,)).fetchone()
            if row:
                unqueued += int(row[0])
                freed += int(row[1])
        if self._log_rows or log_records:  # no query per release while no log record is kept
            for t in tombs:
                released = t.ids()
                rows = cur.execute(
                    "SELECT id, span_id, length(data) FROM log_record WHERE trace_id = ?", (t.trace_id,)
                ).fetchall()
                for rid, span_id, size in rows:
                    if bytes(span_id) in released:
                        cur.execute("DELETE FROM log_record WHERE id = ?", (rid,))
                        freed += int(size)
                        deleted += 1
        return freed, unqueued, deleted

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
            with self._transaction() as cur:
                for sid in segment_ids:
                    cur.execute(
                        "INSERT INTO quarantine (segment, at, stage, reason, resource, data) SELECT s.id, ?, ?, ?, "
                        "r.resource, s.data FROM segment s LEFT JOIN resource r ON r.id = s.resource WHERE s.id = ?",
                        (time.time(), stage, reason[:1000], sid),
                    )
                    row = cur.execute("DELETE FROM segment WHERE id = ? RETURNING length(data)", (sid,)).fetchone()
                    moved += int(row[0] or 0) if row else 0
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
        return self._oldest("SELECT id, resource, spans, data FROM outbox ORDER BY id", max_spans, max_bytes)

    def log_outbox(self, max_records: int, max_bytes: int) -> list[OutRow]:
        """Oldest queued ScopeLogs rows up to ``max_records`` records and about ``max_bytes`` (at least one row);
        ``OutRow.spans`` counts their log records."""
        return self._oldest("SELECT id, resource, records, data FROM log_outbox ORDER BY id", max_records, max_bytes)

    def _oldest(self, query: str, max_items: int, max_bytes: int) -> list[OutRow]:
        out: list[OutRow] = []
        items = size = 0
        with self._lock:
            cur = self._db.execute(query)
            for oid, rid, n, data in cur:
                if out and (items + n > max_items or size + len(data) > max_bytes):
                    break
                out.append(OutRow(int(rid), bytes(data), int(n), int(oid)))
                items += n
                size += len(data)
            cur.close()
        return out

    def log_records(self, trace_id: bytes) -> list[LogRow]:
        """The kept log records of a trace, in arrival order (none: no query while none is kept)."""
        if not self._log_rows:
            return []
        with self._lock:
            rows = self._db.execute(
                "SELECT span_id, received, data, owner FROM log_record WHERE trace_id = ? ORDER BY id", (trace_id,)
            ).fetchall()
        return [LogRow(trace_id, bytes(r[0]), float(r[1]), bytes(r[2]), str(r[3])) for r in rows]

    def all_log_records(self, batch: int = 1000) -> Iterator[LogRow]:
        """Every kept log record, in arrival order, read ``batch`` rows at a time (a restart notes their evidence)."""
        last = 0
        while self._log_rows:
            with self._lock:
                rows = self._db.execute(
                    "SELECT id, trace_id, span_id, received, data, owner FROM log_record WHERE id > ? ORDER BY id "
                    "LIMIT ?", (last, batch),
                ).fetchall()  # fmt: skip
            if not rows:
                return
            last = int(rows[-1][0])
            for r in rows:
                yield LogRow(bytes(r[1]), bytes(r[2]), float(r[3]), bytes(r[4]), str(r[5]))

    def oldest_held(self) -> float | None:
        """When the oldest held segment arrived (None: nothing held). Every conversation a restart may release
        again arrived since then."""
        with self._lock:
            found = self._db.execute("SELECT min(received) FROM segment").fetchone()[0]
        return float(found) if found is not None else None

    def counts(self) -> tuple[int, int]:
        """(spans queued for the downstream, bytes not yet exported: held segments + outbox, and the log tables)."""
        return self._queued, self._bytes

    def gc(self, before: float) -> int:
        """Forget tombstones older than ``before``, but never one a held segment may still need; the same for kept
        log records (those whose span never arrived, or arrived outside any conversation)."""
        with self._lock:
            oldest = self._db.execute("SELECT min(received) FROM segment").fetchone()[0]
            horizon = before if oldest is None else min(before, float(oldest) - 1.0)
            removed = int(self._db.execute("DELETE FROM tomb WHERE at < ?", (horizon,)).rowcount)
            if self._log_rows:  # records whose span never came (or came to no conversation) are kept as long
                gone = self._db.execute(
                    "DELETE FROM log_record WHERE received < ? RETURNING length(data)", (horizon,)
                ).fetchall()
                self._log_rows -= len(gone)
                self._bytes -= sum(int(g[0]) for g in gone)
            self._verdicts.compact(horizon)
            self._filter.collected(horizon)
            # Resources no stored span uses any more (the caller holds the pipeline lock: no ingest in between).
            unused = self._db.execute(
                "DELETE FROM resource WHERE id NOT IN (SELECT resource FROM segment) AND id NOT IN "
                "(SELECT resource FROM outbox) AND id NOT IN (SELECT resource FROM log_outbox)"
            ).rowcount
            if unused:
                self._resources.clear()
            return removed

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.stop()
        with self._lock:
            try:
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:
                pass
            self._db.close()
        self._verdicts.close()
