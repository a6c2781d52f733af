"""The verdict history at a million verdicts: writing them as the collector does, and ``mast-otel report``'s pattern
questions over them, against a full scan of the verdicts measured in the same run (not a test).

    /work/devvenv/bin/python benchmarks/bench_history.py [--verdicts 1000000] [--shape realistic|spread]

Writes ``--verdicts`` verdicts over 14 days into a fresh history file in groups of 64 (the collector writes one
group per release transaction), then times four questions, each built, rendered as text and as JSON, examples
and links included. The first three raise the cardinality limits, so that every pattern is checked against the
scan; the last keeps the report's defaults (20 agents, 10 versions, the rest folded as ``other``):

- ``--since 7d --compare previous`` (two windows, both cut mid-hour),
- ``--since 14d --compare version:1.4,1.3``,
- ``--since 1d`` (one window, no comparison),
- ``--since 7d --compare previous`` with the default limits.

The baseline is what the report would cost without the hourly tables: one pass over every verdict of the windows,
counted in Python by slice and mode (the same figures; the bench checks they agree). Each figure is the best of
``--rounds`` (other load on the machine only adds); CPU and wall time are both printed.

``--shape realistic``: 3 services, 2-3 versions each, 5 agents, modes drawn with MAST-like weights (1-3 per failed
run). ``--shape spread``: 20 services x 5 versions x 10 agents and every mode equally likely, the hourly tables'
worst case short of one row per verdict.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mast_otel.collector.history import HistoryFile, VerdictEntry, VerdictHistory
from mast_otel.collector.history.reader import JUDGED
from mast_otel.collector.report.links import link_maker
from mast_otel.collector.report.pattern_text import render_patterns_text
from mast_otel.collector.report.patterns import Comparison, Question, build_report
from mast_otel.collector.report.tally import slices_of
from mast_otel.taxonomy import MODES

DAY = 86400.0
GROUP = 64
MODE_IDS = [m.id for m in MODES]
MAST_WEIGHTS = [5, 3, 8, 2, 10, 2, 4, 6, 1, 3, 3, 4, 9, 5]  # roughly the MAST paper's mode frequencies


def verdicts(n: int, end: float, shape: str, seed: int = 7) -> Iterator[tuple[VerdictEntry, float]]:
    rng = random.Random(seed)
    start = end - 14 * DAY
    if shape == "realistic":
        services = [("checkout", ["1.3", "1.4"]), ("support", ["2.0", "2.1", "2.2"]), ("planner", ["0.9", "1.0"])]
        agents = ["planner", "coder", "critic", "clerk", "writer"]
        weights = MAST_WEIGHTS
    else:
        services = [(f"service-{i}", ["1.3", "1.4", "1.5", "1.6", "1.7"]) for i in range(20)]
        agents = [f"agent-{i}" for i in range(10)]
        weights = [1] * len(MODE_IDS)
    for i in range(n):
        at = start + (end - start) * i / n
        service, versions = services[rng.randrange(len(services))]
        second_week = at >= start + 7 * DAY
        version = versions[-1] if second_week and rng.random() < 0.7 else versions[rng.randrange(len(versions))]
        status = rng.choices(["ok", "partial", "truncated", "error", "skipped"], [90, 3, 2, 2, 3])[0]
        modes: tuple[str, ...] = ()
        if status in JUDGED and rng.random() < 0.55:
            modes = tuple(sorted(set(rng.choices(MODE_IDS, weights, k=rng.choice((1, 1, 2, 3))))))
            if version == "1.4" and rng.random() < 0.25:
                modes = tuple(sorted({*modes, "2.3"}))
        agent = rng.choice(agents) if modes and rng.random() < 0.9 else None
        yield (VerdictEntry(rng.randbytes(16), f"{i:016x}", status, modes, service, version, "ag2", agent,
                            rng.randrange(12) if agent else None, "gpt-4o-mini"), at)  # fmt: skip


def write(path: Path, n: int, end: float, shape: str) -> tuple[float, float]:
    """Write the verdicts in groups as the collector does; returns (wall s, CPU s)."""
    history = VerdictHistory(str(path), retention=90 * DAY, max_bytes=1 << 34)
    wall, cpu = time.perf_counter(), time.process_time()
    group: list[tuple[VerdictEntry, float]] = []
    for item in verdicts(n, end, shape):
        group.append(item)
        if len(group) == GROUP:
            history.record([e for e, _ in group], at=group[-1][1])
            group = []
    if group:
        history.record([e for e, _ in group], at=group[-1][1])
    history.close()
    return time.perf_counter() - wall, time.process_time() - cpu


def full_scan(f: HistoryFile, q: Question) -> Counter[tuple[Any, ...]]:
    """The baseline: every verdict of the windows, counted in Python (judged per slice, failed per mode and slice)."""
    counts: Counter[tuple[Any, ...]] = Counter()
    length = q.end - q.start
    start = q.start - length if q.compare is not None and q.compare.dimension is None else q.start
    for v in f.verdicts(start, q.end):
        if v.status not in JUDGED:
            continue
        side = "now" if v.at >= q.start else "before"
        if q.compare is not None and q.compare.dimension == "version":
            side = {q.compare.now: "now", q.compare.before: "before"}.get(v.version, "")
            if not side:
                continue
        counts[("judged", side)] += 1
        for s in slices_of(v.service, v.version, v.framework, v.agent):
            for m in v.modes:
                counts[(m, s, side)] += 1
    return counts


def best(rounds: int, fn: Callable[[], Any]) -> tuple[float, float, Any]:
    walls, cpus, result = [], [], None
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--verdicts", type=int, default=1_000_000)
    parser.add_argument("--shape", choices=("realistic", "spread"), default="realistic")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    end = (time.time() // 3600) * 3600 + 1234.5  # windows end mid-hour: the edges are read verdict by verdict
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "collector.db.history"
        wall, cpu = write(path, args.verdicts, end, args.shape)
        size = os.path.getsize(path)
        print(f"{args.verdicts:,} verdicts ({args.shape}) written in groups of {GROUP}: {wall:.1f} s wall, "
              f"{cpu:.1f} s CPU, {1e6 * cpu / args.verdicts:.1f} us CPU a verdict; file {size / 1e6:.1f} MB "
              f"({size / args.verdicts:.0f} B a verdict)")  # fmt: skip
        link = link_maker("jaeger:http://localhost:16686")
        every = 1000  # nothing folded: each pattern is checked against the scan
        questions = {
            "--since 7d --compare previous": Question(
                end - 7 * DAY, end, Comparison(), max_agents=every, max_versions=every
            ),
            "--since 14d --compare version:1.4,1.3": Question(
                end - 14 * DAY, end, Comparison("version", "1.4", "1.3"), max_agents=every, max_versions=every
            ),
            "--since 1d": Question(end - DAY, end, max_agents=every, max_versions=every),
            "--since 7d --compare previous, default limits": Question(end - 7 * DAY, end, Comparison()),
        }
        print("| question | report wall s | report CPU s | patterns | full scan wall s | ratio (scan / report) |")
        print("|---|---|---|---|---|---|")
        for label, q in questions.items():
            with HistoryFile(path) as f:

                def report(q: Question = q, f: HistoryFile = f) -> Any:
                    r = build_report([f], q, link=link)
                    render_patterns_text(r)
                    r.to_json()
                    return r

                r_wall, r_cpu, built = best(args.rounds, report)
                s_wall, _, scanned = best(1, lambda: full_scan(f, q))  # noqa: B023 - called at once
            for p in built.patterns if "default limits" not in label else ():  # the two ways count the same
                sides = ("now", "before") if q.compare is not None else ("now",)
                rates = (p.now, p.before) if q.compare is not None else (p.now,)
                for side, rate in zip(sides, rates, strict=True):
                    assert rate is not None and rate.failed == scanned[(p.mode, p.where, side)], (
                        label,
                        p.mode,
                        p.where,
                        side,
                    )
            assert built.now.judged[()] == scanned[("judged", "now")]
            print(f"| `{label}` | {r_wall:.3f} | {r_cpu:.3f} | {len(built.patterns)} | {s_wall:.2f} | "
                  f"{s_wall / r_wall:.0f}x |")  # fmt: skip


if __name__ == "__main__":
    main()
