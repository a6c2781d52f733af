"""A value too deep or too large spoils only itself, in the collector: a framework's run with JSON nested 100,000
deep in one attribute (a model's input messages) or in one log record's body is judged ``ok``, on the conversation
the run gives without that value; the value is counted in ``mast_collector_values_ignored_total{reason}`` and
logged without the value itself; the spans go out as they came, the value in them."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from mast_otel import semconv as sc
from mast_otel.collector.metrics import MetricNames
from tests.collector.conftest import FakeClock, FakeJudge, flag_messages, judge_and_export, metric, scrape
from tests.collector.sink import OtlpSink
from tests.collector.test_foreign_genai import post_json

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"
DEEP = '{"a":' * 100_000 + "1" + "}" * 100_000
IGNORED = MetricNames.VALUES_IGNORED


def _capture(name: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    data = json.loads((CAPTURES / f"{name}.json").read_text(encoding="utf-8"))
    return data["otlp"], data.get("otlp_logs")


def _retraced(document: dict[str, Any], trace_ids: set[str]) -> dict[str, Any]:
    """The same spans or records in other traces (its first hex digit changed), to send beside the original."""
    text = json.dumps(document)
    for trace_id in trace_ids:
        text = text.replace(f'"{trace_id}"', f'"{"f" if trace_id[0] != "f" else "e"}{trace_id[1:]}"')
    return dict(json.loads(text))


def _spans(otlp: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for rs in otlp["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


def _records(logs: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for rl in logs["resourceLogs"] for sl in rl["scopeLogs"] for r in sl["logRecords"]]


Run = tuple[dict[str, Any], dict[str, Any] | None]  # (OTLP spans, OTLP log records or None)


def _in_a_span(otlp: dict[str, Any], logs: dict[str, Any] | None, value: str | None) -> Run:
    """The run with the first model call's ``gen_ai.input.messages`` set to ``value`` (None: left out)."""
    otlp = json.loads(json.dumps(otlp))
    span = next(s for s in _spans(otlp) if any(a["key"] == sc.GEN_AI_INPUT_MESSAGES for a in s["attributes"]))
    span["attributes"] = [a for a in span["attributes"] if a["key"] != sc.GEN_AI_INPUT_MESSAGES]
    if value is not None:
        span["attributes"].append({"key": sc.GEN_AI_INPUT_MESSAGES, "value": {"stringValue": value}})
    return otlp, logs


def _in_a_body(otlp: dict[str, Any], logs: dict[str, Any] | None, value: str | None) -> Run:
    """The run with the first user message logged (Semantic Kernel's ``json.dumps`` of the message) given ``value``
    as its body (None: no body)."""
    assert logs is not None
    logs = json.loads(json.dumps(logs))
    record = next(r for r in _records(logs) if '"role": "user"' in r.get("body", {}).get("stringValue", ""))
    record.pop("body")
    if value is not None:
        record["body"] = {"stringValue": value}
    return otlp, logs


def _messages(call: list[Any]) -> list[tuple[Any, Any, Any]]:
    return [(s.get(sc.MESSAGE_SENDER), s.get(sc.MESSAGE_RECIPIENTS), s.get(sc.MESSAGE_CONTENT))
            for s in call if s.span_type == sc.SPAN_TYPE_MESSAGE]  # fmt: skip


@pytest.mark.parametrize(
    ("capture", "place"),
    [("pydantic_ai/desk", _in_a_span), ("semantic_kernel/group-chat", _in_a_body)],
    ids=["gen_ai.input.messages", "log record body"],
)
def test_a_value_too_deep_is_judged_without_and_counted(
    sink: OtlpSink, make_collector: Any, caplog: pytest.LogCaptureFixture, capture: str, place: Any
) -> None:
    # prepare: the run as recorded but for that value, and the same run (in other traces) without it
    clock = FakeClock()
    judge = FakeJudge(on_judge=flag_messages("1.3"))
    service = make_collector(sink, judge=judge, clock=clock)
    service.start(pipeline=False)
    otlp, logs = _capture(capture)
    bad: Run = place(otlp, logs, DEEP)
    traces = {s["traceId"] for s in _spans(otlp)}
    spans_without, records_without = place(otlp, logs, None)
    without: Run = (_retraced(spans_without, traces), records_without and _retraced(records_without, traces))
    # test
    caplog.set_level(logging.INFO, logger="mast_otel.collector.judge.judging")
    for spans, records in (bad, without):
        if records:
            post_json(service, records, "/v1/logs")
        post_json(service, spans)
    judge_and_export(service, clock)
    # verify: both judged ok, on the same conversation; the value counted once, logged without itself
    got = sink.wait_count(2 * len(_spans(otlp)))
    roots = {s.trace_id: s for s in got if sc.JUDGE_STATUS in s.attributes}
    assert len(roots) == 2 and {r.attributes[sc.JUDGE_STATUS] for r in roots.values()} == {sc.JUDGE_OK}
    assert len(judge.calls) == 2
    by_run = {call[0][0].trace_id in traces: _messages(call[0]) for call in judge.calls}
    assert by_run[True] == by_run[False] and len(by_run[True]) >= 2
    text = scrape(service)
    assert metric(text, IGNORED, reason="too_deep") == 1 and metric(text, IGNORED, reason="too_large") == 0
    assert caplog.text.count("left out of the conversation the judge reads") == 1
    assert '{"a":{"a":' not in caplog.text
    sent = [s for s in got if s.trace_id in traces]  # the spans themselves leave as they came
    if place is _in_a_span:
        assert any(s.attributes.get(sc.GEN_AI_INPUT_MESSAGES) == DEEP for s in sent)


def test_a_string_too_large_is_judged_without_and_counted(sink: OtlpSink, make_collector: Any) -> None:
    """4 Mi + 1 characters of model input (the default request limit holds it): judged ok, counted too_large."""
    clock = FakeClock()
    judge = FakeJudge(on_judge=flag_messages("1.3"))
    service = make_collector(sink, judge=judge, clock=clock)
    service.start(pipeline=False)
    otlp, logs = _capture("pydantic_ai/desk")
    huge = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "x" * 4 * 1024 * 1024}]}])
    spans, _ = _in_a_span(otlp, logs, huge)
    post_json(service, spans)
    judge_and_export(service, clock)
    roots = [s for s in sink.wait_count(len(_spans(otlp)) - 1) if sc.JUDGE_STATUS in s.attributes]
    assert [r.attributes[sc.JUDGE_STATUS] for r in roots] == [sc.JUDGE_OK]
    assert metric(scrape(service), IGNORED, reason="too_large") == 1
