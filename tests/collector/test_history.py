"""The verdict history file: what a verdict row keeps, retention and the byte bound (oldest hours first, every drop
counted), names past their cap, a file that cannot be written, and a conversation released again after a crash.

The hourly tables are checked against the verdict rows themselves (a property over random verdicts and times):
whatever was written and dropped, the counts a report reads from them are the rows' counts.
"""

from __future__ import annotations

import os
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from mast_otel.collector.history import HistoryFile, HistoryFileError, VerdictEntry, VerdictHistory, history_files
from mast_otel.collector.history.reader import JUDGED
from mast_otel.collector.history.schema import HOUR_US, HistoryUnavailable, open_for_writing
from mast_otel.collector.history.writer import MAX_WAITING

HOUR = HOUR_US / 1e6
DAY = 24 * HOUR
START = (1_790_000_000 // int(HOUR)) * HOUR  # an hour boundary (2026-09-21)


def entry(i: int, *, status: str = "ok", modes: tuple[str, ...] = (), service: str = "shop", version: str = "1.0",
          framework: str = "ag2", agent: str | None = None, step: int | None = None) -> VerdictEntry:  # fmt: skip
    return VerdictEntry(i.to_bytes(16, "big"), f"{i:016x}", status, modes, service, version, framework, agent, step,
                        "judge-model")  # fmt: skip


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def open_history(path: Path, **kw: object) -> tuple[VerdictHistory, CollectorRegistry]:
    registry = CollectorRegistry()
    options: dict[str, object] = {"retention": 30 * DAY, "max_bytes": 1 << 30, "registry": registry}
    options.update(kw)
    return VerdictHistory(str(path), **options), registry  # type: ignore[arg-type]


def test_a_verdict_row_keeps_what_the_report_needs(tmp_path: Path) -> None:
    history, registry = open_history(tmp_path / "s.db.history")
    history.record([entry(1, modes=("1.3", "2.3"), version="1.4", agent="coder", step=4),
                    entry(2, status="error")], at=START + 10)  # fmt: skip
    history.close()
    assert sample(registry, "mast_history_verdicts_total") == 2
    with HistoryFile(tmp_path / "s.db.history") as f:
        failed, error = f.verdicts(START, START + HOUR)
        assert failed.trace_id == (1).to_bytes(16, "big").hex() and failed.at == START + 10
        assert (failed.status, failed.modes, failed.service, failed.version, failed.framework, failed.agent,
                failed.step) == ("ok", ("1.3", "2.3"), "shop", "1.4", "ag2", "coder", 4)  # fmt: skip
        assert (error.status, error.modes, error.agent) == ("error", (), None)
        assert error.at > failed.at  # one microsecond later: each verdict has its own key
        assert f.examples(START, START + HOUR, "2.3", {"agent": "coder", "version": "1.4"}) == [
            (failed.trace_id, failed.at)]  # fmt: skip
        assert f.examples(START, START + HOUR, "2.3", {"agent": "critic"}) == []


def test_a_report_reads_one_snapshot_while_the_collector_writes(tmp_path: Path) -> None:
    """A history opened for a report while the collector goes on writing: a verdict naming a service the file did
    not hold when it was opened is not read half (its names unknown: KeyError), the report reads the file as it
    was when opened."""
    history, _ = open_history(tmp_path / "h")
    history.record([entry(1)], at=START + 10)
    with HistoryFile(tmp_path / "h") as f:
        history.record([entry(2, service="desk", agent="new-agent")], at=START + 20)
        assert [v.trace_id for v in f.verdicts(START, START + HOUR)] == [(1).to_bytes(16, "big").hex()]
    history.close()
    with HistoryFile(tmp_path / "h") as f:
        assert [v.service for v in f.verdicts(START, START + HOUR)] == ["shop", "desk"]


def test_retention_drops_whole_hours_and_counts_them(tmp_path: Path) -> None:
    history, registry = open_history(tmp_path / "h", retention=2 * HOUR)
    history.record([entry(1)], at=START + 0.5 * HOUR)  # hour 0
    history.record([entry(2)], at=START + 1.5 * HOUR)  # hour 1
    history.record([entry(3)], at=START + 2.9 * HOUR)  # hour 2
    history.maintain(now=START + 3.2 * HOUR)  # 2h back is hour 1.2: hour 0 goes, hour 1 (cut) stays whole
    history.close()
    assert sample(registry, "mast_history_verdicts_expired_total") == 1
    with HistoryFile(tmp_path / "h") as f:
        assert [v.trace_id[-1] for v in f.verdicts(0, START + 10 * HOUR)] == ["2", "3"]
        assert f.meta() == {"expired": 1}
        assert sum(c.n for c in f.status_counts(0, 10**9)) == 2


def test_the_byte_bound_drops_the_oldest_hours_and_counts_them(tmp_path: Path) -> None:
    path = tmp_path / "h"
    history, registry = open_history(path, max_bytes=1 << 20)
    written = 0
    for hour in range(60):  # ~ 3,000 verdicts an hour, far more than 1 MiB in all
        batch = [entry(hour * 10_000 + i, modes=("1.3",) if i % 3 else (), agent="coder" if i % 3 else None)
                 for i in range(3000)]  # fmt: skip
        history.record(batch, at=START + hour * HOUR)
        written += len(batch)
        assert os.path.getsize(path) <= 1 << 20, hour
    history.close()
    dropped = sample(registry, "mast_history_verdicts_dropped_total", reason="max_bytes")
    with HistoryFile(path) as f:
        kept, first, last = f.extent()
        assert 0 < kept < written and kept + dropped == written
        assert last == pytest.approx(START + 59 * HOUR, abs=1)  # the newest are kept, the oldest went first
        assert first is not None and first >= START + (written - kept) // 3000 * HOUR - 1
        assert f.meta()["dropped_max_bytes"] == dropped


def test_names_past_their_cap_are_kept_as_other_and_counted(tmp_path: Path) -> None:
    history, registry = open_history(tmp_path / "h", max_names=3)
    history.record([entry(i, modes=("1.1",), agent=f"agent-{i}") for i in range(5)], at=START)
    history.close()
    with HistoryFile(tmp_path / "h") as f:
        agents = [v.agent for v in f.verdicts(START, START + HOUR)]
    # the agent kind holds '' (no agent) from the start: two names fit, then 'other'
    assert agents == ["agent-0", "agent-1", "other", "other", "other"]
    assert sample(registry, "mast_history_names_overflowed_total") == 3


def test_a_file_that_cannot_be_written_keeps_verdicts_waiting_until_it_can(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    history, registry = open_history(tmp_path / "h")
    real = history._write
    failing = True

    def write(entries: list[tuple[VerdictEntry, float]]) -> None:
        if failing:
            raise sqlite3.OperationalError("database or disk is full")
        real(entries)

    monkeypatch.setattr(history, "_write", write)
    history.record([entry(1), entry(2)], at=START)  # never raises: the release goes on
    assert history.waiting == 2
    failing = False
    history.maintain(now=START + 61)
    assert history.waiting == 0
    history.close()
    with HistoryFile(tmp_path / "h") as f:
        assert f.extent()[0] == 2
    assert sample(registry, "mast_history_verdicts_dropped_total", reason="write_failed") == 0


def test_past_the_wait_bound_the_oldest_waiting_verdicts_are_dropped_and_counted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    history, registry = open_history(tmp_path / "h")

    def write(entries: list[tuple[VerdictEntry, float]]) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(history, "_write", write)
    history.record([entry(i) for i in range(MAX_WAITING + 5)], at=START)
    assert history.waiting == MAX_WAITING
    assert sample(registry, "mast_history_verdicts_dropped_total", reason="write_failed") == 5


def test_a_file_that_cannot_be_opened_at_start_is_tried_again_and_nothing_waiting_is_lost(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A full disk when the collector starts: the collector starts anyway, verdicts wait, the file opens later."""
    from mast_otel.collector.history import writer

    path = tmp_path / "h"
    history, _ = open_history(path)
    history.record([entry(1)], at=START)
    history.close()
    real = open_for_writing
    full = True

    def opening(p: str, sync: str) -> sqlite3.Connection:
        if full:
            raise HistoryUnavailable(f"cannot open the verdict history {p}: database or disk is full")
        return real(p, sync)

    monkeypatch.setattr(writer, "open_for_writing", opening)
    again, registry = open_history(path)  # no exception: the collector starts
    assert again.recover(since=START - 60) == 0  # nothing readable yet: asked again once the file opens
    again.record([entry(1), entry(2)], at=START + 10)  # 1 was released before the restart: recorded once
    assert again.waiting == 2
    again.maintain(now=START + 20)
    assert again.waiting == 2  # still full
    full = False
    again.maintain(now=START + 100)
    assert again.waiting == 0
    again.close()
    with HistoryFile(path) as f:
        assert Counter(v.trace_id[-2:] for v in f.verdicts(0, START + HOUR)) == {"01": 1, "02": 1}
    assert sample(registry, "mast_history_verdicts_dropped_total", reason="write_failed") == 0


def test_a_conversation_released_again_after_a_crash_is_recorded_once(tmp_path: Path) -> None:
    history, _ = open_history(tmp_path / "h")
    history.record([entry(1), entry(2)], at=START)
    history.close()
    again, _ = open_history(tmp_path / "h")
    assert again.recover(since=START - 60) == 2  # both may be released again: their spans are still held
    again.record([entry(1), entry(3)], at=START + 5)  # 1 again (after the restart), 3 is new
    again.record([entry(1)], at=START + 6)  # a conversation is released once after a restart: this is new work
    again.close()
    with HistoryFile(tmp_path / "h") as f:
        keys = Counter(v.trace_id[-2:] for v in f.verdicts(0, START + HOUR))
    assert keys == {"01": 2, "02": 1, "03": 1}


def test_history_files_finds_every_process_history(tmp_path: Path) -> None:
    store = tmp_path / "c.db"
    for name in ("c.db.history", "c.db.shard1.history", "c.db.shard12.history", "c.db.shard2.history-wal",
                 "c.db.shardx.history", "other.db.history"):  # fmt: skip
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in history_files(store)] == ["c.db.history", "c.db.shard1.history", "c.db.shard12.history"]


def test_a_file_that_is_not_a_history_is_refused(tmp_path: Path) -> None:
    (tmp_path / "junk").write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(HistoryFileError, match="not a verdict history"):
        VerdictHistory(str(tmp_path / "junk"), retention=DAY, max_bytes=1 << 20)
    with pytest.raises(HistoryFileError, match="not a mast-otel verdict history"):
        HistoryFile(tmp_path / "junk")
    with pytest.raises(FileNotFoundError):
        HistoryFile(tmp_path / "missing")


# -- the hourly tables are the rows' counts, whatever was written and dropped ---------------------------------------

VERDICTS = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=30 * HOUR, allow_nan=False),  # time after START
        st.sampled_from(["ok", "partial", "truncated", "error", "skipped"]),
        st.sets(st.sampled_from(["1.1", "1.3", "2.3", "3.2", "9.9"]), max_size=3),  # 9.9: a judge's own mode id
        st.sampled_from(["shop", "desk"]),
        st.sampled_from(["1.0", "1.1"]),
        st.sampled_from([None, "coder", "critic"]),
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(verdicts=VERDICTS, expire_at=st.one_of(st.none(), st.floats(min_value=0, max_value=40 * HOUR)))
def test_the_hourly_counts_are_the_rows_counts(tmp_path_factory: pytest.TempPathFactory,
                                               verdicts: list[tuple[float, str, set[str], str, str, str | None]],
                                               expire_at: float | None) -> None:  # fmt: skip
    path = tmp_path_factory.mktemp("h") / "h"
    history, _ = open_history(path, retention=10 * HOUR)
    for i, (t, status, modes, service, version, agent) in enumerate(sorted(verdicts, key=lambda v: v[0])):
        judged = status in JUDGED
        history.record([entry(i, status=status, modes=tuple(sorted(modes)) if judged else (), service=service,
                              version=version, agent=agent if judged and modes else None)], at=START + t)  # fmt: skip
    if expire_at is not None:
        history.maintain(now=START + expire_at)
    history.close()
    with HistoryFile(path) as f:
        rows = list(f.verdicts(0, START + 100 * HOUR))
        statuses: Counter[tuple[float, str, str, str, str]] = Counter()
        failed: Counter[tuple[float, str, str, str | None, str]] = Counter()
        for v in rows:
            hour = (int(v.at * 1e6) // HOUR_US) * HOUR
            statuses[(hour, v.service, v.version, v.framework, v.status)] += 1
            for m in v.modes:
                failed[(hour, v.service, v.version, v.agent, m)] += 1
        got_statuses: Counter[tuple[float, str, str, str, str]] = Counter()
        got_failed: Counter[tuple[float, str, str, str | None, str]] = Counter()
        first_hour = int(START // HOUR)
        for h in range(first_hour, first_hour + 32):
            got_statuses.update({(c.at, c.service, c.version, c.framework, c.status): c.n
                                 for c in f.status_counts(h, h + 1)})  # fmt: skip
            got_failed.update({(c.at, c.service, c.version, c.agent, c.mode): c.n for c in f.failed_counts(h, h + 1)})
        assert got_statuses == statuses and got_failed == failed
        by_status, by_mode = f.over_time(0, 10**9, bucket_hours=1)
        assert Counter({(at, s): n for at, s, n in by_status}) == _sum_by(statuses, (0, 4))
        assert Counter({(at, m): n for at, m, n in by_mode}) == _sum_by(failed, (0, 4))
        if expire_at is not None:
            cutoff = (int((START + expire_at) * 1e6) - int(10 * HOUR * 1e6)) // HOUR_US * HOUR
            assert all(v.at >= cutoff for v in rows)
            assert len(rows) + f.meta().get("expired", 0) == len(verdicts)


def _sum_by(counts: Counter[Any], keep: tuple[int, ...]) -> Counter[tuple[Any, ...]]:
    """The counts summed over every key part but those at ``keep``."""
    out: Counter[tuple[Any, ...]] = Counter()
    for key, n in counts.items():
        out[tuple(key[i] for i in keep)] += n
    return out
