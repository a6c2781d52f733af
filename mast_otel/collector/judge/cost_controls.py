"""Cost controls, before a judge is called: ``judge_fraction`` and ``judge_token_budget_per_hour``.

A conversation with error spans, an error/limit termination or a confident structural signal is always judged,
whatever the fraction; the rest are sampled deterministically by trace id (the same conversation gets the same
answer after a restart). The budget counts the tokens judges reported over the last hour.
"""

from __future__ import annotations

import hashlib
import threading
from collections import deque
from collections.abc import Callable

from mast_otel import semconv as sc
from mast_otel.collector.release.builder import compute_signals_of
from mast_otel.judge.model import Verdict
from mast_otel.spans import SpanRecord

__all__ = ["CostControls"]

# Terminations that are themselves a signal: such conversations are judged whatever judge_fraction says.
_SIGNAL_TERMINATIONS = frozenset(
    {sc.TERMINATION_ERROR, sc.TERMINATION_MAX_ROUNDS, sc.TERMINATION_MAX_TURNS, sc.TERMINATION_MAX_AUTO_REPLIES}
)


class CostControls:
    """Which conversations a judge is called on, and the token budget's hour window (thread-safe)."""

    def __init__(self, *, fraction: float, token_budget_per_hour: int, clock: Callable[[], float]) -> None:
        self._fraction = fraction
        self._budget = token_budget_per_hour
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens: deque[tuple[float, int]] = deque()

    def sample(
        self, trace_id: bytes, unit_key: str, root: SpanRecord | None, records: list[SpanRecord]
    ) -> Verdict | None:
        """A skipped verdict when cost controls leave this conversation out, else None (judge it)."""
        signal = any(r.error for r in records) or (
            root is not None and root.get(sc.TERMINATION_REASON) in _SIGNAL_TERMINATIONS
        )
        if self._fraction < 1.0 and not signal:
            signal = _has_structural_signal(records)
        if self._fraction < 1.0 and not signal:
            h = hashlib.blake2b(trace_id + unit_key.encode(), digest_size=8).digest()
            if int.from_bytes(h, "big") / 2**64 >= self._fraction:
                return Verdict.skipped(f"sampled out (judge_fraction={self._fraction:g})")
        if self._budget and self.spent() >= self._budget:
            return Verdict.skipped(f"judge token budget exhausted ({self._budget} tokens per hour)")
        return None

    def spend(self, tokens: int) -> None:
        if tokens:
            with self._lock:
                self._tokens.append((self._clock(), tokens))

    def spent(self) -> int:
        horizon = self._clock() - 3600.0
        with self._lock:
            while self._tokens and self._tokens[0][0] < horizon:
                self._tokens.popleft()
            return sum(t for _, t in self._tokens)


def _has_structural_signal(records: list[SpanRecord]) -> bool:
    """Design: conversations with structural signals (repeats, a limit hit, an unchecked approval) are always judged.

    Only the confident signals count: the weak hints (e.g. "no verification language") fire on most conversations
    and would make sampling moot.
    """
    return any(s.confident for s in compute_signals_of(records))
