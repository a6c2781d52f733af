"""Counting verdict histories for one question: which verdicts fall on which side of a comparison, and how many of
them were judged, and failed with each mode, in each slice (everything, a service, a version, a framework, a
decisive agent) and over time.

Whole hours are read from the files' hourly tables; only the hours a window's edge cuts are read verdict by
verdict, so the cost follows the number of hours and services, not the number of verdicts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from mast_otel.collector.history.reader import JUDGED, FailedCount, HistoryFile, StatusCount
from mast_otel.collector.history.schema import HOUR_US, to_us

__all__ = ["ALL", "Side", "Slice", "Tally", "slices_of", "tally"]

HOUR_S = HOUR_US / 1e6
# A slice of the conversations: () is all of them; (("service", "checkout"),), (("service", "checkout"),
# ("version", "1.4")), (("framework", "ag2"),), (("agent", "planner"),).
Slice = tuple[tuple[str, str], ...]
ALL: Slice = ()


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a comparison: a time window [start, end) and which conversations in it count (``where``:
    service, version or framework names they must have; empty: all)."""

    label: str
    start: float
    end: float
    where: tuple[tuple[str, str], ...] = ()

    def accepts(self, service: str, version: str, framework: str) -> bool:
        have = {"service": service, "version": version, "framework": framework}
        return all(have[k] == v for k, v in self.where)


@dataclass
class Tally:
    """One side's counts."""

    statuses: Counter[str] = field(default_factory=Counter)  # every verdict, by mast.judge.status
    judged: Counter[Slice] = field(default_factory=Counter)  # judged conversations per slice (agents: see ALL)
    failed: Counter[tuple[str, Slice]] = field(default_factory=Counter)  # (mode, slice) -> conversations
    judged_over_time: Counter[float] = field(default_factory=Counter)  # bucket start -> judged
    failed_over_time: Counter[tuple[str, float]] = field(default_factory=Counter)  # (mode, bucket start) -> failed


def slices_of(service: str, version: str, framework: str, agent: str | None = None) -> list[Slice]:
    """Every slice a conversation counts in."""
    out: list[Slice] = [ALL, (("service", service),), (("service", service), ("version", version)),
                        (("framework", framework),)]  # fmt: skip
    if agent is not None:
        out.append((("agent", agent),))
    return out


def _add_status(t: Tally, row: StatusCount) -> None:
    t.statuses[row.status] += row.n
    if row.status in JUDGED:
        for s in slices_of(row.service, row.version, row.framework):
            t.judged[s] += row.n


def _add_failed(t: Tally, row: FailedCount) -> None:
    for s in slices_of(row.service, row.version, row.framework, row.agent):
        t.failed[(row.mode, s)] += row.n


def _hours(start: float, end: float) -> tuple[int, int]:
    """The whole hours inside [start, end): [first, end) as hour numbers (first >= end: none)."""
    first = -(-to_us(start) // HOUR_US)
    last = to_us(end) // HOUR_US
    return first, last


def _edges(start: float, end: float) -> list[tuple[float, float]]:
    """The parts of [start, end) outside its whole hours (read verdict by verdict)."""
    first, last = _hours(start, end)
    if first >= last:
        return [(start, end)] if start < end else []
    out = []
    if start < first * HOUR_S:
        out.append((start, first * HOUR_S))
    if last * HOUR_S < end:
        out.append((last * HOUR_S, end))
    return out


def _bucket(at: float, bucket_hours: int) -> float:
    return (int(at // HOUR_S) // bucket_hours) * bucket_hours * HOUR_S


def tally(files: Iterable[HistoryFile], sides: Sequence[Side], bucket_hours: int) -> list[Tally]:
    """Each side's counts over every file (one file per collector process: the sums are the collector's)."""
    out = [Tally() for _ in sides]
    for f in files:
        for t, side in zip(out, sides, strict=True):
            where = dict(side.where)
            first, last = _hours(side.start, side.end)
            if first < last:
                for row in f.status_counts(first, last, where):
                    _add_status(t, row)
                for frow in f.failed_counts(first, last, where):
                    _add_failed(t, frow)
                statuses, modes = f.over_time(first, last, bucket_hours, where)
                for at, status, n in statuses:
                    if status in JUDGED:
                        t.judged_over_time[at] += n
                for at, mode, n in modes:
                    t.failed_over_time[(mode, at)] += n
            for edge_start, edge_end in _edges(side.start, side.end):
                for v in f.verdicts(edge_start, edge_end):
                    if not side.accepts(v.service, v.version, v.framework):
                        continue
                    _add_status(t, StatusCount(v.at, v.service, v.version, v.framework, v.status, 1))
                    if v.status not in JUDGED:
                        continue
                    bucket = _bucket(v.at, bucket_hours)
                    t.judged_over_time[bucket] += 1
                    for mode in v.modes:
                        _add_failed(t, FailedCount(v.at, v.service, v.version, v.framework, v.agent, mode, 1))
                        t.failed_over_time[(mode, bucket)] += 1
    return out
