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
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import _harness as harness  # noqa: E402

REFERENCE = "ag2-telemetry"
CONFIGURATIONS = {
    "none": "AG2 1.2.1, uninstrumented",
    "ag2-telemetry": "AG2 1.2.1 + its own telemetry (hub envelope + channel spans, TelemetryMiddleware)",
    "mast-otel": "AG2 1.2.1 + mast-otel (`mast_otel.instrument()`)",
    "both": "AG2 1.2.1 + its own telemetry + mast-otel",
}
LAYOUT = harness.Layout(
    "envelope",
    CONFIGURATIONS,
    digits=1,
    span_digits=2,
    reference=harness.Reference(REFERENCE, "added / AG2's telemetry added", suffix="x", on_own_row=False),
)


async def _one_run(run: harness.Run, config: str, provider: Any, envelopes: int) -> None:
    """One workflow to ``max_turns`` on a fresh hub; its units are the substantive envelopes posted."""
    from ag2.middleware.builtin.telemetry import TelemetryMiddleware
    from ag2.network.hub import HubTelemetryListener

    from tests.ag2_1x import scenarios

    ag2_telemetry = config in ("ag2-telemetry", "both")
    middleware = (
        (lambda name: [TelemetryMiddleware(tracer_provider=provider, agent_name=name)]) if ag2_telemetry else None
    )
    with run.timing():
        hub = await scenarios.open_hub(tracer_provider=provider) if ag2_telemetry else await scenarios.open_hub()
        if ag2_telemetry:
            hub.register_listener(HubTelemetryListener(hub._store, tracer_provider=provider))
        channel_id = await scenarios.ping_pong(
            hub, ("user", "writer", "editor"), max_turns=envelopes, replies=envelopes, middleware=middleware
        )
    wal = await hub.read_wal(channel_id)
    await hub.close()
    run.units = sum(e.event_type in ("ag2.msg.text", "ag2.packet") for e in wal)


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


class _Switch:
    """Turns one configuration on; the ``mast-otel`` one also times mast-otel's hooks, with a fresh timer."""

    def __init__(self) -> None:
        self.timer = HookTimer()

    def __call__(self, name: str, provider: Any) -> harness.Undo:
        from mast_otel.integrations.ag2_1x import AG2V1Instrumentor

        inst = AG2V1Instrumentor() if name in ("mast-otel", "both") else None
        if inst is not None:
            inst.instrument(tracer_provider=provider)
        timer = self.timer = HookTimer()
        if name == "mast-otel":
            timer.install()

        def undo() -> None:
            timer.uninstall()
            if inst is not None:
                inst.uninstrument()

        return undo


async def measure(
    names: list[str], reps: int, warmup: int, envelopes: int, clock: str
) -> tuple[list[harness.Series], list[float]]:
    switch = _Switch()
    trial = harness.Alternation(names, switch, reps=reps, warmup=warmup, clock=clock, unit="envelope", digits=1)
    hooks_us: list[float] = []  # µs per envelope inside mast-otel's hooks, per mast-otel run
    for s in trial.rotations():
        with trial.configured(s) as run:
            await _one_run(run, s.name, trial.provider, envelopes)
        if trial.recording and s.name == "mast-otel":
            hooks_us.append(switch.timer.ns / run.units / 1000)
    return trial.series, hooks_us


def report(series: list[harness.Series], hooks_us: list[float], args: argparse.Namespace) -> str:
    workload = f"(runs alternating in one process) x {args.envelopes} envelopes per run"
    lines = harness.table(series, harness.heading(args, workload), LAYOUT)
    base = next(s for s in series if s.name == harness.BASELINE)
    ref = next((s for s in series if s.name == REFERENCE), None)
    reference = statistics.median(ref.added_to(base)) if ref is not None else None
    if hooks_us:
        low, high = harness.quartiles(hooks_us)
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
    harness.add_alternation_arguments(parser, CONFIGURATIONS, reps=15, only_help="configurations besides none")
    parser.add_argument("--envelopes", type=int, default=60, help="substantive envelopes per run (max_turns)")
    args = parser.parse_args(argv)

    names = harness.chosen(args.only or [REFERENCE, "mast-otel", "both"])
    series, hooks_us = asyncio.run(measure(names, args.reps, args.warmup, args.envelopes, args.clock))
    print(report(series, hooks_us, args))
    if args.json:
        payload: dict[str, Any] = {s.name: s.as_json("envelope") for s in series}
        payload["mast-otel-hooks"] = {"us_per_envelope": hooks_us}
        args.json.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
