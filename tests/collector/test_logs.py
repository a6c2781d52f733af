"""OTLP logs in: the OTel SDK's own log exporters (gRPC, HTTP protobuf) and OTLP JSON send records to a collector;
every record reaches a real logs downstream unchanged, with its resource and scope; a record that names a span is
read by the judge of that span's conversation (a GenAI run whose message text is only in log records is judged on
that text), whether it arrives before or after its span; limits and refusals are those of spans, counted under
``protocol="grpc_logs"`` / ``"http_logs"``; a record acknowledged and then kill -9 is still forwarded."""

from __future__ import annotations

import base64
import json
import sqlite3
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import semconv as sc
from mast_otel.collector import CollectorService
from mast_otel.collector.judge.log_events import event_of, with_log_events
from mast_otel.collector.metrics import MetricNames
from mast_otel.collector.receive.ingest import Malformed, TooLarge
from mast_otel.collector.scaleout.routing import shard_of, split_request
from mast_otel.collector.store.api import LogRow, OutRow, SQLiteStore, Tomb
from mast_otel.spans import SpanRecord
from tests.collector.conftest import (
    FakeClock,
    FakeJudge,
    collector_config,
    flag_messages,
    judge_and_export,
    metric,
    provider,
    scrape,
)
from tests.collector.sink import OtlpSink
from tests.collector.test_durability import CollectorProcess
from tests.collector.test_fuzz import _Capture
from tests.collector.test_pipeline import send

TASK = "Refund the duplicate charge on order A17."
REFUSED = MetricNames.REQUESTS_REFUSED


@contextmanager
def log_capture(service: str = "desk") -> Iterator[tuple[LoggerProvider, InMemoryLogRecordExporter]]:
    memory = InMemoryLogRecordExporter()
    lp = LoggerProvider(resource=Resource.create({"service.name": service}))
    lp.add_log_record_processor(SimpleLogRecordProcessor(memory))
    yield lp, memory
    lp.shutdown()


def plain_logs(n: int) -> list[ReadableLogRecord]:
    """``n`` records of two scopes, some in a span's context and some not, with every kind of body."""
    with log_capture() as (lp, memory):
        tp = provider(InMemorySpanExporter(), "desk")
        tracer = tp.get_tracer("desk.app")
        for i in range(n):
            logger = lp.get_logger("desk.a" if i % 2 else "desk.b", "1.0")
            body: Any = [f"text {i}", {"n": i, "nested": {"ok": True}}, i, None][i % 4]
            if i % 3:
                with tracer.start_as_current_span(f"work {i}"):
                    logger.emit(body=body, attributes={"i": i, "k": "v"}, event_name=f"app.event{i % 2}")
            else:
                logger.emit(body=body, attributes={"i": i}, severity_text="INFO")
        return list(memory.get_finished_logs())


def sent_records(batch: Sequence[ReadableLogRecord]) -> list[tuple[bytes, bytes, bytes]]:
    """(resource, scope, record) bytes of each record, as the SDK encodes them."""
    request = encode_logs(batch)
    return [(rl.resource.SerializeToString(), sl.scope.SerializeToString(), r.SerializeToString())
            for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records]  # fmt: skip


def send_logs(service: CollectorService, batch: Sequence[ReadableLogRecord], transport: str = "grpc") -> None:
    if transport == "json":
        post_logs_json(service, encode_logs(batch))
        return
    if transport == "grpc":
        assert service.grpc is not None
        exporter: GrpcLogExporter | HttpLogExporter = GrpcLogExporter(
            endpoint=f"127.0.0.1:{service.grpc.port}", insecure=True
        )
    else:
        assert service.http is not None
        exporter = HttpLogExporter(endpoint=f"http://127.0.0.1:{service.http.port}/v1/logs")
    try:
        assert exporter.export(batch).name == "SUCCESS"
    finally:
        exporter.shutdown()


