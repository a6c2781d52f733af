"""Worker threads: daemon threads running queued calls in order (the judge's)."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Workers"]

_log = logging.getLogger(__name__)
T = TypeVar("T")


class Workers:
    """``n`` daemon threads running queued calls in order.

    No Future per call: the caller tracks and cancels its own work. The judge queues one call per conversation, and
    a Future with its condition, lock and callbacks made a dozen objects per queued conversation for the garbage
    collector to scan (:mod:`..gc_tuning` says why that scan costs).

    Not a ThreadPoolExecutor: the interpreter joins an executor's threads at exit, so one judge call that never
    returns would keep a stopped collector alive forever.
    """

    def __init__(self, n: int, name: str) -> None:
        self._queue: queue.SimpleQueue[tuple[Callable[[Any], object], Any] | None] = queue.SimpleQueue()
        self._n = n
        self._closed = False
        for i in range(n):
            threading.Thread(target=self._work, name=f"{name}_{i}", daemon=True).start()

    def call(self, fn: Callable[[T], object], arg: T) -> None:
        """Queue ``fn(arg)``; it reports its own outcome (an exception it raises is logged, the worker goes on)."""
        self._queue.put((fn, arg))

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            fn, arg = item
            try:
                fn(arg)
            except BaseException:  # a worker that died would shrink the pool for good
                _log.exception("a queued call failed")

    @property
    def backlog(self) -> int:
        """Calls queued and not yet taken by a worker (cancelled ones included until a worker skips them); none
        once closed."""
        return 0 if self._closed else self._queue.qsize()

    def close(self) -> None:
        """Each idle worker exits once the calls queued before this are run or skipped (cancelled)."""
        self._closed = True
        for _ in range(self._n):
            self._queue.put(None)

