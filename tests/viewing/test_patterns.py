"""``mast-otel report``'s patterns across runs, read from verdict histories.

The main fixture is counted by hand: service checkout ran version 1.3 for a week, then 1.4 for a week; three agents
(planner, coder, critic) are blamed for its failures. Its figures are written out below, per mode and slice, and
the report must give exactly those, whether asked "this week against last" or "1.4 against 1.3" (in this fixture
they are the same conversations), and wherever the window's edges cut an hour.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mast_otel.cli import main as cli_main
from mast_otel.collector.history import HistoryFile, VerdictEntry, VerdictHistory
from mast_otel.collector.history.schema import HOUR_US
from mast_otel.collector.report.links import link_maker
from mast_otel.collector.report.patterns import Comparison, Question, build_report, describe_slice
from mast_otel.collector.report.tally import ALL, Side, tally

HOUR = HOUR_US / 1e6
DAY = 24 * HOUR
WEEK_START = (1_790_000_000 // int(DAY)) * DAY  # a midnight (UTC)
MIDWEEK = WEEK_START + 7 * DAY
WEEK_END = WEEK_START + 14 * DAY

# (week, status, modes, agent, how many): week 0 runs version 1.3, week 1 version 1.4.
FIXTURE = [
    (0, "ok", (), None, 26),
    (0, "ok", ("2.3",), "planner", 2),
    (0, "ok", ("2.3",), "coder", 1),
    (0, "ok", ("2.3", "1.3"), "critic", 1),  # both modes in one conversation: counted once in each
    (0, "ok", ("1.3",), "coder", 6),
    (0, "ok", ("1.3",), "critic", 1),
    (0, "partial", ("1.3",), None, 3),  # a failure the judge did not attribute: no agent
    (0, "error", (), None, 4),
    (0, "skipped", (), None, 2),
    (1, "ok", (), None, 21),
    (1, "ok", ("2.3",), "coder", 10),
    (1, "ok", ("2.3", "1.3"), "coder", 4),
    (1, "ok", ("2.3",), "planner", 4),
    (1, "partial", ("2.3",), "critic", 2),
    (1, "ok", ("1.3",), "coder", 1),
    (1, "truncated", (), None, 8),
    (1, "error", (), None, 1),
]
# By hand from the table: judged = ok + partial + truncated.
JUDGED = {0: 26 + 2 + 1 + 1 + 6 + 1 + 3, 1: 21 + 10 + 4 + 4 + 2 + 1 + 8}  # 40 and 50
FAILED = {  # (mode, slice) -> (week 1, week 0)
    ("2.3", ()): (20, 4),
    ("1.3", ()): (5, 11),
    ("2.3", (("agent", "coder"),)): (14, 1),
    ("2.3", (("agent", "planner"),)): (4, 2),
    ("2.3", (("agent", "critic"),)): (2, 1),
    ("1.3", (("agent", "coder"),)): (5, 6),
    ("1.3", (("agent", "critic"),)): (0, 2),
}


def write_fixture(path: Path, *, start: float = WEEK_START) -> None:
    """The fixture's verdicts, spread evenly over each week (none on an hour boundary)."""
    history = VerdictHistory(str(path), retention=60 * DAY, max_bytes=1 << 30)
    i = 0
    for week in (0, 1):
        rows = [r for r in FIXTURE if r[0] == week]
        n = sum(r[4] for r in rows)
        spread = [(status, modes, agent) for _, status, modes, agent, count in rows for _ in range(count)]
        for k, (status, modes, agent) in enumerate(spread):
            at = start + week * 7 * DAY + (k + 0.5) * (7 * DAY) / n + 17.0
            version = "1.3" if week == 0 else "1.4"
            history.record([VerdictEntry(i.to_bytes(16, "big"), f"u{i}", status, modes, "checkout", version, "ag2",
                                         agent, 3 if agent else None, "judge-1")], at=at)  # fmt: skip
            i += 1
    history.close()


