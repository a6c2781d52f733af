"""A user-supplied judge for the tests (``--judge tests.viewing.signal_judge:SignalModeJudge``).

It stands in for "a judge is configured" where a test needs MAST labels from a real collector process without a
model: it labels the mode each structural signal hints at. A test double, not something to ship: that a
signal hints at a mode is exactly what a real judge has to decide.
"""

from __future__ import annotations

from collections.abc import Sequence

from mast_otel import semconv as sc
from mast_otel.judge.model import ModeLabel, Verdict
from mast_otel.judge.signals import compute_signals
from mast_otel.judge.view import build_view
from mast_otel.spans import SpanRecord


class SignalModeJudge:
    name = "test-signal-mode"

    def judge(self, spans: Sequence[SpanRecord], *, partial: bool = False) -> Verdict:
        signals = compute_signals(build_view(spans))
        modes = tuple(ModeLabel(s.mode_id, s.evidence_span_ids, s.detail) for s in signals)
        return Verdict(status=sc.JUDGE_PARTIAL if partial else sc.JUDGE_OK, source="test", modes=modes)
