"""The collector, in one process, with every real capture (tests/data/captures: each framework's multi-agent runs
and solo controls, traced by OpenInference or the framework's own GenAI telemetry) sent as OTLP/HTTP JSON, log
records included, as a user's exporters send them: each multi-agent run is judged once, also a run written as a
trace per message (Semantic Kernel's orchestrations), labelled on its own (first) root with the framework its
instrumentation scope names; a run with its content hidden is not sent to the judge and its reason names the
switches; a solo run is never judged; no span is added."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest

from mast_otel import semconv as sc
from mast_otel.collector.config import CollectorConfig, ConfigError
from tests.collector.conftest import FakeClock, FakeJudge, flag_messages, judge_and_export, metric
from tests.collector.sink import OtlpSink
from tests.collector.test_foreign_genai import post_json

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"


def _captures() -> list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any] | None]]:
    out = []
    for path in sorted(CAPTURES.glob("*/*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out.append((path.parent.name, data["otlp"], data["expect"], data.get("otlp_logs")))
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
    for _, otlp, _, logs in captures:
        if logs:  # the log records first: a capture's spans may be judged as soon as they are whole
            post_json(service, logs, "/v1/logs")
        post_json(service, otlp)
    judge_and_export(service, clock)
    # a span whose parent its instrumentation never exported (agno_openllmetry/solo: Agno's agent span under
    # OpenLLMetry) waits for it until max_trace_age: release what is left, as max age would
    service.release_now()
    assert service.flush()
    # verify: every span out once, none added
    want = set().union(*(_keys(otlp) for _, otlp, _, _ in captures))
    got = sink.wait_count(len(want))
    assert sorted(s.key for s in got) == sorted(want)
    judged = [e for _, _, e, _ in captures if e["conversation"] and not e.get("hidden") and not e.get("unread")]
    assert len(judge.calls) == len(judged) >= 2
    for framework, otlp, expect, _ in captures:
        labelled = [s for s in got if s.key in _keys(otlp) and sc.JUDGE_STATUS in s.attributes]
        if not expect["conversation"] or expect.get("unread"):  # (unread: nothing ties it, nothing is judged)
            assert labelled == [], framework
            continue
        (root,) = labelled
        if root.parent_span_id:  # a run written as several traces: on its first agent's root, under the runtime's
            assert len({trace for trace, _ in _keys(otlp)}) > 1
            sent = [s for rs in otlp["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
            first = min((s for s in sent if s["name"].startswith("invoke_agent")),
                        key=lambda s: int(s["startTimeUnixNano"]))  # fmt: skip
            assert root.span_id == first["spanId"]
        assert root.attributes[sc.MAST_SOURCE] in ("openinference", "genai", "ai-sdk", "openllmetry")
        assert root.attributes[sc.MAST_FRAMEWORK] == expect.get("framework", framework.replace("_", "-"))
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


def test_a_run_written_as_a_trace_per_message_is_judged_once_with_the_text_of_its_log_records(
    sink: OtlpSink, make_collector
) -> None:
    # prepare: Semantic Kernel's HandoffOrchestration: 15 traces (one per runtime message), tied by span links;
    # the model's text only in log records
    data = json.loads((CAPTURES / "semantic_kernel" / "handoff.json").read_text(encoding="utf-8"))
    expect = data["expect"]
    clock = FakeClock()
    judge = FakeJudge(on_judge=flag_messages("1.3"))
    service = make_collector(sink, judge=judge, clock=clock)
    service.start(pipeline=False)
    # test: the records, then the spans, as two exporters send them
    post_json(service, data["otlp_logs"], "/v1/logs")
    post_json(service, data["otlp"])
    judge_and_export(service, clock)
    # verify: one judge call with every agent's turn, in the framework's order, the user's request first
    want = _keys(data["otlp"])
    got = sink.wait_count(len(want))
    assert {s.key for s in got} == want
    (call,) = judge.calls
    messages = sorted((s for s in call[0] if s.span_type == sc.SPAN_TYPE_MESSAGE),
                      key=lambda s: s.get(sc.MESSAGE_INDEX))  # fmt: skip
    assert len(messages) == expect["messages"]
    assert (messages[0].get(sc.MESSAGE_SENDER), messages[0].get(sc.MESSAGE_CONTENT)) == ("user", expect["task"])
    speakers = [str(m.get(sc.MESSAGE_SENDER)) for m in messages[1:]]
    assert list(dict.fromkeys(speakers)) == expect["agents"]
    # each turn's tool calls are only in the log records of its own trace: every trace's records were read
    called = [(str(m.get(sc.MESSAGE_SENDER)), str(m.get(sc.MESSAGE_TOOL_CALLS) or "")) for m in messages]
    for agent, tool in expect["tool_calls"]:
        assert any(sender == agent and tool in calls for sender, calls in called), (agent, tool)
    labelled = [s for s in got if sc.JUDGE_STATUS in s.attributes]
    assert len(labelled) == 1 and labelled[0].attributes[sc.MAST_FRAMEWORK] == "semantic-kernel"
    assert labelled[0].attributes[sc.JUDGE_STATUS] == sc.JUDGE_OK


def _again(data: dict[str, Any], shift_ns: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A capture's spans and log records as another run of the same script: new trace ids, ``shift_ns`` later."""
    spans, logs = json.loads(json.dumps(data["otlp"])), json.loads(json.dumps(data["otlp_logs"]))
    new = {}
    for item in [s for rs in spans["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]] + [
        r for rl in logs["resourceLogs"] for sl in rl["scopeLogs"] for r in sl["logRecords"]
    ]:
        if item.get("traceId"):
            item["traceId"] = new.setdefault(item["traceId"], f"{int(item['traceId'], 16) ^ (1 << 100):032x}")
        for link in item.get("links", ()):  # a run's links name its own traces
            link["traceId"] = new.setdefault(link["traceId"], f"{int(link['traceId'], 16) ^ (1 << 100):032x}")
        for key in ("startTimeUnixNano", "endTimeUnixNano", "timeUnixNano", "observedTimeUnixNano"):
            if item.get(key):
                item[key] = str(int(item[key]) + shift_ns)
    return spans, logs


def _post_records_then_spans(service: Any, *runs: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Every run's log records, then every run's spans (OTel's log batch leaves before its span batch)."""
    for _, logs in runs:
        post_json(service, logs, "/v1/logs")
    for spans, _ in runs:
        post_json(service, spans)


def _two_group_chats(sink: OtlpSink, make_collector: Any, shift_ns: int) -> tuple[FakeJudge, Any, Any, Any]:
    """AgentGroupChat's capture and a copy of it ``shift_ns`` later (another run of the same script) sent to a fresh
    collector, records first, then judged and exported: (the judge, the capture, the copy's spans, the collector)."""
    data = json.loads((CAPTURES / "semantic_kernel" / "agent-group-chat.json").read_text(encoding="utf-8"))
    again_spans, again_logs = _again(data, shift_ns)
    clock = FakeClock()
    judge = FakeJudge(on_judge=flag_messages("1.3"))
    service = make_collector(sink, judge=judge, clock=clock)
    service.start(pipeline=False)
    _post_records_then_spans(service, (data["otlp"], data["otlp_logs"]), (again_spans, again_logs))
    judge_and_export(service, clock)
    return judge, data, again_spans, service


def test_turns_tied_only_by_their_history_are_one_conversation_per_run(sink: OtlpSink, make_collector) -> None:
    # prepare: Semantic Kernel's AgentGroupChat: each turn a trace of its own, tied to the others only by the chat
    # history its model is given (log records); two runs of the same script, so the same answers in both
    # test: both runs' records and spans, the second run's records before the first run's spans
    judge, data, again_spans, _ = _two_group_chats(sink, make_collector, 60 * 10**9)
    # verify: one conversation per run, each with its three agents in order
    sink.wait_count(len(_keys(data["otlp"])) + len(_keys(again_spans)))
    assert len(judge.calls) == 2
    for call in judge.calls:
        messages = sorted((s for s in call[0] if s.span_type == sc.SPAN_TYPE_MESSAGE),
                          key=lambda s: s.get(sc.MESSAGE_INDEX))  # fmt: skip
        assert len({s.trace_id for s in call[0]}) == 1  # the judge's copy is under one root
        speakers = [str(m.get(sc.MESSAGE_SENDER)) for m in messages[1:]]
        assert list(dict.fromkeys(speakers)) == data["expect"]["agents"]


def test_after_a_restart_turns_tied_by_their_history_are_still_one_conversation(sink: OtlpSink, make_collector) -> None:
    # prepare: an AgentGroupChat run received, then the collector stopped before judging it
    data = json.loads((CAPTURES / "semantic_kernel" / "agent-group-chat.json").read_text(encoding="utf-8"))
    clock = FakeClock()
    first = make_collector(sink, judge=FakeJudge(), clock=clock)
    first.start(pipeline=False)
    post_json(first, data["otlp_logs"], "/v1/logs")
    post_json(first, data["otlp"])
    first.stop(grace=0.5)
    # test: a new collector on the same store (the notes of what tied the turns were only in memory)
    judge = FakeJudge(on_judge=flag_messages("1.3"))
    second = make_collector(sink, judge=judge, clock=clock)
    second.start(pipeline=False)
    judge_and_export(second, clock)
    # verify: one conversation of the three agents
    sink.wait_count(len(_keys(data["otlp"])))
    (call,) = judge.calls
    speakers = [str(s.get(sc.MESSAGE_SENDER)) for s in call[0] if s.span_type == sc.SPAN_TYPE_MESSAGE]
    assert set(speakers) - {"user"} == set(data["expect"]["agents"])


def _as_tenant(data: dict[str, Any], namespace: str, *, new_ids: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """A capture's spans and log records sent by the tenant ``namespace``: every resource carrying
    ``service.namespace`` (the default tenant attribute), new trace ids if ``new_ids``; the same texts, times and
    agents."""
    spans, logs = _again(data, 0) if new_ids else json.loads(json.dumps((data["otlp"], data["otlp_logs"])))
    for rs in [*spans["resourceSpans"], *logs["resourceLogs"]]:
        rs.setdefault("resource", {}).setdefault("attributes", []).append(
            {"key": "service.namespace", "value": {"stringValue": namespace}}
        )
    return spans, logs


def _calls_by_run(judge: FakeJudge, runs: list[set[str]]) -> list[int]:
    """How many judge calls hold spans of each run (its trace ids); fails if a call holds two runs' spans."""
    count = [0] * len(runs)
    for call in judge.calls:
        traces = {s.trace_id for s in call[0]} - {""}
        owners = [n for n, run in enumerate(runs) if traces & run]
        assert len(owners) == 1, owners
        count[owners[0]] += 1
    return count


def _traces(otlp: dict[str, Any]) -> set[str]:
    return {trace for trace, _ in _keys(otlp)}


def test_two_tenants_with_the_same_runs_get_a_verdict_each(sink: OtlpSink, make_collector) -> None:
    # prepare: each Semantic Kernel capture sent by tenant A and by tenant B, at the same times, with the same
    # texts (so the same shared histories) and the same agents
    names = ("agent-group-chat", "group-chat", "handoff")
    clock = FakeClock()
    judge = FakeJudge(on_judge=flag_messages("1.3"))
    service = make_collector(sink, judge=judge, clock=clock)
    service.start(pipeline=False)
    runs, sent = [], 0
    # test: tenant A's records and tenant B's first, then the spans
    for name in names:
        data = json.loads((CAPTURES / "semantic_kernel" / f"{name}.json").read_text(encoding="utf-8"))
        a_spans, a_logs = _as_tenant(data, "team-a", new_ids=False)
        b_spans, b_logs = _as_tenant(data, "team-b", new_ids=True)
        post_json(service, a_logs, "/v1/logs")
        post_json(service, b_logs, "/v1/logs")
        post_json(service, a_spans)
        post_json(service, b_spans)
        runs += [_traces(a_spans), _traces(b_spans)]
        sent += len(_keys(a_spans)) + len(_keys(b_spans))
    judge_and_export(service, clock)
    # verify: one judge call per run, never two tenants' spans in one
    sink.wait_count(sent)
    assert _calls_by_run(judge, runs) == [1] * len(runs)


def test_a_restart_between_a_runs_log_records_and_its_spans_loses_no_tie(sink: OtlpSink, make_collector) -> None:
    # prepare: AgentGroupChat's records (OTel's log batch leaves after 1 s, its span batch after 5 s), then a restart
    data = json.loads((CAPTURES / "semantic_kernel" / "agent-group-chat.json").read_text(encoding="utf-8"))
    clock = FakeClock()
    first = make_collector(sink, judge=FakeJudge(), clock=clock)
    first.start(pipeline=False)
    post_json(first, data["otlp_logs"], "/v1/logs")
    first.stop(grace=0.5)
    # test: the spans reach the restarted collector
    judge = FakeJudge(on_judge=flag_messages("1.3"))
    second = make_collector(sink, judge=judge, clock=clock)
    second.start(pipeline=False)
    post_json(second, data["otlp"])
    judge_and_export(second, clock)
    # verify: one conversation of the three agents
    sink.wait_count(len(_keys(data["otlp"])))
    (call,) = judge.calls
    speakers = [str(s.get(sc.MESSAGE_SENDER)) for s in call[0] if s.span_type == sc.SPAN_TYPE_MESSAGE]
    assert set(speakers) - {"user"} == set(data["expect"]["agents"])


def test_two_group_chats_at_once_are_never_judged_as_one(sink: OtlpSink, make_collector) -> None:
    # prepare: AgentGroupChat twice, 1 ms apart (two users at once): the same answers, interleaved turns
    # test
    judge, data, again_spans, service = _two_group_chats(sink, make_collector, 1_000_000)
    # verify: every span out once; no judge call holds both runs' spans; what could not be told apart is counted
    sink.wait_count(len(_keys(data["otlp"])) + len(_keys(again_spans)))
    _calls_by_run(judge, [_traces(data["otlp"]), _traces(again_spans)])
    exposed = generate_latest(service.metrics.registry).decode()
    assert metric(exposed, "mast_collector_evidence_dropped_total", reason="ambiguous") >= 1


def _under_app_span(data: dict[str, Any], trace: str, app_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A capture's spans and log records moved into one trace ``trace`` under an application span (a web handler's,
    ``app_id``, as server instrumentation makes it): every parentless span under it, links and records naming the new
    trace. The application span itself is in its own ResourceSpans, last (it ends after the run)."""
    spans, logs = json.loads(json.dumps((data["otlp"], data.get("otlp_logs") or {"resourceLogs": []})))
    every = [s for rs in spans["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    for s in every:
        s["traceId"] = trace
        s["parentSpanId"] = s.get("parentSpanId") or app_id
        for link in s.get("links", ()):
            link["traceId"] = trace
    for rl in logs["resourceLogs"]:
        for sl in rl["scopeLogs"]:
            for r in sl["logRecords"]:
                if r.get("traceId"):
                    r["traceId"] = trace
    app = {"traceId": trace, "spanId": app_id, "name": "POST /chat", "kind": 2,
           "startTimeUnixNano": str(min(int(s["startTimeUnixNano"]) for s in every) - 1000),
           "endTimeUnixNano": str(max(int(s["endTimeUnixNano"]) for s in every) + 1000),
           "attributes": [{"key": "http.route", "value": {"stringValue": "/chat"}}]}  # fmt: skip
    spans["resourceSpans"].append({"resource": {"attributes": []}, "scopeSpans": [
        {"scope": {"name": "opentelemetry.instrumentation.fastapi"}, "spans": [app]}]})  # fmt: skip
    return spans, logs


def test_runs_under_an_application_span_are_judged_each_once_as_their_framework_recorded_them(
    sink: OtlpSink, make_collector
) -> None:
    # prepare: each Semantic Kernel orchestration inside a web handler's span (one trace per request); in one more
    # request, two AgentGroupChat runs one after the other under one span (a batch job)
    names = ("agent-group-chat", "group-chat", "handoff")
    clock = FakeClock()
    judge = FakeJudge(on_judge=flag_messages("1.3"))
    service = make_collector(sink, judge=judge, clock=clock)
    service.start(pipeline=False)
    sent, expected = 0, []
    for n, name in enumerate(names):
        data = json.loads((CAPTURES / "semantic_kernel" / f"{name}.json").read_text(encoding="utf-8"))
        spans, logs = _under_app_span(data, f"{n + 1:032x}", f"{0xA0 + n:016x}")
        post_json(service, logs, "/v1/logs")
        post_json(service, spans)
        sent += len(_keys(spans))
        expected.append((data["expect"]["messages"], sorted({"user", *data["expect"]["agents"]})))
    chat = json.loads((CAPTURES / "semantic_kernel" / "agent-group-chat.json").read_text(encoding="utf-8"))
    later_spans, later_logs = _again(chat, 60 * 10**9)
    for item in [s for rs in later_spans["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]] + [
        r for rl in later_logs["resourceLogs"] for sl in rl["scopeLogs"] for r in sl["logRecords"]
    ]:  # the second run's own span ids (one trace holds both)
        for key in ("spanId", "parentSpanId"):
            if item.get(key):
                item[key] = f"{int(item[key], 16) ^ 0xFF00:016x}"
    both = {"otlp": {"resourceSpans": chat["otlp"]["resourceSpans"] + later_spans["resourceSpans"]},
            "otlp_logs": {"resourceLogs": chat["otlp_logs"]["resourceLogs"] + later_logs["resourceLogs"]}}
    spans, logs = _under_app_span(both, f"{9:032x}", f"{0xB0:016x}")
    post_json(service, logs, "/v1/logs")
    post_json(service, spans)
    sent += len(_keys(spans))
    expected += [(chat["expect"]["messages"], sorted({"user", *chat["expect"]["agents"]}))] * 2
    # test
    judge_and_export(service, clock)
    # verify: every span out once; one judge call per run with its framework's speakers and messages, the batch
    # job's two runs two calls
    got = sink.wait_count(sent)
    assert len(got) == sent
    calls = [[s for s in call[0] if s.span_type == sc.SPAN_TYPE_MESSAGE] for call in judge.calls]
    got_calls = sorted((len(m), sorted({str(s.get(sc.MESSAGE_SENDER)) for s in m})) for m in calls)
    assert got_calls == sorted(expected)
    labelled = [s for s in got if sc.JUDGE_STATUS in s.attributes]
    assert len(labelled) == len(expected)
    assert all(s.attributes[sc.MAST_FRAMEWORK] == "semantic-kernel" for s in labelled)


def test_a_schema_no_reader_knows_is_judged_through_the_users_mapping(sink: OtlpSink, make_collector,
                                                                      tmp_path: Path) -> None:  # fmt: skip
    """VoltAgent's own span schema, sent over OTLP/HTTP to a collector started with ``span_mapping``: its agent
    run is held as a root and judged once, the verdict on VoltAgent's own root, read by the mapping; without the
    mapping, the same spans pass through unjudged."""
    mapping = Path(__file__).resolve().parents[2] / "examples" / "span_mappings" / "voltagent.yaml"
    data = json.loads((Path(__file__).resolve().parents[1] / "data" / "first_sight" / "voltagent" / "desk.json")
                      .read_text(encoding="utf-8"))  # fmt: skip
    for mapped in (True, False):
        clock = FakeClock()
        judge = FakeJudge(on_judge=flag_messages("1.3"))
        service = make_collector(sink, judge=judge, clock=clock, store=str(tmp_path / f"m{mapped}.db"),
                                 **({"span_mapping": str(mapping)} if mapped else {}))  # fmt: skip
        service.start(pipeline=False)
        before = len(sink.spans())
        post_json(service, data["otlp"])
        judge_and_export(service, clock)
        service.release_now()
        assert service.flush()
        want = before + len(_keys(data["otlp"]))
        got = sink.wait_for(lambda spans: len(spans) >= want)[before:]  # noqa: B023 (called before the next pass)
        labelled = [s for s in got if sc.JUDGE_STATUS in s.attributes]
        if not mapped:
            assert labelled == [] and judge.calls == []
            continue
        (root,) = labelled
        assert len(judge.calls) == 1 and root.name == "lead" and root.parent_span_id == ""
        assert root.attributes[sc.MAST_SOURCE] == "mapping:voltagent"
        assert root.attributes[sc.MAST_FRAMEWORK] == "voltagent"
        service.stop(grace=0.2)


def test_a_mapping_file_that_cannot_be_used_stops_the_collector_at_start(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("mappings:\n  - name: m\n    agent: {name: who}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"span_mapping: .*mappings\[0\]\.agent\.when"):
        CollectorConfig(export_endpoint="http://127.0.0.1:1", span_mapping=str(bad))
