"""Patterns across runs: which failure modes rose or fell, where, and how sure that is.

A *pattern* is a mode in a slice of the conversations: everywhere, in a service, in one version of a service, in a
framework, or with one decisive agent. Its figure is a rate among judged conversations (``mast.judge.status`` ok,
partial or truncated): conversations of the slice with the mode / judged conversations of the slice, with its count
and 95% Wilson interval. For an agent the denominator is every judged conversation of the window (only failed runs
name a decisive agent), so an agent's rates of one mode add up to the mode's rate among the attributed runs.

With a comparison (the window before, or one version against another) each pattern also gets the change and its
95% interval (:mod:`.rates`); a change whose interval holds 0 is *within noise*. Worst first: the changes that
surely rose, by how much at least; then the ones within noise, by how much; then the ones that surely fell.
Without a comparison: by the rate's lower bound.

Cardinality is bounded: past ``max_agents`` decisive agents (by failures) and ``max_versions`` versions (by judged
conversations), the rest count as ``other``, and the report says how many were folded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mast_otel.collector.history.reader import HistoryFile
from mast_otel.collector.report.rates import Change, Rate, change
from mast_otel.collector.report.tally import ALL, HOUR_S, Side, Slice, Tally, tally
from mast_otel.taxonomy import MODES, mode

__all__ = ["Comparison", "Example", "Pattern", "PatternReport", "Question", "build_report", "describe_slice"]

OTHER = "other"
COMPARE_DIMENSIONS = ("version", "service", "framework")
_BUCKETS = (1, 2, 3, 6, 12, 24, 48, 168, 336, 720)
_MAX_POINTS = 60


@dataclass(frozen=True, slots=True)
class Comparison:
    """``previous`` (the window of the same length just before), or one value of a dimension against another."""

    dimension: str | None = None  # None: the previous window
    now: str = ""
    before: str = ""

    @classmethod
    def parse(cls, text: str) -> Comparison:
        """``previous``, or ``version:1.4,1.3`` (also ``service:`` and ``framework:``): the first against the
        second. Raises ValueError with what to write instead."""
        if text.strip() == "previous":
            return cls()
        dimension, _, values = text.partition(":")
        parts = [v.strip() for v in values.split(",")]
        if dimension not in COMPARE_DIMENSIONS or len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
            raise ValueError(f"--compare {text!r}: use previous, or DIMENSION:NOW,BEFORE with DIMENSION one of "
                             f"{', '.join(COMPARE_DIMENSIONS)} (e.g. version:1.4,1.3)")  # fmt: skip
        return cls(dimension, parts[0], parts[1])

    def __str__(self) -> str:
        return "previous" if self.dimension is None else f"{self.dimension}:{self.now},{self.before}"


@dataclass(frozen=True, slots=True)
class Question:
    """What the report is asked: a window, an optional comparison and service, the cardinality bounds."""

    start: float
    end: float
    compare: Comparison | None = None
    service: str | None = None
    max_agents: int = 20
    max_versions: int = 10


@dataclass(frozen=True, slots=True)
class Example:
    trace_id: str
    at: float
    url: str | None = None


@dataclass(frozen=True, slots=True)
class Pattern:
    mode: str
    where: Slice
    now: Rate
    before: Rate | None = None
    change: Change | None = None
    examples: tuple[Example, ...] = ()

    @property
    def name(self) -> str:
        try:
            return mode(self.mode).name
        except KeyError:
            return "unknown mode"


@dataclass
class PatternReport:
    question: Question
    sides: tuple[Side, ...]
    tallies: tuple[Tally, ...]
    patterns: list[Pattern]
    bucket_hours: int
    folded: dict[str, int] = field(default_factory=dict)  # "agent"/"version" -> how many counted as other
    sources: list[dict[str, Any]] = field(default_factory=list)  # per history file: path, verdicts, first, last, ...

    @property
    def now(self) -> Tally:
        return self.tallies[0]

    @property
    def before(self) -> Tally | None:
        return self.tallies[1] if len(self.tallies) > 1 else None

    def to_json(self) -> dict[str, Any]:
        q = self.question

        def rate(r: Rate | None) -> dict[str, Any] | None:
            if r is None:
                return None
            low, high = r.interval
            return {"failed": r.failed, "judged": r.judged, "rate": r.value, "low": low, "high": high}

        return {
            "window": {"from": _iso(q.start), "to": _iso(q.end)},
            "compare": str(q.compare) if q.compare else None,
            "service": q.service,
            "sides": [{"label": s.label, "from": _iso(s.start), "to": _iso(s.end)} for s in self.sides],
            "statuses": [dict(t.statuses) for t in self.tallies],
            "judged": [t.judged[ALL] for t in self.tallies],
            "folded_as_other": self.folded,
            "limits": {"max_agents": q.max_agents, "max_versions": q.max_versions},
            "sources": self.sources,
            "patterns": [
                {"mode": p.mode, "name": p.name, "where": dict(p.where), "now": rate(p.now), "before": rate(p.before),
                 "change": None if p.change is None else {"difference": p.change.difference, "low": p.change.low,
                                                           "high": p.change.high, "verdict": p.change.verdict},
                 "examples": [{"trace_id": e.trace_id, "at": _iso(e.at), "url": e.url} for e in p.examples]}
                for p in self.patterns
            ],
            "over_time": {
                "bucket_hours": self.bucket_hours,
                "sides": [
                    {"judged": {_iso(b): n for b, n in sorted(t.judged_over_time.items())},
                     "failed": {m: {_iso(b): n for (mm, b), n in sorted(t.failed_over_time.items()) if mm == m}
                                for m in sorted({m for m, _ in t.failed_over_time})}}
                    for t in self.tallies
                ],
            },
        }  # fmt: skip


def describe_slice(where: Slice) -> str:
    """``all``, ``service=checkout``, ``service=checkout version=1.4``, ``agent=planner``."""
    return " ".join(f"{k}={v}" for k, v in where) or "all"


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def bucket_hours_for(seconds: float) -> int:
    """Hours per point of the charts: the smallest of 1, 2, 3, 6, 12 hours, 1, 2, 7, 14, 30 days giving at most
    60 points."""
    hours = seconds / HOUR_S
    return next((b for b in _BUCKETS if hours / b <= _MAX_POINTS), _BUCKETS[-1])


def _sides(q: Question) -> list[Side]:
    only: tuple[tuple[str, str], ...] = (("service", q.service),) if q.service is not None else ()
    now_label = f"{_iso(q.start)} to {_iso(q.end)}"
    if q.compare is None:
        return [Side(now_label, q.start, q.end, only)]
    c = q.compare
    if c.dimension is None:
        length = q.end - q.start
        return [Side(now_label, q.start, q.end, only),
                Side(f"{_iso(q.start - length)} to {_iso(q.start)}", q.start - length, q.start, only)]  # fmt: skip
    return [Side(f"{c.dimension} {value}", q.start, q.end, (*only, (c.dimension, value)))
            for value in (c.now, c.before)]  # fmt: skip


def _fold(tallies: Sequence[Tally], dimension: str, keep: int, by_failures: bool) -> int:
    """Past ``keep`` values of ``dimension`` (ranked over every side by failures, else by judged conversations),
    the rest become ``other``, in place; returns how many were folded."""
    values: Counter[Slice] = Counter()
    for t in tallies:
        counts = ((s, n) for (_, s), n in t.failed.items()) if by_failures else t.judged.items()
        for key, n in counts:
            if key and key[-1][0] == dimension:
                values[key] += n
    if len(values) <= keep:
        return 0
    kept = {s for s, _ in values.most_common(keep)}

    def folded(s: Slice) -> Slice:
        if not s or s[-1][0] != dimension or s in kept:
            return s
        return (*s[:-1], (dimension, OTHER))

    for t in tallies:
        judged: Counter[Slice] = Counter()
        for s, n in t.judged.items():
            judged[folded(s)] += n
        failed: Counter[tuple[str, Slice]] = Counter()
        for (m, s), n in t.failed.items():
            failed[(m, folded(s))] += n
        t.judged, t.failed = judged, failed
    return len(values) - keep


def _denominator(where: Slice) -> Slice:
    return ALL if where and where[0][0] == "agent" else where


def _order(p: Pattern) -> tuple[int, float, str, str]:
    mode_order = str(p.mode)
    where = "" if not p.where else "\x00".join(f"{k}={v}" for k, v in p.where)
    if p.change is None:
        low = p.now.interval[0] if p.now.judged else -1.0
        return (1, -low, mode_order, where)
    c = p.change
    if c.low > 0:
        return (0, -c.low, mode_order, where)
    if c.high < 0:
        return (2, c.high, mode_order, where)
    return (1, -c.difference, mode_order, where)


def _skip(where: Slice, compare: Comparison | None) -> bool:
    """A slice the comparison itself splits on says nothing (version 1.4 against 1.3, by version)."""
    if compare is None or compare.dimension is None or not where:
        return False
    keys = {k for k, _ in where}
    if compare.dimension == "service":
        return bool(keys & {"service", "version"})
    return compare.dimension in keys


def build_report(
    files: Sequence[HistoryFile],
    q: Question,
    *,
    link: Callable[[str, float], str | None] = lambda trace_id, at: None,
    examples: int = 3,
) -> PatternReport:
    """Count ``files`` for the question and build its patterns, worst first, each with up to ``examples`` traces."""
    sides = _sides(q)
    span = max(s.end for s in sides) - min(s.start for s in sides)
    bucket_hours = bucket_hours_for(span)
    tallies = tally(files, sides, bucket_hours)
    folded = {}
    n = _fold(tallies, "agent", q.max_agents, by_failures=True)
    if n:
        folded["agent"] = n
    n = _fold(tallies, "version", q.max_versions, by_failures=False)
    if n:
        folded["version"] = n
    now, before = tallies[0], (tallies[1] if len(tallies) > 1 else None)
    keys = sorted({*now.failed, *(before.failed if before else ())}, key=lambda k: (k[0], k[1]))
    patterns = []
    for m, where in keys:
        if _skip(where, q.compare):
            continue
        rate_now = Rate(now.failed[(m, where)], now.judged[_denominator(where)])
        rate_before = Rate(before.failed[(m, where)], before.judged[_denominator(where)]) if before else None
        patterns.append(Pattern(m, where, rate_now, rate_before,
                                change(rate_now, rate_before) if rate_before else None))  # fmt: skip
    patterns.sort(key=_order)
    if examples:
        patterns = [_with_examples(p, files, sides, link, examples) for p in patterns]
    return PatternReport(q, tuple(sides), tuple(tallies), patterns, bucket_hours, folded, _sources(files))


def _with_examples(p: Pattern, files: Sequence[HistoryFile], sides: Sequence[Side],
                   link: Callable[[str, float], str | None], limit: int) -> Pattern:  # fmt: skip
    """The latest conversations of the pattern: in the current side, else (none there) the one before."""
    if any(v == OTHER for _, v in p.where):
        return p  # folded values have no single name to search for
    for side, rate in zip(sides, (p.now, p.before), strict=False):
        if rate is None or not rate.failed:
            continue
        where = {**dict(side.where), **dict(p.where)}
        found = [e for f in files for e in f.examples(side.start, side.end, p.mode, where, limit)]
        found.sort(key=lambda e: -e[1])
        return Pattern(p.mode, p.where, p.now, p.before, p.change,
                       tuple(Example(tid, at, link(tid, at)) for tid, at in found[:limit]))  # fmt: skip
    return p


def _sources(files: Sequence[HistoryFile]) -> list[dict[str, Any]]:
    out = []
    for f in files:
        n, first, last = f.extent()
        out.append({"path": str(f.path), "verdicts": n, "first": _iso(first) if first else None,
                    "last": _iso(last) if last else None, **f.meta()})  # fmt: skip
    return out


def mode_order() -> dict[str, int]:
    """The taxonomy's order of mode ids (for tables and charts); modes outside it sort after."""
    return {m.id: i for i, m in enumerate(MODES)}


def fmt_rate(r: Rate | None) -> str:
    """``14.2% (1753/12345) [13.6-14.8]``; ``-`` when nothing was judged."""
    if r is None or not r.judged:
        return "-"
    low, high = r.interval
    return f"{100 * (r.value or 0):.1f}% ({r.failed}/{r.judged}) [{100 * low:.1f}-{100 * high:.1f}]"


def fmt_change(c: Change | None) -> str:
    """``+5.1 pt [+4.3, +5.9] rose``."""
    if c is None:
        return "-"
    return f"{100 * c.difference:+.1f} pt [{100 * c.low:+.1f}, {100 * c.high:+.1f}] {c.verdict}"
