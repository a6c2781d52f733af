"""A memory bound for the receivers, like the OpenTelemetry Collector's ``memory_limiter``.

Every Export request is charged, before it is decoded, what decoding it may cost at worst: its size times
:data:`DECODE_AMPLIFICATION` (a measured worst case: a protobuf of tiny elements, e.g. 16 MiB of empty spans or
empty attributes, takes that many times its size as Python/upb objects). The charges of all requests in flight,
both receivers together, stay under ``memory_limit``; a request that does not fit now is refused with a retryable
error (RESOURCE_EXHAUSTED + RetryInfo / 503 + Retry-After), one that could never fit with a permanent one. So
however hostile the traffic, what the receivers hold is bounded by the limit, plus what the servers buffer before
the collector sees a request (bounded by the connection and concurrency caps times ``max_request_bytes``).
"""

from __future__ import annotations

import os
import threading

__all__ = ["DECODE_AMPLIFICATION", "MemoryLimiter", "OverLimit", "default_memory_limit", "memory_limit_of"]

# Peak bytes of Python/upb objects per byte of request in the ingest path's worst case, with margin. Measured
# (peak RSS growth / request size, 4 MiB requests): empty spans 44x, empty KeyValues in one span 43x, empty events
# 36x, OTLP JSON of empty objects 46x (decode) then the protobuf path; ordinary SDK batches 3-5x.
DECODE_AMPLIFICATION = 64
_FLOOR = 512 * 1024 * 1024
_CEILING = 4 * 1024 * 1024 * 1024


def default_memory_limit() -> int:
    """A quarter of the machine's memory, between 512 MiB and 4 GiB (the service raises it to at least what one
    request of ``max_request_bytes`` is charged, so every valid request can be accepted)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return _FLOOR
    return max(_FLOOR, min(_CEILING, total // 4))


def memory_limit_of(configured: int, max_request_bytes: int) -> int:
    """The limit in force: ``configured``, or (0) the default raised to what one request of ``max_request_bytes`` is
    charged, so that every valid request can be accepted."""
    return configured or max(default_memory_limit(), max_request_bytes * DECODE_AMPLIFICATION)


class OverLimit(Exception):
    """Not enough room in the memory limit. ``permanent``: the request alone exceeds the whole limit."""

    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.permanent = permanent


class MemoryLimiter:
    """Bytes in flight across every request being received or decoded; thread-safe, never blocks."""

    def __init__(self, limit: int, amplification: int = DECODE_AMPLIFICATION) -> None:
        self.limit = limit
        self.amplification = amplification
        self._used = 0
        self._lock = threading.Lock()

    @property
    def in_flight(self) -> int:
        return self._used

    def cost(self, size: int) -> int:
        """What decoding ``size`` request bytes is charged."""
        return max(1, size) * self.amplification

    def acquire(self, amount: int) -> int:
        """Charge ``amount`` bytes or raise :class:`OverLimit`; the caller must :meth:`release` what it got."""
        if amount > self.limit:
            raise OverLimit(
                f"the request needs {amount} bytes to decode, more than memory_limit={self.limit}; send smaller "
                "batches", permanent=True,
            )  # fmt: skip
        with self._lock:
            if self._used + amount > self.limit:
                raise OverLimit(
                    f"memory_limit reached ({self._used} of {self.limit} bytes in flight); retry later",
                    permanent=False,
                )
            self._used += amount
        return amount

    def release(self, amount: int) -> None:
        with self._lock:
            self._used = max(0, self._used - amount)
