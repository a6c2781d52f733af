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
import gc
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_metagpt_overhead import CLOCKS, _counting_provider, _quartiles  # noqa: E402

BASELINE = "none"
CONFIGURATIONS = {
    "none": "LangGraph 1.2, uninstrumented",
    "mast-otel": "LangGraph 1.2 + mast-otel (`mast_otel.instrument()`)",
    "mast-otel-no-content": "LangGraph 1.2 + mast-otel, content capture off",
    "openinference": "LangGraph 1.2 + openinference-instrumentation-langchain",
}


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


@dataclass
class Series:
    name: str
    us_per_turn: list[float] = field(default_factory=list)
    spans: int = 0
    turns: int = 0

    @property
    def median(self) -> float:
        return statistics.median(self.us_per_turn)


def _switch(name: str, provider: Any) -> Callable[[], None]:
    """Instrument for one configuration; returns the undo."""
    if name == "openinference":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        oi = LangChainInstrumentor()
        oi.instrument(tracer_provider=provider)
        return oi.uninstrument  # type: ignore[no-any-return]
    import mast_otel

    if name == BASELINE:
        return lambda: None
    mast_otel.instrument(tracer_provider=provider, capture_content=name != "mast-otel-no-content")
    return mast_otel.uninstrument


def measure(names: list[str], reps: int, warmup: int, rounds: int, clock: str) -> list[Series]:
    provider, exporter = _counting_provider()
    now = CLOCKS[clock]
    series = [Series(n) for n in names]
    task = {"messages": [{"role": "user", "content": "What is the GDP? Write a report."}]}
    for rep in range(warmup + reps):
        shift = rep % len(series)
        for s in series[shift:] + series[:shift]:
            undo = _switch(s.name, provider)
            before = exporter.count
            try:
                graph = build(rounds)
                gc.collect()
                t0 = now()
                out = graph.invoke(task, {"recursion_limit": 10 * rounds + 10})
                elapsed = now() - t0
            finally:
                undo()
            turns = agent_turns(out)
            if rep >= warmup:
                s.us_per_turn.append(elapsed / turns / 1000)
                s.spans += exporter.count - before
                s.turns += turns
        if rep >= warmup:
            figures = "  ".join(f"{s.name} {s.us_per_turn[-1]:.0f}" for s in series)
            print(f"rep {rep - warmup + 1}/{reps} {figures} µs/turn", file=sys.stderr, flush=True)
    return series


def report(
    series: list[Series],
    args: argparse.Namespace,
    configurations: dict[str, str] = CONFIGURATIONS,
    unit: str | None = None,
) -> str:
    """The table, one row per configuration (shared with the CrewAI benchmark)."""
    base = next(s for s in series if s.name == BASELINE)
    added: dict[str, float] = {}
    rows = []
    for s in series:
        spans = s.spans / s.turns if s.turns else 0.0
        if s is base:
            rows.append((s, f"| {configurations[s.name]} | {s.median:.0f} | 0 (baseline) | | | {spans:.2f} |"))
            continue
        diffs = [a - b for a, b in zip(s.us_per_turn, base.us_per_turn, strict=True)]
        added[s.name] = statistics.median(diffs)
        low, high = _quartiles(diffs)
        rows.append((s, f"| {configurations[s.name]} | {s.median:.0f} | {added[s.name]:+.0f} ({low:+.0f} .. "
                        f"{high:+.0f}) | {added[s.name] / base.median:.1%} | {{vs_oi}} | {spans:.2f} |"))  # fmt: skip
    oi = added.get("openinference")
    per_run = unit or f"{args.rounds} supervisor rounds"
    lines = [
        f"{args.reps} repetitions (runs alternating in one process) x {per_run} per run "
        f"({args.warmup} warm-up repetitions); {args.clock} time; python {sys.version.split()[0]}",
        "",
        "| configuration | µs/turn | added µs/turn (IQR) | added / baseline | added / OpenInference's | spans/turn |",
        "|---|---|---|---|---|---|",
    ]
    for s, row in rows:
        vs = f"{added[s.name] / oi:.2f}" if oi and s.name in added else ""
        lines.append(row.replace("{vs_oi}", vs))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--reps", type=int, default=20, help="repetitions (one run per configuration each)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed repetitions, first")
    parser.add_argument("--rounds", type=int, default=5, help="supervisor -> researcher -> writer cycles per run")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu", help="process CPU time or wall time")
    parser.add_argument("--only", nargs="+", choices=sorted(CONFIGURATIONS), help="configurations besides none")
    parser.add_argument("--json", type=Path, help="also write every figure as JSON here")
    args = parser.parse_args(argv)

    names = [BASELINE, *(n for n in (args.only or ["mast-otel", "mast-otel-no-content", "openinference"]))]
    series = measure(list(dict.fromkeys(names)), args.reps, args.warmup, args.rounds, args.clock)
    print(report(series, args))
    if args.json:
        payload = {s.name: {"us_per_turn": s.us_per_turn, "spans": s.spans, "turns": s.turns} for s in series}
        args.json.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
