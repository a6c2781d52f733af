from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import mast_otel
from tests.span_query import Spans


@pytest.fixture
def spans(tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter) -> Iterator[Callable[[], Spans]]:
    """``mast_otel.instrument()`` into the test's in-memory exporter; yields a reader of what was exported so far."""
    mast_otel.instrument(tracer_provider=tracer_provider)
    try:
        yield lambda: Spans(span_exporter)
    finally:
        mast_otel.uninstrument()
