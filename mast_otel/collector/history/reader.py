"""Reading a verdict history file (read-only, safe while the collector writes it): counts over whole hours from the
hourly tables, single verdicts for the hours a window cuts, and example traces.

Every answer names things by their text (the ids are the file's own), so answers from several files (one per
collector process) add up.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from mast_otel import semconv as sc
from mast_otel.collector.history.schema import (
    HOUR_US,
    KIND_AGENT,
    KIND_FRAMEWORK,
    KIND_SERVICE,
    KIND_STATUS,
    KIND_VERSION,
    NO_AGENT,
    open_for_reading,
    to_us,
)

__all__ = ["JUDGED", "FailedCount", "HistoryFile", "StatusCount", "StoredVerdict"]


@dataclass(frozen=True, slots=True)
class StatusCount:
    """Verdicts of one (service, version, framework, status), at ``at`` (a bucket's start, or one verdict's time)."""

    at: float
    service: str
    version: str
    framework: str
    status: str
    n: int


@dataclass(frozen=True, slots=True)
class FailedCount:
    """Conversations with ``mode`` of one (service, version, framework, decisive agent), at ``at`` (a bucket's
    start, or one verdict's time)."""

    at: float
    service: str
    version: str
    framework: str
    agent: str | None
    mode: str
    n: int


@dataclass(frozen=True, slots=True)
class StoredVerdict:
    at: float
    trace_id: str
    status: str
    modes: tuple[str, ...]
    service: str
    version: str
    framework: str
    agent: str | None
    step: int | None


JUDGED = (sc.JUDGE_OK, sc.JUDGE_PARTIAL, sc.JUDGE_TRUNCATED)
# Which name a where-key filters on, and its column.
_WHERE = {"service": (KIND_SERVICE, "service"), "version": (KIND_VERSION, "version"),
          "framework": (KIND_FRAMEWORK, "framework"), "agent": (KIND_AGENT, "agent")}  # fmt: skip


class HistoryFile:
    """One history file, opened read-only; raises FileNotFoundError or HistoryFileError when it is not one."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = open_for_reading(path)
        try:
            self._db.execute("PRAGMA cache_size=-65536")
            self._text = {nid: text for nid, text in self._db.execute("SELECT id, text FROM name")}
            self._ids = {(kind, text): nid for nid, kind, text in self._db.execute("SELECT id, kind, text FROM name")}
            self._modes = {bit: mode_id for bit, mode_id in self._db.execute("SELECT bit, id FROM mode")}
        except sqlite3.DatabaseError:
            self._db.close()
            raise

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> HistoryFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what the file holds ---------------------------------------------------------------------------------------
    def extent(self) -> tuple[int, float | None, float | None]:
        """(verdicts, time of the first, time of the last)."""
        n, lo, hi = self._db.execute("SELECT count(*), min(at), max(at) FROM verdict").fetchone()
        return int(n), (lo / 1e6 if lo is not None else None), (hi / 1e6 if hi is not None else None)

    def meta(self) -> dict[str, int]:
        """What the file dropped: ``expired`` (retention), ``dropped_max_bytes`` (the byte bound)."""
        return {str(k): int(v) for k, v in self._db.execute("SELECT key, value FROM meta")}

    # -- counts over whole hours -----------------------------------------------------------------------------------
    def status_counts(self, first_hour: int, end_hour: int, bucket_hours: int = 0) -> list[StatusCount]:
        """Verdicts of the hours [first_hour, end_hour) by (service, version, framework, status); with
        ``bucket_hours``, also by bucket (``at`` = the bucket's start; 0: one bucket, ``at`` = the first hour)."""
        bucket = f"hour / {int(bucket_hours)}" if bucket_hours else "0"
        rows = self._db.execute(
            f"SELECT {bucket} AS b, service, version, framework, status, sum(n) FROM status_hour "
            "WHERE hour >= ? AND hour < ? GROUP BY b, service, version, framework, status",
            (first_hour, end_hour),
        )
        t = self._text
        return [StatusCount(_bucket_start(b, bucket_hours, first_hour), t[s], t[v], t[f], t[st], int(n))
                for b, s, v, f, st, n in rows]  # fmt: skip

    def failed_counts(self, first_hour: int, end_hour: int, bucket_hours: int = 0, *, by_agent: bool = True) -> (
            list[FailedCount]):  # fmt: skip
        """Conversations with each mode in the hours [first_hour, end_hour), by (service, version, framework,
        decisive agent unless ``by_agent`` is False); ``bucket_hours`` as for :meth:`status_counts`."""
        bucket = f"hour / {int(bucket_hours)}" if bucket_hours else "0"
        agent = "agent" if by_agent else str(NO_AGENT)
        rows = self._db.execute(
            f"SELECT {bucket} AS b, service, version, framework, {agent} AS a, mode, sum(n) "
            "FROM failed_hour WHERE hour >= ? AND hour < ? GROUP BY b, service, version, framework, a, mode",
            (first_hour, end_hour),
        )
        t, modes = self._text, self._modes
        return [
            FailedCount(_bucket_start(b, bucket_hours, first_hour), t[s], t[v], t[f], t[a] if a != NO_AGENT else None,
                        modes[m], int(n))
            for b, s, v, f, a, m, n in rows
        ]  # fmt: skip

    # -- single verdicts -------------------------------------------------------------------------------------------
    def verdicts(self, start: float, end: float) -> Iterator[StoredVerdict]:
        """Every verdict with start <= time < end, oldest first (for the hours a window's edges cut)."""
        t, bits = self._text, self._modes
        rows = self._db.execute(
            "SELECT at, trace_id, status, modes, service, version, framework, agent, step FROM verdict "
            "WHERE at >= ? AND at < ? ORDER BY at",
            (to_us(start), to_us(end)),
        )
        for at, trace_id, status, mask, s, v, f, a, step in rows:
            modes = tuple(bits[b] for b in sorted(bits) if mask >> b & 1) if mask else ()
            yield StoredVerdict(at / 1e6, bytes(trace_id).hex(), t[status], modes, t[s], t[v], t[f],
                                t[a] if a is not None else None, step)  # fmt: skip

    def examples(self, start: float, end: float, mode: str, where: Mapping[str, str], limit: int = 3) -> (
            list[tuple[str, float]]):  # fmt: skip
        """The latest ``limit`` judged conversations with ``mode`` in [start, end) matching ``where`` (service,
        version, framework, agent), as (trace id hex, time); none when a name is not in this file.

        The hourly table names the latest hours that hold one, and only those hours' verdicts are read: a rare
        pattern costs a few hours' rows, not the window's."""
        bit = next((b for b, m in self._modes.items() if m == mode), None)
        if bit is None:
            return []
        conditions, params = [], []
        for key, value in where.items():
            kind, column = _WHERE[key]
            nid = self._ids.get((kind, value))
            if nid is None:
                return []
            conditions.append(f"{column} = ?")
            params.append(nid)
        first, last = to_us(start) // HOUR_US, (to_us(end) - 1) // HOUR_US
        hours = [h for (h,) in self._db.execute(
            "SELECT DISTINCT hour FROM failed_hour WHERE hour >= ? AND hour <= ? AND mode = ?"
            + "".join(f" AND {c}" for c in conditions) + " ORDER BY hour DESC LIMIT ?",
            (first, last, bit, *params, limit + 2),  # the first and last hour may hold them outside the window only
        )]  # fmt: skip
        judged = [self._ids[(KIND_STATUS, s)] for s in JUDGED if (KIND_STATUS, s) in self._ids]
        found: list[tuple[str, float]] = []
        for hour in hours:
            lo, hi = max(to_us(start), hour * HOUR_US), min(to_us(end), (hour + 1) * HOUR_US)
            rows = self._db.execute(
                f"SELECT trace_id, at FROM verdict WHERE at >= ? AND at < ? AND modes & ? != 0 "
                f"AND status IN ({', '.join('?' * len(judged))})" + "".join(f" AND {c}" for c in conditions)
                + " ORDER BY at DESC LIMIT ?",
                (lo, hi, 1 << bit, *judged, *params, limit - len(found)),
            )  # fmt: skip
            found.extend((bytes(trace_id).hex(), at / 1e6) for trace_id, at in rows)
            if len(found) >= limit:
                break
        return found


def _bucket_start(bucket: int, bucket_hours: int, first_hour: int) -> float:
    hour = bucket * bucket_hours if bucket_hours else first_hour
    return hour * HOUR_US / 1e6
