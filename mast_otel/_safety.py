"""Failure isolation: a recording failure is counted and logged once, and never reaches the program.

mast-otel runs inside other people's programs, so a bug in the recorder, in an integration's mapping code or in
an exporter's span processor must not change what the program sees. Every public recorder entry point and the
shared span lifecycle of the integrations (``mast_otel.integrations.lifecycle``) go through :func:`guarded` or
:func:`safe_call`: an ``Exception`` raised while recording is swallowed, counted under a *kind* (the entry point's
name, e.g. ``recorder.message``), logged once per kind with its traceback, and added to the OpenTelemetry
counter ``mast_otel.recording.failures`` (attribute ``kind``).

``BaseException`` that is not an ``Exception`` (``KeyboardInterrupt``, ``SystemExit``, a cancellation) is not a
recording failure: it passes through untouched, as it would without mast-otel.
"""

from __future__ import annotations

import functools
import logging
import threading
import traceback
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar, cast

from opentelemetry import metrics

__all__ = ["guarded", "record_failure", "recording_failures", "reset_recording_failures", "safe_call"]

_log = logging.getLogger("mast_otel")
_lock = threading.Lock()
_counts: Counter[str] = Counter()
_logged: set[str] = set()
_counter: metrics.Counter | None = None

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def recording_failures() -> dict[str, int]:
    """Recording failures so far in this process, per kind (a copy). Empty when nothing ever failed."""
    with _lock:
        return dict(_counts)


def reset_recording_failures() -> None:
    """Forget the counts and the once-per-kind log memory (for tests)."""
    with _lock:
        _counts.clear()
        _logged.clear()


def record_failure(kind: str, exc: BaseException, note: str | None = None) -> None:
    """Count one failure of ``kind``; the first of each kind is logged with its traceback, or with ``note``
    instead when given (a sentence that names what failed and holds no message content). Never raises."""
    try:
        with _lock:
            _counts[kind] += 1
            first = kind not in _logged
            _logged.add(kind)
        if first and note is not None:
            _log.warning("mast-otel: %s (counted as %s in mast_otel.recording_failures())", note, kind)
        elif first:
            # The exception's text is left out: it may quote message content, and secrets never reach logs.
            _log.warning(
                "mast-otel: recording failed in %s (%s); the program is unaffected, this kind of failure is "
                "counted (mast_otel.recording_failures()) and not logged again. Where:\n%s",
                kind,
                type(exc).__qualname__,
                "".join(traceback.format_list(traceback.extract_tb(exc.__traceback__))).rstrip(),
            )
        _metric().add(1, {"kind": kind})
    except Exception:  # the failure path must not fail: a broken log handler or meter loses only the report
        pass


def guarded(kind: str, default: Any = None) -> Callable[[F], F]:
    """Decorate a recording function: an ``Exception`` it raises is recorded under ``kind`` and ``default``
    returned instead."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                record_failure(kind, exc)
                return default

        return cast(F, wrapper)

    return decorate


def safe_call(kind: str, fn: Callable[..., T], *args: Any, default: T | None = None) -> T | None:
    """``fn(*args)``, or ``default`` when it raises (recorded under ``kind``)."""
    try:
        return fn(*args)
    except Exception as exc:
        record_failure(kind, exc)
        return default


def _metric() -> metrics.Counter:
    global _counter
    if _counter is None:  # created on first failure: the global MeterProvider may be set after import
        _counter = metrics.get_meter("mast_otel").create_counter(
            "mast_otel.recording.failures",
            unit="{failure}",
            description="Recording failures inside the instrumented program (swallowed, never raised)",
        )
    return _counter
