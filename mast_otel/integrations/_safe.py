"""Recording must never break the program: a guard for the recording half of a hook, and :class:`Hook`, the one
span lifecycle (begin, finish, fail) the integrations share between sync and async methods.

A hook does two things: it runs the framework's code (whose result and exceptions pass through untouched) and it
records what happened. Only the second half runs under :func:`recording`, which swallows the failure, counts it
and logs it once per integration, so a surprise in a framework's data costs spans, never the run.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

__all__ = ["Hook", "Wrapper", "failures", "recording"]

_log = logging.getLogger("mast_otel.integrations")
_lock = threading.Lock()
_failures: Counter[str] = Counter()


@contextmanager
def recording(integration: str) -> Iterator[None]:
    """Run the block; an exception in it is counted under ``integration`` and logged the first time, not raised."""
    try:
        yield
    except Exception:
        with _lock:
            _failures[integration] += 1
            first = _failures[integration] == 1
        if first:
            _log.warning("mast-otel %s: recording failed; the program is unaffected", integration, exc_info=True)


def failures(integration: str) -> int:
    """How many recordings ``integration`` has dropped in this process (for tests and diagnostics)."""
    with _lock:
        return _failures[integration]


Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]


@dataclass(frozen=True)
class Hook:
    """One traced method, written once for its sync and async forms.

    ``begin(instance, args, kwargs)`` starts recording and returns a handle (None: call through untraced);
    ``finish(handle, result)`` and ``fail(handle, exception)`` end it. All three run under :func:`recording`, so a
    recording failure never reaches the program; the wrapped call's result and exception pass through unchanged.
    """

    integration: str
    begin: Callable[[Any, tuple[Any, ...], dict[str, Any]], Any]
    finish: Callable[[Any, Any], None] = lambda handle, result: None
    fail: Callable[[Any, BaseException], None] = lambda handle, exc: None

    def _begin(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return None
        handle = None
        with recording(self.integration):
            handle = self.begin(instance, args, kwargs)
        return handle

    def _finish(self, handle: Any, result: Any) -> None:
        with recording(self.integration):
            self.finish(handle, result)

    def _fail(self, handle: Any, exc: BaseException) -> None:
        with recording(self.integration):
            self.fail(handle, exc)

    def sync(self) -> Wrapper:
        def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            handle = self._begin(instance, args, kwargs)
            if handle is None:
                return wrapped(*args, **kwargs)
            try:
                result = wrapped(*args, **kwargs)
            except BaseException as exc:
                self._fail(handle, exc)
                raise
            self._finish(handle, result)
            return result

        return wrapper

    def async_(self) -> Wrapper:
        async def wrapper(
            wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
        ) -> Any:
            handle = self._begin(instance, args, kwargs)
            if handle is None:
                return await wrapped(*args, **kwargs)
            try:
                result = await wrapped(*args, **kwargs)
            except BaseException as exc:
                self._fail(handle, exc)
                raise
            self._finish(handle, result)
            return result

        return wrapper
