"""Per-agent-turn time that mast-otel adds to a LangGraph supervisor run, against the uninstrumented run and
OpenInference's LangChain instrumentation of the same run: the LangGraph row of the overhead benchmark.

Runs in the LangGraph virtual environment (``nox -s langgraph`` creates it in ``.nox/langgraph``)::

    .nox/langgraph/bin/python benchmarks/bench_langgraph_overhead.py
    .nox/langgraph/bin/python benchmarks/bench_langgraph_overhead.py --reps 20 --rounds 10 --json bench.json

Workload: ``langgraph-supervisor`` over two ``create_react_agent`` workers (the example's graph shape). The model
is an in-process scripted chat model (LangChain's ``FakeMessagesListChatModel`` with tool binding), not the HTTP
scripted server: no I/O, so the baseline is LangGraph's own mechanics and the ratio is conservative (a smaller
baseline, a larger ratio; a real model call would dwarf both). One run is ``--rounds`` supervisor -> researcher
-> supervisor -> writer cycles, then the supervisor's answer. Agent turns per run are counted from LangGraph's
record (the AI messages of the final state that an agent wrote, not the library's synthetic transfers back).

Spans go to a counting no-op exporter behind a ``SimpleSpanProcessor``: span creation is measured, export is
not. Configurations alternate run by run in one process (instrument / uninstrument between runs, untimed; the
order rotates every repetition), so a change in machine load falls on all of them alike. Time is process CPU
time by default (the workload never waits).

Reported per configuration: µs per agent turn (median over repetitions), the time added per turn against the
uninstrumented baseline (median of per-repetition differences, with the interquartile range), that as a ratio of
the baseline, the ratio of mast-otel's added time to OpenInference's, and spans per turn.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import _harness as harness  # noqa: E402

CONFIGURATIONS = {
    "none": "LangGraph 1.2, uninstrumented",
    "mast-otel": "LangGraph 1.2 + mast-otel (`mast_otel.instrument()`)",
    "mast-otel-no-content": "LangGraph 1.2 + mast-otel, content capture off",
    "openinference": "LangGraph 1.2 + openinference-instrumentation-langchain",
}
DEFAULTS = ["mast-otel", "mast-otel-no-content", "openinference"]


def _chat_model(replies: list[Any]) -> Any:
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel

    class ScriptedChat(FakeMessagesListChatModel):
        """Answers from a list, in order; accepts tools (the supervisor and the agents bind them)."""

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    return ScriptedChat(responses=replies)


def build(rounds: int) -> Any:
    from langchain_core.messages import AIMessage
    from langgraph.prebuilt import create_react_agent
    from langgraph_supervisor import create_supervisor

    def transfer(agent: str, n: int) -> AIMessage:
        return AIMessage("", tool_calls=[{"name": f"transfer_to_{agent}", "args": {}, "id": f"call_{agent}_{n}"}])

    plan = [m for n in range(rounds) for m in (transfer("researcher", n), transfer("writer", n))]
    supervisor_model = _chat_model([*plan, AIMessage("Done: the GDP is 42.")])
    researcher = create_react_agent(_chat_model([AIMessage("The GDP is 42.")]), [], name="researcher")
    writer = create_react_agent(_chat_model([AIMessage("Report: GDP 42.")]), [], name="writer")
    return create_supervisor([researcher, writer], model=supervisor_model, prompt="Delegate.").compile()


def agent_turns(state: dict[str, Any]) -> int:
    from mast_otel.integrations.langgraph._graph import is_handoff_back

    return sum(1 for m in state["messages"] if m.type == "ai" and not is_handoff_back(m))


def _openinference() -> Any:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    return LangChainInstrumentor()


switch = harness.switch_with_openinference(_openinference)


def measure(names: list[str], reps: int, warmup: int, rounds: int, clock: str) -> list[harness.Series]:
    trial = harness.Alternation(names, switch, reps=reps, warmup=warmup, clock=clock, unit="turn", digits=0)
    task = {"messages": [{"role": "user", "content": "What is the GDP? Write a report."}]}
    for s in trial.rotations():
        with trial.configured(s) as run:
            graph = build(rounds)
            with run.timing():
                out = graph.invoke(task, {"recursion_limit": 10 * rounds + 10})
            run.units = agent_turns(out)
    return trial.series


def report(series: list[harness.Series], args: argparse.Namespace, configurations: dict[str, str], per_run: str) -> str:
    """The table, one row per configuration (shared with the CrewAI benchmark)."""
    workload = f"(runs alternating in one process) x {per_run} per run"
    layout = harness.Layout("turn", configurations, digits=0, span_digits=2, reference=harness.OPENINFERENCE)
    return "\n".join(harness.table(series, harness.heading(args, workload), layout))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    harness.add_alternation_arguments(parser, CONFIGURATIONS, reps=20, only_help="configurations besides none")
    parser.add_argument("--rounds", type=int, default=5, help="supervisor -> researcher -> writer cycles per run")
    args = parser.parse_args(argv)

    series = measure(harness.chosen(args.only or DEFAULTS), args.reps, args.warmup, args.rounds, args.clock)
    print(report(series, args, CONFIGURATIONS, f"{args.rounds} supervisor rounds"))
    if args.json:
        args.json.write_text(json.dumps({s.name: s.as_json("turn") for s in series}, indent=2))


if __name__ == "__main__":
    main()
