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

Method and report as in benchmarks/bench_langgraph_overhead.py (both from benchmarks/_harness.py): configurations
alternating run by run in one process, CPU time, counting no-op exporter behind a ``SimpleSpanProcessor``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from benchmarks import _harness as harness  # noqa: E402
from benchmarks.bench_langgraph_overhead import DEFAULTS, report  # noqa: E402

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


def _openinference() -> Any:
    from openinference.instrumentation.crewai import CrewAIInstrumentor

    return CrewAIInstrumentor()


switch = harness.switch_with_openinference(_openinference)


def measure(names: list[str], reps: int, warmup: int, tasks: int, clock: str) -> list[harness.Series]:
    trial = harness.Alternation(names, switch, reps=reps, warmup=warmup, clock=clock, unit="turn", digits=0)
    for s in trial.rotations():
        with trial.configured(s) as run:
            crew = build(tasks)
            with run.timing():
                out = crew.kickoff()
            run.units = len(out.tasks_output)
    return trial.series


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    harness.add_alternation_arguments(parser, CONFIGURATIONS, reps=20, only_help="configurations besides none")
    parser.add_argument("--tasks", type=int, default=6, help="tasks (agent turns) per run")
    args = parser.parse_args(argv)

    series = measure(harness.chosen(args.only or DEFAULTS), args.reps, args.warmup, args.tasks, args.clock)
    print(report(series, args, CONFIGURATIONS, f"{args.tasks} tasks"))
    if args.json:
        args.json.write_text(json.dumps({s.name: s.as_json("turn") for s in series}, indent=2))


if __name__ == "__main__":
    main()
