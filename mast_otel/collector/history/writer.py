"""The collector's side of the verdict history: write each release's verdicts, drop what retention and the byte
bound say, count every drop.

``record`` is called with a group of releases' verdicts *before* their release transaction commits (the judge pool
does), so a verdict whose labels went out is always in the history, even after a kill -9 between the two commits.
The price of that order is a verdict written twice when the collector dies after the history commit and before the
release: the next start releases the same conversation again. :meth:`VerdictHistory.recover` reads the keys of the
rows written since the oldest span still held (only those conversations can be released again) and ``record``
skips them once.

A history write that fails (a full disk, an I/O error) never holds a release back: the entries wait in memory
(bounded, :data:`MAX_WAITING`) and are tried again on every :meth:`VerdictHistory.maintain`; past the bound the
oldest are dropped and counted (``mast_history_verdicts_dropped_total{reason="write_failed"}``).
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from prometheus_client import CollectorRegistry, Gauge
from prometheus_client import Counter as PromCounter

from mast_otel.collector.history.entry import VerdictEntry
from mast_otel.collector.history.schema import (
    HOUR_US,
    KIND_AGENT,
    KIND_FRAMEWORK,
    KIND_JUDGE,
    KIND_SERVICE,
    KIND_STATUS,
    KIND_VERSION,
    MAX_MODES,
    NO_AGENT,
    HistoryUnavailable,
    open_for_writing,
    to_us,
)

__all__ = [
    "DEFAULT_MAX_NAMES", "MAX_WAITING", "MIN_MAX_BYTES", "OTHER", "VerdictHistory", "history_files", "history_path",
]  # fmt: skip

_log = logging.getLogger(__name__)

DEFAULT_MAX_NAMES = 10_000  # distinct values of one kind (agents, versions, ...) a file keeps; later ones: "other"
MAX_WAITING = 100_000  # entries a failing disk may leave waiting in memory
MIN_MAX_BYTES = 1 << 20
OTHER = "other"
_MAINTAIN_EVERY_S = 60.0
_SHRINK_TO = 0.9  # past the byte bound, old hours go until the rows take this share of it


def history_path(store: str) -> str:
    """The history file beside a store (``:memory:`` stays in memory)."""
    return ":memory:" if store == ":memory:" or store.startswith("file::memory:") else store + ".history"


def history_files(store: str | Path) -> list[Path]:
    """Every history file of a collector whose (first) store is ``store``: its own and each shard's
    (``STORE.shard<k>.history``), whatever ``processes`` wrote them; the ones that exist, in shard order."""
    path = Path(store)
    pattern = re.compile(re.escape(path.name) + r"\.shard(\d+)\.history")
    shards = sorted((int(m.group(1)), p) for p in path.parent.glob(path.name + ".shard*.history")
                    if (m := pattern.fullmatch(p.name)))  # fmt: skip
    own = Path(history_path(str(path)))
    return ([own] if own.exists() else []) + [p for _, p in shards]


class _Metrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        r = registry if registry is not None else CollectorRegistry()
        self.written = PromCounter("mast_history_verdicts", "Verdicts written to the verdict history.", registry=r)
        self.dropped = PromCounter(
            "mast_history_verdicts_dropped", "Verdicts the history lost: max_bytes (oldest hours dropped for "
            "history_max_bytes), write_failed (the file could not be written, and the wait in memory overflowed).",
            ["reason"], registry=r,
        )  # fmt: skip
        self.expired = PromCounter(
            "mast_history_verdicts_expired", "Verdicts older than history_retention, dropped as configured.",
            registry=r,
        )  # fmt: skip
        self.names_overflowed = PromCounter(
            "mast_history_names_overflowed", "Values (a service, version, framework, agent or judge) a verdict was "
            "kept under as 'other' because the history holds the most distinct values of that kind.", registry=r,
        )  # fmt: skip
        self.bytes = Gauge("mast_history_bytes", "Size of the verdict history file.", registry=r)
        self.waiting = Gauge("mast_history_waiting", "Verdicts waiting in memory for the history file.", registry=r)
        for reason in ("max_bytes", "write_failed"):
            self.dropped.labels(reason)


class VerdictHistory:
    """One process's verdict history (``STORE.history``): append, prune by time and bytes, count what is lost.

    Thread-safe; writes are one transaction per :meth:`record` call."""

    def __init__(
        self,
        path: str,
        *,
        retention: float,
        max_bytes: int,
        sync: str = "normal",
        registry: CollectorRegistry | None = None,
        max_names: int = DEFAULT_MAX_NAMES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self._retention_us = int(retention * 1e6)
        self._max_bytes = max(max_bytes, MIN_MAX_BYTES)
        self._max_names = max_names
        self._clock = clock
        self._sync = sync
        self._lock = threading.Lock()
        self._metrics = _Metrics(registry)
        self._db: sqlite3.Connection | None = None
        self._names: dict[tuple[int, str], int] = {}
        self._per_kind: Counter[int] = Counter()
        self._modes: dict[str, int] = {}
        self._last_at = 0
        self._bytes = 0
        self._waiting: list[tuple[VerdictEntry, float]] = []
        self._recovered: set[tuple[bytes, int]] = set()
        self._recover_since: float | None = None  # asked before the file could be opened
        self._next_maintain = 0.0
        try:
            self._open()
        except HistoryUnavailable as exc:  # a full disk at the first start: verdicts wait, the file is tried again
            _log.warning("%s; verdicts wait in memory and the file is tried again every minute", exc)
        self._metrics.bytes.set_function(lambda: self._bytes)
        self._metrics.waiting.set_function(lambda: len(self._waiting))

    def _open(self) -> None:
        """(Under the lock, or from __init__.) Open the file and read what the writer keeps of it in memory.
        Raises HistoryUnavailable when it cannot be opened now, HistoryFileError when it is not a history."""
        db = open_for_writing(self.path, self._sync)
        try:
            self._names = {(kind, text): nid for nid, kind, text in db.execute("SELECT id, kind, text FROM name")}
            self._modes = {mode_id: bit for bit, mode_id in db.execute("SELECT bit, id FROM mode")}
            self._last_at = db.execute("SELECT max(at) FROM verdict").fetchone()[0] or 0
        except sqlite3.Error as exc:
            db.close()
            raise HistoryUnavailable(f"cannot read the verdict history {self.path}: {exc}") from None
        self._per_kind = Counter(kind for kind, _ in self._names)
        self._db = db
        self._bytes = self._size()
        if self._recover_since is not None:
            self._recovered = self._keys_since(self._recover_since)
            self._recover_since = None
            # what waited for the file may be a conversation the file already has (released before a crash)
            self._waiting = [(e, at) for e, at in self._waiting if not self._recorded_before(e)]

    def _keys_since(self, since: float) -> set[tuple[bytes, int]]:
        assert self._db is not None
        rows = self._db.execute("SELECT trace_id, unit FROM verdict WHERE at >= ?", (to_us(since) - 1,))
        return {(bytes(t), int(u)) for t, u in rows}

    # -- writing -----------------------------------------------------------------------------------------------
    def recover(self, since: float) -> int:
        """Remember the conversations written since ``since`` (the oldest span the store still holds arrived then):
        a restart may release them again, and each is recorded once. Returns how many were read."""
        with self._lock:
            if self._db is None:
                self._recover_since = since  # read once the file opens
                return 0
            self._recovered = self._keys_since(since)
            return len(self._recovered)

    def record(self, entries: Sequence[VerdictEntry], at: float | None = None) -> None:
        """Write ``entries`` in one transaction, each with the time ``at`` (now by default). Never raises for a
        store problem: what cannot be written waits for :meth:`maintain`."""
        now = self._clock() if at is None else at
        with self._lock:
            fresh = [e for e in entries if not self._recorded_before(e)]
            if not fresh:
                return
            if self._db is None:
                self._wait([(e, now) for e in fresh], None)
                return
            try:
                self._write([(e, now) for e in fresh])
            except sqlite3.Error as exc:
                self._wait([(e, now) for e in fresh], exc)
                return
            self._metrics.written.inc(len(fresh))
            if self._bytes > self._max_bytes:
                self._shrink()

    def _recorded_before(self, entry: VerdictEntry) -> bool:
        if not self._recovered:
            return False
        key = entry.key
        if key in self._recovered:
            self._recovered.discard(key)  # a conversation is released again at most once
            return True
        return False

    def _wait(self, entries: list[tuple[VerdictEntry, float]], exc: sqlite3.Error | None) -> None:
        if not self._waiting and exc is not None:
            _log.warning("could not write %d verdicts to the history %s (%s); they wait in memory and are tried "
                         "again every minute", len(entries), self.path, exc)  # fmt: skip
        self._waiting.extend(entries)
        over = len(self._waiting) - MAX_WAITING
        if over > 0:
            del self._waiting[:over]
            self._metrics.dropped.labels("write_failed").inc(over)
            _log.error("dropped %d verdicts the history %s could not take (more than %d waiting)", over, self.path,
                       MAX_WAITING)  # fmt: skip

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        db = self._db
        assert db is not None
        cur = db.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            yield cur
            cur.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                cur.execute("ROLLBACK")
            raise

    def _write(self, entries: list[tuple[VerdictEntry, float]]) -> None:
        """(Under the lock.) One transaction: the verdict rows and the hourly counts they add to."""
        assert self._db is not None
        new_names: dict[tuple[int, str], int] = {}
        new_modes: dict[str, int] = {}
        overflowed = 0
        last_at = self._last_at
        with self._transaction() as cur:
            made: Counter[int] = Counter()

            def name(kind: int, text: str) -> int:
                nonlocal overflowed
                key = (kind, text)
                if key in self._names:
                    return self._names[key]
                if key in new_names:
                    return new_names[key]
                if self._per_kind[kind] + made[kind] >= self._max_names and text != OTHER:
                    overflowed += 1
                    return name(kind, OTHER)  # "other" itself may pass the cap by one
                cur.execute("INSERT INTO name (kind, text) VALUES (?, ?)", key)
                made[kind] += 1
                nid = new_names[key] = int(cur.lastrowid or 0)
                return nid

            def bits(modes: tuple[str, ...]) -> list[int]:
                out = []
                for mode_id in modes:
                    bit = self._modes.get(mode_id, new_modes.get(mode_id))
                    if bit is None:
                        taken = len(self._modes) + len(new_modes)
                        if taken >= MAX_MODES:
                            continue  # a judge inventing modes without end: the rest are not kept
                        cur.execute("INSERT INTO mode (bit, id) VALUES (?, ?)", (taken, mode_id))
                        bit = new_modes[mode_id] = taken
                    out.append(bit)
                return out

            rows = []
            status_hours: Counter[tuple[int, int, int, int, int]] = Counter()
            failed_hours: Counter[tuple[int, int, int, int, int, int]] = Counter()
            for entry, at in entries:
                at_us = max(to_us(at), last_at + 1)
                last_at = at_us
                hour = at_us // HOUR_US
                service, version = name(KIND_SERVICE, entry.service), name(KIND_VERSION, entry.version)
                framework, status = name(KIND_FRAMEWORK, entry.framework), name(KIND_STATUS, entry.status)
                agent = name(KIND_AGENT, entry.agent) if entry.agent else None
                mode_bits = set(bits(entry.modes))
                judge = name(KIND_JUDGE, entry.judge)
                mask = sum(1 << b for b in mode_bits)
                rows.append((at_us, entry.trace_id, entry.key[1], status, mask, service, version, framework, agent,
                             entry.step, judge))  # fmt: skip
                status_hours[(hour, service, version, framework, status)] += 1
                for bit in mode_bits:
                    failed_hours[(hour, service, version, framework, agent or NO_AGENT, bit)] += 1
            cur.executemany("INSERT INTO verdict VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            cur.executemany("INSERT INTO status_hour VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET n = n + "
                            "excluded.n", [(*k, n) for k, n in status_hours.items()])  # fmt: skip
            cur.executemany("INSERT INTO failed_hour VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET n = n + "
                            "excluded.n", [(*k, n) for k, n in failed_hours.items()])  # fmt: skip
        # committed: what the transaction made is now the file's
        self._names.update(new_names)
        self._per_kind.update(kind for kind, _ in new_names)
        self._modes.update(new_modes)
        self._last_at = last_at
        if overflowed:
            self._metrics.names_overflowed.inc(overflowed)
        self._bytes = self._size()

    # -- upkeep ------------------------------------------------------------------------------------------------
    def maintain(self, now: float | None = None) -> None:
        """Once a minute: write what waits, drop the hours past retention, keep the file under its byte bound."""
        now = self._clock() if now is None else now
        if now < self._next_maintain:
            return
        self._next_maintain = now + _MAINTAIN_EVERY_S
        with self._lock:
            if self._db is None:
                try:
                    self._open()
                except HistoryUnavailable as exc:
                    _log.warning("%s; %d verdicts wait", exc, len(self._waiting))
                    return
            try:
                if self._waiting:
                    waiting, self._waiting = self._waiting, []
                    try:
                        self._write(waiting)
                    except sqlite3.Error as exc:
                        self._waiting = waiting + self._waiting
                        _log.warning("the history %s still cannot be written (%s); %d verdicts wait", self.path,
                                     exc, len(self._waiting))  # fmt: skip
                    else:
                        self._metrics.written.inc(len(waiting))
                        _log.info("wrote %d verdicts that waited for the history %s", len(waiting), self.path)
                self._expire(now)
                if self._bytes > self._max_bytes:
                    self._shrink()
            except sqlite3.Error as exc:  # upkeep is tried again next minute
                _log.warning("history upkeep failed on %s: %s", self.path, exc)

    def _expire(self, now: float) -> None:
        cutoff = (to_us(now) - self._retention_us) // HOUR_US  # whole hours only: the hourly tables stay exact
        gone = self._drop_before(cutoff, "expired")
        if gone:
            self._metrics.expired.inc(gone)

    def _shrink(self) -> None:
        """(Under the lock.) Drop the oldest hours until the rows take at most 90% of the byte bound."""
        assert self._db is not None
        for _ in range(8):  # each pass drops at least one hour; the bound is met in one or two
            page_size, pages, free = (self._db.execute(f"PRAGMA {p}").fetchone()[0]
                                      for p in ("page_size", "page_count", "freelist_count"))  # fmt: skip
            used = (pages - free) * page_size
            rows = self._db.execute("SELECT count(*) FROM verdict").fetchone()[0]
            if used <= self._max_bytes * _SHRINK_TO or rows == 0:
                break
            excess = min(rows - 1, int(rows * (used - self._max_bytes * _SHRINK_TO) / used))
            at = self._db.execute("SELECT at FROM verdict ORDER BY at LIMIT 1 OFFSET ?", (excess,)).fetchone()[0]
            gone = self._drop_before(at // HOUR_US + 1, "dropped_max_bytes")
            self._metrics.dropped.labels("max_bytes").inc(gone)
            _log.warning("the history %s reached history_max_bytes=%d: dropped its oldest %d verdicts", self.path,
                         self._max_bytes, gone)  # fmt: skip
        self._db.executescript("PRAGMA incremental_vacuum;")  # execute() would free one page only
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the file itself shrinks now, not at a later checkpoint
        self._bytes = self._size()

    def _drop_before(self, hour: int, counted_as: str) -> int:
        """(Under the lock.) Delete every row of the hours before ``hour``, in every table; returns the verdicts."""
        assert self._db is not None
        with self._transaction() as cur:
            gone = cur.execute("DELETE FROM verdict WHERE at < ?", (hour * HOUR_US,)).rowcount
            if gone <= 0:
                return 0
            cur.execute("DELETE FROM status_hour WHERE hour < ?", (hour,))
            cur.execute("DELETE FROM failed_hour WHERE hour < ?", (hour,))
            cur.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT DO UPDATE SET value = value + "
                        "excluded.value", (counted_as, gone))  # fmt: skip
        if counted_as == "expired":
            self._db.executescript("PRAGMA incremental_vacuum;")  # execute() would free one page only
            self._bytes = self._size()
        return int(gone)

    def _size(self) -> int:
        assert self._db is not None
        page_size = self._db.execute("PRAGMA page_size").fetchone()[0]
        return int(self._db.execute("PRAGMA page_count").fetchone()[0]) * int(page_size)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def close(self) -> None:
        """Try once more to write what waits, then close (what still waits is logged as lost)."""
        with self._lock:
            if self._waiting:
                try:
                    if self._db is None:
                        self._open()
                    self._write(self._waiting)
                    self._waiting = []
                except (sqlite3.Error, HistoryUnavailable) as exc:
                    self._metrics.dropped.labels("write_failed").inc(len(self._waiting))
                    _log.error("closing the history %s with %d verdicts it could not take (%s)", self.path,
                               len(self._waiting), exc)  # fmt: skip
            if self._db is not None:
                self._db.close()
                self._db = None