def logs_json(request: ExportLogsServiceRequest) -> bytes:
    """OTLP JSON (hex ids, as the OTLP/HTTP JSON encoding writes them)."""
    data = json_format.MessageToDict(request)
    for rl in data.get("resourceLogs", []):
        for sl in rl.get("scopeLogs", []):
            for record in sl.get("logRecords", []):
                for key in ("traceId", "spanId"):
                    if key in record:
                        record[key] = base64.b64decode(record[key]).hex()
    return json.dumps(data).encode()


def post_logs_json(service: CollectorService, request: ExportLogsServiceRequest) -> None:
    status, _ = post(service, logs_json(request), "application/json")
    assert status == 200


def post(service: CollectorService, body: bytes, media: str = "application/x-protobuf") -> tuple[int, bytes]:
    assert service.http is not None
    request = urllib.request.Request(f"http://127.0.0.1:{service.http.port}/v1/logs", body, {"Content-Type": media})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


# -- forwarding --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("transport", ["grpc", "http", "json"])
def test_every_record_is_forwarded_unchanged(sink: OtlpSink, make_collector, transport: str) -> None:
    # prepare
    service = make_collector(sink, clock=FakeClock())
    service.start(pipeline=False)
    batch = plain_logs(12)
    want = sent_records(batch)
    # test
    send_logs(service, batch, transport)
    assert service.flush()
    # verify: each record's bytes, under its resource and scope, once (the judge's copy is kept aside)
    got = sink.wait_logs(len(want))
    assert sorted((g.resource, g.scope, g.data) for g in got) == sorted(want)
    assert {g.transport for g in got} == {"grpc"}  # the gRPC LogsService beside the traces endpoint
    text = scrape(service)
    protocol = "http" if transport == "json" else transport
    assert metric(text, MetricNames.LOG_RECORDS_RECEIVED, protocol=protocol) == len(want)
    assert metric(text, MetricNames.LOG_RECORDS_EXPORTED) == len(want)


def test_records_go_to_an_http_logs_endpoint_or_nowhere(sink: OtlpSink, make_collector) -> None:
    """The logs endpoint beside an OTLP/HTTP traces URL is its /v1/logs; ``none`` keeps records for the judge
    only (acknowledged, never queued)."""
    batch = plain_logs(6)
    service = make_collector(sink, export_endpoint=sink.http_endpoint)
    service.start()
    send_logs(service, batch, "http")
    got = sink.wait_logs(len(batch))
    assert sorted(g.data for g in got) == sorted(r for _, _, r in sent_records(batch))
    assert {g.transport for g in got} == {"http"}
    service.stop()

    quiet = OtlpSink().start()
    try:
        alone = make_collector(quiet, export_logs_endpoint="none", store=":memory:")
        alone.start(pipeline=False)
        send_logs(alone, batch, "grpc")
        assert alone.flush() and alone.log_exporter is None and alone.store.log_queued == 0
        assert quiet.logs() == []
    finally:
        quiet.stop()


def test_records_wait_for_a_downstream_that_is_down(sink: OtlpSink, make_collector) -> None:
    batch = plain_logs(8)
    sink.stop()
    service = make_collector(sink, export_backoff_max=0.2)
    service.start()
    send_logs(service, batch, "grpc")  # acknowledged: stored
    assert service.store.log_queued == len(batch)
    sink.start()
    got = sink.wait_logs(len(batch))
    assert sorted(g.data for g in got) == sorted(r for _, _, r in sent_records(batch))