@pytest.fixture
def fixture_history(tmp_path: Path) -> Path:
    path = tmp_path / "collector.db.history"
    write_fixture(path)
    return path


def figures(path: Path, question: Question) -> dict[tuple[str, tuple[tuple[str, str], ...]], tuple[int, int, int,
                                                                                                     int]]:  # fmt: skip
    with HistoryFile(path) as f:
        report = build_report([f], question, examples=0)
    out = {}
    for p in report.patterns:
        assert p.before is not None
        out[(p.mode, p.where)] = (p.now.failed, p.now.judged, p.before.failed, p.before.judged)
    return out


@pytest.mark.parametrize("question", [
    Question(MIDWEEK, WEEK_END, Comparison()),  # this week against last
    Question(WEEK_START, WEEK_END, Comparison("version", "1.4", "1.3")),  # 1.4 against 1.3, both weeks
    Question(WEEK_START, WEEK_END, Comparison("version", "1.4", "1.3"), service="checkout"),
], ids=["previous", "version", "version-in-service"])  # fmt: skip
def test_the_figures_are_the_hand_counts(fixture_history: Path, question: Question) -> None:
    got = figures(fixture_history, question)
    for (mode, where), (now, before) in FAILED.items():
        assert got[(mode, where)] == (now, JUDGED[1], before, JUDGED[0]), (mode, where)
    for mode in ("2.3", "1.3"):  # everywhere = in the one service = in its framework
        assert got[(mode, (("service", "checkout"),))] == got[(mode, ())]
        assert got[(mode, (("framework", "ag2"),))] == got[(mode, ())]
    if question.compare == Comparison():  # by version, this week and last are two versions of checkout
        assert got[("2.3", (("service", "checkout"), ("version", "1.4")))] == (20, 50, 0, 0)
        assert got[("2.3", (("service", "checkout"), ("version", "1.3")))] == (0, 0, 4, 40)
    else:  # comparing versions, a version slice would only restate the comparison
        assert not [k for k in got if any(d == "version" for d, _ in k[1])]
    assert len(got) == len(FAILED) + 4 + (4 if question.compare == Comparison() else 0)


def test_rates_intervals_and_noise_worst_first(fixture_history: Path) -> None:
    with HistoryFile(fixture_history) as f:
        report = build_report([f], Question(MIDWEEK, WEEK_END, Comparison()), examples=0)
    by = {(p.mode, p.where): p for p in report.patterns}
    derail = by[("2.3", ())]
    assert derail.now.value == 20 / 50 and derail.before is not None and derail.before.value == 4 / 40
    low, high = derail.now.interval
    assert low < 0.4 < high
    assert derail.change is not None and derail.change.verdict == "rose"  # 40% of 50 against 10% of 40
    assert by[("1.3", ())].change is not None and by[("1.3", ())].change.verdict == "fell"  # 10% against 27.5%
    planner = by[("2.3", (("agent", "planner"),))]
    assert planner.change is not None and planner.change.verdict == "within noise"  # 4 of 50 against 2 of 40
    # worst first: the surest rises, then noise by size, then falls
    verdicts = [p.change.verdict for p in report.patterns if p.change]
    assert verdicts == sorted(verdicts, key=["rose", "within noise", "fell"].index)
    rises = [p.change.low for p in report.patterns if p.change and p.change.verdict == "rose"]
    assert rises == sorted(rises, reverse=True)
    assert report.patterns[0].mode == "2.3"
    assert report.now.statuses == {"ok": 40, "partial": 2, "truncated": 8, "error": 1}
    assert report.before is not None and report.before.statuses["skipped"] == 2


