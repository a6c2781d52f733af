"""A full store answers with backpressure the standard SDK exporters understand, and their retry then succeeds."""

from __future__ import annotations

import threading

import grpc
import pytest
from google.rpc import error_details_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.collector.conftest import FakeClock, judge_and_export, metric, recorded, scrape, wait_until
from tests.collector.sink import OtlpSink
from tests.collector.test_pipeline import send


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_full_store_pushes_back_and_the_sdk_retry_succeeds(sink: OtlpSink, make_collector, transport: str) -> None:
    # prepare: room for two pending traces, both taken
    clock = FakeClock()
    service = make_collector(sink, clock=clock, max_pending_traces=2, retry_after=1.0)
    service.start(pipeline=False)
    first = recorded(2)
    send(service, first)
    third = recorded(1)
    results: list[SpanExportResult] = []
    assert service.grpc is not None and service.http is not None
    if transport == "grpc":
        exporter: GrpcExporter | HttpExporter = GrpcExporter(
            endpoint=f"127.0.0.1:{service.grpc.port}", insecure=True, timeout=30
        )
    else:
        exporter = HttpExporter(endpoint=f"http://127.0.0.1:{service.http.port}/v1/traces", timeout=30)
    client = threading.Thread(target=lambda: results.append(exporter.export(third)))
    # test: the third trace is refused with a retry hint...
    client.start()

    def refused() -> bool:
        text = scrape(service)
        return metric(text, "mast_collector_requests_refused_total", protocol=transport, reason="backpressure") >= 1

    wait_until(refused, what="a backpressure refusal")
    # ...and once the first two are judged and exported, the SDK's own retry gets it in
    judge_and_export(service, clock)
    client.join(30)
    exporter.shutdown()
    # verify
    assert results == [SpanExportResult.SUCCESS]
    judge_and_export(service, clock)
    sink.wait_count(len(first) + len(third))
    assert metric(scrape(service), "mast_collector_spans_refused_total", reason="backpressure") >= len(third)


def test_byte_limit_refuses_with_retry_info(sink: OtlpSink, make_collector) -> None:
    service = make_collector(sink, max_request_bytes="16KiB", max_pending_bytes="16KiB")
    service.start(pipeline=False)
    payload = encode_spans(recorded(3)).SerializeToString()
    assert service.grpc is not None
    with grpc.insecure_channel(f"127.0.0.1:{service.grpc.port}") as channel:
        call = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
        call(payload, timeout=10)  # the store was empty: accepted
        with pytest.raises(grpc.RpcError) as err:
            call(payload, timeout=10)
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    trailers = dict(err.value.trailing_metadata() or ())
    info = error_details_pb2.RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
    assert info.retry_delay.seconds == 1
    assert "max_pending_bytes" in str(err.value.details())
