"""Per-message time that tracing adds to an AG2 Classic group chat: mast-otel against the alternatives.

Workload: three scripted agents (no LLM, ``tests.ag2.scenarios.ScriptedClient``) in a round_robin ``GroupChat``
with ``GroupChatManager(llm_config=False)``; one chat is ``--messages`` messages long. Every configuration runs in
a fresh subprocess (instrumentations patch classes process-wide), ``--warmup`` untimed chats then ``--runs`` timed
ones, and the subprocesses of all configurations alternate, ``--reps`` times, reversing the order every other
repetition so drift in machine load falls on all of them alike. Spans go to a counting no-op exporter behind a
``SimpleSpanProcessor`` (default: span creation plus the processor's hand-off, on the chat thread) or, with
``--processor batch``, the SDK's ``BatchSpanProcessor`` as deployed (ending a span only queues it).
AG2's console output goes to /dev/null
in every configuration. Time is the CPU time of the thread running the chat (``time.thread_time_ns``): on a shared
machine wall time also counts the waits for a free core, which swamp differences of a few microseconds; wall time
is reported alongside.

Run from the repository root::

    .venv/bin/python benchmarks/bench_ag2_overhead.py               # all configurations, defaults below
    .venv/bin/python benchmarks/bench_ag2_overhead.py --reps 3 --only none mast-otel

Reported per configuration: µs per message (median over repetitions of each subprocess's median chat), the time
added per message against its baseline (median of the paired per-repetition differences, with their range), the
ratio of mast-otel's added time to each other instrumentation's, spans per message, and what the spans record
(measured on one extra chat: span kinds per message, whether handoffs and the termination reason appear).

A configuration is one entry of ``CONFIGURATIONS``: a name, the baseline it is compared with, the Python that
runs it, a ``setup(tracer_provider)`` run once in its subprocess, and the ``workload`` it times. ``setup`` may
return a hook that is given each freshly built chat's agents (for per-agent instrumentation).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import _harness as harness  # noqa: E402

AgentsHook = Callable[[list[Any]], None]
Setup = Callable[[Any], AgentsHook | None]  # setup(tracer_provider) -> optional per-chat hook


@dataclass(frozen=True)
class Load:
    """What one timed chat looks like: its length, and the size of each agent's reply (0: a short sentence)."""

    messages: int
    reply_chars: int = 0


# workload(load, hook) builds one chat (untimed) and returns the thunk that runs it (timed), which returns the
# number of messages the chat recorded.
Workload = Callable[[Load, AgentsHook | None], Callable[[], int]]

_PROSE = (
    "The parser reads the expression left to right and builds a tree; the evaluator walks the tree and returns "
    "a number. Division by zero is reported as an error with the position of the operator. Tests cover nested "
    "parentheses, unary minus and operator precedence. "
)


