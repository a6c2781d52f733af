"""Recording must never break the program: a guard for the recording half of a hook.

A hook does two things: it runs the framework's code (whose result and exceptions pass through untouched) and it
records what happened. Only the second half runs under :func:`recording`, which swallows the failure, counts it
and logs it once per integration, so a surprise in a framework's data costs spans, never the run.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["failures", "recording"]

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
