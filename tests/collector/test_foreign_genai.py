"""The collector, in one process, with traces frameworks wrote themselves in the OpenTelemetry GenAI conventions:
real captures (tests/data/genai: Pydantic AI, Strands Agents) sent as OTLP/HTTP JSON, and Google ADK's default
schema written through a real SDK tracer. The frameworks' roots are held as foreign units, never taken for
mast-otel's own (ADK's ``invoke_workflow``) nor grouped by the framework's ``gen_ai.conversation.id``; each is
judged once, labelled on the framework's own root with ``mast.source``; no span is added to any of these traces,
in hold or passthrough mode."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import semconv as sc
from mast_otel.collector import CollectorService
from mast_otel.collector.metrics import MetricNames
from tests.adapters.test_genai import GENAI
from tests.collector.conftest import FakeClock, FakeJudge, flag_messages, judge_and_export, metric, provider, scrape
from tests.collector.sink import OtlpSink, SinkSpan
from tests.collector.test_pipeline import send


def post_json(service: CollectorService, otlp: dict[str, Any], path: str = "/v1/traces") -> None:
    assert service.http is not None
    request = urllib.request.Request(f"http://127.0.0.1:{service.http.port}{path}", json.dumps(otlp).encode(),
                                     {"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def captured(name: str) -> tuple[dict[str, Any], set[tuple[str, str]]]:
    """A recorded run's OTLP JSON and its (trace id, span id) keys."""
    otlp = json.loads((GENAI / f"{name}.json").read_text(encoding="utf-8"))["otlp"]
    keys = {(s["traceId"], s["spanId"]) for rs in otlp["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]}
    return otlp, keys


def adk_spans(*, content: bool = True) -> list[ReadableSpan]:
    """Google ADK's default schema, written through the SDK as ADK writes it (invoke_workflow root, sibling
    invoke_agent spans, generate_content and execute_tool spans, the session as gen_ai.conversation.id)."""
    memory = InMemorySpanExporter()
    tp = provider(memory, "adk-desk")
    tracer = tp.get_tracer("gcp.vertex.agent")
    session = {sc.GEN_AI_CONVERSATION_ID: "session-7"}

    def llm(agent: str, answer: str) -> None:
        attrs = {sc.GEN_AI_OPERATION_NAME: "generate_content", sc.GEN_AI_AGENT_NAME: agent,
                 sc.GEN_AI_SYSTEM: "gcp.vertex.agent", **session}  # fmt: skip
        if content:
            attrs[sc.GEN_AI_INPUT_MESSAGES] = json.dumps([{"role": "user", "parts": [
                {"type": "text", "content": "Refund the duplicate charge on A17."}]}])  # fmt: skip
            attrs[sc.GEN_AI_OUTPUT_MESSAGES] = json.dumps([{"role": "model", "parts": [
                {"type": "text", "content": answer}]}])  # fmt: skip
        with tracer.start_as_current_span("generate_content gpt", attributes=attrs):
            pass

    root_attrs = {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_WORKFLOW, sc.GEN_AI_AGENT_NAME: "triage", **session}
    with tracer.start_as_current_span("invoke_workflow triage", attributes=root_attrs):
        for agent in ("triage", "billing"):
            attrs = {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.GEN_AI_AGENT_NAME: agent, **session}
            with tracer.start_as_current_span(f"invoke_agent {agent}", attributes=attrs):
                llm(agent, f"{agent} answers.")
                tool = "transfer_to_agent" if agent == "triage" else "lookup_order"
                with tracer.start_as_current_span(f"execute_tool {tool}", attributes={
                        sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME: tool,
                        sc.GEN_AI_AGENT_NAME: agent}):  # fmt: skip
                    pass
    tp.shutdown()
    return list(memory.get_finished_spans())


def _keys(spans: list[ReadableSpan]) -> set[tuple[str, str]]:
    return {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in spans}


def _root(got: list[SinkSpan], keys: set[tuple[str, str]]) -> SinkSpan:
    (root,) = [s for s in got if s.key in keys and sc.JUDGE_STATUS in s.attributes]
    return root


def test_framework_traces_are_judged_once_on_their_own_roots(sink: OtlpSink, make_collector) -> None:
    # prepare
    clock = FakeClock()
    judge = FakeJudge(on_judge=flag_messages("1.3"))
    service = make_collector(sink, judge=judge, clock=clock)
    service.start(pipeline=False)
    pydantic, pydantic_keys = captured("pydantic_ai-default")
    redacted, redacted_keys = captured("strands-redacted")
    adk = adk_spans()
    # test
    post_json(service, pydantic)
    post_json(service, redacted)
    send(service, adk)
    judge_and_export(service, clock)
    # verify: every span out once, none added (no mast.verdict span in traces mast-otel did not write)
    want = pydantic_keys | redacted_keys | _keys(adk)
    got = sink.wait_count(len(want))
    assert sorted(s.key for s in got) == sorted(want)
    assert len(judge.calls) == 2  # ADK and Pydantic AI; the redacted Strands run is never sent to the judge

    adk_root = _root(got, _keys(adk))
    assert adk_root.name == "invoke_workflow triage" and adk_root.attributes[sc.JUDGE_STATUS] == sc.JUDGE_OK
    assert (adk_root.attributes[sc.MAST_SOURCE], adk_root.attributes[sc.MAST_FRAMEWORK]) == ("genai", "google-adk")
    evidence = [s for s in got if s.key in _keys(adk) and s.attributes.get(sc.FAILURE_MODE) == "1.3"]
    assert sorted(s.name for s in evidence) == ["generate_content gpt"] * 2  # on ADK's own model spans

    pydantic_root = _root(got, pydantic_keys)  # the outermost invoke_agent; the nested runs' own ids ignored
    assert pydantic_root.parent_span_id == "" and pydantic_root.attributes[sc.MAST_FRAMEWORK] == "pydantic-ai"

    strands_root = _root(got, redacted_keys)
    assert strands_root.attributes[sc.JUDGE_STATUS] == sc.JUDGE_SKIPPED
    assert "gen_ai_unredacted_attributes" in strands_root.attributes[sc.JUDGE_STATUS_REASON]
    assert strands_root.attributes[sc.MAST_SOURCE] == "genai"

    text = scrape(service)
    judged = MetricNames.CONVERSATIONS_JUDGED
    assert metric(text, judged, status=sc.JUDGE_OK, framework="google-adk") == 1
    assert metric(text, judged, status=sc.JUDGE_OK, framework="pydantic-ai") == 1
    assert metric(text, judged, status=sc.JUDGE_SKIPPED, framework="strands") == 1
    assert metric(text, judged, framework="custom") == 0  # nothing counted as a mast-otel conversation


def test_passthrough_adds_no_span_to_a_framework_trace(sink: OtlpSink, make_collector) -> None:
    clock = FakeClock()
    judge = FakeJudge(on_judge=flag_messages("1.3"))
    service = make_collector(sink, judge=judge, clock=clock, mode="passthrough")
    service.start(pipeline=False)
    adk = adk_spans()
    send(service, adk)
    judge_and_export(service, clock)
    service.tick()
    assert service.flush()
    got = sink.wait_count(len(adk))
    assert len(judge.calls) == 1  # judged all the same: the verdict is in the store and the metrics
    assert sorted(s.key for s in got) == sorted(_keys(adk))  # the spans as they came, and nothing else
    assert not any(s.attributes.get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_VERDICT for s in got)


def test_adks_legacy_schema_is_one_conversation_on_its_invocation_span(sink: OtlpSink, make_collector) -> None:
    """ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1: an attribute-less ``invocation`` span holds the agents' spans, which
    carry ADK's session id as gen_ai.conversation.id (once held as a root-less conversation, judged on no message,
    and given a mast.verdict span)."""
    clock = FakeClock()
    judge = FakeJudge(on_judge=flag_messages("1.3"))
    service = make_collector(sink, judge=judge, clock=clock)
    service.start(pipeline=False)
    legacy, keys = captured("google_adk-legacy")
    post_json(service, legacy)
    judge_and_export(service, clock)
    got = sink.wait_count(len(keys))
    assert sorted(s.key for s in got) == sorted(keys)
    assert len(judge.calls) == 1 and len([s for s in judge.calls[0][0] if s.span_type == sc.SPAN_TYPE_MESSAGE]) > 3
    root = _root(got, keys)
    assert root.name == "invocation" and root.parent_span_id == ""
    assert (root.attributes[sc.MAST_SOURCE], root.attributes[sc.MAST_FRAMEWORK]) == ("genai", "google-adk")


def test_a_span_called_invocation_is_a_root_only_in_adks_scope(sink: OtlpSink, make_collector) -> None:
    """A root candidate known by its name alone is known by its instrumentation scope too: any program may call a
    span ``invocation``, and held as a conversation root its trace would wait up to max_trace_age. From ADK's scope
    it is held as a root (and found to be no conversation); from any other it is a span no conversation holds."""
    clock = FakeClock()
    judge = FakeJudge()
    service = make_collector(sink, judge=judge, clock=clock)
    service.start(pipeline=False)
    unassigned = MetricNames.SPANS_UNASSIGNED
    for n, (scope, reason) in enumerate((("my.app", "no_conversation"), ("gcp.vertex.agent", "not_a_conversation"))):
        span = {"traceId": f"{n + 1:032x}", "spanId": f"{n + 1:016x}", "name": "invocation",
                "startTimeUnixNano": "1", "endTimeUnixNano": "2"}  # fmt: skip
        post_json(service, {"resourceSpans": [{"scopeSpans": [{"scope": {"name": scope}, "spans": [span]}]}]})
        judge_and_export(service, clock)
        assert metric(scrape(service), unassigned, reason=reason) == 1, scope
    assert sorted(s.name for s in sink.wait_count(2)) == ["invocation", "invocation"] and not judge.calls
