"""What the per-framework overhead benchmarks share: counting spans, timing runs, alternating configurations,
and reporting each configuration against the baseline measured in the same run.

Every ``bench_<framework>_overhead.py`` asks the same question (what does tracing add per agent turn, message or
envelope?) and answers it the same way; only the workload, the configurations and how each is switched on and
off belong to the framework. Keeping the method here means a fix to it (how repetitions alternate, what the
timed part holds, how the added time is summarised) reaches every benchmark at once, and their tables stay
comparable.

Two ways of alternating are used. In one process (``Alternation``), when a configuration can be instrumented and
uninstrumented cleanly: the order rotates every repetition. In one subprocess per configuration and repetition
(``alternating_order``, ``run_child``), when it cannot (a global tracer provider, classes patched for good): the
order reverses every other repetition. Either way a change in machine load falls on all configurations alike, and
every figure is a ratio against the baseline of the same run, never a timed assertion.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

BASELINE = "none"

# CPU time is the default: the workloads never wait, so CPU time is their whole cost, and other processes on a
# shared machine do not inflate it the way they inflate wall time.
CLOCKS: dict[str, Callable[[], int]] = {"cpu": time.process_time_ns, "wall": time.perf_counter_ns}

Undo = Callable[[], None]
# switch(configuration name, tracer provider) turns the configuration on and returns what turns it off again.
Switch = Callable[[str, TracerProvider], Undo]

T = TypeVar("T")


# --- spans ------------------------------------------------------------------------------------------------
class CountingExporter(SpanExporter):
    """Counts spans and drops them, so that creating and ending spans is measured and exporting them is not.

    Keeps the spans themselves only while ``kept`` is a list: a benchmark that reports what the spans record
    sets it for one untimed probe run, so that holding spans never weighs on the timed ones.
    """

    def __init__(self) -> None:
        self.count = 0
        self.kept: list[ReadableSpan] | None = None

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.count += len(spans)
        if self.kept is not None:
            self.kept.extend(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


E = TypeVar("E", bound=CountingExporter)


def counting_provider(exporter: E, processor: str = "simple") -> tuple[TracerProvider, E]:
    """A tracer provider that hands every ended span to ``exporter``.

    ``simple`` (the default) exports on the thread that ends the span, so its cost is inside the timed run;
    ``batch`` is what a deployment uses (ending a span only queues it, export runs on its own thread), with a
    queue large enough that no span is dropped.
    """
    provider = TracerProvider()
    if processor == "batch":
        provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=1_000_000))
    else:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


# --- one configuration's figures ------------------------------------------------------------------------------
@dataclass
class Series:
    """One configuration's timed runs: µs per unit (agent turn, message, envelope) for each repetition."""

    name: str
    us_per_unit: list[float] = field(default_factory=list)
    spans: int = 0
    units: int = 0

    @property
    def median(self) -> float:
        return statistics.median(self.us_per_unit)

    def added_to(self, base: Series) -> list[float]:
        """Per-repetition differences to the baseline: paired by repetition, so that load drift cancels out."""
        return [a - b for a, b in zip(self.us_per_unit, base.us_per_unit, strict=True)]

    def as_json(self, unit: str) -> dict[str, Any]:
        """The raw figures under the names the benchmarks have always written (``us_per_turn``, ``turns``...)."""
        return {f"us_per_{unit}": self.us_per_unit, "spans": self.spans, f"{unit}s": self.units}


def quartiles(values: list[float]) -> tuple[float, float]:
    """First and third quartile; a single value is its own range (a one-repetition run still reports)."""
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


# --- in one process: configurations alternating run by run --------------------------------------------------
class Run:
    """One configuration's run inside ``Alternation.configured``: the benchmark times its part and counts units."""

    def __init__(self, clock: str) -> None:
        self._now = CLOCKS[clock]
        self.elapsed_ns = 0
        self.units = 0

    @contextmanager
    def timing(self) -> Iterator[None]:
        """Times the block; garbage from building the run is collected first so that no run pays for another's."""
        gc.collect()
        start = self._now()
        try:
            yield
        finally:
            self.elapsed_ns = self._now() - start


