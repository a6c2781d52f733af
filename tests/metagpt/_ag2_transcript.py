"""Prints, as JSON, the judge transcript of the AG2 example's run: ``python -m tests.metagpt._ag2_transcript``.

Run by the MAIN environment's python (AG2 is not installed in the MetaGPT one), so that tests/metagpt can compare
an AG2 transcript with a MetaGPT one rendered by the same ``mast_otel.judge.transcript``.
"""

from __future__ import annotations

import json

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import mast_otel
from examples.ag2_group_chat import run
from mast_otel.judge.transcript import render
from mast_otel.spans import from_readable_span


def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    mast_otel.instrument(tracer_provider=provider, frameworks=["ag2"])
    try:
        run(silent=True)
    finally:
        mast_otel.uninstrument()
    transcript = render([from_readable_span(s) for s in exporter.get_finished_spans()])
    print(json.dumps([[line.kind, line.text()] for line in transcript.lines]))


if __name__ == "__main__":
    main()
