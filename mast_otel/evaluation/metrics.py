"""Agreement between a judge's labels and reference labels: per-mode precision, recall, F1, Cohen's kappa.

Per mode, every scored trace is one binary decision (present / absent). Overall figures: micro-averaged P/R/F1
and kappa over all (trace, mode) decisions pooled, and macro F1 (the mean of the per-mode F1s). Traces whose
verdict is an error (or skipped) are not scored and are counted separately: an unanswered trace is neither a
"yes" nor a "no". kappa is 0/0 for a mode nobody ever flags; it is reported as None there, never as a number.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Counts", "Scores", "score"]


@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def add(self, predicted: bool, reference: bool) -> None:
        if predicted and reference:
            self.tp += 1
        elif predicted:
            self.fp += 1
        elif reference:
            self.fn += 1
        else:
            self.tn += 1

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    def f1(self) -> float:
        """F1; 0 when the mode is neither flagged nor present (sklearn's ``zero_division=0``)."""
        denom = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / denom if denom else 0.0

    def kappa(self) -> float | None:
        n = self.n
        if not n:
            return None
        observed = (self.tp + self.tn) / n
        p_yes = ((self.tp + self.fp) / n) * ((self.tp + self.fn) / n)
        p_no = ((self.tn + self.fn) / n) * ((self.tn + self.fp) / n)
        expected = p_yes + p_no
        if expected >= 1.0:
            return None  # both raters constant and equal: agreement by construction, kappa undefined
        return (observed - expected) / (1 - expected)

    def accuracy(self) -> float | None:
        return (self.tp + self.tn) / self.n if self.n else None

    def row(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "support": self.tp + self.fn,
            "predicted": self.tp + self.fp,
            "precision": _r(self.precision()),
            "recall": _r(self.recall()),
            "f1": _r(self.f1()),
            "kappa": _r(self.kappa()),
            "accuracy": _r(self.accuracy()),
        }


@dataclass
class Scores:
    per_mode: dict[str, Counts]
    scored: int
    unscored: int

    def overall(self, modes: Sequence[str] | None = None) -> dict[str, Any]:
        modes = list(modes) if modes is not None else list(self.per_mode)
        pooled = Counts()
        for m in modes:
            c = self.per_mode[m]
            pooled.tp, pooled.fp, pooled.fn, pooled.tn = (
                pooled.tp + c.tp, pooled.fp + c.fp, pooled.fn + c.fn, pooled.tn + c.tn,
            )  # fmt: skip
        macro = [self.per_mode[m].f1() for m in modes]
        return {
            "modes": modes,
            "micro_precision": _r(pooled.precision()),
            "micro_recall": _r(pooled.recall()),
            "micro_f1": _r(pooled.f1()),
            "macro_f1": _r(sum(macro) / len(macro)) if macro else None,
            "kappa": _r(pooled.kappa()),
            "accuracy": _r(pooled.accuracy()),
        }


def score(
    pairs: Iterable[tuple[Mapping[str, bool] | None, Mapping[str, bool]]], modes: Sequence[str]
) -> Scores:
    """``pairs`` of (predicted, reference) label maps; a None prediction is an unscored (error) trace."""
    per_mode = {m: Counts() for m in modes}
    scored = unscored = 0
    for predicted, reference in pairs:
        if predicted is None:
            unscored += 1
            continue
        scored += 1
        for m in modes:
            per_mode[m].add(bool(predicted.get(m, False)), bool(reference.get(m, False)))
    return Scores(per_mode, scored, unscored)


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
