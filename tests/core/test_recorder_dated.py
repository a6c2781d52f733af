"""Recorder calls an integration makes after the fact: dated by the framework's own record, a task learnt after
the root opened, and a handoff's own words (``detail``)."""

from __future__ import annotations

from typing import Any

from mast_otel import CaptureConfig, Recorder
from mast_otel import semconv as sc

T0 = 1_700_000_000_000_000_000


def by_type(exporter: Any, span_type: str) -> list[Any]:
    return [s for s in exporter.get_finished_spans() if (s.attributes or {}).get(sc.MAST_SPAN_TYPE) == span_type]


def test_spans_dated_by_the_framework(tracer_provider: Any, span_exporter: Any) -> None:
    rec = Recorder(tracer_provider=tracer_provider)
    opened = rec.start_conversation("channel", start_time=T0)
    assert opened is not None
    conv, token = opened
    rec.set_task(conv, "Refund the duplicate charge")
    rec.message("customer", ["triage"], "Refund the duplicate charge", timestamp=T0 + 10)
    rec.handoff("customer", "triage", reason=sc.HANDOFF_TOOL_CALL, detail="route: refund request", start_time=T0 + 20)
    rec.end_conversation(conv, token, end_time=T0 + 30)

    (root,) = by_type(span_exporter, sc.SPAN_TYPE_CONVERSATION)
    (message,) = by_type(span_exporter, sc.SPAN_TYPE_MESSAGE)
    (handoff,) = by_type(span_exporter, sc.SPAN_TYPE_HANDOFF)
    assert (root.start_time, root.end_time) == (T0, T0 + 30)
    assert (message.start_time, message.end_time) == (T0 + 10, T0 + 10)
    assert handoff.start_time == T0 + 20
    assert root.attributes[sc.CONVERSATION_TASK] == "Refund the duplicate charge"
    assert handoff.attributes[sc.HANDOFF_DETAIL] == "route: refund request"


def test_task_and_detail_are_content(tracer_provider: Any, span_exporter: Any) -> None:
    rec = Recorder(tracer_provider=tracer_provider, config=CaptureConfig(capture_content=False))
    with rec.conversation("channel") as conv:
        assert conv is not None
        rec.set_task(conv, "secret plan")
        rec.handoff("a", "b", reason=sc.HANDOFF_TOOL_CALL, detail="secret reason")
    (root,) = by_type(span_exporter, sc.SPAN_TYPE_CONVERSATION)
    (handoff,) = by_type(span_exporter, sc.SPAN_TYPE_HANDOFF)
    assert sc.CONVERSATION_TASK not in root.attributes
    assert sc.HANDOFF_DETAIL not in handoff.attributes
