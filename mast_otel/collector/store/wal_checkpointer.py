"""Copying the store's write-ahead log into the database, in the background instead of on the Export path.

SQLite checkpoints by itself on the commit that grows the WAL past a threshold, which would cost every Nth Export
about half its time. :class:`WalCheckpointer` turns that off on the writing connection and checkpoints from a
second connection of its own every half second (PASSIVE: it never blocks the writer, and a round that finds the
database busy is caught up by the next). A store in memory has no WAL and no checkpointer.
"""

from __future__ import annotations

import sqlite3
import threading

__all__ = ["WalCheckpointer"]


class WalCheckpointer:
    """One daemon thread checkpointing the WAL of the store at ``path`` until :meth:`stop`."""

    def __init__(self, path: str, interval: float = 0.5) -> None:
        self._path = path
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sqlite-checkpoint", daemon=True)

    @classmethod
    def start(cls, path: str, writer: sqlite3.Connection) -> WalCheckpointer:
        """Take checkpoints off ``writer`` (the store's writing connection) and begin doing them here."""
        writer.execute("PRAGMA wal_autocheckpoint=0")
        checkpointer = cls(path)
        checkpointer._thread.start()
        return checkpointer

    def _run(self) -> None:
        db = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None, timeout=5)
        try:
            while not self._stop.wait(self._interval):
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error:
                    pass  # busy or locked: the next round catches up
        finally:
            db.close()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop checkpointing; the store's closing checkpoint (TRUNCATE) does the last one."""
        self._stop.set()
        self._thread.join(timeout)