class Alternation:
    """Repetitions in which every configuration runs once, the order rotating each repetition.

    Switching a configuration on and off happens around the run, untimed; the first ``warmup`` repetitions are
    not recorded. After each recorded repetition a progress line goes to stderr, so a long run shows its drift.
    """

    def __init__(
        self, names: Sequence[str], switch: Switch, *, reps: int, warmup: int, clock: str, unit: str, digits: int
    ) -> None:
        self.series = [Series(n) for n in names]
        self.provider, self.exporter = counting_provider(CountingExporter())
        self.recording = False
        self._switch = switch
        self._reps = reps
        self._warmup = warmup
        self._clock = clock
        self._unit = unit
        self._digits = digits

    def rotations(self) -> Iterator[Series]:
        """Each configuration once per repetition, starting one further along each time."""
        for rep in range(self._warmup + self._reps):
            self.recording = rep >= self._warmup
            shift = rep % len(self.series)
            yield from self.series[shift:] + self.series[:shift]
            if self.recording:
                figures = "  ".join(f"{s.name} {s.us_per_unit[-1]:.{self._digits}f}" for s in self.series)
                print(f"rep {rep - self._warmup + 1}/{self._reps} {figures} µs/{self._unit}", file=sys.stderr,
                      flush=True)  # fmt: skip

    @contextmanager
    def configured(self, series: Series) -> Iterator[Run]:
        """The configuration switched on for the block; its run's figures recorded when the block completes."""
        undo = self._switch(series.name, self.provider)
        before = self.exporter.count
        run = Run(self._clock)
        try:
            yield run
        finally:
            undo()
        if self.recording:
            series.us_per_unit.append(run.elapsed_ns / run.units / 1000)
            series.spans += self.exporter.count - before
            series.units += run.units


def switch_mast_otel(name: str, provider: TracerProvider) -> Undo:
    """The switch of the configurations every benchmark has: the baseline, ``mast-otel`` and
    ``mast-otel-no-content`` (content capture off, to show what capturing message text costs)."""
    if name == BASELINE:
        return lambda: None
    # Imported on first use, not with this module: a benchmark sets its framework up first (MetaGPT, for one,
    # reads its configuration when imported).
    import mast_otel

    mast_otel.instrument(tracer_provider=provider, capture_content=name != "mast-otel-no-content")
    return mast_otel.uninstrument


def switch_with_openinference(instrumentor: Callable[[], Any], **options: Any) -> Switch:
    """mast-otel's configurations plus ``openinference``: OpenInference's instrumentor for the framework (an
    OpenTelemetry ``BaseInstrumentor``, made by ``instrumentor()``), on the same provider as mast-otel."""

    def switch(name: str, provider: TracerProvider) -> Undo:
        if name != "openinference":
            return switch_mast_otel(name, provider)
        oi = instrumentor()
        oi.instrument(tracer_provider=provider, **options)
        undo: Undo = oi.uninstrument
        return undo

    return switch


def chosen(names: Iterable[str]) -> list[str]:
    """The configurations to run: the baseline first (every other figure is relative to it), each name once."""
    return list(dict.fromkeys([BASELINE, *names]))


def add_alternation_arguments(
    parser: argparse.ArgumentParser, configurations: Iterable[str], *, reps: int, only_help: str
) -> None:
    """The flags every in-process benchmark takes; the workload's own size flag is the benchmark's."""
    parser.add_argument("--reps", type=int, default=reps, help="repetitions (one run per configuration each)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed repetitions, first")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu", help="process CPU time or wall time")
    parser.add_argument("--only", nargs="*", choices=sorted(configurations), help=only_help)
    parser.add_argument("--json", type=Path, help="also write every figure as JSON here")