# -- content for the judge ---------------------------------------------------------------------------------------
def genai_run_with_content_in_logs() -> tuple[list[ReadableSpan], list[ReadableLogRecord], list[ReadableLogRecord]]:
    """A GenAI-convention run (Google ADK's schema) whose spans carry no message text: the user's request and each
    model answer are log records in the model spans' context (``gen_ai.user.message``, ``gen_ai.choice``), as the
    conventions now write them. Returns the spans, the user-message records and the choice records."""
    spans = InMemorySpanExporter()
    tp = provider(spans, "adk-desk")
    tracer = tp.get_tracer("gcp.vertex.agent")
    with log_capture("adk-desk") as (lp, memory):
        logger = lp.get_logger("gcp.vertex.agent")
        root = {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_WORKFLOW, sc.GEN_AI_AGENT_NAME: "triage"}
        with tracer.start_as_current_span("invoke_workflow triage", attributes=root):
            for agent in ("triage", "billing"):
                attrs = {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.GEN_AI_AGENT_NAME: agent}
                with tracer.start_as_current_span(f"invoke_agent {agent}", attributes=attrs):
                    llm = {sc.GEN_AI_OPERATION_NAME: "generate_content", sc.GEN_AI_AGENT_NAME: agent}
                    with tracer.start_as_current_span("generate_content gpt", attributes=llm):
                        logger.emit(event_name="gen_ai.user.message", body={"content": TASK})
                        logger.emit(event_name="gen_ai.choice", body={"index": 0, "finish_reason": "stop", "message": {
                            "role": "assistant", "content": f"{agent} answers from the logs."}})  # fmt: skip
                    tool = "transfer_to_agent" if agent == "triage" else "lookup_order"
                    with tracer.start_as_current_span(f"execute_tool {tool}", attributes={
                            sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME: tool,
                            sc.GEN_AI_AGENT_NAME: agent}):  # fmt: skip
                        pass
        records = list(memory.get_finished_logs())
    tp.shutdown()
    users = [r for r in records if r.log_record.event_name == "gen_ai.user.message"]
    choices = [r for r in records if r.log_record.event_name == "gen_ai.choice"]
    return list(spans.get_finished_spans()), users, choices


def judged_collector(sink: OtlpSink, make_collector: Any) -> tuple[CollectorService, FakeJudge, FakeClock]:
    """A collector on real receivers, driven by hand, whose judge flags every message (and keeps what it read)."""
    clock = FakeClock()
    judge = FakeJudge(on_judge=flag_messages("1.3"))
    service = make_collector(sink, judge=judge, clock=clock)
    service.start(pipeline=False)
    return service, judge, clock


def judged_text(judge: FakeJudge) -> str:
    (spans, _), *_ = judge.calls
    return "\n".join(str(s.attributes.get(sc.MESSAGE_CONTENT, "")) for s in spans)


@pytest.mark.parametrize("transport", ["grpc", "json"])
def test_a_run_whose_text_is_only_in_logs_is_judged_on_that_text(
    sink: OtlpSink, make_collector, transport: str
) -> None:
    # prepare
    service, judge, clock = judged_collector(sink, make_collector)
    spans, users, choices = genai_run_with_content_in_logs()
    # test: the user's requests arrive before their spans, the answers after them (both before the release)
    send_logs(service, users, transport)
    send(service, spans)
    send_logs(service, choices, transport)
    send_logs(service, choices, transport)  # a client's retry after a lost acknowledgement
    judge_and_export(service, clock)
    # verify: judged once, on the logs' text, each record once
    assert len(judge.calls) == 1
    text = judged_text(judge)
    assert TASK in text and text.count("triage answers from the logs.") == 1
    assert text.count("billing answers from the logs.") == 1
    got = sink.wait_count(len(spans))
    root = next(s for s in got if s.parent_span_id == "")
    assert root.attributes[sc.JUDGE_STATUS] == sc.JUDGE_OK
    # the spans leave with the labeller's evaluation events and nothing else: the log events were the judge's copy
    assert {name for s in got for name, _ in s.events} == {"gen_ai.evaluation.result"}
    assert len(sink.wait_logs(len(users) + 2 * len(choices))) == len(users) + 2 * len(choices)  # at least once
    assert service.store.log_records(spans[0].context.trace_id.to_bytes(16, "big")) == []  # released with its span


def test_without_its_logs_the_same_run_has_no_content(sink: OtlpSink, make_collector) -> None:
    """The control: the spans alone give the judge nothing to read (the run is skipped, naming the switch)."""
    service, judge, clock = judged_collector(sink, make_collector)
    spans, _, _ = genai_run_with_content_in_logs()
    send(service, spans)
    judge_and_export(service, clock)
    assert judge.calls == []
    root = next(s for s in sink.wait_count(len(spans)) if s.parent_span_id == "")
    assert root.attributes[sc.JUDGE_STATUS] == sc.JUDGE_SKIPPED


