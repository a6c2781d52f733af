"""Durable span storage: SQLite in WAL mode behind the small :class:`SpanStore` protocol.

A span row is written, in one committed transaction per Export request, *before* the request is acknowledged,
so a killed collector loses nothing it acknowledged. Rows carry two bits: ``HELD`` (waiting for its conversation
to be judged) and ``QUEUED`` (waiting for the downstream). A row with neither bit is a tombstone: its body is
dropped, but the key stays for ``tombstone_ttl`` so a duplicate delivery is ignored and a late child span finds
the conversation it belongs to. Each Export request's resource and scope are stored once (``envelope``) and the
span protobufs are kept as received, so export re-encodes the original resource and scope.

Tables: ``envelope`` (resource+scope protobufs, deduplicated by digest), ``span`` (one row per span; unique on
trace_id+span_id), ``unit`` (one row per judged conversation: its key, conversation ids and verdict).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["HELD", "QUEUED", "Envelope", "HeldSpan", "NewSpan", "ReadyRow", "Release", "SQLiteStore", "SpanStore"]

QUEUED = 1  # waiting for the downstream
HELD = 2  # waiting for its conversation's verdict
_CHUNK = 400  # ids per IN (...) list, under SQLite's variable limit


@dataclass(frozen=True, slots=True)
class Envelope:
    """What an OTLP ResourceSpans/ScopeSpans pair carries besides the spans, as serialized protobufs."""

    resource: bytes
    resource_schema: str
    scope: bytes
    scope_schema: str

    def digest(self) -> bytes:
        h = hashlib.blake2b(digest_size=16)
        for part in (self.resource, self.resource_schema.encode(), self.scope, self.scope_schema.encode()):
            h.update(len(part).to_bytes(4, "little"))
            h.update(part)
        return h.digest()


@dataclass(frozen=True, slots=True)
class NewSpan:
    """One span to insert, with what the assembler needs to know about it without decoding the body again."""

    trace_id: bytes
    span_id: bytes
    parent_id: bytes
    envelope: int
    body: bytes
    received: float
    state: int
    conv_root: bool = False
    conv_id: str | None = None
    conv_parent: str | None = None
    error: bool = False
    unit: str | None = None


@dataclass(frozen=True, slots=True)
class HeldSpan:
    """A span still waiting for its conversation (what a restarted collector reloads)."""

    trace_id: bytes
    span_id: bytes
    parent_id: bytes
    envelope: int
    received: float
    conv_root: bool
    conv_id: str | None
    conv_parent: str | None
    error: bool
    size: int


@dataclass(frozen=True, slots=True)
class ReadyRow:
    trace_id: bytes
    span_id: bytes
    envelope: int
    body: bytes


@dataclass(frozen=True, slots=True)
class Release:
    """The outcome for a set of held spans of one trace, applied atomically.

    ``unit`` is the conversation key (None for spans outside any conversation); ``bodies`` replaces the bodies of
    the labelled spans; ``extra`` adds spans the collector made (a ``mast.verdict`` span); ``verdict`` is the
    verdict as JSON, recorded with ``conv_ids`` so late spans can be recognised.
    """

    trace_id: bytes
    span_ids: Sequence[bytes]
    hold: bool
    now: float
    unit: str | None = None
    bodies: Mapping[bytes, bytes] = field(default_factory=dict)
    extra: Sequence[NewSpan] = ()
    verdict: str | None = None
    conv_ids: Sequence[str] = ()


class SpanStore(Protocol):
    """Where spans wait. Every method is thread-safe; every mutation is one committed transaction."""

    def envelope_id(self, envelope: Envelope) -> int: ...
    def envelope(self, envelope_id: int) -> Envelope: ...
    def insert(self, spans: Sequence[NewSpan]) -> list[bool]: ...
    def unit_of(self, trace_id: bytes, span_id: bytes) -> str | None: ...
    def units(self, trace_id: bytes) -> list[tuple[str, tuple[str, ...]]]: ...
    def bodies(self, trace_id: bytes, span_ids: Sequence[bytes]) -> list[ReadyRow]: ...
    def release(self, release: Release) -> None: ...
    def ready(self, max_spans: int, max_bytes: int) -> list[ReadyRow]: ...
    def exported(self, keys: Sequence[tuple[bytes, bytes]], now: float) -> None: ...
    def held(self) -> Iterator[HeldSpan]: ...
    def judged_traces(self, since: float) -> list[tuple[bytes, float]]: ...
    def queue_held(self) -> int: ...
    def counts(self) -> tuple[int, int, int]: ...
    def gc(self, before: float) -> int: ...
    def close(self) -> None: ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS envelope (
    id INTEGER PRIMARY KEY, digest BLOB NOT NULL UNIQUE,
    resource BLOB NOT NULL, resource_schema TEXT NOT NULL, scope BLOB NOT NULL, scope_schema TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS span (
    trace_id BLOB NOT NULL, span_id BLOB NOT NULL, parent_id BLOB NOT NULL, envelope INTEGER NOT NULL,
    body BLOB, size INTEGER NOT NULL, received REAL NOT NULL, state INTEGER NOT NULL,
    conv_root INTEGER NOT NULL, conv_id TEXT, conv_parent TEXT, error INTEGER NOT NULL,
    unit TEXT, done REAL);
CREATE UNIQUE INDEX IF NOT EXISTS span_key ON span(trace_id, span_id);
CREATE INDEX IF NOT EXISTS span_queued ON span(trace_id) WHERE (state & 1) = 1;
CREATE INDEX IF NOT EXISTS span_done ON span(done) WHERE state = 0;
CREATE TABLE IF NOT EXISTS unit (
    trace_id BLOB NOT NULL, unit TEXT NOT NULL, conv_ids TEXT NOT NULL, verdict TEXT, released REAL NOT NULL,
    PRIMARY KEY (trace_id, unit));
CREATE INDEX IF NOT EXISTS unit_released ON unit(released);
"""

