"""What a store file is: its tables, the settings every connection to it opens with, and the error for a file
that is not one.

Tables:

- ``resource``: each distinct OTLP Resource (+ schema URL) once, keyed by a digest (:mod:`.resource_cache`).
- ``segment``: held ``ScopeSpans`` blobs, spans waiting for their conversation. A segment is deleted when every
  span in it has been released (the assembler counts what is left in each).
- ``outbox``: ``ScopeSpans`` blobs ready for the downstream, labelled; deleted once the downstream acknowledged.
- ``tomb``: one row per release (a judged conversation, a late span, spans outside any conversation): the span
  ids released, the conversation ids and the verdict. It marks those spans as done in their segments (a restart
  skips them), drops duplicate deliveries, and tells a late span which conversation it belonged to. Kept for
  ``tombstone_ttl`` and never less than the oldest held segment needs.
- ``log_outbox``: OTLP ``ScopeLogs`` blobs as received, waiting for the logs downstream; deleted once it acknowledged
  (:mod:`.logs_ingest`). Empty when logs are not forwarded.
- ``log_record``: each received log record that names a span (trace id + span id), kept for the judge of that
  span's conversation; deleted with the release of its span, or after ``tombstone_ttl`` when the span never came.
- ``quarantine``: segments that could not be read back (a corrupted row), set aside with the reason instead of
  being retried forever; they are counted and logged, and stay for an operator to inspect.

Not a table: ``STORE.verdicts``, verdicts reached but not yet written with their release (:mod:`.verdicts`). The
statements against these tables are all in :mod:`.sqlite_store`; ``mast-otel report --store`` reads the ``tomb``
table on its own (:mod:`.report.store`), so a column renamed here must be renamed there.
"""

from __future__ import annotations

import sqlite3

__all__ = ["StoreError", "open_database"]

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
CREATE TABLE IF NOT EXISTS log_outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT, resource INTEGER NOT NULL, records INTEGER NOT NULL, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS log_record (
    id INTEGER PRIMARY KEY, trace_id BLOB NOT NULL, span_id BLOB NOT NULL, received REAL NOT NULL, data BLOB NOT NULL,
    owner TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS log_record_trace ON log_record(trace_id);
CREATE TABLE IF NOT EXISTS quarantine (
    id INTEGER PRIMARY KEY, segment INTEGER NOT NULL, at REAL NOT NULL, stage TEXT NOT NULL, reason TEXT NOT NULL,
    resource BLOB, data BLOB);
"""


class StoreError(Exception):
    """The store file cannot be opened or read (corrupt, not a database, unreadable): one line for the operator."""


def open_database(path: str, sync: str) -> sqlite3.Connection:
    """The store's one writing connection (WAL, autocommit: transactions are begun by hand), its tables created.

    ``sync="normal"`` makes a commit durable against a killed process (it is in the WAL file); ``"full"`` also
    against power loss, at one fsync per commit. Raises :class:`sqlite3.Error` (a full disk among them: the caller
    decides whether the reserve can help).
    """
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA auto_vacuum=INCREMENTAL")  # new files only: lets reclaim() shrink the file
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={'FULL' if sync == 'full' else 'NORMAL'}")
        db.execute("PRAGMA temp_store=MEMORY")
        db.execute("PRAGMA cache_size=-16384")
        db.execute("PRAGMA journal_size_limit=67108864")
        db.executescript(_SCHEMA)
        columns = {row[1] for row in db.execute("PRAGMA table_info(log_record)")}
        if "owner" not in columns:  # a store written before log records kept their owner
            db.execute("ALTER TABLE log_record ADD COLUMN owner TEXT NOT NULL DEFAULT ''")
    except BaseException:
        db.close()  # the caller may retry in the space a reserve frees: no half-open connection alongside
        raise
    return db
