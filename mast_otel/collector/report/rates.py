"""Rates among judged conversations with their uncertainty: the Wilson score interval for one rate, Newcombe's
hybrid score interval for the difference of two, and the rule that marks a change as noise.

Why these: a failure rate from a few dozen conversations is wide (2 of 3 is anything from 21% to 94%), and the
normal approximation (p ± 1.96·sqrt(p(1-p)/n)) gives nonsense there (intervals past 0 or 1, zero width at 0 of n).
Wilson's interval stays in [0, 1] and behaves at 0 and n. Newcombe (1998, method 10) builds the interval of a
difference from the two Wilson intervals, so the report's two columns and its verdict on the change agree.

A change is **within noise** when that 95% interval of the difference contains 0: the data do not rule out that
nothing changed. It is the two-proportion comparison at the 5% level, with a better interval than the z-test's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Z95", "Change", "Rate", "change", "newcombe", "wilson"]

Z95 = 1.959963984540054
ROSE, FELL, NOISE = "rose", "fell", "within noise"


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials ((0, 1) when n is 0: nothing is known)."""
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= k <= n:
        raise ValueError(f"{k} of {n} is not a proportion")
    p = k / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    # At 0 and n the bound is exact; floating point must not push it past p.
    return (0.0 if k == 0 else max(0.0, min(p, centre - half))), (1.0 if k == n else min(1.0, max(p, centre + half)))


def newcombe(k1: int, n1: int, k2: int, n2: int, z: float = Z95) -> tuple[float, float, float]:
    """(difference p1 - p2, lower, upper): Newcombe's hybrid score interval from the two Wilson intervals."""
    p1, p2 = (k1 / n1 if n1 else 0.0), (k2 / n2 if n2 else 0.0)
    l1, u1 = wilson(k1, n1, z)
    l2, u2 = wilson(k2, n2, z)
    d = p1 - p2
    return d, d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


@dataclass(frozen=True, slots=True)
class Rate:
    """Conversations with a mode among the judged ones, with the 95% Wilson interval."""

    failed: int
    judged: int

    @property
    def value(self) -> float | None:
        return self.failed / self.judged if self.judged else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.failed, self.judged)


@dataclass(frozen=True, slots=True)
class Change:
    """now - before, its 95% interval, and what that says: rose, fell, or within noise."""

    difference: float
    low: float
    high: float

    @property
    def verdict(self) -> str:
        if self.low > 0:
            return ROSE
        if self.high < 0:
            return FELL
        return NOISE

    @property
    def noise(self) -> bool:
        return self.verdict == NOISE


def change(now: Rate, before: Rate) -> Change | None:
    """The change from ``before`` to ``now``; None when either side judged nothing (no rate to compare)."""
    if not now.judged or not before.judged:
        return None
    return Change(*newcombe(now.failed, now.judged, before.failed, before.judged))