_INSERT = (
    "INSERT OR IGNORE INTO span (trace_id, span_id, parent_id, envelope, body, size, received, state, conv_root,"
    " conv_id, conv_parent, error, unit) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
)


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
        self._db.executescript(_SCHEMA)
        self._envelopes: dict[bytes, int] = {
            bytes(d): int(i) for i, d in self._db.execute("SELECT id, digest FROM envelope")
        }
        self._envelope_rows: dict[int, Envelope] = {}
        held, queued, size = self._db.execute(
            "SELECT total(state & 2 = 2), total(state & 1 = 1), total(size) FROM span WHERE state != 0"
        ).fetchone()
        self._held, self._queued, self._bytes = int(held), int(queued), int(size)

    # -- envelopes ---------------------------------------------------------------------------------------------
    def envelope_id(self, envelope: Envelope) -> int:
        digest = envelope.digest()
        found = self._envelopes.get(digest)
        if found is not None:
            return found
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO envelope (digest, resource, resource_schema, scope, scope_schema)"
                " VALUES (?,?,?,?,?)",
                (digest, envelope.resource, envelope.resource_schema, envelope.scope, envelope.scope_schema),
            )
            (row_id,) = self._db.execute("SELECT id FROM envelope WHERE digest = ?", (digest,)).fetchone()
            self._envelopes[digest] = int(row_id)
            self._envelope_rows[int(row_id)] = envelope
            return int(row_id)

    def envelope(self, envelope_id: int) -> Envelope:
        found = self._envelope_rows.get(envelope_id)
        if found is not None:
            return found
        with self._lock:
            row = self._db.execute(
                "SELECT resource, resource_schema, scope, scope_schema FROM envelope WHERE id = ?", (envelope_id,)
            ).fetchone()
        if row is None:
            raise KeyError(f"envelope {envelope_id} is not in the store")
        env = Envelope(bytes(row[0]), row[1], bytes(row[2]), row[3])
        self._envelope_rows[envelope_id] = env
        return env

    # -- receive -----------------------------------------------------------------------------------------------
    def insert(self, spans: Sequence[NewSpan]) -> list[bool]:
        """Insert spans in one transaction; False where trace_id+span_id was already stored (a duplicate)."""
        out: list[bool] = []
        with self._lock:
            cur = self._db.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                for s in spans:
                    cur.execute(
                        _INSERT,
                        (
                            s.trace_id, s.span_id, s.parent_id, s.envelope, s.body, len(s.body), s.received, s.state,
                            s.conv_root, s.conv_id, s.conv_parent, s.error, s.unit,
                        ),
                    )  # fmt: skip
                    added = cur.rowcount == 1
                    out.append(added)
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            for s, added in zip(spans, out, strict=True):
                if added:
                    self._count(s.state, len(s.body), +1)
        return out

    def _count(self, state: int, size: int, sign: int) -> None:
        if state & HELD:
            self._held += sign
        if state & QUEUED:
            self._queued += sign
        if state:
            self._bytes += sign * size

    def unit_of(self, trace_id: bytes, span_id: bytes) -> str | None:
        with self._lock:
            row = self._db.execute(
                "SELECT unit FROM span WHERE trace_id = ? AND span_id = ?", (trace_id, span_id)
            ).fetchone()
        return None if row is None else row[0]

    def units(self, trace_id: bytes) -> list[tuple[str, tuple[str, ...]]]:
        with self._lock:
            rows = self._db.execute("SELECT unit, conv_ids FROM unit WHERE trace_id = ?", (trace_id,)).fetchall()
        return [(u, tuple(c for c in ids.split(",") if c)) for u, ids in rows]

    # -- judge -------------------------------------------------------------------------------------------------
    def bodies(self, trace_id: bytes, span_ids: Sequence[bytes]) -> list[ReadyRow]:
        out: list[ReadyRow] = []
        with self._lock:
            for i in range(0, len(span_ids), _CHUNK):
                chunk = list(span_ids[i : i + _CHUNK])
                marks = ",".join("?" * len(chunk))
                out.extend(
                    ReadyRow(trace_id, bytes(sid), env, bytes(body))
                    for sid, env, body in self._db.execute(
                        f"SELECT span_id, envelope, body FROM span WHERE trace_id = ? AND span_id IN ({marks})"
                        " AND body IS NOT NULL",
                        [trace_id, *chunk],
                    )
                )
        return out

    def _states(self, trace_id: bytes, span_ids: Sequence[bytes]) -> dict[bytes, tuple[int, int]]:
        found: dict[bytes, tuple[int, int]] = {}
        for i in range(0, len(span_ids), _CHUNK):
            chunk = list(span_ids[i : i + _CHUNK])
            marks = ",".join("?" * len(chunk))
            for sid, state, size in self._db.execute(
                f"SELECT span_id, state, size FROM span WHERE trace_id = ? AND span_id IN ({marks})",
                [trace_id, *chunk],
            ):
                found[bytes(sid)] = (int(state), int(size))
        return found

    def release(self, release: Release) -> None:
        """Apply a verdict (or an untouched release): hold mode queues the spans, passthrough drops the hold."""
        r = release
        with self._lock:
            cur = self._db.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                before = self._states(r.trace_id, r.span_ids)
                for sid, body in r.bodies.items():
                    if sid in before:
                        cur.execute(
                            "UPDATE span SET body = ?, size = ? WHERE trace_id = ? AND span_id = ?",
                            (body, len(body), r.trace_id, sid),
                        )
                new = "1" if r.hold else "(state & 1)"
                cur.executemany(
                    f"UPDATE span SET state = {new}, unit = ?,"
                    f" body = CASE WHEN {new} = 0 THEN NULL ELSE body END,"
                    f" done = CASE WHEN {new} = 0 THEN ? ELSE done END"
                    " WHERE trace_id = ? AND span_id = ? AND (state & 2) = 2",
                    [(r.unit, r.now, r.trace_id, sid) for sid in before],
                )
                added = []
                for s in r.extra:
                    cur.execute(
                        _INSERT,
                        (
                            s.trace_id, s.span_id, s.parent_id, s.envelope, s.body, len(s.body), s.received, s.state,
                            s.conv_root, s.conv_id, s.conv_parent, s.error, s.unit,
                        ),
                    )  # fmt: skip
                    added.append(cur.rowcount == 1)
                if r.unit is not None and r.verdict is not None:
                    cur.execute(
                        "INSERT OR REPLACE INTO unit (trace_id, unit, conv_ids, verdict, released) VALUES (?,?,?,?,?)",
                        (r.trace_id, r.unit, ",".join(r.conv_ids), r.verdict, r.now),
                    )
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            for sid, (state, size) in before.items():
                if not state & HELD:
                    continue
                self._count(state, size, -1)
                self._count(QUEUED if r.hold else state & QUEUED, len(r.bodies.get(sid, b"")) or size, +1)
            for s, ok in zip(r.extra, added, strict=True):
                if ok:
                    self._count(s.state, len(s.body), +1)

    # -- export ------------------------------------------------------------------------------------------------
    def ready(self, max_spans: int, max_bytes: int) -> list[ReadyRow]:
        """Queued spans, up to ``max_spans`` and about ``max_bytes`` (always at least one)."""
        out: list[ReadyRow] = []
        total = 0
        with self._lock:
            cur = self._db.execute(
                "SELECT trace_id, span_id, envelope, body FROM span WHERE (state & 1) = 1 LIMIT ?", (max_spans,)
            )
            for tid, sid, env, body in cur:
                if out and total + len(body) > max_bytes:
                    break
                total += len(body)
                out.append(ReadyRow(bytes(tid), bytes(sid), int(env), bytes(body)))
            cur.close()
        return out

    def exported(self, keys: Sequence[tuple[bytes, bytes]], now: float) -> None:
        """Clear the queued bit; spans no longer held become tombstones (body dropped)."""
        with self._lock:
            cur = self._db.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                states: list[tuple[int, int]] = []
                for tid, sid in keys:
                    row = cur.execute(
                        "UPDATE span SET state = state & ~1,"
                        " body = CASE WHEN (state & ~1) = 0 THEN NULL ELSE body END,"
                        " done = CASE WHEN (state & ~1) = 0 THEN ? ELSE done END"
                        " WHERE trace_id = ? AND span_id = ? AND (state & 1) = 1 RETURNING state, size",
                        (now, tid, sid),
                    ).fetchone()
                    if row is not None:
                        states.append((int(row[0]), int(row[1])))
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            for new_state, size in states:
                self._count(new_state | QUEUED, size, -1)
                self._count(new_state, size, +1)

    # -- restart and housekeeping ------------------------------------------------------------------------------
    def held(self) -> Iterator[HeldSpan]:
        with self._lock:
            rows = self._db.execute(
                "SELECT trace_id, span_id, parent_id, envelope, received, conv_root, conv_id, conv_parent, error, size"
                " FROM span WHERE (state & 2) = 2"
            ).fetchall()
        for t, s, p, env, rec, root, cid, cpar, err, size in rows:
            yield HeldSpan(bytes(t), bytes(s), bytes(p), int(env), float(rec), bool(root), cid, cpar, bool(err), size)

    def queue_held(self) -> int:
        """Passthrough start after a hold run: held spans not queued yet are queued now (they leave unlabelled)."""
        with self._lock:
            n = int(self._db.execute("UPDATE span SET state = 3 WHERE state = 2").rowcount)
        self._queued += n
        return n

    def judged_traces(self, since: float) -> list[tuple[bytes, float]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT trace_id, max(released) FROM unit WHERE released >= ? GROUP BY trace_id", (since,)
            ).fetchall()
        return [(bytes(t), float(r)) for t, r in rows]

    def counts(self) -> tuple[int, int, int]:
        """(spans held, spans queued for export, bytes not yet exported)."""
        return self._held, self._queued, self._bytes

    def gc(self, before: float) -> int:
        """Forget tombstones and verdicts older than ``before``; returns the rows removed."""
        with self._lock:
            n = self._db.execute("DELETE FROM span WHERE state = 0 AND done < ?", (before,)).rowcount
            n += self._db.execute("DELETE FROM unit WHERE released < ?", (before,)).rowcount
        return int(n)

    def close(self) -> None:
        with self._lock:
            self._db.close()