# --- the report -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Reference:
    """A configuration whose added time the others' is divided by (another instrumentation of the same runs)."""

    name: str
    header: str
    suffix: str = ""
    on_own_row: bool = True  # print its ratio to itself (1.00) too


# The comparison most benchmarks make: OpenInference instruments the same frameworks for the same purpose.
OPENINFERENCE = Reference("openinference", "added / OpenInference's")


@dataclass(frozen=True)
class Layout:
    """How a benchmark's table reads: its unit, its labels, and as many decimals as its figures deserve."""

    unit: str
    labels: dict[str, str]
    digits: int
    span_digits: int
    reference: Reference | None = None


def table(series: list[Series], heading: str, layout: Layout) -> list[str]:
    """The heading, then one row per configuration: µs per unit (median over repetitions), the time added against
    the baseline (median of the per-repetition differences, with the interquartile range), that as a ratio of the
    baseline, optionally as a ratio of the reference's added time, and spans per unit."""
    d, sd, unit, ref = layout.digits, layout.span_digits, layout.unit, layout.reference
    base = next(s for s in series if s.name == BASELINE)
    added = {s.name: statistics.median(s.added_to(base)) for s in series if s is not base}
    ref_added = added.get(ref.name) if ref else None
    ref_header = f" {ref.header} |" if ref else ""
    lines = [
        heading,
        "",
        f"| configuration | µs/{unit} | added µs/{unit} (IQR) | added / baseline |{ref_header} spans/{unit} |",
        "|---" * (5 + (ref is not None)) + "|",
    ]
    for s in series:
        spans = s.spans / s.units if s.units else 0.0
        if s is base:
            blanks = " |" * (1 + (ref is not None))
            lines.append(f"| {layout.labels[s.name]} | {s.median:.{d}f} | 0 (baseline) |{blanks} {spans:.{sd}f} |")
            continue
        low, high = quartiles(s.added_to(base))
        a = added[s.name]
        versus = ""
        if ref is not None:
            ratio = ""
            if ref_added and (ref.on_own_row or s.name != ref.name):
                ratio = f"{a / ref_added:.2f}{ref.suffix}"
            versus = f" {ratio} |"
        lines.append(
            f"| {layout.labels[s.name]} | {s.median:.{d}f} | {a:+.{d}f} ({low:+.{d}f} .. {high:+.{d}f}) "
            f"| {a / base.median:.1%} |{versus} {spans:.{sd}f} |"
        )
    return lines


def python_version() -> str:
    return sys.version.split()[0]


def heading(args: argparse.Namespace, workload: str) -> str:
    """The line above an in-process benchmark's table: how much was measured, how, and on which Python."""
    return (
        f"{args.reps} repetitions {workload} ({args.warmup} warm-up repetitions); {args.clock} time; "
        f"python {python_version()}"
    )


# --- one subprocess per configuration ---------------------------------------------------------------------
def alternating_order(items: Sequence[T], rep: int) -> list[T]:
    """Forward on even repetitions, backward on odd ones: each configuration sits early and late equally often."""
    return list(items) if rep % 2 == 0 else list(reversed(items))


def add_subprocess_arguments(
    parser: argparse.ArgumentParser, configurations: Iterable[str], *, reps: int, runs: int, only_help: str
) -> None:
    """The flags every subprocess-per-configuration benchmark takes; ``--child`` is how the parent starts one."""
    parser.add_argument("--reps", type=int, default=reps, help="repetitions (one subprocess per configuration each)")
    parser.add_argument("--runs", type=int, default=runs, help="timed runs per subprocess")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs first, per subprocess")
    parser.add_argument("--only", nargs="*", choices=sorted(configurations), help=only_help)
    parser.add_argument("--json", type=Path, help="also write every figure as JSON here")
    parser.add_argument("--child", choices=sorted(configurations), help=argparse.SUPPRESS)


def run_child(name: str, cmd: list[str], *, cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """Runs one configuration's subprocess; its figures are the JSON object on the last line of its stdout."""
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
