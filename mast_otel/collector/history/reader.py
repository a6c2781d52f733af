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
            # One snapshot for the file's whole use: the names read now are those of every verdict read later,
            # while the collector goes on writing (a verdict naming a service added after the names were read
            # failed with KeyError).
            self._db.execute("BEGIN")
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
    def _filter(self, where: Mapping[str, str]) -> tuple[str, list[int]] | None:
        """SQL conditions for ``where`` (service, version, framework, agent names); None: a name this file lacks."""
        clauses, params = [], []
        for key, value in where.items():
            kind, column = _WHERE[key]
            nid = self._ids.get((kind, value))
            if nid is None:
                return None
            clauses.append(f" AND {column} = ?")
            params.append(nid)
        return "".join(clauses), params

    def status_counts(self, first_hour: int, end_hour: int, where: Mapping[str, str] | None = None) -> (
            list[StatusCount]):  # fmt: skip
        """Verdicts of the hours [first_hour, end_hour) matching ``where``, by (service, version, framework,
        status); ``at`` is the first hour's start."""
        found = self._filter(where or {})
        if found is None:
            return []
        sql, params = found
        rows = self._db.execute(
            f"SELECT service, version, framework, status, sum(n) FROM status_hour WHERE hour >= ? AND hour < ?{sql} "
            "GROUP BY service, version, framework, status",
            (first_hour, end_hour, *params),
        )
        t, at = self._text, first_hour * HOUR_US / 1e6
        return [StatusCount(at, t[s], t[v], t[f], t[st], int(n)) for s, v, f, st, n in rows]

    def failed_counts(self, first_hour: int, end_hour: int, where: Mapping[str, str] | None = None) -> (
            list[FailedCount]):  # fmt: skip
        """Conversations with each mode in the hours [first_hour, end_hour) matching ``where``, by (service,
        version, framework, decisive agent)."""
        found = self._filter(where or {})
        if found is None:
            return []
        sql, params = found
        rows = self._db.execute(
            f"SELECT service, version, framework, agent, mode, sum(n) FROM failed_hour WHERE hour >= ? AND hour < ?"
            f"{sql} GROUP BY service, version, framework, agent, mode",
            (first_hour, end_hour, *params),
        )
        t, modes, at = self._text, self._modes, first_hour * HOUR_US / 1e6
        return [FailedCount(at, t[s], t[v], t[f], t[a] if a != NO_AGENT else None, modes[m], int(n))
                for s, v, f, a, m, n in rows]  # fmt: skip

    def over_time(self, first_hour: int, end_hour: int, bucket_hours: int, where: Mapping[str, str] | None = None) -> (
            tuple[list[tuple[float, str, int]], list[tuple[float, str, int]]]):  # fmt: skip
        """Per bucket of ``bucket_hours`` (its start, aligned to the epoch): verdicts by status, and conversations
        by mode, in the hours [first_hour, end_hour) matching ``where``."""
        found = self._filter(where or {})
        if found is None:
            return [], []
        sql, params = found
        size = int(bucket_hours)
        out: list[list[tuple[float, str, int]]] = []
        for table, column, names in (("status_hour", "status", self._text), ("failed_hour", "mode", self._modes)):
            rows = self._db.execute(
                f"SELECT hour / {size} AS b, {column}, sum(n) FROM {table} WHERE hour >= ? AND hour < ?{sql} "
                f"GROUP BY b, {column}",
                (first_hour, end_hour, *params),
            )
            out.append([(b * size * HOUR_US / 1e6, names[c], int(n)) for b, c, n in rows])
        return out[0], out[1]

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
        found_filter = self._filter(where)
        if found_filter is None:
            return []
        sql, params = found_filter
        first, last = to_us(start) // HOUR_US, (to_us(end) - 1) // HOUR_US
        hours = [h for (h,) in self._db.execute(
            f"SELECT DISTINCT hour FROM failed_hour WHERE hour >= ? AND hour <= ? AND mode = ?{sql} "
            "ORDER BY hour DESC LIMIT ?",
            (first, last, bit, *params, limit + 2),  # the first and last hour may hold them outside the window only
        )]  # fmt: skip
        judged = [self._ids[(KIND_STATUS, s)] for s in JUDGED if (KIND_STATUS, s) in self._ids]
        found: list[tuple[str, float]] = []
        for hour in hours:
            lo, hi = max(to_us(start), hour * HOUR_US), min(to_us(end), (hour + 1) * HOUR_US)
            rows = self._db.execute(
                f"SELECT trace_id, at FROM verdict WHERE at >= ? AND at < ? AND modes & ? != 0 "
                f"AND status IN ({', '.join('?' * len(judged))}){sql} ORDER BY at DESC LIMIT ?",
                (lo, hi, 1 << bit, *judged, *params, limit - len(found)),
            )  # fmt: skip
            found.extend((bytes(trace_id).hex(), at / 1e6) for trace_id, at in rows)
            if len(found) >= limit:
                break
        return found
