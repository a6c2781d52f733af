"""Receivers: the right OTLP status for bad input, each refusal counted, JSON/gzip/auth accepted when right."""

from __future__ import annotations

import base64
import gzip
import http.client
import json

import grpc
import pytest
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace.export import SpanExportResult

from mast_otel.collector import CollectorService
from tests.collector.conftest import metric, recorded, scrape
from tests.collector.sink import OtlpSink

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


@pytest.fixture
def service(sink: OtlpSink, make_collector) -> CollectorService:
    s = make_collector(sink, max_request_bytes="64KiB", quiet_period=0.0)
    s.start(pipeline=False)
    return s


def grpc_call(service: CollectorService, payload: bytes, metadata: tuple[tuple[str, str], ...] = ()) -> bytes:
    assert service.grpc is not None
    with grpc.insecure_channel(f"127.0.0.1:{service.grpc.port}") as channel:
        return bytes(channel.unary_unary(EXPORT)(payload, timeout=10, metadata=metadata))


def post(
    service: CollectorService, body: bytes, content_type: str = "application/x-protobuf", path: str = "/v1/traces",
    headers: dict[str, str] | None = None, method: str = "POST",
) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
    assert service.http is not None
    conn = http.client.HTTPConnection("127.0.0.1", service.http.port, timeout=10)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": content_type, **(headers or {})})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def valid_request(n: int = 1) -> bytes:
    return bytes(encode_spans(recorded(n)).SerializeToString())


def test_malformed_protobuf_grpc_is_invalid_argument(service: CollectorService) -> None:
    with pytest.raises(grpc.RpcError) as err:
        grpc_call(service, b"\xff\xff\xff\xff")
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert metric(scrape(service), "mast_collector_requests_refused_total", protocol="grpc", reason="malformed") == 1


def test_malformed_bodies_http_are_400_with_a_status(service: CollectorService) -> None:
    status, headers, body = post(service, b"\xff\xff\xff\xff")
    assert status == 400 and headers["content-type"] == "application/x-protobuf"
    assert "not an OTLP protobuf request" in status_pb2.Status.FromString(body).message
    status, headers, body = post(service, b'{"resourceSpans": 7', "application/json")
    assert status == 400 and json.loads(body)["message"].startswith("the body is not OTLP JSON")
    assert metric(scrape(service), "mast_collector_requests_refused_total", protocol="http", reason="malformed") == 2


def test_wrong_content_type_is_415(service: CollectorService) -> None:
    status, _, _ = post(service, valid_request(), "text/plain")
    assert status == 415
    status, _, _ = post(service, valid_request(), headers={"Content-Encoding": "br"})
    assert status == 415
    text = scrape(service)
    assert metric(text, "mast_collector_requests_refused_total", protocol="http", reason="unsupported_media_type") == 2


def test_oversized_requests_are_refused_without_retry(service: CollectorService) -> None:
    big = b"\x00" * (100 * 1024)
    status, _, _ = post(service, big)
    assert status == 413
    status, _, _ = post(service, gzip.compress(big), headers={"Content-Encoding": "gzip"})  # small on the wire
    assert status == 413
    with pytest.raises(grpc.RpcError) as err:
        grpc_call(service, big)
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "google.rpc.retryinfo-bin" not in dict(err.value.trailing_metadata() or ())  # do not retry this one
    text = scrape(service)
    assert metric(text, "mast_collector_requests_refused_total", protocol="http", reason="too_large") == 2
    assert metric(text, "mast_collector_requests_refused_total", protocol="grpc", reason="too_large") == 1


def test_unknown_path_and_method(service: CollectorService) -> None:
    assert post(service, valid_request(), path="/v1/metrics")[0] == 404  # /v1/logs is served (test_logs.py)
    assert post(service, b"", method="GET")[0] == 405


def test_auth_token_required_when_configured(sink: OtlpSink, make_collector) -> None:
    # prepare
    service = make_collector(sink, auth_token="tok-1", quiet_period=0.0)
    service.start(pipeline=False)
    spans = recorded(1)
    # test / verify: refused without or with a wrong token...
    with pytest.raises(grpc.RpcError) as err:
        grpc_call(service, valid_request(), (("authorization", "Bearer nope"),))
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert post(service, valid_request())[0] == 401
    # ...accepted from standard exporters carrying it
    assert service.grpc is not None and service.http is not None
    g = GrpcExporter(
        endpoint=f"127.0.0.1:{service.grpc.port}", insecure=True, headers={"authorization": "Bearer tok-1"}
    )
    h = HttpExporter(endpoint=f"http://127.0.0.1:{service.http.port}/v1/traces",
                     headers={"Authorization": "Bearer tok-1"})  # fmt: skip
    assert g.export(spans) == SpanExportResult.SUCCESS and h.export(spans) == SpanExportResult.SUCCESS
    g.shutdown()
    h.shutdown()
    text = scrape(service)
    assert metric(text, "mast_collector_requests_refused_total", protocol="grpc", reason="unauthenticated") == 1
    assert metric(text, "mast_collector_requests_refused_total", protocol="http", reason="unauthenticated") == 1
    assert metric(text, "mast_collector_spans_received_total", protocol="grpc") == len(spans)


def test_otlp_json_with_hex_ids_round_trips(service: CollectorService, sink: OtlpSink) -> None:
    # prepare: OTLP JSON as the spec writes it (hex ids, camelCase)
    spans = recorded(1)
    data = json_format.MessageToDict(encode_spans(spans))
    for rs in data["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    # test
    status, headers, body = post(service, json.dumps(data).encode(), "application/json")
    # verify
    assert status == 200 and headers["content-type"] == "application/json" and json.loads(body) == {}
    service.release_now()
    assert service.flush()
    got = sink.wait_count(len(spans))
    assert {s.key for s in got} == {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in spans}


def test_gzip_from_the_sdk_exporter(service: CollectorService) -> None:
    assert service.http is not None
    exporter = HttpExporter(endpoint=f"http://127.0.0.1:{service.http.port}/v1/traces", compression=Compression.Gzip)
    spans = recorded(1)
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    exporter.shutdown()
    assert metric(scrape(service), "mast_collector_spans_received_total", protocol="http") == len(spans)


def test_spans_with_invalid_ids_are_rejected_as_partial_success(service: CollectorService) -> None:
    request = ExportTraceServiceRequest.FromString(valid_request())
    request.resource_spans[0].scope_spans[0].spans[0].span_id = b"\x00" * 8
    response = ExportTraceServiceResponse.FromString(grpc_call(service, request.SerializeToString()))
    assert response.partial_success.rejected_spans == 1
    assert "invalid trace or span ids" in response.partial_success.error_message
    assert metric(scrape(service), "mast_collector_spans_refused_total", reason="invalid_id") == 1


def test_store_failure_asks_the_client_to_retry(sink: OtlpSink, make_collector) -> None:
    service = make_collector(sink)
    service.start(pipeline=False)

    def broken(**kw: object) -> list[int]:
        raise OSError("disk full")

    service.store.write = broken  # type: ignore[method-assign]
    with pytest.raises(grpc.RpcError) as err:
        grpc_call(service, valid_request())
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE  # retryable: nothing was acknowledged
    status, headers, _ = post(service, valid_request())
    assert status == 503 and headers["retry-after"] == "1"
    text = scrape(service)
    assert metric(text, "mast_collector_requests_refused_total", protocol="grpc", reason="internal_error") == 1
    assert metric(text, "mast_collector_requests_refused_total", protocol="http", reason="internal_error") == 1
