"""``RulesJudge``: labels a conversation from structural signals alone, for when no LLM is configured.

It costs nothing and never fails on content, so the collector can label every conversation with it (or fall back
to it). It only labels what shape can show (see :mod:`mast_otel.judge.signals`); every other mode stays
unlabelled, which is why its verdicts carry ``mast.label.source`` = ``rules`` and a reason saying so.
"""

from __future__ import annotations

from collections.abc import Sequence

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord
from mast_otel.taxonomy import mode

from .model import ModeLabel, Verdict
from .signals import Signal, compute_signals
from .view import build_view

__all__ = ["RULES_COVERED_MODES", "RulesJudge", "labels_from_signals"]

# The modes a structural signal can label on its own (the eval scores the rules judge on these only).
RULES_COVERED_MODES: tuple[str, ...] = ("1.3", "1.5", "2.1", "3.1", "3.2")


def labels_from_signals(signals: Sequence[Signal], *, include_hints: bool) -> tuple[ModeLabel, ...]:
    """One label per mode with a signal (confident ones only unless ``include_hints``), evidence merged."""
    by_mode: dict[str, list[Signal]] = {}
    for s in signals:
        if s.confident or include_hints:
            by_mode.setdefault(s.mode_id, []).append(s)
    labels = []
    for mode_id, found in sorted(by_mode.items()):
        ids = tuple(dict.fromkeys(i for s in found for i in s.evidence_span_ids))
        reason = "; ".join(s.detail for s in found)
        labels.append(ModeLabel(mode_id=mode_id, evidence_span_ids=ids, reason=f"{mode(mode_id).name}: {reason}"))
    return tuple(labels)


class RulesJudge:
    """A :class:`mast_otel.judge.model.Judge` that needs no model.

    ``include_hints``: also label the signals marked as hints (higher recall, lower precision). Default off.
    """

    name = "rules"

    def __init__(self, *, include_hints: bool = False) -> None:
        self.include_hints = include_hints

    def judge(self, spans: Sequence[SpanRecord], *, partial: bool = False) -> Verdict:
        """Label from signals; a partial conversation gets status ``partial``, never a made-up completion."""
        view = build_view(spans)
        signals = compute_signals(view)
        labels = labels_from_signals(signals, include_hints=self.include_hints)
        hints = [s for s in signals if not (s.confident or self.include_hints)]
        summary = (
            f"Structural rules found {len(labels)} failure mode(s): {', '.join(m.mode_id for m in labels)}."
            if labels
            else "Structural rules found no failure mode; modes needing semantic judgement were not assessed."
        )
        extra = {"signals": ",".join(f"{s.mode_id}:{s.name}" for s in signals)} if signals else {}
        if hints:
            extra["hints_not_labelled"] = ",".join(s.mode_id for s in hints)
        return Verdict(
            status=sc.JUDGE_PARTIAL if partial else sc.JUDGE_OK,
            source=sc.SOURCE_RULES,
            modes=labels,
            summary=summary,
            task_completed=None,
            model=None,
            status_reason="conversation not finished; judged on the spans seen so far" if partial else None,
            extra=extra,
        )
