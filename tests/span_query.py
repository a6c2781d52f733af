"""Query helpers over the spans one test exported (shared by every framework tier)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import semconv as sc

__all__ = ["SpanSet", "Spans", "attr", "parent_id", "span_id"]


def attr(span: ReadableSpan, key: str) -> Any:
    return (span.attributes or {}).get(key)


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    return span.get_span_context().span_id


class SpanSet:
    """Some finished spans in start order, by ``mast.span.type``; messages and handoffs in their recorded order."""

    def __init__(self, spans: Iterable[ReadableSpan]) -> None:
        self.all: list[ReadableSpan] = sorted(spans, key=lambda s: s.start_time or 0)

    def of_type(self, span_type: str) -> list[ReadableSpan]:
        return [s for s in self.all if attr(s, sc.MAST_SPAN_TYPE) == span_type]

    @property
    def messages(self) -> list[ReadableSpan]:
        return sorted(self.of_type(sc.SPAN_TYPE_MESSAGE), key=lambda s: attr(s, sc.MESSAGE_INDEX))

    @property
    def handoffs(self) -> list[ReadableSpan]:
        return sorted(self.of_type(sc.SPAN_TYPE_HANDOFF), key=lambda s: attr(s, sc.HANDOFF_INDEX))

    @property
    def turns(self) -> list[ReadableSpan]:
        return self.of_type(sc.SPAN_TYPE_AGENT_TURN)


class Spans(SpanSet):
    """Every span one test exported."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        super().__init__(exporter.get_finished_spans())

    @property
    def roots(self) -> list[ReadableSpan]:
        return self.of_type(sc.SPAN_TYPE_CONVERSATION)

    @property
    def root(self) -> ReadableSpan:
        (root,) = self.roots
        return root

    @property
    def tools(self) -> list[ReadableSpan]:
        return self.of_type(sc.SPAN_TYPE_TOOL_CALL)

    def by_id(self, wanted: int | None) -> ReadableSpan | None:
        return next((s for s in self.all if span_id(s) == wanted), None)
