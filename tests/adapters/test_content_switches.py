"""A run with no content names the switch of each instrumentation that wrote its spans, told by the scope, never
by the framework: the same framework traced by two instrumentations names two different switches."""

from __future__ import annotations

import pytest

pytest.importorskip("hypothesis", reason="hypothesis is in the dev extra: this property runs in the main tier")
from hypothesis import given
from hypothesis import strategies as st

from mast_otel.adapters._evidence import content_switches
from mast_otel.spans import SpanRecord

_LIBRARY = st.from_regex(r"[a-z][a-z0-9]{1,8}(_[a-z][a-z0-9]{1,8}){0,2}", fullmatch=True)


def _span(scope: str | None, n: int = 0) -> SpanRecord:
    return SpanRecord(trace_id="t", span_id=f"s{n}", parent_span_id=None, name="x", start_ns=n, end_ns=n + 1,
                      attributes={}, scope_name=scope)  # fmt: skip


@given(_LIBRARY, st.sampled_from(["agno", "unknown", "langgraph", "google-adk"]))
def test_the_official_instrumentations_name_util_genai_s_switch_whatever_the_framework(library: str,
                                                                                       framework: str) -> None:
    (switch,) = content_switches([_span(f"opentelemetry.instrumentation.genai.{library}")], framework)
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in switch


@given(_LIBRARY)
def test_one_framework_under_two_instrumentations_names_two_switches(library: str) -> None:
    openinference = content_switches([_span(f"openinference.instrumentation.{library}")], library)
    openllmetry = content_switches([_span(f"opentelemetry.instrumentation.{library}")], library)
    assert "OPENINFERENCE_HIDE_INPUTS" in openinference[0] and "TRACELOOP_TRACE_CONTENT" in openllmetry[0]


def test_each_instrumentation_that_wrote_spans_is_named_once_in_the_order_seen() -> None:
    scopes = ["opentelemetry.instrumentation.genai.agno", "opentelemetry.instrumentation.genai.openai",
              "opentelemetry.instrumentation.openai.v1", None]
    spans = [_span(scope, n) for n, scope in enumerate(scopes)]
    found = content_switches(spans, "agno")
    assert len(found) == 2
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in found[0] and "TRACELOOP" in found[1]


def test_adk_in_either_language_names_its_own_switch_and_the_conventions() -> None:
    (switch,) = content_switches([_span("gcp.vertex.agent")], "google-adk")
    assert "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS" in switch and "OTEL_INSTRUMENTATION_GENAI_CAPTURE" in switch


def test_an_unknown_instrumentation_is_named_and_spans_without_scope_fall_back_on_the_framework() -> None:
    (unknown,) = content_switches([_span("@acme/agents-otel")], "unknown")
    assert "'@acme/agents-otel'" in unknown
    (scopeless,) = content_switches([_span(None)], "agent-framework")
    assert "ENABLE_SENSITIVE_DATA" in scopeless
    (nothing,) = content_switches([_span(None)], "unknown")
    assert nothing == "turn on the instrumentation's message-content capture"
