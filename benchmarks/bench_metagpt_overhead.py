"""Per-message time that mast-otel adds to a MetaGPT 0.8 team: the MetaGPT row of the overhead benchmark.

Runs in the MetaGPT virtual environment (``nox -s metagpt`` creates it in ``.nox/metagpt``)::

    .nox/metagpt/bin/python benchmarks/bench_metagpt_overhead.py
    .nox/metagpt/bin/python benchmarks/bench_metagpt_overhead.py --reps 20 --messages 100 --json bench.json

Workload: the test suite's software team (``tests.metagpt.scenarios``: Coder, Tester, Reviewer, the Coder also
watching the reviews, so the team never goes idle) with the scripted provider registered in MetaGPT's provider
registry (no LLM, no network); one ``Team.run`` publishes about ``--messages`` messages. MetaGPT's own logging is
set to WARNING, so that MetaGPT's mechanics, not its log I/O, are the baseline (which makes the ratio
conservative: a smaller baseline, a larger ratio). Spans go to a counting no-op exporter behind a
``SimpleSpanProcessor``: span creation is measured, export is not.

Time is the process's CPU time by default (``--clock cpu``): the workload never waits (no I/O, no sleeps, spans
exported synchronously), so CPU time is its whole cost, and other processes on a shared machine do not inflate it
the way they inflate wall time (``--clock wall``, as in the AG2 benchmark).

Configurations alternate run by run in one process (``mast_otel.instrument()`` / ``uninstrument()`` between runs,
untimed; the order rotates every repetition), so a change in machine load falls on all of them alike: on a shared
machine that pairing matters more than process isolation, and mast-otel's instrumentation undoes cleanly.
``--warmup`` untimed repetitions come first.

Reported per configuration, in the AG2 benchmark's table format (benchmarks/bench_ag2_overhead.py): µs per message
(median over repetitions), the time added per message against the uninstrumented baseline (median of the
per-repetition differences, with the interquartile range), that added time as a ratio of the baseline, and spans
per message.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "none"
CONFIGURATIONS = {
    "none": "MetaGPT 0.8.2, uninstrumented",
    "mast-otel": "MetaGPT 0.8.2 + mast-otel (`mast_otel.instrument()`)",
    "mast-otel-no-content": "MetaGPT 0.8.2 + mast-otel, content capture off",
}
MESSAGES_PER_ROUND = 3  # the scripted provider never yields: Coder, Tester and Reviewer each publish every round


def _configure_metagpt() -> None:
    """MetaGPT reads its config at import time: an inert one in a throwaway project root (its logs go there too)."""
    root = Path(tempfile.mkdtemp(prefix="mast-otel-bench-metagpt-"))
    (root / "config").mkdir()
    (root / "config" / "config2.yaml").write_text(
        'llm: {api_type: "openai", base_url: "http://127.0.0.1:9/v1", api_key: "unused", model: "gpt-4"}\n'
    )
    os.environ["METAGPT_PROJECT_ROOT"] = str(root)


def _counting_provider() -> tuple[Any, Any]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class CountingExporter(SpanExporter):
        def __init__(self) -> None:
            self.count = 0

        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            self.count += len(spans)
            return SpanExportResult.SUCCESS

        def shutdown(self) -> None:
            pass

    exporter = CountingExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@dataclass
class Series:
    name: str
    us_per_message: list[float] = field(default_factory=list)
    spans: int = 0
    messages: int = 0

    @property
    def median(self) -> float:
        return statistics.median(self.us_per_message)


CLOCKS = {"cpu": time.process_time_ns, "wall": time.perf_counter_ns}


async def _one_run(n_round: int, clock: str) -> tuple[int, int]:
    """One Team.run: (elapsed ns, messages published)."""
    from tests.metagpt.scenarios import IDEA, scripted_context, software_team

    now = CLOCKS[clock]
    team = software_team(scripted_context(), cycle=True)
    gc.collect()
    t0 = now()
    await team.run(n_round=n_round, idea=IDEA)
    elapsed = now() - t0
    return elapsed, len({m.id for role in team.env.roles.values() for m in role.rc.memory.get()})


async def measure(names: list[str], reps: int, warmup: int, messages: int, clock: str) -> list[Series]:
    import mast_otel
    from tests.metagpt.scenarios import scripted_provider

    provider, exporter = _counting_provider()
    n_round = max(1, round((messages - 1) / MESSAGES_PER_ROUND))
    series = [Series(n) for n in names]
    with scripted_provider():
        for rep in range(warmup + reps):
            shift = rep % len(series)
            for s in series[shift:] + series[:shift]:
                if s.name != BASELINE:
                    mast_otel.instrument(tracer_provider=provider, capture_content=s.name != "mast-otel-no-content")
                before = exporter.count
                try:
                    elapsed, published = await _one_run(n_round, clock)
                finally:
                    mast_otel.uninstrument()
                if rep >= warmup:
                    s.us_per_message.append(elapsed / published / 1000)
                    s.spans += exporter.count - before
                    s.messages += published
            if rep >= warmup:
                print(f"rep {rep - warmup + 1}/{reps} " + "  ".join(
                    f"{s.name} {s.us_per_message[-1]:.1f}" for s in series) + " µs/message",
                    file=sys.stderr, flush=True)  # fmt: skip
    return series


def _quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


def report(series: list[Series], args: argparse.Namespace) -> str:
    base = next(s for s in series if s.name == BASELINE)
    lines = [
        f"{args.reps} repetitions (runs alternating in one process) x ~{args.messages} messages per run "
        f"({args.warmup} warm-up repetitions); {args.clock} time; python {sys.version.split()[0]}",
        "",
        "| configuration | µs/message | added µs/message (IQR) | added / baseline | spans/message |",
        "|---|---|---|---|---|",
    ]
    for s in series:
        spans = s.spans / s.messages if s.messages else 0.0
        if s is base:
            lines.append(f"| {CONFIGURATIONS[s.name]} | {s.median:.1f} | 0 (baseline) | | {spans:.3f} |")
            continue
        diffs = [a - b for a, b in zip(s.us_per_message, base.us_per_message, strict=True)]
        added = statistics.median(diffs)
        low, high = _quartiles(diffs)
        lines.append(
            f"| {CONFIGURATIONS[s.name]} | {s.median:.1f} | {added:+.1f} ({low:+.1f} .. {high:+.1f}) "
            f"| {added / base.median:.1%} | {spans:.3f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--reps", type=int, default=30, help="repetitions (one run per configuration each)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed repetitions, first")
    parser.add_argument("--messages", type=int, default=150, help="messages per run (about; whole rounds)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu", help="process CPU time or wall time")
    parser.add_argument("--only", nargs="+", choices=sorted(CONFIGURATIONS), help="configurations besides none")
    parser.add_argument("--json", type=Path, help="also write every figure as JSON here")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    _configure_metagpt()
    from metagpt.logs import define_log_level

    define_log_level(print_level="WARNING", logfile_level="WARNING")
    names = [BASELINE, *(n for n in (args.only or ["mast-otel", "mast-otel-no-content"]) if n != BASELINE)]
    series = asyncio.run(measure(names, args.reps, args.warmup, args.messages, args.clock))
    print(report(series, args))
    if args.json:
        payload = {s.name: {"us_per_message": s.us_per_message, "spans": s.spans, "messages": s.messages}
                   for s in series}  # fmt: skip
        args.json.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
