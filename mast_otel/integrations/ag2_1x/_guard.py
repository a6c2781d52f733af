"""Recording must never break the program: a failure is counted and logged once, never raised."""

from __future__ import annotations

import logging
import threading

logger = logging.getLogger("mast_otel.integrations.ag2_1x")


class RecordingFailures:
    """Counts recording failures; logs the first one with its traceback, later ones not at all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def record(self, where: str) -> None:
        """Call from an ``except`` block: the exception being handled is the one counted."""
        with self._lock:
            self.count += 1
            first = self.count == 1
        if first:
            logger.exception("mast-otel could not record AG2 %s (further failures are counted, not logged)", where)
