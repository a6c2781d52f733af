"""Adding unrelated spans to a trace never changes its conversation: an HTTP server span wrapping the run, database
and HTTP client calls under any of its spans, a span of the same trace attached to nothing. Checked on every
recorded run of every adapter (OpenInference, OpenLLMetry, AG2's built-in tracing, GenAI spans) and on mast-otel's
own conversations: the same messages, senders, recipients, handoffs, tool calls and transcript as without them.

The unrelated spans carry only attributes of other conventions (``http.*``, ``db.*``, ``rpc.*``, ``net.*``):
what a web framework or a client library instrumented in the same process writes."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

# The adapters' framework sessions (nox -s adapters_*) run tests/adapters without the dev extra; this property reads
# recorded runs only, and runs in the main environment.
pytest.importorskip("hypothesis", reason="hypothesis is in the dev extra: this property runs in the main tier")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, adapt, foreign_units
from mast_otel.judge.transcript import render
from mast_otel.spans import SpanRecord, from_otlp_json
from tests.adapters._fixtures import DATA, handoffs, messages, recipients
from tests.judge.scenarios import dialogue

GENAI = DATA.parent / "genai"
RUNS = sorted(DATA.glob("*.json")) + sorted(GENAI.glob("*.json"))

# Names of other conventions only: GenAI's own span names ("chat", "invoke_agent", ADK's "invocation") are how
# the adapters know GenAI spans that carry no gen_ai.operation.name, so they are not unrelated.
_NAMES = ["GET /api/items", "POST /v1/chat/completions", "SELECT", "redis GET", "grpc.health.v1.Health/Check",
          "connect", "HTTP POST", "db.query"]  # fmt: skip
_ATTRIBUTES = st.dictionaries(
    st.sampled_from(["http.method", "http.route", "http.status_code", "db.system", "db.statement", "rpc.service",
                     "net.peer.name", "server.address", "url.full", "user_agent.original"]),
    st.one_of(st.text(max_size=20), st.integers(min_value=0, max_value=600)),
    max_size=4,
)  # fmt: skip


def _load(path: Path) -> list[SpanRecord]:
    return from_otlp_json(json.dumps(json.loads(path.read_text(encoding="utf-8"))["otlp"]))


def _conversations(spans: Sequence[SpanRecord]) -> list[dict[str, Any]]:
    """Every conversation the collector would hold in ``spans``, as a user reads it."""
    out = []
    for unit in foreign_units(spans):
        adapted = adapt(unit)
        if not isinstance(adapted, Adapted):
            continue
        calls = [r for r in adapted.records if r.span_type == sc.SPAN_TYPE_TOOL_CALL]
        root = adapted.records[0]
        out.append({
            "source": adapted.source,
            "messages": messages(adapted.records), "handoffs": handoffs(adapted.records),
            "recipients": recipients(adapted.records),
            "tools": [(c.get(sc.GEN_AI_AGENT_NAME), c.get(sc.GEN_AI_TOOL_NAME), c.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS),
                       c.get(sc.GEN_AI_TOOL_CALL_RESULT), c.error) for c in calls],
            "task": root.get(sc.CONVERSATION_TASK), "agents": root.get(sc.CONVERSATION_AGENTS),
            "transcript": render(adapted.records).text(),
        })  # fmt: skip
    return out


@st.composite
def unrelated(draw: st.DrawFn, spans: Sequence[SpanRecord]) -> list[SpanRecord]:
    """Spans of other instrumentations in the trace of one of ``spans``: leaves under any span of that trace, spans
    attached to nothing, and, when ``wrap``, a server span the trace's root spans are moved under."""
    trace = draw(st.sampled_from(sorted({s.trace_id for s in spans})))
    mine = [s for s in spans if s.trace_id == trace]
    start = min(s.start_ns for s in mine)
    end = max(s.end_ns for s in mine)
    out: list[SpanRecord] = []
    for i in range(draw(st.integers(min_value=1, max_value=6))):
        parent = draw(st.one_of(st.none(), st.sampled_from([s.span_id for s in mine])))
        t0 = draw(st.integers(min_value=start, max_value=end))
        t1 = draw(st.integers(min_value=t0, max_value=end + 1))
        out.append(SpanRecord(trace, f"{0xF00D0000 + i:016x}", parent, draw(st.sampled_from(_NAMES)), t0, t1,
                              draw(_ATTRIBUTES), error=draw(st.booleans())))  # fmt: skip
    return out


def _wrapped(spans: Sequence[SpanRecord], trace: str) -> list[SpanRecord]:
    """The trace's spans under one more span, an HTTP server span that began before them and ended after."""
    mine = [s for s in spans if s.trace_id == trace]
    server = SpanRecord(trace, "00000000feedbeef", None, "POST /run", min(s.start_ns for s in mine) - 1,
                        max(s.end_ns for s in mine) + 1, {"http.method": "POST", "http.route": "/run"})  # fmt: skip
    moved = [dataclasses.replace(s, parent_span_id=server.span_id) if s.trace_id == trace and s.parent_span_id is None
             else s for s in spans]  # fmt: skip
    return [server, *moved]


@pytest.mark.parametrize("path", RUNS, ids=[f"{p.parent.name}/{p.stem}" for p in RUNS])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), wrap=st.booleans())
def test_unrelated_spans_change_no_conversation(path: Path, data: st.DataObject, wrap: bool) -> None:
    spans = _load(path)
    expected = _conversations(spans)
    extra = data.draw(unrelated(spans))
    changed = [*spans, *extra]
    if wrap:
        changed = _wrapped(changed, extra[0].trace_id)
    order = data.draw(st.permutations(changed))  # and in any order the exporter sent them
    assert _conversations(order) == expected


@functools.cache
def _native() -> list[SpanRecord]:
    """One recorded conversation (recorded once: the draws below depend on its times)."""
    return dialogue([("user", "coder", "Write a sort function."), ("coder", "reviewer", "def sort(xs): ..."),
                     ("reviewer", "user", "Approved.")], termination=sc.TERMINATION_MESSAGE)  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(data=st.data(), wrap=st.booleans())
def test_unrelated_spans_change_no_mast_otel_conversation(data: st.DataObject, wrap: bool) -> None:
    """mast-otel's own spans: the transcript the judge reads is the same."""
    spans = _native()
    expected = render(spans).text()
    extra = data.draw(unrelated(spans))
    changed = [*spans, *extra]
    if wrap:
        changed = _wrapped(changed, extra[0].trace_id)
    assert render(data.draw(st.permutations(changed))).text() == expected
