"""A memory-only answer to "may this trace have tombstones?", sparing most spans a store query."""

from __future__ import annotations

import hashlib

__all__ = ["TraceFilter"]


class TraceFilter:
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
