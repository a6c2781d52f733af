"""Admission of gRPC calls to the receiver's threads, judged by memory and by time, not by a count of calls.

Data flow: gRPC's serving thread hands each arriving call to :meth:`AdmissionPool.submit` (the pool is the server's
thread pool) -> charged what it holds while unread (``call_bytes``, against the shared
:class:`~..limits.MemoryLimiter`) -> run on a free receiver thread, or queued FIFO until one frees -> run, or, after
``wait`` seconds without a thread, refused.

- **Memory short**: a call the limiter has no room for is refused at once, never queued.
- **All threads busy**: the call waits, first come first served, up to ``wait`` seconds; a thread that frees takes
  the oldest waiting call (even one just past its wait: a thread is there). A call still waiting after ``wait`` is
  refused then, not when a thread frees, so a client is never held longer than ``wait`` for a refusal.
- A waiting call's body stays unread (with the client, behind HTTP/2 flow control): waiting costs its charge, no
  thread and no decoded bytes.

A refused call is still run, on the pool's admission thread, so that the handler answers it (gRPC answers a call
only from its handler): :func:`refusal_of_this_call` tells the handler it is being refused and why, and the handler
counts the refusal and answers without reading the body. An admitted handler calls :func:`body_read` once it holds
the body, which it then charges its decoding cost: the unread charge is given back first, so a request charged the
whole limit still fits.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from mast_otel.collector.limits import MemoryLimiter, OverLimit
from mast_otel.collector.metrics import REFUSE_CONCURRENCY
from mast_otel.collector.receive.refusal import Refusal, RefusalKind, over_limit_refusal

__all__ = ["AdmissionPool", "body_read", "refusal_of_this_call"]

# .refusal: set while a refused call's handler runs on the admission thread; .admitted: (pool, call) while an
# admitted call's handler runs on a receiver thread
_this_call = threading.local()


def refusal_of_this_call() -> Refusal | None:
    """Why the call whose handler runs on this thread is refused; None for an admitted call."""
    refusal: Refusal | None = getattr(_this_call, "refusal", None)
    return refusal


def body_read() -> None:
    """The admitted call whose handler runs on this thread holds its body now: give back what it was charged while
    unread (once; a no-op off a receiver thread)."""
    admitted: tuple[AdmissionPool, _Call] | None = getattr(_this_call, "admitted", None)
    if admitted is not None:
        pool, call = admitted
        pool._limiter.release(call.charge)
        call.charge = 0


@dataclass(slots=True)
class _Call:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    future: Future[Any] = field(default_factory=Future)
    charge: int = 0
    deadline: float = 0.0


class AdmissionPool(ThreadPoolExecutor):
    """A thread pool of ``threads`` threads that admits each submitted call by memory and time (module doc).

    ``call_bytes``: what a call is charged from submission until its handler calls :func:`body_read` (or ends).
    ``retry_after``: the delay refused calls are given. A ``ThreadPoolExecutor`` (gRPC's type for a server's pool)
    whose :meth:`submit` never blocks: gRPC calls it holding its server lock."""

    def __init__(
        self,
        threads: int,
        *,
        wait: float,
        limiter: MemoryLimiter,
        call_bytes: int,
        retry_after: float,
        name: str,
    ) -> None:
        super().__init__(max_workers=threads, thread_name_prefix=name)
        self.threads = threads
        self.wait = wait
        self._limiter = limiter
        self._call_bytes = call_bytes
        self._retry_after = retry_after
        self._running = 0
        self._waiting: deque[_Call] = deque()  # FIFO; one wait for all, so deadlines ascend too
        self._refusing: deque[tuple[_Call, Refusal]] = deque()
        self._closed = False
        self._cond = threading.Condition()
        self._admitter = threading.Thread(target=self._refuse_due, name=f"{name}-admission", daemon=True)
        self._admitter.start()

    @property
    def running(self) -> int:
        """Calls on a receiver thread."""
        return self._running

    @property
    def waiting(self) -> int:
        """Calls waiting for a receiver thread."""
        return len(self._waiting)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        call = _Call(fn, args, kwargs)
        try:
            call.charge = self._limiter.acquire(self._call_bytes)
        except OverLimit as exc:
            self._refuse(call, over_limit_refusal(exc, self._retry_after))
            return call.future
        with self._cond:
            if self._closed:
                self._refusing.append((call, self._busy()))
                self._cond.notify()
                return call.future
            start = self._running < self.threads
            if start:
                self._running += 1
            else:
                call.deadline = time.monotonic() + self.wait
                self._waiting.append(call)
                self._cond.notify()
        if start:
            super().submit(self._run, call)
        return call.future

    def close(self) -> None:
        """Refuse the calls still waiting and stop the admission thread (after the server stopped taking calls)."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._admitter.join(5)
        self.shutdown(wait=False)

    # -- on a receiver thread ------------------------------------------------------------------------------------
    def _run(self, call: _Call) -> None:
        _this_call.admitted = (self, call)
        try:
            _settle(call)
        finally:
            _this_call.admitted = None
            self._limiter.release(call.charge)
            with self._cond:
                following = self._waiting.popleft() if self._waiting else None
                if following is None:
                    self._running -= 1
            if following is not None:  # the freed thread goes to the oldest waiting call
                try:
                    super().submit(self._run, following)
                except RuntimeError:  # closed meanwhile: no thread will take it, answer it here
                    self._settle_refused(following, self._busy())

    # -- on the admission thread ---------------------------------------------------------------------------------
    def _refuse(self, call: _Call, refusal: Refusal) -> None:
        with self._cond:
            self._refusing.append((call, refusal))
            self._cond.notify()

    def _busy(self) -> Refusal:
        return Refusal(
            RefusalKind.RETRY_LATER, REFUSE_CONCURRENCY,
            f"all {self.threads} receiver threads busy for {self.wait:g}s; retry after the delay given",
            self._retry_after,
        )  # fmt: skip

    def _refuse_due(self) -> None:
        """Answer, in order, the calls refused for memory and the waiting calls past their wait (all of them once
        closed); sleep until the oldest waiting call's wait ends."""
        while True:
            with self._cond:
                due = self._due()
                while not due:
                    if self._closed:
                        return
                    self._cond.wait(self._waiting[0].deadline - time.monotonic() if self._waiting else None)
                    due = self._due()
            for call, refusal in due:
                self._settle_refused(call, refusal)

    def _settle_refused(self, call: _Call, refusal: Refusal) -> None:
        _this_call.refusal = refusal
        try:
            _settle(call)
        finally:
            _this_call.refusal = None
            self._limiter.release(call.charge)

    def _due(self) -> list[tuple[_Call, Refusal]]:
        due = list(self._refusing)
        self._refusing.clear()
        now = time.monotonic()
        while self._waiting and (self._closed or self._waiting[0].deadline <= now):
            due.append((self._waiting.popleft(), self._busy()))
        return due


def _settle(call: _Call) -> None:
    """Run the call's handler, passing its outcome to the future gRPC watches."""
    try:
        result = call.fn(*call.args, **call.kwargs)
    except BaseException as exc:  # the future carries it, as ThreadPoolExecutor's own would
        call.future.set_exception(exc)
    else:
        call.future.set_result(result)