def test_agents_past_the_limit_count_as_other_and_the_report_says_so(fixture_history: Path) -> None:
    with HistoryFile(fixture_history) as f:
        report = build_report([f], Question(MIDWEEK, WEEK_END, Comparison(), max_agents=2), examples=0)
    agents = {dict(p.where)["agent"] for p in report.patterns if p.where and p.where[0][0] == "agent"}
    assert agents == {"coder", "planner", "other"}  # critic has the fewest failures (5): folded
    by = {(p.mode, p.where): p for p in report.patterns}
    other_before = by[("1.3", (("agent", "other"),))].before
    assert by[("2.3", (("agent", "other"),))].now.failed == 2 and other_before is not None and other_before.failed == 2
    assert report.folded == {"agent": 1}


def test_examples_are_traces_of_the_pattern_linked_in_the_backend(fixture_history: Path) -> None:
    with HistoryFile(fixture_history) as f:
        report = build_report([f], Question(MIDWEEK, WEEK_END, Comparison()),
                              link=link_maker("jaeger:http://jaeger:16686/"))  # fmt: skip
        critic = next(p for p in report.patterns if p.where == (("agent", "critic"),) and p.mode == "2.3")
        assert len(critic.examples) == 2  # the two partial 2.3 runs the critic was blamed for, this week
        for e in critic.examples:
            assert e.url == f"http://jaeger:16686/trace/{e.trace_id}"
            (v,) = [v for v in f.verdicts(MIDWEEK, WEEK_END) if v.trace_id == e.trace_id]
            assert (v.agent, v.status, "2.3" in v.modes) == ("critic", "partial", True)
        fell = next(p for p in report.patterns if p.where == (("agent", "critic"),) and p.mode == "1.3")
        assert fell.now.failed == 0 and len(fell.examples) == 2  # none this week: last week's
        assert all(MIDWEEK - 7 * DAY <= e.at < MIDWEEK for e in fell.examples)


def test_trace_links_for_each_backend() -> None:
    at = 1_790_000_000.0
    assert link_maker("phoenix:http://px:6006")("ab" * 16, at) == f"http://px:6006/redirects/traces/{'ab' * 16}"
    tempo = link_maker("tempo:http://grafana:3000")("ab" * 16, at)
    assert tempo is not None and tempo.startswith("http://grafana:3000/explore?schemaVersion=1&orgId=1&panes=")
    assert "ab" * 16 in tempo and "mast-tempo" in tempo and str(int(at * 1000) - 3_600_000) in tempo
    templated = link_maker("https://ui/t/{trace_id}?from={from_ms}")("cd", at)
    assert templated == f"https://ui/t/cd?from={int(at * 1000) - 3600000}"
    assert link_maker(None)("cd", at) is None
    for bad in ("jaeger:localhost:16686", "https://ui/no-placeholder", "https://ui/{trace}"):
        with pytest.raises(ValueError, match="--trace-url"):
            link_maker(bad)