def test_a_record_after_the_release_is_forwarded_only(sink: OtlpSink, make_collector) -> None:
    service, judge, clock = judged_collector(sink, make_collector)
    spans, users, choices = genai_run_with_content_in_logs()
    send(service, spans)
    send_logs(service, users)
    judge_and_export(service, clock)
    send_logs(service, choices)  # late: the conversation was judged without them
    assert service.flush()
    assert "answers from the logs" not in judged_text(judge)
    assert service.store.log_records(spans[0].context.trace_id.to_bytes(16, "big")) == []  # not kept
    assert len(sink.wait_logs(len(users) + len(choices))) == len(users) + len(choices)


def test_log_records_read_as_the_events_the_adapters_know() -> None:
    """The mapping, record by record: event name from ``event_name`` or ``event.name``; a map body's keys; a string
    body is ``content`` (and ``message`` for a choice); structured values as JSON text."""
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue, KeyValueList

    def kv(key: str, value: AnyValue) -> KeyValue:
        return KeyValue(key=key, value=value)

    parts = AnyValue(string_value='[{"role": "user", "parts": []}]')
    details = LogRecord(event_name="gen_ai.client.inference.operation.details",
                        attributes=[kv(sc.GEN_AI_INPUT_MESSAGES, parts)])  # fmt: skip
    assert event_of(details).attributes[sc.GEN_AI_INPUT_MESSAGES] == parts.string_value
    old = LogRecord(attributes=[kv("event.name", AnyValue(string_value="gen_ai.choice"))],
                    body=AnyValue(string_value="hello"))  # fmt: skip
    assert (event_of(old).name, event_of(old).attributes) == ("gen_ai.choice", {"content": "hello", "message": "hello"})
    message = AnyValue(kvlist_value=KeyValueList(values=[kv("content", AnyValue(string_value="hi"))]))
    choice = LogRecord(event_name="gen_ai.choice", body=AnyValue(kvlist_value=KeyValueList(values=[
        kv("message", message), kv("index", AnyValue(int_value=0))])))  # fmt: skip
    assert event_of(choice).attributes == {"message": '{"content": "hi"}', "index": 0}
    assert event_of(LogRecord(body=AnyValue(int_value=3))).name == "log"
    deep = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"  # past the JSON parser's depth: stays text
    assert event_of(LogRecord(body=AnyValue(string_value=deep))).attributes["content"] == deep


def test_a_record_joins_the_span_it_names_by_trace_and_span_id_once_in_time_order() -> None:
    """A record joins the span whose trace id and span id it carries (the same span id in another trace is another
    span), a record delivered twice counts once, and the events follow the records' times."""
    span = SpanRecord("0a" * 16, "0b" * 8, None, "chat", 0, 10)
    trace, span_id, other = bytes.fromhex("0a" * 16), bytes.fromhex("0b" * 8), bytes.fromhex("0c" * 16)

    def row(body: str, at: int, trace_id: bytes = trace) -> LogRow:
        record = LogRecord(time_unix_nano=at, trace_id=trace_id, span_id=span_id, event_name="gen_ai.choice",
                           body=AnyValue(string_value=body))  # fmt: skip
        return LogRow(trace_id, span_id, 0.0, record.SerializeToString())

    late, early = row("second", 20), row("first", 10)
    (joined,) = with_log_events([span], [late, early, late, row("elsewhere", 5, other)])
    assert [e.attributes["content"] for e in joined.events] == ["first", "second"]