def reply_text(name: str, chars: int, short: str) -> str:
    """A reply of about ``chars`` characters of plain prose (no secrets), or ``short`` when chars is 0."""
    if chars <= 0:
        return short
    return (f"{name}: " + _PROSE * (chars // len(_PROSE) + 1))[:chars]


# -- workloads (imports stay inside: a configuration may run under another framework's Python) --------------
def ag2_round_robin(load: Load, hook: AgentsHook | None) -> Callable[[], int]:
    """One AG2 Classic group chat: 3 scripted agents, round robin, manager without LLM."""
    from autogen import ConversableAgent, GroupChat, GroupChatManager

    from tests.ag2.scenarios import ScriptedClient

    agents: list[Any] = []
    for name, short in (("planner", "Plan: split the work."), ("coder", "Code: done."), ("critic", "Review: fine.")):
        reply = reply_text(name, load.reply_chars, short)
        llm_config = {"config_list": [{"model": name, "model_client_cls": "ScriptedClient", "replies": [reply]}]}
        agent = ConversableAgent(name, llm_config=llm_config, human_input_mode="NEVER")
        agent.register_model_client(model_client_cls=ScriptedClient)  # type: ignore[arg-type]
        agents.append(agent)
    groupchat = GroupChat(agents=agents, messages=[], max_round=load.messages, speaker_selection_method="round_robin")
    manager = GroupChatManager(groupchat, llm_config=False)
    if hook is not None:
        hook([*agents, manager])

    def run() -> int:
        agents[0].initiate_chat(manager, message="Build a calculator.")
        return len(groupchat.messages)

    return run


# -- instrumentations ----------------------------------------------------------------------------------
def setup_none(tracer_provider: Any) -> AgentsHook | None:
    return None


def setup_mast_otel(tracer_provider: Any) -> AgentsHook | None:
    import mast_otel

    mast_otel.instrument(tracer_provider=tracer_provider)
    return None


def setup_mast_otel_no_content(tracer_provider: Any) -> AgentsHook | None:
    import mast_otel

    mast_otel.instrument(tracer_provider=tracer_provider, capture_content=False)
    return None


def setup_ag2_builtin(tracer_provider: Any) -> AgentsHook | None:
    """AG2's own autogen.opentelemetry: LLM-wrapper spans, plus every agent (the manager too) one by one."""
    from autogen.opentelemetry import instrument_agent, instrument_llm_wrapper

    instrument_llm_wrapper(tracer_provider=tracer_provider)

    def hook(agents: list[Any]) -> None:
        for agent in agents:
            instrument_agent(agent, tracer_provider=tracer_provider)

    return hook


def setup_openinference(tracer_provider: Any) -> AgentsHook | None:
    from openinference.instrumentation.ag2 import AG2Instrumentor

    AG2Instrumentor().instrument(tracer_provider=tracer_provider)
    return None


@dataclass(frozen=True)
class Configuration:
    name: str
    label: str
    setup: Setup
    workload: Workload = ag2_round_robin
    baseline: str = "none"  # the configuration this one's added time is measured against
    python: str = sys.executable
    default: bool = True  # run without --only


CONFIGURATIONS: tuple[Configuration, ...] = (
    Configuration("none", "uninstrumented", setup_none),
    Configuration("mast-otel", "mast-otel (`mast_otel.instrument()`)", setup_mast_otel),
    Configuration("mast-otel-no-content", "mast-otel, content capture off", setup_mast_otel_no_content, default=False),
    Configuration(
        "ag2-builtin", "AG2 built-in (`instrument_llm_wrapper` + `instrument_agent` on all)", setup_ag2_builtin
    ),
    Configuration("openinference", "openinference-instrumentation-ag2 (`AG2Instrumentor`)", setup_openinference),
)
BY_NAME = {c.name: c for c in CONFIGURATIONS}
MAST = "mast-otel"


# -- the subprocess ------------------------------------------------------------------------------------
def _describe(spans: list[Any], messages: int, marker: str) -> dict[str, Any]:
    """What one chat's spans record: span kinds per message, and whether handoffs and termination appear."""
    kinds = Counter(s.name.split(" ")[0].split(".")[-1] for s in spans)
    keys = {k for s in spans for k in (s.attributes or {})}
    values = {str(v) for s in spans for v in (s.attributes or {}).values() if isinstance(v, str)}
    handoffs = any("handoff" in s.name or "speaker_selection" in s.name for s in spans) or any(
        "handoff" in k or "transfer" in k for k in keys
    )
    return {
        "kinds": {k: round(n / messages, 3) for k, n in kinds.most_common()},
        "handoffs": handoffs,
        "termination": any("termination" in k for k in keys),
        "broadcasts_marked": any("broadcast" in k for k in keys),
        "content": any(marker in v for v in values),
    }


def child(name: str, runs: int, warmup: int, load: Load, processor: str = "simple") -> dict[str, Any]:
    config = BY_NAME[name]
    per_message_cpu: list[float] = []
    per_message_wall: list[float] = []
    spans = total_messages = 0
    # AG2 prints through a logging handler bound to sys.stdout on first use: send it to /dev/null from the start.
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
        provider, exporter = harness.counting_provider(harness.CountingExporter(), processor)
        hook = config.setup(provider)
        for i in range(warmup + runs):
            run = config.workload(load, hook)
            gc.collect()
            before = exporter.count
            cpu0, wall0 = time.thread_time_ns(), time.perf_counter_ns()
            n = run()
            cpu, wall = time.thread_time_ns() - cpu0, time.perf_counter_ns() - wall0
            provider.force_flush()  # outside the timed part: only matters for the batch processor
            if i >= warmup:
                per_message_cpu.append(cpu / n / 1000)
                per_message_wall.append(wall / n / 1000)
                spans += exporter.count - before
                total_messages += n
        run = config.workload(load, hook)
        exporter.kept = []
        n = run()
        provider.force_flush()
    return {
        "name": name,
        "us_per_message": statistics.median(per_message_cpu),
        "wall_us_per_message": statistics.median(per_message_wall),
        "runs_us_per_message": per_message_cpu,
        "messages": total_messages,
        "spans_per_message": spans / total_messages,
        "records": _describe(exporter.kept, n, reply_text("coder", load.reply_chars, "Code: done.")[:40]),
    }


# Where tracing time goes, by the file that spends it (self time under cProfile, on the chat thread's CPU clock).
_COMPONENTS: tuple[tuple[str, str], ...] = (
    ("mast_otel/integrations/lifecycle", "mast-otel lifecycle: failure guards, argument binding"),
    ("mast_otel/integrations", "mast-otel framework mapping"),
    ("mast_otel/", "mast-otel recorder: attributes, redaction, span calls"),
    ("opentelemetry/context", "OpenTelemetry context: attach/detach, lookups"),
    ("opentelemetry/instrumentation", "OpenTelemetry context: attach/detach, lookups"),
    ("autogen/opentelemetry", "AG2 built-in instrumentation code"),
    ("opentelemetry/", "OpenTelemetry SDK: span start/end, attribute validation, processor"),
    ("wrapt/", "wrapt"),
)


def profile(name: str, runs: int, warmup: int, load: Load, processor: str) -> str:
    """Per-component share of the tracing code's self time, for one configuration (``--profile NAME``)."""
    import cProfile
    import pstats

    config = BY_NAME[name]
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
        provider, _ = harness.counting_provider(harness.CountingExporter(), processor)
        hook = config.setup(provider)
        for _ in range(warmup):
            config.workload(load, hook)()
        profiler = cProfile.Profile(time.thread_time)  # CPU clock: waits for a free core are not counted
        messages = 0
        for _ in range(runs):
            run = config.workload(load, hook)
            profiler.enable()
            messages += run()
            profiler.disable()
    shares: Counter[str] = Counter()
    stats: dict[Any, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    for (filename, _, _), (_, _, self_time, _, _) in stats.items():
        path = filename.replace(os.sep, "/")
        component = next((label for marker, label in _COMPONENTS if marker in path), None)
        if component is not None:
            shares[component] += self_time
    total = sum(shares.values()) or 1.0
    lines = [f"{name}: self time of the tracing code by component ({messages} messages, {processor} processor; "
             "cProfile inflates absolute times, shares are what to read)"]  # fmt: skip
    lines += [f"  {100 * t / total:5.1f}%  {label}" for label, t in shares.most_common()]
    return "\n".join(lines)


def _run_child(config: Configuration, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [config.python, str(Path(__file__).resolve()), "--child", config.name]
    cmd += ["--runs", str(args.runs), "--warmup", str(args.warmup), "--messages", str(args.messages)]
    cmd += ["--reply-chars", str(args.reply_chars), "--processor", args.processor]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return harness.run_child(config.name, cmd, cwd=ROOT, env=env)


# -- the driver ------------------------------------------------------------------------------------------
@dataclass
class Summary:
    config: Configuration
    per_rep: list[float] = field(default_factory=list)  # each subprocess's median CPU µs/message
    wall_per_rep: list[float] = field(default_factory=list)  # the same, wall-clock
    spans_per_message: float = 0.0
    messages: int = 0
    records: dict[str, Any] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.per_rep)


def _added(s: Summary, by_name: dict[str, Summary]) -> tuple[float, float, float] | None:
    """Median, min and max of the per-repetition differences to the baseline (paired by repetition)."""
    base = by_name.get(s.config.baseline)
    if base is None or base is s:
        return None
    diffs = [a - b for a, b in zip(s.per_rep, base.per_rep, strict=True)]
    return statistics.median(diffs), min(diffs), max(diffs)


def _records(r: dict[str, Any]) -> str:
    if not r:
        return ""
    kinds = ", ".join(f"{k} {v:g}" for k, v in r["kinds"].items()) or "no spans"
    flags = [f"{label} {'yes' if r[key] else 'no'}" for key, label in (("handoffs", "handoffs"),
             ("termination", "termination reason"), ("content", "message text"))]  # fmt: skip
    return f"{kinds}; {'; '.join(flags)}"


def report(summaries: list[Summary], args: argparse.Namespace) -> str:
    by_name = {s.config.name: s for s in summaries}
    mast = by_name.get(MAST)
    mast_added = _added(mast, by_name) if mast else None
    lines = [
        f"{args.reps} repetitions x {args.runs} timed chats x {args.messages} messages per configuration "
        f"({args.warmup} warm-up chats each); replies of "
        f"{f'{args.reply_chars} characters' if args.reply_chars else 'one short sentence'}; "
        f"python {harness.python_version()}",
        "",
        "| configuration | CPU µs/message | added µs/message (range) | mast-otel added / this added | wall µs/message "
        "| spans/message | added µs/span | records (span kinds per message; flags) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        added = _added(s, by_name)
        added_text = f"+{added[0]:.1f} ({added[1]:+.1f} .. {added[2]:+.1f})" if added else "0 (baseline)"
        ratio = ""
        if (
            added
            and mast
            and mast_added
            and s is not mast
            and s.config.baseline == mast.config.baseline
            and added[0] > 0
        ):
            ratio = f"{mast_added[0] / added[0]:.2f}"
        per_span = f"{added[0] / s.spans_per_message:.1f}" if added and s.spans_per_message else ""
        lines.append(
            f"| {s.config.label} | {s.median:.1f} | {added_text} | {ratio} | {statistics.median(s.wall_per_rep):.1f} "
            f"| {s.spans_per_message:.3f} | {per_span} "
            f"| {_records(s.records)} |"
        )
    lines.append("")
    lines.append("per-repetition CPU µs/message (subprocess medians, in run order):")
    for s in summaries:
        lines.append(f"  {s.config.name:22s} " + " ".join(f"{v:7.1f}" for v in s.per_rep))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    harness.add_subprocess_arguments(parser, BY_NAME, reps=7, runs=10, only_help="configurations to run, in this order")
    parser.add_argument("--messages", type=int, default=200, help="messages per chat (GroupChat.max_round)")
    parser.add_argument("--reply-chars", type=int, default=0, help="size of each reply (0: a short sentence)")
    parser.add_argument(
        "--processor",
        choices=["simple", "batch"],
        default="simple",
        help="simple: spans exported on the chat thread (span creation and export measured); batch: the SDK's "
        "BatchSpanProcessor, as deployed (the chat thread only queues ended spans)",
    )
    parser.add_argument("--profile", choices=sorted(BY_NAME), help="profile one configuration (in this process)")
    args = parser.parse_args(argv)

    if args.profile:
        print(profile(args.profile, args.runs, args.warmup, Load(args.messages, args.reply_chars), args.processor))
        return

    if args.child:
        result = child(args.child, args.runs, args.warmup, Load(args.messages, args.reply_chars), args.processor)
        print(json.dumps(result))
        return

    chosen = [BY_NAME[n] for n in args.only] if args.only else [c for c in CONFIGURATIONS if c.default]
    summaries = [Summary(c) for c in chosen]
    for rep in range(args.reps):
        for s in harness.alternating_order(summaries, rep):
            result = _run_child(s.config, args)
            s.per_rep.append(result["us_per_message"])
            s.wall_per_rep.append(result["wall_us_per_message"])
            s.spans_per_message = result["spans_per_message"]
            s.messages += result["messages"]
            s.records = result["records"]
            print(f"rep {rep + 1}/{args.reps} {s.config.name:22s} {result['us_per_message']:8.1f} CPU µs/message",
                  file=sys.stderr, flush=True)  # fmt: skip
    text = report(summaries, args)
    print(text)
    if args.json:
        payload = {
            s.config.name: {
                "per_rep": s.per_rep,
                "wall_per_rep": s.wall_per_rep,
                "spans_per_message": s.spans_per_message,
                "messages": s.messages,
                "records": s.records,
            }
            for s in summaries
        }
        args.json.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
