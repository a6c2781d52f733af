"""The garbage collector's settings of a collector process, set once at its start by the process's entry point
(``mast-otel collector``, each shard), never by the library: a program that embeds :class:`.CollectorService` keeps
its own.

Why: a collector holds many long-lived objects the cyclic collector tracks (the spans waiting for their quiet
period, their summaries, the assembler's entries). With CPython's default threshold of 700 allocations, young
collections run so often that the older generations fill and are scanned again and again as the held set grows,
and full collections come to take a large share of the collector's CPU (measured:
benchmarks/results/2026-11-27-collector-benchmarks.md). A larger young
generation lets most of those objects die or settle before they are promoted, and freezing what is loaded at
startup (modules, classes, the protobuf and gRPC runtime) keeps it out of every later scan. Reference counting
frees everything else as before; only cycles wait a little longer (at most ``YOUNG_THRESHOLD`` allocations).
"""

from __future__ import annotations

import gc

__all__ = ["YOUNG_THRESHOLD", "tune"]

YOUNG_THRESHOLD = 10_000  # allocations between young collections (CPython's default: 700)


def tune() -> None:
    """Freeze what is loaded by now and raise the young generation's threshold; the older ones keep theirs."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
