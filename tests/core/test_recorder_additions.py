"""Recorder API added for frameworks whose runs are async generators and whose orchestrators explain themselves:
``Handoff.end(attributes=)``, ``Recorder.event`` and ``AgentTurn.detach``."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace

from mast_otel import CaptureConfig, Recorder
from mast_otel import semconv as sc
from tests.span_query import Spans, attr, parent_id, span_id


def test_handoff_detail_attributes(tracer_provider: Any, span_exporter: Any) -> None:
    rec = Recorder(tracer_provider=tracer_provider)
    with rec.conversation("team"):
        handoff = rec.start_handoff("orchestrator", candidates=["coder"])
        assert handoff is not None
        handoff.end("coder", reason=sc.HANDOFF_PROGRESS_LEDGER, attributes={sc.HANDOFF_STATED_REASON: "it codes"})
        rec.handoff("coder", "orchestrator", reason=sc.HANDOFF_ROUTING)
    first, second = Spans(span_exporter).handoffs
    assert attr(first, sc.HANDOFF_STATED_REASON) == "it codes"
    assert attr(first, sc.HANDOFF_REASON) == sc.HANDOFF_PROGRESS_LEDGER and attr(first, sc.HANDOFF_TO) == "coder"
    assert attr(second, sc.HANDOFF_STATED_REASON) is None


def test_event_on_the_root_with_content_redacted_or_left_out(tracer_provider: Any, span_exporter: Any) -> None:
    for capture in (True, False):
        rec = Recorder(tracer_provider=tracer_provider, config=CaptureConfig.from_env(capture_content=capture))
        with rec.conversation("team"):
            with rec.agent_turn("planner"):
                rec.event(
                    sc.EVENT_PLAN,
                    {sc.ORCHESTRATOR_STALLS: 1},
                    content={sc.ORCHESTRATOR_PLAN: "use sk-abcdefghijklmnopqrstuvwx"},
                )
        rec.event(sc.EVENT_PLAN)  # outside a conversation: nothing, no error
    with_content, without = Spans(span_exporter).roots
    (event,) = with_content.events
    assert event.name == sc.EVENT_PLAN and event.attributes[sc.ORCHESTRATOR_STALLS] == 1
    assert "sk-abcdefghijklmnopqrstuvwx" not in event.attributes[sc.ORCHESTRATOR_PLAN]
    assert sc.ORCHESTRATOR_PLAN not in without.events[0].attributes


def test_detached_turn_stays_open_and_ends_cleanly(tracer_provider: Any, span_exporter: Any, caplog: Any) -> None:
    rec = Recorder(tracer_provider=tracer_provider)
    with rec.conversation("team"):
        root = trace.get_current_span()
        turn = rec.start_agent_turn("inner-team")
        assert turn is not None and trace.get_current_span() is turn.span
        turn.detach()
        assert trace.get_current_span() is root  # the caller's context is back ...
        assert turn.span.is_recording()  # ... while the turn is still open
        turn.end()
    (recorded,) = Spans(span_exporter).turns
    assert parent_id(recorded) == span_id(Spans(span_exporter).root)
    assert not [r for r in caplog.records if "detach" in r.getMessage().lower()]
