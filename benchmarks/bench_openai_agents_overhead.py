"""Per-agent-turn time that mast-otel adds to OpenAI Agents SDK runs, against the uninstrumented run and against
``openinference-instrumentation-openai-agents``, measured in the same process.

Runs in the SDK's environment (``nox -s openai_agents`` creates it in ``.nox/openai_agents``)::

    .nox/openai_agents/bin/python benchmarks/bench_openai_agents_overhead.py
    .nox/openai_agents/bin/python benchmarks/bench_openai_agents_overhead.py --reps 20 --runs 20 --json bench.json

Workload: the tests' triage run (``tests.openai_agents.scenarios``: triage -> transfer -> billing -> refund tool
-> answer; 2 agent turns, 3 model calls, a handoff and a tool call per run), ``--runs`` runs per repetition. The
model is the SDK's own ``OpenAIChatCompletionsModel`` on an ``AsyncOpenAI`` client whose HTTP transport answers
in-process from the scripted server's ``answer()`` (``httpx.MockTransport``): the SDK's whole code path, its
generation spans included, without a socket, so the baseline is the SDK's mechanics and not loopback I/O (which
makes the ratios conservative). Spans go to a counting no-op exporter behind a ``SimpleSpanProcessor``: span
creation is measured, export is not. The SDK's default exporter is replaced by no processor at all, as a program
that sends its traces elsewhere would.

Configurations alternate repetition by repetition in one process (instrument / uninstrument between them,
untimed; the order rotates), so machine load falls on all alike. OpenInference is registered additively
(``exclusive_processor=False``), as mast-otel is. Time is process CPU time (``--clock cpu``, the default: the
workload never waits) or wall time (``--clock wall``).

Reported: µs per agent turn (median over repetitions), the time added per turn against the baseline (median of
the per-repetition differences, with the interquartile range), that as a ratio of the baseline, mast-otel's added
time as a ratio of OpenInference's, and spans per turn.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BASELINE = "none"
CONFIGURATIONS = {
    "none": "openai-agents 0.24, uninstrumented",
    "mast-otel": "+ mast-otel (`mast_otel.instrument()`)",
    "mast-otel-no-content": "+ mast-otel, content capture off",
    "openinference": "+ openinference-instrumentation-openai-agents",
}
TURNS_PER_RUN = 2
CLOCKS = {"cpu": time.process_time_ns, "wall": time.perf_counter_ns}


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


def _in_process_model(script: dict[str, Any]) -> tuple[Any, Any]:
    """The SDK's Chat Completions model on a client answered in-process by the scripted server's logic."""
    import httpx2 as httpx  # openai 3.x ships its HTTP client as httpx2
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    from examples.scripted_openai import ScriptedOpenAI

    scripted = ScriptedOpenAI(script)  # never started: only its answer() is used

    def handler(request: httpx.Request) -> httpx.Response:
        body, content_type = scripted.answer(request.url.path, json.loads(request.content))
        return httpx.Response(200, content=body, headers={"content-type": content_type})

    client = AsyncOpenAI(
        base_url="http://scripted.invalid/v1",
        api_key="unused",
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
    )
    return OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client), scripted


@dataclass
class Series:
    name: str
    us_per_turn: list[float] = field(default_factory=list)
    spans: int = 0
    turns: int = 0

    @property
    def median(self) -> float:
        return statistics.median(self.us_per_turn)


class _Switch:
    """Turns one configuration on and off."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider
        self.oi: Any = None

    def on(self, name: str) -> None:
        import mast_otel

        if name.startswith("mast-otel"):
            mast_otel.instrument(tracer_provider=self.provider, capture_content=name == "mast-otel")
        elif name == "openinference":
            from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

            self.oi = OpenAIAgentsInstrumentor()
            self.oi.instrument(tracer_provider=self.provider, exclusive_processor=False)

    def off(self, name: str) -> None:
        import mast_otel

        if name.startswith("mast-otel"):
            mast_otel.uninstrument()
        elif self.oi is not None:
            self.oi.uninstrument()
            self.oi = None


