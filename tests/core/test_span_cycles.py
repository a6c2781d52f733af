"""Span trees from hostile input: a span that is its own parent, a parent cycle, an id used twice. The judge's
view and the report walk these trees; each walk must end, with the spans a well-formed tree would give."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mast_otel import semconv as sc
from mast_otel.collector.report.otlp import Span
from mast_otel.judge.view import build_view
from mast_otel.spans import SpanRecord, conversation_roots, subtree, walk_down

TRACE = "ab" * 16


def span(span_id: str, parent: str | None, start: int, **attributes: Any) -> SpanRecord:
    return SpanRecord(trace_id=TRACE, span_id=span_id * 16, parent_span_id=parent * 16 if parent else None,
                      name=span_id, start_ns=start, end_ns=start + 1, attributes=attributes)  # fmt: skip


def root(span_id: str, parent: str | None = None) -> SpanRecord:
    return span(span_id, parent, 0, **{sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_CONVERSATION})


def message(span_id: str, parent: str, index: int, sender: str) -> SpanRecord:
    attributes = {sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_MESSAGE, sc.MESSAGE_INDEX: index, sc.MESSAGE_SENDER: sender,
                  sc.MESSAGE_CONTENT: f"text {index}"}  # fmt: skip
    return span(span_id, parent, 10 + index, **attributes)


@contextmanager
def ends_within(seconds: int) -> Iterator[None]:
    def stop(*_: Any) -> None:
        raise TimeoutError(f"the walk did not end within {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def ids(spans: list[SpanRecord] | list[Span]) -> list[str]:
    return [s.span_id[0] for s in spans]


def test_a_parent_cycle_above_a_conversation_root_ends_and_keeps_the_root() -> None:
    spans = [root("r", parent="x"), span("x", "y", 0), span("y", "x", 0), message("m", "r", 0, "alice")]
    with ends_within(5):
        assert ids(conversation_roots(spans)) == ["r"]
        assert [m.sender for m in build_view(spans).messages] == ["alice"]


def test_an_id_used_again_below_the_root_is_walked_once() -> None:
    # "a" again under "b": without a guard the walk goes a -> b -> a -> b ... and memory grows.
    spans = [root("a"), message("b", "a", 0, "alice"), message("c", "b", 1, "bob"), span("a", "c", 5)]
    with ends_within(5):
        assert ids(subtree(spans, spans[0])) == ["a", "b", "c"]
        view = build_view(spans)
    assert [m.sender for m in view.messages] == ["alice", "bob"]


def test_a_span_that_is_its_own_parent_is_not_a_root_and_does_not_loop() -> None:
    spans = [root("s", parent="s"), root("r"), message("m", "r", 0, "alice")]
    with ends_within(5):
        assert ids(conversation_roots(spans)) == ["r"]
        assert ids(subtree(spans, spans[0])) == ["s"]


def _report_span(record: SpanRecord) -> Span:
    return Span(trace_id=record.trace_id, span_id=record.span_id, parent_span_id=record.parent_span_id,
                name=record.name, attributes=record.attributes, start_ns=record.start_ns)  # fmt: skip


def test_the_reports_spans_walk_the_same_way() -> None:
    spans = [_report_span(s) for s in (root("a"), message("b", "a", 0, "alice"), span("a", "b", 5))]
    with ends_within(5):
        assert ids(walk_down(spans, spans[0])) == ["a", "b"]
