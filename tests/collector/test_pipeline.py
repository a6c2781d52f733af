"""End to end in one process: real SDK exporters -> collector (receivers, store, assembler, judge, labels) ->
real OTLP sink. The clock is injected and the pipeline is stepped with ``tick()``/``flush()``: no sleeps."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import semconv as sc
from mast_otel.collector import CollectorService
from mast_otel.judge.model import Verdict
from mast_otel.recorder import Recorder
from mast_otel.spans import SpanRecord
from tests.collector.conftest import (
    FakeClock,
    FakeJudge,
    conversation,
    flag_messages,
    has_series,
    judge_and_export,
    metric,
    provider,
    recorded,
    scrape,
)
from tests.collector.sink import OtlpSink, SinkSpan


def send(service: CollectorService, spans: Sequence[ReadableSpan], transport: str = "grpc", **kw: object) -> None:
    if transport == "grpc":
        assert service.grpc is not None
        exporter: GrpcExporter | HttpExporter = GrpcExporter(
            endpoint=f"127.0.0.1:{service.grpc.port}",
            insecure=True,
            **kw,  # type: ignore[arg-type]
        )
    else:
        assert service.http is not None
        exporter = HttpExporter(endpoint=f"http://127.0.0.1:{service.http.port}/v1/traces", **kw)  # type: ignore[arg-type]
    try:
        assert exporter.export(spans) == SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()


def keys(spans: Sequence[ReadableSpan]) -> set[tuple[str, str]]:
    return {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in spans}


def roots(spans: Sequence[SinkSpan]) -> list[SinkSpan]:
    return [s for s in spans if s.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_WORKFLOW]


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_hold_mode_every_span_arrives_once_labelled(sink: OtlpSink, make_collector, transport: str) -> None:
    # prepare
    clock = FakeClock()
    service = make_collector(sink, judge=FakeJudge(on_judge=flag_messages("1.3")), clock=clock)
    service.start(pipeline=False)
    spans = recorded(3)
    # test
    send(service, spans, transport)
    service.tick()
    assert service.flush() and sink.spans() == []  # held: the quiet period has not passed
    clock.advance(1.0)
    service.tick()
    assert service.flush()
    # verify
    got = sink.wait_count(len(spans))
    assert {s.key for s in got} == keys(spans) and len(got) == len(spans)
    assert len(roots(got)) == 3
    for root in roots(got):
        a = root.attributes
        assert a[sc.JUDGE_STATUS] == "ok" and a[sc.FAILED] is True and a[sc.FAILURE_MODES] == ("1.3",)
        assert a[sc.fm_attribute("1.3")] is True and a[sc.JUDGE_MODEL] == "fake-model"
        assert a[sc.LABEL_SOURCE] == "llm" and a[sc.TASK_COMPLETED] is False
        assert a[sc.JUDGE_TOKENS_IN] == 100 and root.resource["service.name"] == "shop"
    messages = [s for s in got if s.attributes.get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_MESSAGE]
    assert messages and all(m.attributes[sc.FAILURE_MODE] == "1.3" for m in messages)
    assert all(m.events and m.events[0][0] == sc.EVAL_EVENT_NAME for m in messages)
    others = [s for s in got if s not in messages and s not in roots(got)]
    assert all(sc.FAILURE_MODE not in s.attributes and not s.events for s in others)
    text = scrape(service)
    assert metric(text, "mast_failure_mode_total", mode="1.3", category="FC1", service="shop", framework="custom") == 3
    assert metric(text, "mast_conversations_judged_total", status="ok", service="shop", framework="custom") == 3
    assert metric(text, "mast_collector_spans_received_total", protocol=transport) == len(spans)
    assert metric(text, "mast_collector_spans_exported_total") == len(spans)
    assert metric(text, "mast_judge_tokens_total", direction="in") == 300
    assert metric(text, "mast_collector_traces_pending") == 0


def test_passthrough_forwards_at_once_and_adds_a_verdict_span(sink: OtlpSink, make_collector) -> None:
    clock = FakeClock()
    service = make_collector(sink, judge=FakeJudge(on_judge=flag_messages("2.1")), clock=clock, mode="passthrough")
    service.start(pipeline=False)
    spans = recorded(2)
    send(service, spans)
    assert service.flush()
    first = sink.wait_count(len(spans))
    assert all(sc.JUDGE_STATUS not in s.attributes for s in first)  # forwarded before any verdict
    clock.advance(1.0)
    service.tick()
    assert service.flush()
    got = sink.wait_count(len(spans) + 2)
    verdicts = [s for s in got if s.name == sc.VERDICT_SPAN_NAME]
    assert len(verdicts) == 2 and len(got) == len(spans) + 2
    by_id = {s.span_id: s for s in got}
    for v in verdicts:
        root = by_id[v.parent_span_id]
        assert root.attributes[sc.GEN_AI_OPERATION_NAME] == sc.OP_INVOKE_WORKFLOW
        assert v.trace_id == root.trace_id and v.scope == "mast_otel.collector"
        assert v.resource["service.name"] == "shop"
        assert v.attributes[sc.FAILURE_MODES] == ("2.1",) and v.attributes[sc.fm_attribute("2.1")] is True
        assert v.attributes[sc.GEN_AI_CONVERSATION_ID] == root.attributes[sc.GEN_AI_CONVERSATION_ID]
        assert v.links and all(by_id[sid].attributes[sc.MAST_SPAN_TYPE] == "message" for sid, _ in v.links)
    assert service.store.counts() == (0, 0) and service.assembler.held_spans == 0  # nothing left behind


def test_root_that_never_ends_is_judged_partial_at_max_age(sink: OtlpSink, make_collector) -> None:
    # prepare: a conversation whose root span never arrives
    clock = FakeClock()
    judge = FakeJudge(on_judge=flag_messages("1.5"))
    service = make_collector(sink, judge=judge, clock=clock, max_trace_age=60.0)
    service.start(pipeline=False)
    spans = recorded(1)
    root = next(s for s in spans if s.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_WORKFLOW)
    body = [s for s in spans if s is not root]
    send(service, body)
    # test
    clock.advance(59)
    service.tick()
    assert service.flush() and not judge.calls
    judge_and_export(service, clock)
    # verify
    (call,) = judge.calls
    assert call[1] is True  # partial
    got = sink.wait_count(len(body) + 1)
    (verdict,) = [s for s in got if s.name == sc.VERDICT_SPAN_NAME]
    assert verdict.attributes[sc.JUDGE_STATUS] == sc.JUDGE_PARTIAL
    assert verdict.parent_span_id == f"{root.context.span_id:016x}"  # where the root will be
    assert all(s.attributes[sc.FAILURE_MODE] == "1.5" for s in got if s.attributes.get(sc.MAST_SPAN_TYPE) == "message")
    assert metric(scrape(service), "mast_conversations_judged_total", status="partial", service="shop",
                  framework="unknown") == 1  # fmt: skip


@pytest.mark.parametrize("dropped", [0, 2])
def test_a_root_whose_messages_went_elsewhere_is_judged_partial(sink: OtlpSink, make_collector, dropped: int) -> None:
    """The root counts the messages its conversation recorded; with some of them elsewhere (the other half of a
    conversation split across instances) the verdict on this half is partial, not ok."""
    judge = FakeJudge(on_judge=flag_messages("1.3"))
    service = make_collector(sink, judge=judge, quiet_period=0.0)
    service.start(pipeline=False)
    spans = recorded(1)
    messages = [s for s in spans if s.attributes.get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_MESSAGE]
    gone = {id(s) for s in messages[:dropped]}
    here = [s for s in spans if id(s) not in gone]
    send(service, here)
    service.release_now()
    assert service.flush()
    (root,) = roots(sink.wait_count(len(here)))
    (call,) = judge.calls
    recorded_count = len(messages)
    if dropped:
        assert call[1] is True  # the judge is told it sees part of the conversation
        assert root.attributes[sc.JUDGE_STATUS] == sc.JUDGE_PARTIAL
        assert root.attributes[sc.JUDGE_STATUS_REASON] == (
            f"{recorded_count - dropped} of the {recorded_count} messages the conversation recorded arrived here; "
            "judged on those"
        )
    else:
        assert call[1] is False
        assert root.attributes[sc.JUDGE_STATUS] == sc.JUDGE_OK
    assert root.attributes[sc.FAILURE_MODES] == ("1.3",)  # a partial verdict still carries what it found


def test_late_span_is_exported_and_counted(sink: OtlpSink, make_collector) -> None:
    clock = FakeClock()
    judge = FakeJudge()
    service = make_collector(sink, judge=judge, clock=clock)
    service.start(pipeline=False)
    spans = recorded(1)
    late = next(s for s in spans if s.attributes.get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_MESSAGE)
    send(service, [s for s in spans if s is not late])
    judge_and_export(service, clock)
    send(service, [late])  # arrives after the verdict
    service.tick()
    assert service.flush()
    got = sink.wait_count(len(spans))
    assert {s.key for s in got} == keys(spans)
    assert len(judge.calls) == 1
    assert metric(scrape(service), "mast_collector_spans_late_total") == 1


def test_duplicate_deliveries_are_idempotent(sink: OtlpSink, make_collector) -> None:
    clock = FakeClock()
    service = make_collector(sink, clock=clock)
    service.start(pipeline=False)
    spans = recorded(2)
    send(service, spans)
    send(service, spans, "http")  # the same spans again, before the verdict
    judge_and_export(service, clock)
    send(service, spans)  # and again after export: tombstones drop them
    service.tick()
    assert service.flush()
    assert len(sink.spans()) == len(spans)
    text = scrape(service)
    assert metric(text, "mast_collector_spans_duplicated_total") == 2 * len(spans)
    assert metric(text, "mast_conversations_judged_total", status="ok", service="shop", framework="custom") == 2


def test_spans_outside_conversations_go_out_untouched(sink: OtlpSink, make_collector) -> None:
    # prepare: a web request span wrapping a conversation, and a trace with no conversation at all
    clock = FakeClock()
    service = make_collector(sink, clock=clock)
    service.start(pipeline=False)
    memory = InMemorySpanExporter()
    tp = provider(memory)
    tracer = tp.get_tracer("app")
    with tracer.start_as_current_span("POST /chat"):
        conversation(Recorder(tracer_provider=tp))
    with tracer.start_as_current_span("GET /health"):
        pass
    spans = list(memory.get_finished_spans())
    # test
    send(service, spans)
    judge_and_export(service, clock)
    # verify
    got = {s.name: s for s in sink.wait_count(len(spans))}
    assert sc.JUDGE_STATUS in got["invoke_workflow triage"].attributes
    assert not any(k.startswith("mast.") for k in got["POST /chat"].attributes)
    assert not any(k.startswith("mast.") for k in got["GET /health"].attributes)
    assert metric(scrape(service), "mast_collector_spans_unassigned_total", reason="no_conversation") == 2


def _raise(spans: Sequence[SpanRecord], partial: bool) -> Verdict:
    raise RuntimeError("model exploded")


def test_failing_judge_releases_spans_with_status_error(sink: OtlpSink, make_collector) -> None:
    clock = FakeClock()
    service = make_collector(sink, judge=FakeJudge(on_judge=_raise), clock=clock)
    service.start(pipeline=False)
    spans = recorded(1)
    send(service, spans)
    judge_and_export(service, clock)
    got = sink.wait_count(len(spans))
    (root,) = roots(got)
    assert root.attributes[sc.JUDGE_STATUS] == "error"
    assert "model exploded" in root.attributes[sc.JUDGE_STATUS_REASON]
    assert sc.FAILED not in root.attributes
    text = scrape(service)
    assert metric(text, "mast_judge_errors_total", reason="exception") == 1
    assert metric(text, "mast_conversations_judged_total", status="error", service="shop", framework="custom") == 1


def test_slow_judge_never_holds_spans_past_the_timeout(sink: OtlpSink, make_collector) -> None:
    # prepare: a judge that blocks until the test lets it go
    clock = FakeClock()
    gate = threading.Event()

    def stuck(spans: Sequence[SpanRecord], partial: bool) -> Verdict:
        gate.wait(30)
        return Verdict(status="ok", source="llm")

    judge = FakeJudge(on_judge=stuck)
    service = make_collector(sink, judge=judge, clock=clock, judge_timeout=30.0)
    service.start(pipeline=False)
    spans = recorded(1)
    send(service, spans)
    clock.advance(1)
    service.tick()
    # test: the deadline passes while the judge is still busy
    clock.advance(30)
    service.tick()
    assert service.flush()
    # verify: out with status error; the judge's late answer changes nothing
    (root,) = roots(sink.wait_count(len(spans)))
    assert root.attributes[sc.JUDGE_STATUS] == "error" and "timed out" in root.attributes[sc.JUDGE_STATUS_REASON]
    gate.set()
    service.tick()
    assert service.flush()
    assert len(sink.spans()) == len(spans)
    assert metric(scrape(service), "mast_judge_errors_total", reason="timeout") == 1


def test_judge_fraction_skips_but_always_judges_errors(sink: OtlpSink, make_collector) -> None:
    clock = FakeClock()
    judge = FakeJudge()
    service = make_collector(sink, judge=judge, clock=clock, judge_fraction=0.0)
    service.start(pipeline=False)
    memory = InMemorySpanExporter()
    tp = provider(memory)
    rec = Recorder(tracer_provider=tp)
    conversation(rec, "fine")
    with rec.conversation("broken"):
        with rec.tool_call("deploy") as call:
            assert call is not None
            call.set_result("permission denied", success=False)
    send(service, list(memory.get_finished_spans()))
    judge_and_export(service, clock)
    got = {s.name: s for s in roots(sink.spans())}
    fine, broken = got["invoke_workflow fine"].attributes, got["invoke_workflow broken"].attributes
    assert fine[sc.JUDGE_STATUS] == "skipped" and "judge_fraction=0" in fine[sc.JUDGE_STATUS_REASON]
    assert broken[sc.JUDGE_STATUS] == "ok"
    assert len(judge.calls) == 1


def test_token_budget_skips_once_spent(sink: OtlpSink, make_collector) -> None:
    clock = FakeClock()
    service = make_collector(sink, judge=FakeJudge(on_judge=flag_messages()), clock=clock,
                             judge_token_budget_per_hour=100, judge_concurrency=1)  # fmt: skip
    service.start(pipeline=False)
    send(service, recorded(2))
    judge_and_export(service, clock)
    statuses = sorted(r.attributes[sc.JUDGE_STATUS] for r in roots(sink.spans()))
    assert statuses == ["ok", "skipped"]


def test_every_series_exists_at_zero_from_the_start(sink: OtlpSink, make_collector) -> None:
    service = make_collector(sink, metrics_services=("shop/ag2",))
    service.start(pipeline=False)
    text = scrape(service)
    for pair in (("unknown", "unknown"), ("shop", "ag2")):
        for mode in ("1.1", "2.6", "3.3"):
            assert has_series(text, "mast_failure_mode_total", mode=mode, service=pair[0], framework=pair[1])
        assert has_series(text, "mast_conversations_judged_total", status="error", service=pair[0])
    for reason in ("malformed", "unsupported_media_type", "too_large", "unauthenticated", "backpressure"):
        assert has_series(text, "mast_collector_requests_refused_total", protocol="grpc", reason=reason)
    for name in ("mast_collector_spans_dropped_total", "mast_collector_spans_unassigned_total"):
        assert has_series(text, name)
    assert metric(text, "mast_collector_limit", name="max_pending_traces") == service.config.max_pending_traces
    # a new service/framework pair gets all its series at 0 when its first conversation root arrives
    send(service, recorded(1, service="billing"))
    text = scrape(service)
    assert has_series(text, "mast_failure_mode_total", mode="2.3", service="billing", framework="custom")
    assert metric(text, "mast_failure_mode_total", mode="2.3", service="billing", framework="custom") == 0


def test_restarted_collector_finishes_what_was_pending(sink: OtlpSink, make_collector) -> None:
    clock = FakeClock()
    first = make_collector(sink, clock=clock)
    first.start(pipeline=False)
    spans = recorded(2)
    send(first, spans)
    first.stop()  # held, not judged
    second = make_collector(sink, clock=clock)
    second.start(pipeline=False)
    assert second.assembler.pending_traces == 2
    judge_and_export(second, clock)
    got = sink.wait_count(len(spans))
    assert {s.key for s in got} == keys(spans)
    assert all(r.attributes[sc.JUDGE_STATUS] == "ok" for r in roots(got))


def test_downstream_outage_then_recovery_loses_nothing(sink: OtlpSink, make_collector) -> None:
    # prepare: real threads and clock; the downstream is down
    service = make_collector(sink, quiet_period=0.05)
    service.start()
    sink.stop()
    spans = recorded(5)
    # test
    send(service, spans)
    service.release_now()

    def retried() -> bool:
        return metric(scrape(service), "mast_collector_export_retries_total", reason="unavailable") >= 2

    from tests.collector.conftest import wait_until

    wait_until(retried, what="export retries while the downstream is down")
    assert service.store.counts()[0] == len(spans)  # all waiting in the store
    sink.start()
    # verify
    got = sink.wait_count(len(spans), timeout=30)
    assert {s.key for s in got} == keys(spans)
    assert all(r.attributes[sc.JUDGE_STATUS] == "ok" for r in roots(got))


def test_export_over_otlp_http_downstream(sink: OtlpSink, make_collector) -> None:
    clock = FakeClock()
    service = make_collector(sink, clock=clock, export_endpoint=sink.http_endpoint)
    assert service.config.export_protocol == "http"
    service.start(pipeline=False)
    spans = recorded(2)
    send(service, spans)
    judge_and_export(service, clock)
    got = sink.wait_count(len(spans))
    assert {s.transport for s in got} == {"http"}
    assert all(r.attributes[sc.JUDGE_STATUS] == "ok" for r in roots(got))


@pytest.mark.parametrize(("before", "after"), [("hold", "passthrough"), ("passthrough", "hold")])
def test_switching_mode_across_a_restart_neither_loses_nor_repeats(
    sink: OtlpSink, make_collector, before: str, after: str
) -> None:
    clock = FakeClock()
    first = make_collector(sink, clock=clock, mode=before)
    first.start(pipeline=False)
    spans = recorded(1)
    send(first, spans)
    assert first.flush()
    first.stop()
    second = make_collector(sink, clock=clock, mode=after)
    second.start(pipeline=False)
    judge_and_export(second, clock)
    got = sink.spans()
    originals = [s for s in got if s.name != sc.VERDICT_SPAN_NAME]
    assert {s.key for s in originals} == keys(spans) and len(originals) == len(spans)
    labelled = [s for s in got if sc.JUDGE_STATUS in s.attributes]
    assert len(labelled) == 1  # the root if it was still held, else a mast.verdict span
    assert (labelled[0].name == sc.VERDICT_SPAN_NAME) == (before == "passthrough")