async def measure(names: list[str], reps: int, warmup: int, runs: int, clock: str) -> list[Series]:
    from agents import Runner, set_trace_processors

    from tests.openai_agents.scenarios import triage_agents, triage_script

    set_trace_processors([])  # no export to OpenAI (no network here); configurations add their own
    provider, exporter = _counting_provider()
    switch = _Switch(provider)
    model, scripted = _in_process_model(triage_script())
    agent = triage_agents(model)
    now = CLOCKS[clock]
    series = [Series(n) for n in names]
    for rep in range(warmup + reps):
        shift = rep % len(series)
        for s in series[shift:] + series[:shift]:
            switch.on(s.name)
            before = exporter.count
            gc.collect()
            try:
                t0 = now()
                for _ in range(runs):
                    scripted.reset()
                    result = await Runner.run(agent, "I want a refund for order A17")
                elapsed = now() - t0
            finally:
                switch.off(s.name)
            assert result.last_agent.name == "billing_agent"
            if rep >= warmup:
                s.us_per_turn.append(elapsed / (runs * TURNS_PER_RUN) / 1000)
                s.spans += exporter.count - before
                s.turns += runs * TURNS_PER_RUN
        if rep >= warmup:
            print(f"rep {rep - warmup + 1}/{reps} " + "  ".join(
                f"{s.name} {s.us_per_turn[-1]:.0f}" for s in series) + " µs/turn",
                file=sys.stderr, flush=True)  # fmt: skip
    return series


def _quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


def _added(s: Series, base: Series) -> list[float]:
    return [a - b for a, b in zip(s.us_per_turn, base.us_per_turn, strict=True)]


def report(series: list[Series], args: argparse.Namespace) -> str:
    base = next(s for s in series if s.name == BASELINE)
    oi = next((s for s in series if s.name == "openinference"), None)
    oi_added = statistics.median(_added(oi, base)) if oi is not None else None
    lines = [
        f"{args.reps} repetitions (alternating in one process) x {args.runs} runs x {TURNS_PER_RUN} agent turns "
        f"({args.warmup} warm-up repetitions); {args.clock} time; python {sys.version.split()[0]}",
        "",
        "| configuration | µs/turn | added µs/turn (IQR) | added / baseline | added / OpenInference's | spans/turn |",
        "|---|---|---|---|---|---|",
    ]
    for s in series:
        spans = s.spans / s.turns if s.turns else 0.0
        if s is base:
            lines.append(f"| {CONFIGURATIONS[s.name]} | {s.median:.0f} | 0 (baseline) | | | {spans:.1f} |")
            continue
        diffs = _added(s, base)
        added = statistics.median(diffs)
        low, high = _quartiles(diffs)
        vs_oi = f"{added / oi_added:.2f}" if oi_added else ""
        lines.append(
            f"| {CONFIGURATIONS[s.name]} | {s.median:.0f} | {added:+.0f} ({low:+.0f} .. {high:+.0f}) "
            f"| {added / base.median:.1%} | {vs_oi} | {spans:.1f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--runs", type=int, default=10, help="SDK runs per repetition and configuration")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    parser.add_argument("--only", nargs="*", choices=sorted(CONFIGURATIONS), help="configurations (baseline always)")
    parser.add_argument("--json", type=Path, help="also write the raw series here")
    args = parser.parse_args(argv)
    names = [BASELINE] + [n for n in CONFIGURATIONS if n != BASELINE and (not args.only or n in args.only)]
    series = asyncio.run(measure(names, args.reps, args.warmup, args.runs, args.clock))
    print(report(series, args))
    if args.json:
        args.json.write_text(json.dumps([s.__dict__ for s in series], indent=2))


if __name__ == "__main__":
    main()
