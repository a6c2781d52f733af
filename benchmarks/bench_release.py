"""CPU per span of one collector process, ingest and release apart, with no network on either side (not a test).

    .venv/bin/python benchmarks/bench_release.py [--requests 60] [--rounds 3] [--profile release]

``--requests`` Export requests of :func:`bench_collector.make_batch` (512 spans, conversations of 8 recorder-like
spans) go straight into :meth:`Ingestor.ingest` of a :class:`CollectorService` (store on disk, the default judge,
``signals``: structural signals on, labels attached) whose clock is frozen, so nothing is due until
:meth:`CollectorService.release_now`; then every conversation is released (read back, signals, labels, committed)
and exported to a sender that only counts. The figures are microseconds of this process's CPU time
(``time.process_time``: every thread, user + system) per span, for ingest and for release + export separately;
each round uses a fresh store and the best round counts (other load on the machine only adds).

``--inline`` runs each judge call in the bench's own thread (steadier figures, and what cProfile needs).
The figures of a code change are compared by running this file from each checkout in turn (interleaved), since one
process runs one version of the code: it measures the checkout it sits in (its first line says which).
``--profile ingest|release`` runs cProfile over that phase of one round and
prints the top functions by cumulative time.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_collector import SPANS_PER_BATCH, config, make_batch
from mast_otel.collector import CollectorService
from mast_otel.collector.judge import judging
from mast_otel.collector.release.exporter import SendResult


class InlineWorkers:
    """``--inline``: one judge worker that is the bench's own thread: calls queue up and :meth:`drain` runs them
    in order, so the figures carry no GIL hand-over between judge threads and cProfile sees the whole release path.
    """

    last: InlineWorkers | None = None

    def __init__(self, n: int, name: str) -> None:
        self._queue: deque[tuple[Callable[[Any], object], Any]] = deque()
        InlineWorkers.last = self

    @property
    def backlog(self) -> int:
        return len(self._queue)

    def call(self, fn: Callable[[Any], object], arg: Any) -> None:
        self._queue.append((fn, arg))

    def drain(self) -> None:
        while self._queue:
            fn, arg = self._queue.popleft()
            fn(arg)

    def close(self) -> None:
        pass


class CountingSender:
    """The downstream: counts the spans of each Export payload without decoding it (it is the collector's CPU that
    is measured)."""

    def __init__(self) -> None:
        self.payloads = 0

    def send(self, payload: bytes, timeout: float) -> SendResult:
        self.payloads += 1
        return SendResult(True)

    def close(self) -> None:
        pass


class ReleaseWrites:
    """Wraps a store's ``write``: the CPU time (of the writing thread) of the writes that carry releases (a
    tombstone each), and how many releases they wrote."""

    def __init__(self, write: Callable[..., list[int]]) -> None:
        self._write = write
        self.seconds = 0.0
        self.releases = 0

    def __call__(self, **kw: Any) -> list[int]:
        started = time.thread_time()
        try:
            return self._write(**kw)
        finally:
            if kw.get("tombs"):
                self.seconds += time.thread_time() - started
                self.releases += len(kw["tombs"])


def one_round(
    tmp: Path, name: str, batches: list[bytes], profile: str | None, concurrency: int
) -> tuple[float, float, float]:
    """(µs of CPU per span ingested, per span released and exported, per release in the store's writes)."""
    frozen = time.time()
    service = CollectorService(
        config(tmp, name, judge="signals", quiet_period=60, max_trace_age=3600, judge_timeout=3600,
               judge_concurrency=concurrency),
        sender=CountingSender(), clock=lambda: frozen,
    )  # fmt: skip
    spans = len(batches) * SPANS_PER_BATCH
    writes = ReleaseWrites(service.store.write)
    service.store.write = writes  # type: ignore[method-assign]
    profiler = cProfile.Profile() if profile else None
    try:
        if profiler and profile == "ingest":
            profiler.enable()
        cpu = time.process_time()
        for b in batches:
            service.ingestor.ingest(b, "grpc")
        ingest = time.process_time() - cpu
        if profiler and profile == "ingest":
            profiler.disable()
        assert service.assembler.held_spans == spans
        if profiler and profile == "release":
            profiler.enable()  # cProfile sees this thread only: use --inline
        cpu = time.process_time()
        service.release_now()
        if InlineWorkers.last is not None:
            InlineWorkers.last.drain()
        assert service.flush(600), "release did not finish"
        release = time.process_time() - cpu
        if profiler and profile == "release":
            profiler.disable()
        assert service.assembler.pending_traces == 0 and service.store.counts()[0] == 0
    finally:
        service.stop(grace=0.2)
    if profiler:
        stats = pstats.Stats(profiler).sort_stats(os.environ.get("SORT", "cumulative"))
        stats.print_stats(int(os.environ.get("TOP", "40")))
    return ingest / spans * 1e6, release / spans * 1e6, writes.seconds / max(writes.releases, 1) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=60, help=f"Export requests of {SPANS_PER_BATCH} spans")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", choices=("ingest", "release"), help="cProfile one phase of one round")
    parser.add_argument("--judge-concurrency", type=int, default=2, help="judge threads (the collector's default)")
    parser.add_argument("--inline", action="store_true", help="release in the bench's own thread, no judge threads")
    args = parser.parse_args()
    if args.inline:
        judging.Workers = InlineWorkers  # type: ignore[attr-defined,assignment]
    batches = [make_batch() for _ in range(args.requests)]
    spans = args.requests * SPANS_PER_BATCH
    how = "inline" if args.inline else f"{args.judge_concurrency} judge threads"
    print(f"== code measured: {Path(judging.__file__).parents[2]}")
    print(f"== CPU per span in one process: {spans:,} spans ({args.requests} requests), {how}, "
          f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
    results = []
    with tempfile.TemporaryDirectory() as d:
        for rnd in range(1 if args.profile else args.rounds):
            ingest, release, store = one_round(Path(d), f"r{rnd}", batches, args.profile, args.judge_concurrency)
            results.append((ingest, release, store))
            print(f"   round {rnd}: ingest {ingest:6.1f} µs/span, release + export {release:6.1f} µs/span "
                  f"(store writes {store:5.1f} µs per release)")  # fmt: skip
    ingest, release, store = (min(r[i] for r in results) for i in range(3))
    print(f"   best: ingest {ingest:.1f} µs/span ({1e6 / ingest:,.0f} spans/CPU-s), "
          f"release + export {release:.1f} µs/span ({1e6 / release:,.0f} spans/CPU-s), "
          f"together {1e6 / (ingest + release):,.0f} spans/CPU-s; store writes {store:.1f} µs per release; "
          f"load {os.getloadavg()[0]:.2f}")  # fmt: skip


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    main()
