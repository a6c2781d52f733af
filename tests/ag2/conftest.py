from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import mast_otel
from mast_otel import semconv as sc


@pytest.fixture
def instrument(tracer_provider: TracerProvider) -> Iterator[Any]:
    """Instrument with the test's provider; yields a function to re-instrument with other options."""

    def again(**kwargs: Any) -> None:
        mast_otel.uninstrument()
        mast_otel.instrument(tracer_provider=tracer_provider, **kwargs)

    mast_otel.instrument(tracer_provider=tracer_provider)
    yield again
    mast_otel.uninstrument()


class Spans:
    """Query helpers over the exported spans of one test."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        self.all: list[ReadableSpan] = sorted(exporter.get_finished_spans(), key=lambda s: s.start_time or 0)

    def of_type(self, span_type: str) -> list[ReadableSpan]:
        return [s for s in self.all if (s.attributes or {}).get(sc.MAST_SPAN_TYPE) == span_type]

    @property
    def roots(self) -> list[ReadableSpan]:
        return self.of_type(sc.SPAN_TYPE_CONVERSATION)

    @property
    def root(self) -> ReadableSpan:
        (root,) = self.roots
        return root

    @property
    def messages(self) -> list[ReadableSpan]:
        return sorted(self.of_type(sc.SPAN_TYPE_MESSAGE), key=lambda s: attr(s, sc.MESSAGE_INDEX))

    @property
    def handoffs(self) -> list[ReadableSpan]:
        return sorted(self.of_type(sc.SPAN_TYPE_HANDOFF), key=lambda s: attr(s, sc.HANDOFF_INDEX))

    @property
    def turns(self) -> list[ReadableSpan]:
        return self.of_type(sc.SPAN_TYPE_AGENT_TURN)

    @property
    def tools(self) -> list[ReadableSpan]:
        return self.of_type(sc.SPAN_TYPE_TOOL_CALL)


def attr(span: ReadableSpan, key: str) -> Any:
    return (span.attributes or {}).get(key)


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    return span.get_span_context().span_id


@pytest.fixture
def spans(span_exporter: InMemorySpanExporter) -> Any:
    return lambda: Spans(span_exporter)
