"""Disk space set aside next to the store, so a full disk never wedges delivery.

Two files: ``STORE.reserve`` (``store_reserve`` bytes) is given up when a write fails for lack of space, so releases
and exports go on in the space it frees while ingest refuses; ``STORE.reserve-open`` (a quarter of it) is given up
only to *open* the store after a crash on a full disk with the main reserve already spent.

A reserve that does not fit is never pretended: at startup, when the disk has no room for the configured size, the
reserve is sized to what the disk allows (half its free space, the other half left to the store) and the log says
so; when even that is too small to be of use, an empty store refuses to start with a clear error, and a store that
holds spans starts in disk-full mode (it delivers what it holds, refuses new spans, and takes its reserve once the
space is back).
"""

from __future__ import annotations

import errno
import logging
import os

__all__ = ["MIN_RESERVE", "DiskReserve", "ReserveTooSmall"]

_log = logging.getLogger(__name__)
_OPEN_SHARE = 4  # the opening reserve is a quarter of the main one
MIN_RESERVE = 256 * 1024  # below this a reserve cannot carry a release and its exports: refuse rather than pretend


class ReserveTooSmall(Exception):
    """The store's disk has no room for a useful reserve (the message says what is free and what to do)."""


class DiskReserve:
    """The two reserve files of one store; a store with no path (in memory) or size 0 has none."""

    def __init__(self, store_path: str | None, size: int) -> None:
        on_disk = store_path is not None and size > 0
        self.path = store_path + ".reserve" if on_disk and store_path else None
        self.open_path = store_path + ".reserve-open" if on_disk and store_path else None
        self.requested = size
        self.size = size
        self.open_size = size // _OPEN_SHARE
        self._dir = os.path.dirname(os.path.abspath(store_path)) if store_path else "."

    @property
    def held(self) -> bool:
        """The main reserve file is there (it can be given up to free space)."""
        return self.path is not None and os.path.exists(self.path)

    def fit(self, *, holding: bool) -> bool:
        """Take both reserves at startup, sized down to what the disk allows when the configured size does not fit.

        False: the disk has no room even for a small reserve and the store ``holding`` spans starts in disk-full
        mode. :class:`ReserveTooSmall` when the store is empty: nothing to deliver, so say so and stop.
        """
        if self.path is None:
            return True
        if self.take():
            return True
        free = self.free_bytes() + self._existing()
        allowed = free // 2  # the other half is the store's own room
        if allowed >= MIN_RESERVE + MIN_RESERVE // _OPEN_SHARE:
            size = allowed * _OPEN_SHARE // (_OPEN_SHARE + 1)
            _log.warning("store_reserve: %d bytes (+%d for opening) do not fit on the store's disk (%d bytes free); "
                         "reserving %d bytes (+%d) instead: give the store a larger disk for the configured reserve",
                         self.requested, self.requested // _OPEN_SHARE, free, size, size // _OPEN_SHARE)  # fmt: skip
            self.size, self.open_size = size, size // _OPEN_SHARE
            if self.take():
                return True
        if holding:
            _log.error("the store's disk is full (%d bytes free) and no reserve could be set aside; starting in "
                       "disk-full mode: refusing new spans, delivering the stored ones", free)  # fmt: skip
            return False
        raise ReserveTooSmall(
            f"the store's disk ({self._dir}) has {free} bytes free, too little for a disk-full reserve (at least "
            f"{MIN_RESERVE + MIN_RESERVE // _OPEN_SHARE} bytes, store_reserve={self.requested}); free disk space, "
            "put the store on a larger disk, or set store_reserve to 0 to run without protection against a full disk"
        )

    def take(self) -> bool:
        """Allocate both files (the main one first); False when the disk has no room for them."""
        return _allocate(self.path, self.size) and _allocate(self.open_path, self.open_size)

    def give_up(self) -> bool:
        """The disk is full: delete the main reserve. False if there was none to free."""
        if not self.held:
            return False
        assert self.path is not None
        os.remove(self.path)
        return True

    def give_up_open(self) -> bool:
        """Opening the store failed on a full disk with the main reserve spent: delete the opening reserve."""
        if self.open_path is None or not os.path.exists(self.open_path):
            return False
        _log.error("the store's disk is full and its reserve was spent before a restart: using the opening reserve")
        os.remove(self.open_path)
        return True

    def room_to_retake(self) -> bool:
        """Twice the reserve is free again: taking it back leaves new spans room."""
        return self.free_bytes() >= 2 * self.size

    def free_bytes(self) -> int:
        stat = os.statvfs(self._dir)
        return stat.f_bavail * stat.f_frsize

    def _existing(self) -> int:
        return sum(os.path.getsize(p) for p in (self.path, self.open_path) if p is not None and os.path.exists(p))


def _allocate(path: str | None, size: int) -> bool:
    """Allocate a reserve file (blocks, not a sparse file, which would hold no space); False when the disk is full."""
    if path is None or size <= 0:
        return True
    try:
        if os.path.exists(path) and os.path.getsize(path) >= size:
            return True
        with open(path, "wb") as f:
            try:
                os.posix_fallocate(f.fileno(), 0, size)  # no data written: fast
            except (AttributeError, OSError) as exc:
                if getattr(exc, "errno", None) == errno.ENOSPC:
                    raise
                chunk = bytes(min(size, 1 << 20))  # a file system without fallocate: write zeros
                left = size
                while left > 0:
                    left -= f.write(chunk[: min(left, len(chunk))])
                f.flush()
            os.fsync(f.fileno())
        return True
    except OSError:
        try:
            os.remove(path)
        except OSError:
            pass
        return False
