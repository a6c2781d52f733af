"""Every real capture (``tests/data/captures/<framework>/<run>.json``) reads as the conversation its framework
recorded: exactly one conversation, with the framework's agents, handoffs, tool calls, task and message count; a
solo-agent control run becomes none. The expectation in each file was read from the framework's own record by
its recorder (``tests/captures/record_<framework>.py``, run by ``nox -s "captures(framework='<framework>')"``),
never from any span attribute. A new framework that follows a known convention is a capture plus its expectation:
no code here.
A capture with ``"otlp_logs"`` (a framework that writes its text to log records: Semantic Kernel) has its records
joined to its spans first, as the collector does (each record that names a span becomes an event on it).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, SpanMapping, adapt, foreign_units
from mast_otel.collector.judge.log_events import with_log_events
from mast_otel.collector.store.api import LogRow
from mast_otel.spans import SpanRecord, from_otlp_json
from tests.adapters._fixtures import handoffs

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"
FILES = sorted(CAPTURES.glob("*/*.json"))
_USER = "user"


def _load(path: Path) -> tuple[list[SpanRecord], dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    spans = from_otlp_json(json.dumps(data["otlp"]))
    if "otlp_logs" in data:
        spans = with_log_events(spans, log_rows(data["otlp_logs"]))
    return spans, data["expect"]


def log_rows(otlp_logs: dict[str, Any]) -> list[LogRow]:
    """The log records of an ExportLogsServiceRequest in OTLP JSON (ids in hex) that name a span, as the collector
    keeps them for the judge (``logs_ingest``: trace id, span id, the serialized record)."""
    from google.protobuf import json_format
    from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

    rows: list[LogRow] = []
    for resource_logs in otlp_logs.get("resourceLogs", []):
        for scope_logs in resource_logs.get("scopeLogs", []):
            for raw in scope_logs.get("logRecords", []):
                if not (raw.get("traceId") and raw.get("spanId")):
                    continue  # (the collector keeps only records that name a span)
                fields = {**raw, "traceId": _b64(raw["traceId"]), "spanId": _b64(raw["spanId"])}
                record = json_format.ParseDict(fields, LogRecord(), ignore_unknown_fields=True)
                rows.append(LogRow(record.trace_id, record.span_id, 0.0, record.SerializeToString()))
    return rows


def _b64(hex_id: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_id)).decode()


def conversations(spans: list[SpanRecord], mappings: Sequence[SpanMapping] = ()) -> list[Adapted]:
    """What the collector would judge: each unit it holds, adapted (with the user's span ``mappings``)."""
    return [a for unit in foreign_units(spans, mappings=mappings) if isinstance(a := adapt(unit, mappings), Adapted)]


def test_the_corpus_holds_multi_agent_runs_and_solo_controls() -> None:
    expectations = [_load(path)[1] for path in FILES]
    assert len({path.parent.name for path in FILES}) >= 2
    assert any(e["conversation"] for e in expectations) and any(not e["conversation"] for e in expectations)


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
def test_a_capture_is_the_conversation_its_framework_recorded(path: Path) -> None:
    spans, expect = _load(path)
    if expect.get("unread"):
        # A run its instrumentation wrote with nothing to read it by (the reason says what is missing): no
        # conversation is judged, rather than a wrong one; once a rule reads it, this fails until the mark goes.
        assert conversations(spans) == [], "the capture reads now: drop its expect['unread'] and check it matches"
        pytest.xfail(expect["unread"])
    points = read_points(path)
    assert points == dict.fromkeys(points, True), "each point not True is what was read instead"


def read_points(path: Path, mappings: Sequence[SpanMapping] = ()) -> dict[str, Any]:
    """Each point of a capture checked against its framework's record: ``True`` where it is read right, else what
    was read instead (JSON: lists for tuples). A solo control has one point, ``conversations`` (none is judged); a
    multi-agent run has ``conversations`` (exactly one), then ``framework``, ``agents``, ``task``, ``handoffs``,
    ``tool_calls``, ``text`` (the messages: the user's request first, one per answer, and where the expectation lists
    them (``said``) the words of each; with content hidden, none carries text) and, with content hidden,
    ``skip_switch`` (the reason the judge is not called names the switches). The corpus wants every point right;
    tests/adapters/test_first_sight.py scores runs of new pairs by the same points."""
    spans, expect = _load(path)
    found = conversations(spans, mappings)
    if not expect["conversation"]:
        return {"conversations": found == [] or len(found)}  # a solo-agent run is never judged
    if len(found) != 1:
        return {"conversations": len(found)}
    (adapted,) = found
    root = adapted.records[0]
    agents = sorted(str(a) for a in root.get(sc.CONVERSATION_AGENTS) or () if a != _USER)
    read_handoffs = [list(h) for h in handoffs(adapted.records)]
    calls = [[r.get(sc.GEN_AI_AGENT_NAME), r.get(sc.GEN_AI_TOOL_NAME)] for r in adapted.records
             if r.span_type == sc.SPAN_TYPE_TOOL_CALL]  # fmt: skip
    # from the instrumentation scope: the directory's framework, or the one the capture names (a framework traced by
    # a second instrumentation is a directory of its own, <framework>_<instrumentation>)
    framework = expect.get("framework", path.parent.name.replace("_", "-"))
    points: dict[str, Any] = {
        "conversations": True,
        "framework": adapted.framework == framework or adapted.framework,
        "agents": agents == sorted(expect["agents"]) or agents,
        "handoffs": read_handoffs == expect["handoffs"] or read_handoffs,
        "tool_calls": calls == expect["tool_calls"] or calls,
    }
    task = root.get(sc.CONVERSATION_TASK)
    texts = sorted(adapted.messages, key=lambda m: m.get(sc.MESSAGE_INDEX))
    if expect.get("hidden"):
        # Hidden content is no text: the user's request is not read, no message carries the placeholder, and the
        # reason the judge is not called names the switches that hid it.
        points["task"] = task is None or task
        blank = all(m.get(sc.MESSAGE_CONTENT) in ("", m.get(sc.MESSAGE_TOOL_CALLS)) for m in texts)
        right = len(texts) == expect["messages"] - 1 and blank
        points["text"] = right or {"messages": len(texts), "without_text": blank}
        named = adapted.no_content is not None and all(switch in adapted.no_content for switch in expect["hidden"])
        points["skip_switch"] = named or adapted.no_content
        return points
    points["task"] = task == expect["task"] or task
    first = [texts[0].get(sc.MESSAGE_SENDER), texts[0].get(sc.MESSAGE_CONTENT)] if texts else None
    # Where the expectation lists what each answer says (``said``: [agent, text] of each answer with text, in order),
    # the words are checked too, not only the count: an answer read as its tool call's name says nothing.
    said = [[m.get(sc.MESSAGE_SENDER), m.get(sc.MESSAGE_CONTENT)] for m in texts[1:]
            if m.get(sc.MESSAGE_CONTENT) not in ("", None, m.get(sc.MESSAGE_TOOL_CALLS))]  # fmt: skip
    words = said == expect.get("said", said)
    right = first == [_USER, expect["task"]] and len(texts) == expect["messages"] and adapted.no_content is None
    wrong = {"first": first, "messages": len(texts), "no_content": adapted.no_content}
    points["text"] = (right and words) or (wrong if words else {**wrong, "said": said})
    return points


LOGGED = [p for p in FILES if "otlp_logs" in json.loads(p.read_text(encoding="utf-8"))]


@pytest.mark.parametrize("path", LOGGED, ids=[f"{p.parent.name}/{p.stem}" for p in LOGGED])
def test_the_log_records_of_a_capture_become_events_on_its_spans(path: Path) -> None:
    """Every record that names a span names one of the capture's, and each model call gets its answer as an event
    (Semantic Kernel, Agent Framework's baseline: a ``gen_ai.choice`` record; Google ADK's ``EVENT_ONLY``: a
    ``gen_ai.client.inference.operation.details`` record with ``gen_ai.output.messages``)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    spans = from_otlp_json(json.dumps(data["otlp"]))
    rows = log_rows(data["otlp_logs"])
    joined = with_log_events(spans, rows)
    assert rows and sum(len(j.events) - len(s.events) for s, j in zip(spans, joined, strict=True)) == len(rows)
    calls = [s for s in joined if s.get(sc.GEN_AI_OPERATION_NAME) in _MODEL_CALLS]
    assert calls and all(any(_answer(e) for e in s.events) for s in calls)


_MODEL_CALLS = ("chat", "generate_content", "text_completion")


def _answer(event: Any) -> bool:
    return event.name == "gen_ai.choice" or (
        event.name == "gen_ai.client.inference.operation.details" and sc.GEN_AI_OUTPUT_MESSAGES in event.attributes
    )
