"""Per-envelope time that mast-otel adds to an AG2 1.x hub run, against the uninstrumented run and against AG2's
own telemetry, measured in the same process.

Runs in the AG2 1.x virtual environment (``nox -s ag2_1x`` creates it in ``.nox/ag2_1x``)::

    .nox/ag2_1x/bin/python benchmarks/bench_ag2_1x_overhead.py
    .nox/ag2_1x/bin/python benchmarks/bench_ag2_1x_overhead.py --reps 20 --envelopes 100 --json bench.json

Workload: the test suite's workflow (``tests.ag2_1x.scenarios.ping_pong``: a user writes the task, two agents
answer each other through graph transitions until the graph's ``max_turns``), on a fresh hub per run, with AG2's
scripted model (``ag2.testing``; no LLM, no network). One run posts ``--envelopes`` substantive envelopes; each is
one agent turn and one message. Spans go to a counting no-op exporter behind a ``SimpleSpanProcessor``: span
creation is measured, export is not.

Configurations:

- ``none``: AG2 1.2.1 as is;
- ``ag2-telemetry``: AG2's own telemetry, all three opt-ins (``Hub(tracer_provider=...)`` envelope spans,
  ``HubTelemetryListener`` channel spans, ``TelemetryMiddleware`` turn / LLM / tool spans on every agent);
- ``mast-otel``: ``AG2V1Instrumentor`` (what ``mast_otel.instrument()`` installs), AG2's telemetry off;
- ``both``: the two together (mast-otel then also joins AG2's envelope spans into its trace).

Time is process CPU time by default (``--clock cpu``): the run waits only on its own 10 ms polling for the channel
to close, which wall time would count and CPU time does not. Configurations alternate run by run in one process
(order rotating every repetition), so a change in machine load falls on all alike. Reported per configuration:
µs per envelope (median), the time added per envelope against ``none`` (median of per-repetition differences,
IQR), that as a ratio of the baseline, the ratio of mast-otel's added time to AG2's own telemetry's, and spans
per envelope.

AG2's own cost per envelope is large (each turn builds several pydantic call models for its stream
subscriptions) and, on a shared machine, varies by more than mast-otel adds: the end-to-end difference has a wide
IQR. So the ``mast-otel`` configuration also reports the time spent inside mast-otel's hooks themselves (hub
listener callbacks, and the middleware minus the AG2 work it wraps), measured around each hook in CPU time of
the event loop's thread (``time.thread_time_ns``): a direct figure for what mast-otel adds, immune to what the rest
of the machine does.
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_metagpt_overhead import CLOCKS, Series, _counting_provider, _quartiles  # noqa: E402

BASELINE = "none"
REFERENCE = "ag2-telemetry"
CONFIGURATIONS = {
    "none": "AG2 1.2.1, uninstrumented",
    "ag2-telemetry": "AG2 1.2.1 + its own telemetry (hub envelope + channel spans, TelemetryMiddleware)",
    "mast-otel": "AG2 1.2.1 + mast-otel (`mast_otel.instrument()`)",
    "both": "AG2 1.2.1 + its own telemetry + mast-otel",
}


async def _one_run(config: str, provider: Any, envelopes: int, clock: str) -> tuple[int, int]:
    """One workflow to ``max_turns`` on a fresh hub: (elapsed ns, substantive envelopes posted)."""
    from ag2.middleware.builtin.telemetry import TelemetryMiddleware
    from ag2.network.hub import HubTelemetryListener

    from tests.ag2_1x import scenarios

    ag2_telemetry = config in ("ag2-telemetry", "both")
    middleware = (
        (lambda name: [TelemetryMiddleware(tracer_provider=provider, agent_name=name)]) if ag2_telemetry else None
    )
    now = CLOCKS[clock]
    gc.collect()
    t0 = now()
    hub = await scenarios.open_hub(tracer_provider=provider) if ag2_telemetry else await scenarios.open_hub()
    if ag2_telemetry:
        hub.register_listener(HubTelemetryListener(hub._store, tracer_provider=provider))
    channel_id = await scenarios.ping_pong(
        hub, ("user", "writer", "editor"), max_turns=envelopes, replies=envelopes, middleware=middleware
    )
    elapsed = now() - t0
    wal = await hub.read_wal(channel_id)
    await hub.close()
    return elapsed, sum(e.event_type in ("ag2.msg.text", "ag2.packet") for e in wal)


class HookTimer:
    """Time spent inside mast-otel's hooks: the listener callbacks whole, the middleware minus its ``call_next``."""

    def __init__(self) -> None:
        self.ns = 0
        self._undo: list[tuple[Any, str, Any]] = []

    def install(self) -> None:
        from mast_otel.integrations.ag2_1x._listener import MastHubListener
        from mast_otel.integrations.ag2_1x._middleware import MastMiddleware

        for cls, name in ((MastHubListener, "on_envelope_posted"), (MastHubListener, "on_channel_event")):
            self._patch(cls, name, self._whole(getattr(cls, name)))
        for name in ("on_turn", "on_tool_execution"):
            self._patch(MastMiddleware, name, self._around(getattr(MastMiddleware, name)))

    def uninstall(self) -> None:
        for cls, name, original in reversed(self._undo):
            setattr(cls, name, original)
        self._undo.clear()

    def _patch(self, cls: Any, name: str, replacement: Any) -> None:
        self._undo.append((cls, name, getattr(cls, name)))
        setattr(cls, name, replacement)

    def _whole(self, method: Any) -> Any:
        async def timed(this: Any, *args: Any) -> Any:  # the listener never awaits: its whole time is its own
            t0 = time.thread_time_ns()
            try:
                return await method(this, *args)
            finally:
                self.ns += time.thread_time_ns() - t0

        return timed

    def _around(self, method: Any) -> Any:
        async def timed(this: Any, call_next: Any, event: Any, context: Any) -> Any:
            inner = 0

            async def timed_next(e: Any, c: Any) -> Any:
                nonlocal inner
                t1 = time.thread_time_ns()
                try:
                    return await call_next(e, c)
                finally:
                    inner += time.thread_time_ns() - t1

            t0 = time.thread_time_ns()
            try:
                return await method(this, timed_next, event, context)
            finally:
                self.ns += time.thread_time_ns() - t0 - inner

        return timed


