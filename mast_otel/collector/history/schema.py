"""What a verdict history file is: its tables, the settings its connections open with, and the codes in its rows.

Tables (one file per collector process, ``STORE.history``):

- ``verdict``: one row per verdict. The key ``at`` is the verdict's time in microseconds since the epoch, unique in
  the file (a second verdict in the same microsecond takes the next one), so a time range is a range of the table's
  own b-tree: no index to keep, nothing to sort. Strings are ids into ``name``; the modes present are one integer,
  bit ``b`` for the mode ``mode.bit = b``.
- ``name``: every service, ``service.version``, framework, decisive agent, status and judge once, by kind.
- ``mode``: mode id -> bit (the 14 MAST modes take bits 0-13 when the file is made; a judge's other ids follow).
- ``status_hour`` and ``failed_hour``: per hour, the verdicts by (service, version, framework, status), and the
  conversations with each mode by (service, version, framework, decisive agent, mode). Written in the transaction
  that writes the verdicts, so a report reads whole hours from them and only the hours cut by its window's edges
  from ``verdict``; a million verdicts is then a few thousand rows to read.
- ``meta``: the file's own counts (verdicts dropped for the byte bound, expired by retention), so a report can say
  what is missing.

Retention and the byte bound drop whole hours, oldest first, from every table alike, so the hourly tables always
count exactly the rows ``verdict`` holds.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

from mast_otel.taxonomy import MODES

__all__ = [
    "HOUR_US", "KIND_AGENT", "KIND_FRAMEWORK", "KIND_JUDGE", "KIND_SERVICE", "KIND_STATUS", "KIND_VERSION", "MAX_MODES",
    "NO_AGENT", "SCHEMA_VERSION", "HistoryFileError", "HistoryUnavailable", "open_for_reading", "open_for_writing",
    "to_us",
]  # fmt: skip

SCHEMA_VERSION = 1
HOUR_US = 3_600_000_000
MAX_MODES = 63  # bits of a signed 64-bit integer
NO_AGENT = 0  # failed_hour.agent for a conversation without attribution (a key column cannot be NULL)

KIND_SERVICE, KIND_VERSION, KIND_FRAMEWORK, KIND_AGENT, KIND_STATUS, KIND_JUDGE = 1, 2, 3, 4, 5, 6

_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdict (
    at INTEGER PRIMARY KEY, trace_id BLOB NOT NULL, unit INTEGER NOT NULL, status INTEGER NOT NULL,
    modes INTEGER NOT NULL, service INTEGER NOT NULL, version INTEGER NOT NULL, framework INTEGER NOT NULL,
    agent INTEGER, step INTEGER, judge INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS name (
    id INTEGER PRIMARY KEY, kind INTEGER NOT NULL, text TEXT NOT NULL, UNIQUE (kind, text));
CREATE TABLE IF NOT EXISTS mode (bit INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS status_hour (
    hour INTEGER NOT NULL, service INTEGER NOT NULL, version INTEGER NOT NULL, framework INTEGER NOT NULL,
    status INTEGER NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (hour, service, version, framework, status)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS failed_hour (
    hour INTEGER NOT NULL, service INTEGER NOT NULL, version INTEGER NOT NULL, framework INTEGER NOT NULL,
    agent INTEGER NOT NULL, mode INTEGER NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (hour, service, version, framework, agent, mode)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


def to_us(t: float) -> int:
    """A time (seconds) as the file keeps it: the nearest whole microsecond (a double holds an epoch time to a
    quarter of a microsecond, so rounding, not truncating, keeps a time and the same time as a window's edge equal).
    The writer stores every verdict's time so, and a window is ``to_us(start) <= at < to_us(end)``."""
    return round(t * 1e6)


class HistoryFileError(Exception):
    """A file that is not a verdict history (or one written by a newer mast-otel): one line for the operator."""


class HistoryUnavailable(HistoryFileError):
    """The file cannot be opened now (a full disk, a lock, permissions): a later try may succeed."""


def open_for_writing(path: str, sync: str) -> sqlite3.Connection:
    """The collector's one connection to its history (WAL, autocommit: transactions begun by hand), tables made.

    ``sync="normal"`` makes a commit durable against a killed process, ``"full"`` also against power loss, as for
    the store. New files shrink when old hours are dropped (incremental auto-vacuum), so the byte bound is the
    file's size."""
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA auto_vacuum=INCREMENTAL")  # before the first table: new files only
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={'FULL' if sync == 'full' else 'NORMAL'}")
        db.execute("PRAGMA journal_size_limit=1048576")  # the WAL past the byte bound: at most about 1 MiB
        db.execute("PRAGMA wal_autocheckpoint=256")
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise HistoryFileError(f"{path}: a verdict history of a newer mast-otel (layout {version})")
        db.executescript(_SCHEMA)
        if version == 0:
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT OR IGNORE INTO mode (bit, id) VALUES (?, ?)", enumerate(m.id for m in MODES))
            db.execute("INSERT OR IGNORE INTO name (id, kind, text) VALUES (?, ?, '')", (NO_AGENT, KIND_AGENT))
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            db.execute("COMMIT")
    except sqlite3.OperationalError as exc:  # locked, read-only, a full disk: the file may be fine
        db.close()
        raise HistoryUnavailable(f"cannot open the verdict history {path}: {exc}") from None
    except sqlite3.DatabaseError as exc:
        db.close()
        raise HistoryFileError(f"{path}: not a verdict history ({exc}); move it away to start a new one") from None
    except BaseException:
        db.close()
        raise
    return db


def open_for_reading(path: str | Path) -> sqlite3.Connection:
    """A read-only connection (safe while the collector writes); refuses a file that is not a verdict history."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such verdict history")
    db = sqlite3.connect(f"file:{quote(str(p.resolve()))}?mode=ro", uri=True, check_same_thread=False)
    try:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"verdict", "name", "mode", "status_hour", "failed_hour"} <= tables:
            raise HistoryFileError(f"{p}: not a mast-otel verdict history (tables {sorted(tables)})")
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise HistoryFileError(f"{p}: a verdict history of a newer mast-otel (layout {version})")
    except sqlite3.DatabaseError as exc:
        db.close()
        raise HistoryFileError(f"{p}: not a mast-otel verdict history ({exc})") from None
    except BaseException:
        db.close()
        raise
    return db
