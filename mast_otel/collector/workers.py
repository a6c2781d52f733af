"""The judge's worker threads: daemon threads running submitted calls in order, each with a cancellable Future."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["Workers"]


class Workers:
    """``n`` daemon threads running submitted calls in order, each with a Future (cancellable while queued).

    Not a ThreadPoolExecutor: the interpreter joins an executor's threads at exit, so one judge call that never
    returns would keep a stopped collector alive forever.
    """

    def __init__(self, n: int, name: str) -> None:
        self._queue: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = queue.SimpleQueue()
        self._n = n
        self._closed = False
        for i in range(n):
            threading.Thread(target=self._work, name=f"{name}_{i}", daemon=True).start()

    def submit(self, fn: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        self._queue.put((future, fn))
        return future

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            future, fn = item
            if not future.set_running_or_notify_cancel():
                continue  # cancelled while queued
            try:
                result = fn()
            except BaseException as exc:  # as ThreadPoolExecutor does: the caller sees it through the future
                future.set_exception(exc)
            else:
                future.set_result(result)

    @property
    def backlog(self) -> int:
        """Calls submitted and not yet taken by a worker (cancelled ones included until a worker skips them);
        none once closed."""
        return 0 if self._closed else self._queue.qsize()

    def close(self) -> None:
        """Each idle worker exits once the calls queued before this are run or skipped (cancelled)."""
        self._closed = True
        for _ in range(self._n):
            self._queue.put(None)