async def measure(
    names: list[str], reps: int, warmup: int, envelopes: int, clock: str
) -> tuple[list[Series], list[float]]:
    from mast_otel.integrations.ag2_1x import AG2V1Instrumentor

    provider, exporter = _counting_provider()
    series = [Series(n) for n in names]
    hooks_us: list[float] = []  # µs per envelope inside mast-otel's hooks, per mast-otel run
    for rep in range(warmup + reps):
        shift = rep % len(series)
        for s in series[shift:] + series[:shift]:
            inst = AG2V1Instrumentor() if s.name in ("mast-otel", "both") else None
            if inst is not None:
                inst.instrument(tracer_provider=provider)
            timer = HookTimer()
            if s.name == "mast-otel":
                timer.install()
            before = exporter.count
            try:
                elapsed, posted = await _one_run(s.name, provider, envelopes, clock)
            finally:
                timer.uninstall()
                if inst is not None:
                    inst.uninstrument()
            if rep >= warmup and s.name == "mast-otel":
                hooks_us.append(timer.ns / posted / 1000)
            if rep >= warmup:
                s.us_per_message.append(elapsed / posted / 1000)
                s.spans += exporter.count - before
                s.messages += posted
        if rep >= warmup:
            print(f"rep {rep - warmup + 1}/{reps} " + "  ".join(
                f"{s.name} {s.us_per_message[-1]:.1f}" for s in series) + " µs/envelope",
                file=sys.stderr, flush=True)  # fmt: skip
    return series, hooks_us


def report(series: list[Series], hooks_us: list[float], args: argparse.Namespace) -> str:
    base = next(s for s in series if s.name == BASELINE)
    added: dict[str, float] = {}
    rows = []
    for s in series:
        spans = s.spans / s.messages if s.messages else 0.0
        if s is base:
            rows.append(f"| {CONFIGURATIONS[s.name]} | {s.median:.1f} | 0 (baseline) | | | {spans:.2f} |")
            continue
        diffs = [a - b for a, b in zip(s.us_per_message, base.us_per_message, strict=True)]
        added[s.name] = statistics.median(diffs)
        low, high = _quartiles(diffs)
        rows.append((s, added[s.name], low, high, spans))
    reference = added.get(REFERENCE)
    lines = [
        f"{args.reps} repetitions (runs alternating in one process) x {args.envelopes} envelopes per run "
        f"({args.warmup} warm-up repetitions); {args.clock} time; python {sys.version.split()[0]}",
        "",
        "| configuration | µs/envelope | added µs/envelope (IQR) | added / baseline | added / AG2's telemetry added "
        "| spans/envelope |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        if isinstance(row, str):
            lines.append(row)
            continue
        s, a, low, high, spans = row
        versus = f"{a / reference:.2f}x" if reference and s.name != REFERENCE else ""
        lines.append(
            f"| {CONFIGURATIONS[s.name]} | {s.median:.1f} | {a:+.1f} ({low:+.1f} .. {high:+.1f}) "
            f"| {a / base.median:.1%} | {versus} | {spans:.2f} |"
        )
    if hooks_us:
        low, high = _quartiles(hooks_us)
        hooks = statistics.median(hooks_us)
        lines += [
            "",
            f"Inside mast-otel's hooks (mast-otel runs, thread CPU time): {hooks:.1f} µs/envelope "
            f"({low:.1f} .. {high:.1f}), {hooks / base.median:.2%} of the uninstrumented µs/envelope"
            + (f", {hooks / reference:.2f}x AG2's telemetry added" if reference else ""),
        ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--reps", type=int, default=15, help="repetitions (one run per configuration each)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed repetitions, first")
    parser.add_argument("--envelopes", type=int, default=60, help="substantive envelopes per run (max_turns)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu", help="process CPU time or wall time")
    parser.add_argument("--only", nargs="+", choices=sorted(CONFIGURATIONS), help="configurations besides none")
    parser.add_argument("--json", type=Path, help="also write every figure as JSON here")
    args = parser.parse_args(argv)

    names = [BASELINE, *(n for n in (args.only or [REFERENCE, "mast-otel", "both"]) if n != BASELINE)]
    series, hooks_us = asyncio.run(measure(names, args.reps, args.warmup, args.envelopes, args.clock))
    print(report(series, hooks_us, args))
    if args.json:
        payload: dict[str, Any] = {
            s.name: {"us_per_envelope": s.us_per_message, "spans": s.spans, "envelopes": s.messages} for s in series
        }
        payload["mast-otel-hooks"] = {"us_per_envelope": hooks_us}
        args.json.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
