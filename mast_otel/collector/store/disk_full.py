"""The store's disk-full mode: when it begins, what the operator is told, and when it ends.

When a write fails for lack of space the store gives up its reserve (the files themselves are :mod:`.disk_reserve`)
and enters disk-full mode: ingest refuses new spans (the receivers answer retryable errors) while releases and
exports go on in the freed space, emptying the store. :meth:`DiskFullMode.leave` ends it once the reserve could be
taken again. Opening the store on a full disk goes the same way, down to the smaller opening reserve.
"""

from __future__ import annotations

import logging
import sqlite3

from mast_otel.collector.store.disk_reserve import DiskReserve

__all__ = ["DiskFullMode", "is_disk_full"]

# The operator's log names the store, whichever of its modules speaks (the name is in every collector log line).
_log = logging.getLogger("mast_otel.collector.store.api")


def is_disk_full(exc: BaseException) -> bool:
    """Whether an SQLite error is the disk (or the file size limit) being full."""
    return isinstance(exc, sqlite3.OperationalError) and "full" in str(exc)


class DiskFullMode:
    """Whether the store refuses new spans for lack of disk space (:attr:`on`), and the reserve moves that go with it.

    Reads of :attr:`on` take no lock: a stale answer costs one refused request or one accepted one, as before.
    """

    def __init__(self, reserve: DiskReserve) -> None:
        self.reserve = reserve
        self.on = False

    def enter(self) -> bool:
        """The disk is full: free the reserve so releases and exports can proceed. False if there was none."""
        if not self.on:
            if self.reserve.held:
                _log.error("the store's disk is full: refusing new spans (retryable) and delivering the stored "
                           "ones using the %d-byte reserve; free disk space or restore the downstream",
                           self.reserve.size)  # fmt: skip
            else:
                _log.error("the store's disk is full and there is no reserve to give up (store_reserve=0 or spent): "
                           "refusing new spans (retryable); stored spans are delivered as space allows")  # fmt: skip
        self.on = True
        return self.reserve.give_up()

    def enter_to_open(self) -> bool:
        """Opening the store failed on a full disk with the main reserve already spent: free the opening reserve."""
        self.on = True
        return self.reserve.give_up_open()

    def fit_reserve(self, *, holding: bool) -> None:
        """At startup: take the reserve, sized to the disk; a store ``holding`` spans with no room starts full.

        Raises :class:`~.disk_reserve.ReserveTooSmall` for an empty store on a disk with no room for a reserve."""
        self.on = not self.reserve.fit(holding=holding)

    def leave(self) -> bool:
        """Once the store gave its freed pages back: retake the reserve when twice its size is free (so new spans
        have room). True when the store accepts spans again."""
        if self.reserve.path is not None and not (self.reserve.room_to_retake() and self.reserve.take()):
            return False
        self.on = False
        _log.info("the store's disk has room again; accepting spans")
        return True
