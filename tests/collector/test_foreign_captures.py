"""The collector, in one process, with every real capture (tests/data/captures: LlamaIndex AgentWorkflow and Agno
teams traced by OpenInference, their solo controls) sent as OTLP/HTTP JSON, as a user's exporter sends them: each
multi-agent run is judged once, labelled on its own root with the framework its instrumentation scope names; a
run with its content hidden is not sent to the judge and its reason names the switches; a solo run is never
judged; no span is added."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mast_otel import semconv as sc
from tests.collector.conftest import FakeClock, FakeJudge, flag_messages, judge_and_export
from tests.collector.sink import OtlpSink
from tests.collector.test_foreign_genai import post_json

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"


def _captures() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    out = []
    for path in sorted(CAPTURES.glob("*/*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out.append((path.parent.name, data["otlp"], data["expect"]))
    return out


def _keys(otlp: dict[str, Any]) -> set[tuple[str, str]]:
    return {(s["traceId"], s["spanId"]) for rs in otlp["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]}


def test_every_capture_is_judged_as_its_framework_recorded_it(sink: OtlpSink, make_collector) -> None:
    # prepare
    clock = FakeClock()
    judge = FakeJudge(on_judge=flag_messages("1.3"))
    service = make_collector(sink, judge=judge, clock=clock)
    service.start(pipeline=False)
    captures = _captures()
    # test
    for _, otlp, _ in captures:
        post_json(service, otlp)
    judge_and_export(service, clock)
    # verify: every span out once, none added
    want = set().union(*(_keys(otlp) for _, otlp, _ in captures))
    got = sink.wait_count(len(want))
    assert sorted(s.key for s in got) == sorted(want)
    judged = [e for _, _, e in captures if e["conversation"] and not e.get("hidden")]
    assert len(judge.calls) == len(judged) >= 2
    for framework, otlp, expect in captures:
        labelled = [s for s in got if s.key in _keys(otlp) and sc.JUDGE_STATUS in s.attributes]
        if not expect["conversation"]:
            assert labelled == [], framework
            continue
        (root,) = labelled
        assert root.parent_span_id == ""
        assert root.attributes[sc.MAST_SOURCE] == "openinference"
        assert root.attributes[sc.MAST_FRAMEWORK] == framework.replace("_", "-")
        if expect.get("hidden"):
            assert root.attributes[sc.JUDGE_STATUS] == sc.JUDGE_SKIPPED
            assert all(switch in root.attributes[sc.JUDGE_STATUS_REASON] for switch in expect["hidden"])
        else:
            assert root.attributes[sc.JUDGE_STATUS] == sc.JUDGE_OK
    # each judged transcript is the framework's: its agents speak, the user's request first
    # (in whatever order the collector judged them)
    sent = [[s for s in call[0] if s.span_type == sc.SPAN_TYPE_MESSAGE] for call in judge.calls]
    assert sorted((len(m), sorted({str(s.get(sc.MESSAGE_SENDER)) for s in m})) for m in sent) == sorted(
        (e["messages"], sorted({"user", *e["agents"]})) for e in judged
    )
