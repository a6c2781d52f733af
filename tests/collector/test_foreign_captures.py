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


def _rerun_under(otlp: dict[str, Any], root_id: str, shift_ns: int) -> dict[str, Any]:
    """The spans of ``otlp`` again as a later run in the same trace: new span ids, ``shift_ns`` later, its root
    parented on ``root_id`` (an instrumentation that left its context attached on the thread)."""
    later = json.loads(json.dumps(otlp))
    for rs in later["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                s["spanId"] = f"{int(s['spanId'], 16) ^ 0xFFFF:016x}"
                if s.get("parentSpanId"):
                    s["parentSpanId"] = f"{int(s['parentSpanId'], 16) ^ 0xFFFF:016x}"
                else:
                    s["parentSpanId"] = root_id
                for key in ("startTimeUnixNano", "endTimeUnixNano"):
                    s[key] = str(int(s[key]) + shift_ns)
    return later


def test_a_run_left_under_a_finished_root_is_judged_on_its_own(sink: OtlpSink, make_collector) -> None:
    # prepare: LlamaIndex's desk run, then the same run again in its trace, parented on the first run's root after
    # that root ended (as an instrumentation that leaves its context on the thread writes it)
    data = json.loads((CAPTURES / "llama_index" / "desk.json").read_text(encoding="utf-8"))
    first = data["otlp"]
    spans = [s for rs in first["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    (root,) = [s for s in spans if not s.get("parentSpanId")]
    ended = int(root["endTimeUnixNano"]) - min(int(s["startTimeUnixNano"]) for s in spans)
    clock = FakeClock()
    judge = FakeJudge(on_judge=flag_messages("1.3"))
    service = make_collector(sink, judge=judge, clock=clock)
    service.start(pipeline=False)
    # test
    post_json(service, first)
    post_json(service, _rerun_under(first, root["spanId"], ended + 1_000_000))
    judge_and_export(service, clock)
    # verify: two conversations judged, each with the run's own messages (not one conversation of both runs)
    want = 2 * len(spans)
    got = sink.wait_count(want)
    assert len(got) == want
    assert len(judge.calls) == 2
    messages = sorted(len([s for s in call[0] if s.span_type == sc.SPAN_TYPE_MESSAGE]) for call in judge.calls)
    assert messages == [data["expect"]["messages"]] * 2
    labelled = sorted(s.parent_span_id for s in got if sc.JUDGE_STATUS in s.attributes)
    assert labelled == sorted(["", root["spanId"]])
