"""Per-message time that tracing adds to an autogen-agentchat team: mast-otel against autogen-core's built-in
tracing and OpenInference's autogen-agentchat instrumentation, in the same run.

Runs in the autogen-agentchat virtual environment (``nox -s autogen_agentchat`` creates ``.nox/autogen_agentchat``)::

    .nox/autogen_agentchat/bin/python benchmarks/bench_autogen_agentchat_overhead.py
    .nox/autogen_agentchat/bin/python benchmarks/bench_autogen_agentchat_overhead.py --reps 10 --messages 60

Workload: a ``RoundRobinGroupChat`` of three ``AssistantAgent``s on autogen-ext's ``ReplayChatCompletionClient``
(scripted replies in process: no network, no model), stopped by ``MaxMessageTermination`` after ``--messages``
messages; a fresh team per run, and only ``team.run`` is timed. Time is the process's CPU time: the run never
waits (no I/O; spans go to a counting no-op exporter behind a ``SimpleSpanProcessor``, so creating and ending
spans is measured, exporting them is not), and other processes on a shared machine do not inflate CPU time the
way they inflate wall time.

autogen-core traces to the *global* tracer provider, which a process sets once, so every configuration runs in its
own subprocess (``--runs`` timed runs after ``--warmup`` untimed ones); the subprocesses of all configurations
alternate, ``--reps`` times, in an order that reverses every other repetition, so drift in machine load falls on
all of them alike.

Configurations: ``none`` (no tracing at all: no global provider, autogen-core's tracers are no-ops);
``autogen-core`` (a global provider: autogen-core's ``invoke_agent`` / ``execute_tool`` spans and its runtime's
messaging spans); ``autogen-core-lean`` (the same with ``AUTOGEN_DISABLE_RUNTIME_TRACING=true``, the way its docs
suggest to cut the noise); ``openinference`` (openinference-instrumentation-autogen-agentchat); ``mast-otel``.
Reported: µs per message (median of the per-subprocess medians), the time added per message against ``none``
(median of the paired per-repetition differences), mast-otel's added time as a ratio of each other
configuration's, spans per message, and whether any span of the configuration records a handoff reason and a
termination reason (read from the exported attributes, not claimed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import _harness as harness  # noqa: E402

CONFIGURATIONS = {
    "none": "autogen-agentchat 0.7.5, no tracing",
    "autogen-core": "autogen-core built-in tracing (global provider; runtime spans on)",
    "autogen-core-lean": "autogen-core built-in tracing, AUTOGEN_DISABLE_RUNTIME_TRACING=true",
    "openinference": "openinference-instrumentation-autogen-agentchat",
    "mast-otel": "mast-otel (`mast_otel.instrument()`)",
}
AGENTS = ("writer", "critic", "editor")


# --- the child: one configuration, several timed runs ---------------------------------------------------------
class _Counting(harness.CountingExporter):
    """Also keeps the two facts the report needs from the spans' attributes, not the spans."""

    def __init__(self) -> None:
        super().__init__()
        self.handoff_reason = False
        self.termination_reason = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            keys = (span.attributes or {}).keys()
            self.handoff_reason = self.handoff_reason or any(k.endswith("handoff.reason") for k in keys)
            self.termination_reason = self.termination_reason or any(k.endswith("termination.reason") for k in keys)
        return super().export(spans)


def _setup(config: str) -> _Counting:
    from opentelemetry import trace

    provider, exporter = harness.counting_provider(_Counting())
    if config == "autogen-core-lean":
        os.environ["AUTOGEN_DISABLE_RUNTIME_TRACING"] = "true"
    if config.startswith("autogen-core"):
        trace.set_tracer_provider(provider)
    elif config == "openinference":
        from openinference.instrumentation.autogen_agentchat import AutogenAgentChatInstrumentor

        AutogenAgentChatInstrumentor().instrument(tracer_provider=provider)
    elif config == "mast-otel":
        import mast_otel

        mast_otel.instrument(tracer_provider=provider)
    return exporter


def _team(messages: int) -> Any:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_ext.models.replay import ReplayChatCompletionClient

    turns = messages // len(AGENTS) + 1
    replies = {name: [f"{name} says {i}: the draft needs work." for i in range(turns)] for name in AGENTS}
    agents = [AssistantAgent(name, ReplayChatCompletionClient(replies[name])) for name in AGENTS]
    return RoundRobinGroupChat(agents, termination_condition=MaxMessageTermination(messages))


def child(config: str, runs: int, warmup: int, messages: int) -> dict[str, Any]:
    exporter = _setup(config)
    us: list[float] = []
    spans = 0
    for i in range(warmup + runs):
        team = _team(messages)
        before = exporter.count
        run = harness.Run("cpu")
        with run.timing():
            result = asyncio.run(team.run(task="Write a haiku about autumn"))
        if i >= warmup:
            us.append(run.elapsed_ns / len(result.messages) / 1000)
            spans += exporter.count - before
    return {
        "us": statistics.median(us),
        "spans_per_message": spans / runs / messages,
        "handoff_reason": exporter.handoff_reason,
        "termination_reason": exporter.termination_reason,
    }


# --- the parent: alternate the configurations, report ---------------------------------------------------------
def _run_child(config: str, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", config, "--runs", str(args.runs), "--warmup", str(args.warmup),
           "--messages", str(args.messages)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "AUTOGEN_"))}
    return harness.run_child(config, cmd, cwd=ROOT, env=env)


def report(results: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> str:
    base = [r["us"] for r in results[harness.BASELINE]]
    added = {name: statistics.median([r["us"] - b for r, b in zip(rs, base, strict=True)])
             for name, rs in results.items()}  # fmt: skip
    lines = [
        f"{args.reps} repetitions x {args.runs} runs x {args.messages} messages per configuration "
        f"({args.warmup} warm-up runs each); process CPU time; python {harness.python_version()}",
        "",
        "| configuration | µs/message | added µs/message | mast-otel added / this added | spans/message "
        "| handoff reason | termination reason |",
        "|---|---|---|---|---|---|---|",
    ]
    mine = added.get("mast-otel")
    for name, rs in results.items():
        us = statistics.median(r["us"] for r in rs)
        last = rs[-1]
        ratio = ""
        if name not in (harness.BASELINE, "mast-otel") and mine is not None and added[name] > 0:
            ratio = f"{mine / added[name]:.2f}"
        add = "0 (baseline)" if name == harness.BASELINE else f"{added[name]:+.1f}"
        lines.append(
            f"| {CONFIGURATIONS[name]} | {us:.1f} | {add} | {ratio} | {last['spans_per_message']:.2f} "
            f"| {'yes' if last['handoff_reason'] else 'no'} | {'yes' if last['termination_reason'] else 'no'} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    harness.add_subprocess_arguments(parser, CONFIGURATIONS, reps=6, runs=5, only_help="configurations besides none")
    parser.add_argument("--messages", type=int, default=60, help="messages per run")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.runs, args.warmup, args.messages)))
        return
    names = [harness.BASELINE, *(n for n in (args.only or list(CONFIGURATIONS)) if n != harness.BASELINE)]
    results: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for rep in range(args.reps):
        for name in harness.alternating_order(names, rep):
            results[name].append(_run_child(name, args))
        print(f"rep {rep + 1}/{args.reps} " + "  ".join(f"{n} {results[n][-1]['us']:.0f}" for n in names)
              + " µs/message", file=sys.stderr, flush=True)  # fmt: skip
    print(report(results, args))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
