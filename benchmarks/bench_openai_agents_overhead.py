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
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import _harness as harness  # noqa: E402

CONFIGURATIONS = {
    "none": "openai-agents 0.24, uninstrumented",
    "mast-otel": "+ mast-otel (`mast_otel.instrument()`)",
    "mast-otel-no-content": "+ mast-otel, content capture off",
    "openinference": "+ openinference-instrumentation-openai-agents",
}
TURNS_PER_RUN = 2
LAYOUT = harness.Layout("turn", CONFIGURATIONS, digits=0, span_digits=1, reference=harness.OPENINFERENCE)


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


def _openinference() -> Any:
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    return OpenAIAgentsInstrumentor()


switch = harness.switch_with_openinference(_openinference, exclusive_processor=False)


async def measure(names: list[str], reps: int, warmup: int, runs: int, clock: str) -> list[harness.Series]:
    from agents import Runner, set_trace_processors

    from tests.openai_agents.scenarios import triage_agents, triage_script

    set_trace_processors([])  # no export to OpenAI (no network here); configurations add their own
    trial = harness.Alternation(names, switch, reps=reps, warmup=warmup, clock=clock, unit="turn", digits=0)
    model, scripted = _in_process_model(triage_script())
    agent = triage_agents(model)
    for s in trial.rotations():
        with trial.configured(s) as run:
            with run.timing():
                for _ in range(runs):
                    scripted.reset()
                    result = await Runner.run(agent, "I want a refund for order A17")
            run.units = runs * TURNS_PER_RUN
        assert result.last_agent.name == "billing_agent"
    return trial.series


def report(series: list[harness.Series], args: argparse.Namespace) -> str:
    workload = f"(alternating in one process) x {args.runs} runs x {TURNS_PER_RUN} agent turns"
    return "\n".join(harness.table(series, harness.heading(args, workload), LAYOUT))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    harness.add_alternation_arguments(parser, CONFIGURATIONS, reps=10, only_help="configurations (baseline always)")
    parser.add_argument("--runs", type=int, default=10, help="SDK runs per repetition and configuration")
    args = parser.parse_args(argv)
    names = harness.chosen(n for n in CONFIGURATIONS if n != harness.BASELINE and (not args.only or n in args.only))
    series = asyncio.run(measure(names, args.reps, args.warmup, args.runs, args.clock))
    print(report(series, args))
    if args.json:
        args.json.write_text(json.dumps([{"name": s.name, **s.as_json("turn")} for s in series], indent=2))


if __name__ == "__main__":
    main()
