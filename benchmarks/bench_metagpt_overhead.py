"""Per-message time that mast-otel adds to a MetaGPT 0.8 team: the MetaGPT row of the overhead benchmark.

Runs in the MetaGPT virtual environment (``bash scripts/setup-metagpt.sh``)::

    .venv-metagpt/bin/python benchmarks/bench_metagpt_overhead.py
    .venv-metagpt/bin/python benchmarks/bench_metagpt_overhead.py --reps 3 --messages 100 --json bench.json

Workload: the test suite's software team (``tests.metagpt.scenarios``: Coder, Tester, Reviewer, the Coder also
watching the reviews, so the team never goes idle) with the scripted provider registered in MetaGPT's provider
registry (no LLM, no network); one ``Team.run`` publishes about ``--messages`` messages. MetaGPT's own logging is
set to WARNING in every configuration, so that MetaGPT's mechanics, not its log I/O, are the baseline (which makes
the ratio conservative: a smaller baseline, a larger ratio). Every configuration runs in a fresh subprocess
(instrumentation patches classes process-wide), ``--warmup`` untimed runs then ``--runs`` timed ones, and the
subprocesses alternate ``--reps`` times, reversing the order every other repetition so drift in machine load falls
on all of them alike. Spans go to a counting no-op exporter behind a ``SimpleSpanProcessor``: span creation is
measured, export is not.

Reported per configuration, in the AG2 benchmark's table format (benchmarks/bench_ag2_overhead.py): µs per message
(median over repetitions of each subprocess's median run), the time added per message against the uninstrumented
baseline of the same invocation (median of the paired per-repetition differences, with their range), that added
time as a ratio of the baseline's, and spans per message.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
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


# -- the subprocess ------------------------------------------------------------------------------------------
def _configure_metagpt() -> None:
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


async def _timed_runs(runs: int, warmup: int, messages: int, exporter: Any) -> tuple[list[float], int, int]:
    from tests.metagpt.scenarios import IDEA, scripted_context, scripted_provider, software_team

    n_round = max(1, round((messages - 1) / MESSAGES_PER_ROUND))
    per_message_us: list[float] = []
    spans = total = 0
    with scripted_provider():
        for i in range(warmup + runs):
            team = software_team(scripted_context(), cycle=True)
            gc.collect()
            before = exporter.count
            t0 = time.perf_counter_ns()
            await team.run(n_round=n_round, idea=IDEA)
            elapsed = time.perf_counter_ns() - t0
            published = len({m.id for role in team.env.roles.values() for m in role.rc.memory.get()})
            if i >= warmup:
                per_message_us.append(elapsed / published / 1000)
                spans += exporter.count - before
                total += published
    return per_message_us, spans, total


def child(name: str, runs: int, warmup: int, messages: int) -> dict[str, Any]:
    _configure_metagpt()
    from metagpt.logs import define_log_level

    define_log_level(print_level="WARNING", logfile_level="WARNING")
    provider, exporter = _counting_provider()
    if name != BASELINE:
        import mast_otel

        mast_otel.instrument(tracer_provider=provider, capture_content=name != "mast-otel-no-content")
    per_message_us, spans, total = asyncio.run(_timed_runs(runs, warmup, messages, exporter))
    return {
        "name": name,
        "us_per_message": statistics.median(per_message_us),
        "runs_us_per_message": per_message_us,
        "messages": total,
        "spans_per_message": spans / total,
    }


def _run_child(name: str, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name]
    cmd += ["--runs", str(args.runs), "--warmup", str(args.warmup), "--messages", str(args.messages)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{name} failed ({out.returncode}):\n{out.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# -- the driver ----------------------------------------------------------------------------------------------
@dataclass
class Summary:
    name: str
    per_rep: list[float] = field(default_factory=list)
    spans_per_message: float = 0.0
    messages: int = 0

    @property
    def median(self) -> float:
        return statistics.median(self.per_rep)


def report(summaries: list[Summary], args: argparse.Namespace) -> str:
    base = next(s for s in summaries if s.name == BASELINE)
    lines = [
        f"{args.reps} repetitions x {args.runs} timed runs x ~{args.messages} messages per configuration "
        f"({args.warmup} warm-up runs each); python {sys.version.split()[0]}",
        "",
        "| configuration | µs/message | added µs/message (range) | added / baseline | spans/message |",
        "|---|---|---|---|---|",
    ]
    for s in summaries:
        if s is base:
            lines.append(f"| {CONFIGURATIONS[s.name]} | {s.median:.1f} | 0 (baseline) | | {s.spans_per_message:.3f} |")
            continue
        diffs = [a - b for a, b in zip(s.per_rep, base.per_rep, strict=True)]
        added = statistics.median(diffs)
        lines.append(
            f"| {CONFIGURATIONS[s.name]} | {s.median:.1f} | +{added:.1f} ({min(diffs):+.1f} .. {max(diffs):+.1f}) "
            f"| {added / base.median:.1%} | {s.spans_per_message:.3f} |"
        )
    lines += ["", "per-repetition µs/message (subprocess medians, in run order):"]
    lines += [f"  {s.name:22s} " + " ".join(f"{v:7.1f}" for v in s.per_rep) for s in summaries]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--reps", type=int, default=5, help="alternating repetitions (subprocesses per config)")
    parser.add_argument("--runs", type=int, default=5, help="timed Team.run calls per subprocess")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs per subprocess, first")
    parser.add_argument("--messages", type=int, default=150, help="messages per run (about; whole rounds)")
    parser.add_argument("--only", nargs="+", choices=sorted(CONFIGURATIONS), help="configurations besides none")
    parser.add_argument("--json", type=Path, help="also write every figure as JSON here")
    parser.add_argument("--child", choices=sorted(CONFIGURATIONS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        print(json.dumps(child(args.child, args.runs, args.warmup, args.messages)))
        return

    names = [BASELINE, *(n for n in (args.only or ["mast-otel", "mast-otel-no-content"]) if n != BASELINE)]
    summaries = [Summary(n) for n in names]
    for rep in range(args.reps):
        for s in summaries if rep % 2 == 0 else summaries[::-1]:
            result = _run_child(s.name, args)
            s.per_rep.append(result["us_per_message"])
            s.spans_per_message = result["spans_per_message"]
            s.messages += result["messages"]
            print(f"rep {rep + 1}/{args.reps} {s.name:22s} {result['us_per_message']:8.1f} µs/message",
                  file=sys.stderr, flush=True)  # fmt: skip
    print(report(summaries, args))
    if args.json:
        payload = {s.name: {"per_rep": s.per_rep, "spans_per_message": s.spans_per_message, "messages": s.messages}
                   for s in summaries}  # fmt: skip
        args.json.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
