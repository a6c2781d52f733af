"""A progress bar for long judge runs: tqdm when installed, else a plain one on stderr.

Thread-safe (eval judges concurrently) and shows tokens spent, the number a judge run is watched for.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

__all__ = ["Progress"]


class Progress:
    def __init__(self, total: int, label: str, *, disable: bool = False, stream: TextIO | None = None) -> None:
        self.total = total
        self.label = label
        self.done = 0
        self.tokens = 0
        self._lock = threading.Lock()
        self._stream = stream or sys.stderr
        self._disable = disable
        self._tqdm: Any = None
        self._last = 0.0
        if disable:
            return
        try:
            from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]
        except ImportError:
            return
        self._tqdm = tqdm(total=total, desc=label, unit="trace", file=self._stream, dynamic_ncols=True)

    def update(self, tokens: int = 0) -> None:
        with self._lock:
            self.done += 1
            self.tokens += tokens
            if self._disable:
                return
            if self._tqdm is not None:
                self._tqdm.set_postfix(tokens=self.tokens, refresh=False)
                self._tqdm.update(1)
                return
            now = time.monotonic()
            if now - self._last < 0.2 and self.done < self.total:
                return
            self._last = now
            width = 30
            filled = width * self.done // max(self.total, 1)
            self._stream.write(
                f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                f"tokens {self.tokens}"
            )
            self._stream.flush()

    def close(self) -> None:
        with self._lock:
            if self._tqdm is not None:
                self._tqdm.close()
            elif not self._disable and self.total:
                self._stream.write("\n")
                self._stream.flush()
