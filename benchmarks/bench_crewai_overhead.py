"""Per-agent-turn time that mast-otel adds to a CrewAI crew, against the uninstrumented run and OpenInference's
CrewAI instrumentation of the same run: the CrewAI row of the overhead benchmark.

Runs in the CrewAI virtual environment (``nox -s crewai`` creates it in ``.nox/crewai``)::

    .nox/crewai/bin/python benchmarks/bench_crewai_overhead.py
    .nox/crewai/bin/python benchmarks/bench_crewai_overhead.py --reps 20 --tasks 9 --json bench.json

Workload: a sequential crew of three agents taking turns over ``--tasks`` tasks, each task taking the previous
outputs as context, on an in-process scripted LLM (a ``crewai.BaseLLM`` answering at once: no HTTP, no litellm),
so the baseline is CrewAI's own mechanics and the ratio is conservative. One agent turn per task (CrewAI's
``tasks_output`` is the record counted). CrewAI's telemetry and tracing are turned off for the measurement
(``CREWAI_DISABLE_TELEMETRY``, ``CREWAI_TRACING_ENABLED``): they are CrewAI's, not the instrumentations' cost.

Method and report as in benchmarks/bench_langgraph_overhead.py: configurations alternating run by run in one
process, CPU time, counting no-op exporter behind a ``SimpleSpanProcessor``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from benchmarks.bench_langgraph_overhead import BASELINE, Series, report  # noqa: E402
from benchmarks.bench_metagpt_overhead import CLOCKS, _counting_provider  # noqa: E402

CONFIGURATIONS = {
    "none": "CrewAI 1.15, uninstrumented",
    "mast-otel": "CrewAI 1.15 + mast-otel (`mast_otel.instrument()`)",
    "mast-otel-no-content": "CrewAI 1.15 + mast-otel, content capture off",
    "openinference": "CrewAI 1.15 + openinference-instrumentation-crewai",
}


def _llm() -> Any:
    from crewai import BaseLLM

    class ScriptedLLM(BaseLLM):
        """Answers every call at once with a final answer."""

        def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
            return "Thought: I now know the final answer\nFinal Answer: the GDP is about 42 billion."

        def supports_function_calling(self) -> bool:
            return False

    return ScriptedLLM(model="scripted")


def build(tasks: int) -> Any:
    from crewai import Agent, Crew, Process, Task

    agents = [Agent(role=role, goal=f"{role} work", backstory=role, llm=_llm(), allow_delegation=False)
              for role in ("Researcher", "Writer", "Editor")]  # fmt: skip
    work = [Task(description=f"Step {i + 1} of the GDP report", expected_output="one line", agent=agents[i % 3])
            for i in range(tasks)]  # fmt: skip
    return Crew(agents=agents, tasks=work, process=Process.sequential)


def _switch(name: str, provider: Any) -> Callable[[], None]:
    if name == "openinference":
        from openinference.instrumentation.crewai import CrewAIInstrumentor

        oi = CrewAIInstrumentor()
        oi.instrument(tracer_provider=provider)
        return oi.uninstrument  # type: ignore[no-any-return]
    import mast_otel

    if name == BASELINE:
        return lambda: None
    mast_otel.instrument(tracer_provider=provider, capture_content=name != "mast-otel-no-content")
    return mast_otel.uninstrument


def measure(names: list[str], reps: int, warmup: int, tasks: int, clock: str) -> list[Series]:
    provider, exporter = _counting_provider()
    now = CLOCKS[clock]
    series = [Series(n) for n in names]
    for rep in range(warmup + reps):
        shift = rep % len(series)
        for s in series[shift:] + series[:shift]:
            undo = _switch(s.name, provider)
            before = exporter.count
            try:
                crew = build(tasks)
                gc.collect()
                t0 = now()
                out = crew.kickoff()
                elapsed = now() - t0
            finally:
                undo()
            turns = len(out.tasks_output)
            if rep >= warmup:
                s.us_per_turn.append(elapsed / turns / 1000)
                s.spans += exporter.count - before
                s.turns += turns
        if rep >= warmup:
            figures = "  ".join(f"{s.name} {s.us_per_turn[-1]:.0f}" for s in series)
            print(f"rep {rep - warmup + 1}/{reps} {figures} µs/turn", file=sys.stderr, flush=True)
    return series


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--reps", type=int, default=20, help="repetitions (one run per configuration each)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed repetitions, first")
    parser.add_argument("--tasks", type=int, default=6, help="tasks (agent turns) per run")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu", help="process CPU time or wall time")
    parser.add_argument("--only", nargs="+", choices=sorted(CONFIGURATIONS), help="configurations besides none")
    parser.add_argument("--json", type=Path, help="also write every figure as JSON here")
    args = parser.parse_args(argv)
    args.rounds = args.tasks

    names = [BASELINE, *(args.only or ["mast-otel", "mast-otel-no-content", "openinference"])]
    series = measure(list(dict.fromkeys(names)), args.reps, args.warmup, args.tasks, args.clock)
    print(report(series, args, CONFIGURATIONS, unit=f"{args.tasks} tasks"))
    if args.json:
        payload = {s.name: {"us_per_turn": s.us_per_turn, "spans": s.spans, "turns": s.turns} for s in series}
        args.json.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