# -- limits and refusals -----------------------------------------------------------------------------------------
def test_limits_and_refusals_are_those_of_spans(sink: OtlpSink, make_collector) -> None:
    service = make_collector(sink, max_request_spans=10, max_request_bytes="64KiB", memory_limit=0)
    service.start(pipeline=False)
    too_many = encode_logs(plain_logs(10)).SerializeToString()  # 10 records + their ResourceLogs and ScopeLogs
    assert post(service, too_many)[0] == 413
    assert post(service, b"\xff\xff not protobuf")[0] == 400
    assert post(service, b"[1, 2]", "application/json")[0] == 400
    assert post(service, b"x" * (65 * 1024))[0] == 413
    with pytest.raises(Exception, match=r"RESOURCE_EXHAUSTED|exceeds"):
        _grpc_export_logs(service, too_many)
    text = scrape(service)
    assert metric(text, REFUSED, protocol="http_logs", reason="too_large") == 2
    assert metric(text, REFUSED, protocol="http_logs", reason="malformed") == 2
    assert metric(text, REFUSED, protocol="grpc_logs", reason="too_large") == 1
    assert metric(text, REFUSED, protocol="http", reason="too_large") == 0  # the traces' series stay apart
    assert sink.logs() == [] and service.store.log_queued == 0


def test_a_full_store_refuses_logs_with_retry_advice(sink: OtlpSink, make_collector) -> None:
    sink.stop()  # nothing leaves: the store fills
    service = make_collector(sink, max_request_bytes="1KiB", max_pending_bytes="2KiB", memory_limit=0)
    service.start(pipeline=False)
    batch = plain_logs(4)
    body = encode_logs(batch).SerializeToString()
    statuses = [post(service, body)[0] for _ in range(8)]
    assert statuses[0] == 200 and statuses[-1] == 503
    text = scrape(service)
    assert metric(text, REFUSED, protocol="http_logs", reason="backpressure") == statuses.count(503)
    assert metric(text, MetricNames.LOG_RECORDS_REFUSED, reason="backpressure") == 4 * statuses.count(503)


def _grpc_export_logs(service: CollectorService, raw: bytes) -> bytes:
    import grpc

    assert service.grpc is not None
    with grpc.insecure_channel(f"127.0.0.1:{service.grpc.port}") as channel:
        call = channel.unary_unary("/opentelemetry.proto.collector.logs.v1.LogsService/Export")
        return bytes(call(raw, timeout=10))


# -- crash safety ------------------------------------------------------------------------------------------------
@pytest.mark.integration  # a real collector process, killed
def test_records_acknowledged_then_kill_9_are_forwarded_after_restart(tmp_path: Path, sink: OtlpSink) -> None:
    batch = plain_logs(40)
    want = sorted(r for _, _, r in sent_records(batch))
    sink.stop()  # the downstream is down: every record stays in the store
    collector = CollectorProcess(tmp_path, sink)
    collector.start()
    try:
        exporter = GrpcLogExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True)
        try:
            assert exporter.export(batch).name == "SUCCESS"  # acknowledged
        finally:
            exporter.shutdown()
        collector.kill9()
        sink.start()
        collector.start()
        got = sink.wait_logs(len(want), timeout=60)
        assert sorted(set(g.data for g in got)) == sorted(set(want)) and len(got) >= len(want)
    finally:
        collector.stop()


# -- the store ---------------------------------------------------------------------------------------------------
def test_the_store_keeps_a_record_until_its_span_is_released_or_it_is_old(tmp_path: Path) -> None:
    trace, first, second = b"t" * 16, b"s" * 8, b"u" * 8
    path = str(tmp_path / "s.db")
    store = SQLiteStore(path)
    rid = store.resource_id(b"", "")
    store.write(log_outbox=[OutRow(rid, b"x" * 10, 2)],
                log_records=[LogRow(trace, first, 100.0, b"a"), LogRow(trace, second, 100.0, b"b")])  # fmt: skip
    assert (store.log_queued, store.counts()) == (2, (0, 12))
    store.write(tombs=[Tomb(trace, first, 101.0, "unit")])  # the conversation of the first span was released
    assert [r.span_id for r in store.log_records(trace)] == [second]
    store.close()
    store = SQLiteStore(path)  # what a restart counts
    assert (store.log_queued, store.counts()) == (2, (0, 11))
    store.gc(99.0)
    assert len(store.log_records(trace)) == 1
    store.gc(200.0)  # a record whose span never came is forgotten with the tombstones
    assert store.log_records(trace) == [] and store.counts() == (0, 10)
    assert store.resource(rid) == (b"", "")  # still used by the queued ScopeLogs
    (row,) = store.log_outbox(100, 1 << 20)
    store.write(drop_log_outbox=[row.id])
    assert (store.log_queued, store.counts()) == (0, (0, 0))
    store.close()


