"""Redaction given to a later ``instrument()`` applies from that call on, whoever instrumented first.

``opentelemetry-instrument`` (or a library) usually instruments before the program's own
``mast_otel.instrument(redact_patterns=[...])``; that call's redaction used to be dropped with a warning, and the
secret was exported. Now it is added to the redactor of everything already instrumented, open spans included.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import mast_otel
from mast_otel.integrations import recorder_for
from tests.frameworks import installed

SECRET = r"ACME-\d{4}"


def exported_text(exporter: InMemorySpanExporter) -> str:
    """Every attribute and event attribute value of every finished span, as one string."""
    parts: list[str] = []
    for span in exporter.get_finished_spans():
        parts += [str(v) for v in (span.attributes or {}).values()]
        for event in span.events:
            parts += [str(v) for v in (event.attributes or {}).values()]
        if span.status.description:
            parts.append(span.status.description)
    return "\n".join(parts)


@pytest.fixture(autouse=True)
def clean_state() -> Iterator[None]:
    mast_otel.uninstrument()
    yield
    mast_otel.uninstrument()


def test_applies_to_a_recorder_built_first_and_to_its_open_spans(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """The recorder an instrumentor built (as under opentelemetry-instrument) redacts the later call's pattern
    from that call on: new messages, and the turn and tool call already open when it was made."""
    rec = recorder_for("custom", {"tracer_provider": tracer_provider})
    with rec.conversation("team", task="ticket ACME-0001"):
        turn = rec.start_agent_turn("planner")
        call = rec.start_tool_call("lookup", arguments={"id": "ACME-0002"})
        rec.message("planner", ["coder"], "before: ACME-0003")
        mast_otel.instrument(tracer_provider=tracer_provider, frameworks=[], redact_patterns=[SECRET])
        rec.message("planner", ["coder"], "after: ACME-1004")
        assert call is not None and turn is not None
        call.set_result("found ACME-1005")
        call.end()
        turn.fail(RuntimeError("gave up on ACME-1006"))
        rec.handoff("planner", "coder", reason="routing", detail="hand ACME-1007 over")
    text = exported_text(span_exporter)
    assert "before: ACME-0003" in text, "text recorded before the call is as it was: the oracle sees content"
    for late in ("ACME-1004", "ACME-1005", "ACME-1006", "ACME-1007"):
        assert late not in text
    assert "after: [REDACTED]" in text


def test_a_later_callback_applies_once(tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter) -> None:
    calls: list[str] = []

    def hide_names(text: str) -> str:
        calls.append(text)
        return text.replace("Alice", "<name>")

    def own(text: str) -> str:  # the first instrumentation's own callback: it stays, the later one runs after it
        return text.replace("Bob", "<name>")

    config = mast_otel.CaptureConfig.from_env(redact=own)
    rec = recorder_for("custom", {"tracer_provider": tracer_provider, "config": config})
    mast_otel.instrument(tracer_provider=tracer_provider, frameworks=[], redact=hide_names)
    mast_otel.instrument(tracer_provider=tracer_provider, frameworks=[], redact=hide_names)  # the same: no-op
    with rec.conversation("team"):
        rec.message("a", ["b"], "ask Alice")
        rec.message("a", ["b"], "ask Bob")
    text = exported_text(span_exporter)
    assert "Alice" not in text and "Bob" not in text
    assert calls == ["ask Alice", "ask <name>"], "applied once per text, though given twice"


@pytest.mark.skipif(not installed("autogen"), reason="AG2 Classic is not installed")
@pytest.mark.parametrize("first", ["instrument", "instrumentor"])
def test_ag2_after_either_first_instrumentation(
    first: str, tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """``instrument()`` then ``instrument(redact_patterns=...)``, and AG2's instrumentor called first (as
    opentelemetry-instrument does) then ``instrument(redact_patterns=...)``: the secret is not exported."""
    from mast_otel.integrations.ag2 import AG2Instrumentor
    from tests.ag2.scenarios import round_robin_group

    first_kwargs: dict[str, Any] = {"tracer_provider": tracer_provider}
    if first == "instrument":
        mast_otel.instrument(frameworks=["ag2"], **first_kwargs)
    else:
        AG2Instrumentor().instrument(**first_kwargs)
    try:
        mast_otel.instrument(tracer_provider=tracer_provider, frameworks=["ag2"], redact_patterns=[SECRET])
        replies = {"alice": ["the account is ACME-2001", "done"], "bob": ["noted ACME-2002", "TERMINATE"]}
        user, manager, groupchat = round_robin_group(replies, max_round=4)
        user.initiate_chat(manager, message="look up ACME-2000 please")
    finally:
        AG2Instrumentor().uninstrument()
    seen = [m.get("content") for m in groupchat.messages]
    assert "the account is ACME-2001" in seen, "the program's own record keeps its text"
    text = exported_text(span_exporter)
    assert "the account is [REDACTED]" in text, "the run was recorded with its content"
    assert "ACME-200" not in text