# -- whatever the window, the counts are the verdicts in it ---------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    times=st.lists(st.integers(min_value=0, max_value=36_000_000), min_size=1, max_size=40),  # ms after a midnight
    window=st.tuples(st.integers(min_value=0, max_value=36_000_000), st.integers(min_value=0, max_value=36_000_000)),
    bucket_hours=st.sampled_from([1, 2, 3, 6]),
)
def test_windows_cutting_hours_count_exactly_the_verdicts_inside(tmp_path_factory: pytest.TempPathFactory,
                                                                   times: list[int], window: tuple[int, int],
                                                                   bucket_hours: int) -> None:  # fmt: skip
    start, end = sorted(window)
    end = max(end, start + 1)
    path = tmp_path_factory.mktemp("w") / "h"
    history = VerdictHistory(str(path), retention=60 * DAY, max_bytes=1 << 30)
    ordered = sorted(times)
    for i, t in enumerate(ordered):
        history.record([VerdictEntry(i.to_bytes(16, "big"), f"u{i}", "ok", ("1.1",) if i % 2 else (), "s", "v", "f",
                                     "a" if i % 2 else None)], at=WEEK_START + t / 1000)  # fmt: skip
    history.close()
    with HistoryFile(path) as f:
        (counts,) = tally([f], [Side("w", WEEK_START + start / 1000, WEEK_START + end / 1000)], bucket_hours)
    # the oracle: the times the verdicts were given (several in one millisecond stay within it: a microsecond apart)
    inside = [(t, i) for i, t in enumerate(ordered) if start <= t < end]
    assert counts.judged[ALL] == len(inside)
    failed = [(t, i) for t, i in inside if i % 2]
    assert counts.failed[("1.1", ALL)] == counts.failed[("1.1", (("agent", "a"),))] == len(failed)

    # over time: each verdict in the bucket of bucket_hours hours (aligned to the epoch) that holds it
    def bucket(t: int) -> float:
        hour = int(WEEK_START // HOUR) + t // 3_600_000
        return (hour // bucket_hours) * bucket_hours * HOUR

    assert counts.judged_over_time == Counter(bucket(t) for t, _ in inside)
    assert counts.failed_over_time == Counter(("1.1", bucket(t)) for t, _ in failed)


# -- the command line ----------------------------------------------------------------------------------------------


def test_cli_prints_and_writes_the_pattern_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import time

    write_fixture(tmp_path / "collector.db.history", start=time.time() - 14 * DAY)
    out_json, out_html = tmp_path / "p.json", tmp_path / "p.html"
    code = cli_main(["report", "--store", str(tmp_path / "collector.db"), "--since", "7d", "--compare", "previous",
                     "--trace-url", "jaeger:http://localhost:16686", "--json", str(out_json), "--html",
                     str(out_html)])  # fmt: skip
    text = capsys.readouterr().out
    assert code == 0, text
    assert "2.3   Task derailment" in text and "40.0% (20/50)" in text and "10.0% (4/40)" in text and "rose" in text
    assert "http://localhost:16686/trace/" in text
    data = json.loads(out_json.read_text())
    (derail,) = [p for p in data["patterns"] if p["mode"] == "2.3" and p["where"] == {}]
    assert (derail["now"]["failed"], derail["now"]["judged"], derail["before"]["failed"], derail["change"]["verdict"]) \
        == (20, 50, 4, "rose")  # fmt: skip
    assert len(derail["examples"]) == 3 and derail["examples"][0]["url"].startswith("http://localhost:16686/trace/")
    page = out_html.read_text()
    assert page.startswith("<!doctype html>") and "<svg" in page and 'data-mode="2.3"' in page
    assert "http" + "s://" not in page.replace("http://localhost:16686", "")  # nothing fetched from the network


@pytest.mark.parametrize(("args", "message"), [
    (["--since", "7d", "--compare", "version:1.4"], "--compare"),
    (["--since", "soon"], "--since"),
    (["--from", "2026-13-01"], "neither a date-time"),
    (["--since", "7d", "--from", "2026-11-01"], "not both"),
    (["--since", "7d", "--trace-url", "zipkin"], "--trace-url"),
])  # fmt: skip
def test_cli_refuses_bad_options_with_what_to_write(fixture_history: Path, capsys: pytest.CaptureFixture[str],
                                                    args: list[str], message: str) -> None:  # fmt: skip
    assert cli_main(["report", "--history", str(fixture_history), *args]) == 1
    assert message in capsys.readouterr().err


def test_cli_without_a_history_says_where_it_looked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["report", "--store", str(tmp_path / "none.db"), "--since", "1d"]) == 1
    assert "no verdict history beside this store" in capsys.readouterr().err


def test_describe_slice() -> None:
    assert describe_slice(()) == "all"
    assert describe_slice((("service", "a"), ("version", "1"))) == "service=a version=1"
    assert Counter(str(Comparison.parse(t)) for t in ("previous", "version:2,1")) == {"previous": 1, "version:2,1": 1}