# -- several processes -------------------------------------------------------------------------------------------
def test_a_logs_request_splits_by_its_records_trace_ids() -> None:
    batch = plain_logs(30)
    raw = encode_logs(batch).SerializeToString()
    parts = split_request(raw, 3, max_items=1000, logs=True)
    got: dict[bytes, int] = {}
    for part in parts:
        request = ExportLogsServiceRequest.FromString(part.request)
        records = [r for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records]
        assert part.spans == len(records)
        for r in records:
            got[r.SerializeToString()] = part.shard
            assert part.shard == (shard_of(r.trace_id, 3) if r.trace_id else 0)  # no trace context: shard 0
    assert sorted(got) == sorted(r for _, _, r in sent_records(batch))  # each record once, as it came
    assert len({p.shard for p in parts}) > 1


@pytest.mark.integration  # a front and two shard processes
def test_several_processes_route_each_record_to_its_traces_shard(tmp_path: Path, sink: OtlpSink) -> None:
    batch = plain_logs(40)
    want = sorted(r for _, _, r in sent_records(batch))
    collector = CollectorProcess(tmp_path, sink, extra=["--processes", "2"])
    collector.start()
    try:
        exporter = GrpcLogExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True)
        try:
            assert exporter.export(batch[:20]).name == "SUCCESS"
        finally:
            exporter.shutdown()
        body = encode_logs(batch[20:]).SerializeToString()
        request = urllib.request.Request(f"http://127.0.0.1:{collector.http_port}/v1/logs", body,
                                         {"Content-Type": "application/x-protobuf"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
        got = sink.wait_logs(len(want))
        assert sorted(g.data for g in got) == want  # every record once, unchanged
        # verify: each record that names a span is kept by the shard that owns its trace, for its conversation
        kept: dict[bytes, int] = {}
        for shard, store in enumerate((tmp_path / "collector.db", tmp_path / "collector.db.shard1")):
            with sqlite3.connect(store) as db:
                kept.update((bytes(t), shard) for (t,) in db.execute("SELECT trace_id FROM log_record"))
        named = {r.log_record.trace_id.to_bytes(16, "big") for r in batch if r.log_record.trace_id}
        assert set(kept) == named and set(kept.values()) == {0, 1}
        assert all(shard == shard_of(trace_id, 2) for trace_id, shard in kept.items())
        assert metric(collector.metrics(), MetricNames.LOG_RECORDS_RECEIVED, protocol="grpc") == 20
    finally:
        collector.stop()


def test_semantic_kernels_records_read_as_content() -> None:
    """Semantic Kernel (Python) logs each message as ``json.dumps(...)`` through Python's logging, the event's name
    in ``extra={"event.name": ...}`` (its model_diagnostics decorators); through the OTel logging bridge those
    records read as the per-message events the GenAI adapter reads, with no code of its own."""
    import logging

    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs as encode
    from opentelemetry.sdk._logs import LoggingHandler

    from mast_otel.adapters._genai_content import first_user_text, output
    from mast_otel.spans import SpanRecord

    with log_capture("sk") as (lp, memory):
        logger = logging.getLogger("semantic_kernel.utils.telemetry.model_diagnostics.decorators")
        handler = LoggingHandler(logger_provider=lp)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        try:
            logger.info(json.dumps({"role": "user", "content": TASK}),
                        extra={"event.name": "gen_ai.user.message", "gen_ai.system": "openai"})  # fmt: skip
            logger.info(json.dumps({"message": {"role": "assistant", "content": "Refunded.", "finish_reason": "stop"},
                                    "finish_reason": "stop"}),
                        extra={"event.name": "gen_ai.choice", "gen_ai.system": "openai"})  # fmt: skip
        finally:
            logger.removeHandler(handler)
        records = [r for rl in encode(memory.get_finished_logs()).resource_logs for sl in rl.scope_logs
                   for r in sl.log_records]  # fmt: skip
    events = tuple(event_of(r) for r in records)
    assert [e.name for e in events] == ["gen_ai.user.message", "gen_ai.choice"]
    span = SpanRecord("0" * 32, "1" * 16, None, "chat gpt", 0, 1, events=events)
    assert first_user_text(span) == TASK
    assert output(span) == ("Refunded.", [])


# -- fuzz ----------------------------------------------------------------------------------------------------------
_FUZZ_BASE = encode_logs(plain_logs(6)).SerializeToString()


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[CollectorService, _Capture]]:
    capture = _Capture()
    config = collector_config(tmp_path_factory.mktemp("fuzz"), None, store=":memory:", metrics="off")
    service = CollectorService(config, judge=FakeJudge(), sender=_Capture(), log_sender=capture)
    yield service, capture
    service.stop(grace=0.1)


@settings(max_examples=150, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # fmt: skip
@given(data=st.data())
def test_whatever_logs_ingest_accepts_is_forwarded_as_a_full_parse_reads_it(fuzzed: Any, data: st.DataObject) -> None:
    """Arbitrary edits of a real request (and arbitrary bytes): refused as Malformed / TooLarge, or stored, then
    forwarded record for record as protobuf's own parse of the request reads it, and readable by the judge."""
    service, capture = fuzzed
    raw = data.draw(st.one_of(st.binary(max_size=300), _edits(_FUZZ_BASE)))
    capture.payloads.clear()
    try:
        service.log_ingestor.ingest(raw, "grpc")
    except (Malformed, TooLarge):
        return
    request = ExportLogsServiceRequest.FromString(raw)  # the oracle: what ingest accepted, protobuf reads
    assert service.flush(5)
    sent = [ExportLogsServiceRequest.FromString(p) for p in capture.payloads]
    assert _records(sent) == _records([request])
    for record in _records([request]):
        if len(record.trace_id) == 16 and len(record.span_id) == 8:
            for row in service.store.log_records(record.trace_id):
                event_of(LogRecord.FromString(row.data))  # never raises


def _records(requests: Sequence[ExportLogsServiceRequest]) -> list[LogRecord]:
    found = [r for q in requests for rl in q.resource_logs for sl in rl.scope_logs for r in sl.log_records]
    return sorted(found, key=lambda r: r.SerializeToString())


@st.composite
def _edits(draw: st.DrawFn, base: bytes) -> bytes:
    out = bytearray(base)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(out)))
        kind = draw(st.sampled_from(["flip", "cut", "insert"]))
        if kind == "flip" and at < len(out):
            out[at] ^= draw(st.integers(1, 255))
        elif kind == "cut":
            del out[at : at + draw(st.integers(1, 8))]
        else:
            out[at:at] = draw(st.binary(min_size=1, max_size=8))
    return bytes(out)


def test_a_partial_success_names_log_records() -> None:
    """The trace and logs answers are the same bytes on the wire; in OTLP JSON a logs answer counts records."""
    from mast_otel.collector.receive.ingest import IngestResult
    from mast_otel.collector.receive.logs_ingest import logs_response
    from mast_otel.collector.receive.refusal import export_response

    result = IngestResult(5, 2, "shard 1: not readable")
    assert logs_response(result).SerializeToString() == export_response(result).SerializeToString()
    assert json_format.MessageToDict(logs_response(result)) == {
        "partialSuccess": {"rejectedLogRecords": "2", "errorMessage": "shard 1: not readable"}
    }
    assert logs_response(IngestResult(5)).SerializeToString() == b""
