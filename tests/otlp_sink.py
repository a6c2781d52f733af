"""A real OTLP trace receiver for tests: OTLP/gRPC and OTLP/HTTP (``/v1/traces``) on 127.0.0.1, free ports.

It keeps every ``ExportTraceServiceRequest`` it is sent, so a test can assert on exactly what crossed the wire::

    with otlp_sink() as sink:
        run_something(endpoint=sink.grpc_endpoint)        # or sink.http_endpoint
        spans = sink.wait_for_spans(12)                    # list[SpanRecord]

Both servers run in this process (gRPC's thread pool and a ``ThreadingHTTPServer`` thread) and are stopped when
the ``with`` block exits. ``refuse=True`` answers every export with an error (gRPC ``INVALID_ARGUMENT``, HTTP
400: both non-retryable), for tests of what a client does when the endpoint refuses.

The gRPC receiver also keeps OTLP log exports (``ExportLogsServiceRequest``, :meth:`OTLPSink.log_requests`), for
programs that write message text to log records.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from mast_otel.spans import SpanRecord, from_otlp_request

__all__ = ["OTLPSink", "otlp_sink"]

HTTP_PATH = "/v1/traces"


class OTLPSink:
    """What the receivers collected; thread-safe."""

    def __init__(self, *, refuse: bool = False) -> None:
        self.refuse = refuse
        self.grpc_port = 0
        self.http_port = 0
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._requests: list[tuple[str, ExportTraceServiceRequest]] = []  # (transport, request)
        self._log_requests: list[logs_service_pb2.ExportLogsServiceRequest] = []

    @property
    def grpc_endpoint(self) -> str:
        """``http://127.0.0.1:PORT``: the OTLP/gRPC endpoint form mast-otel's flags take."""
        return f"http://127.0.0.1:{self.grpc_port}"

    @property
    def http_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.http_port}{HTTP_PATH}"

    def requests(self, transport: str | None = None) -> list[ExportTraceServiceRequest]:
        """Requests received, oldest first; ``transport`` ("grpc" or "http") filters."""
        with self._lock:
            return [r for t, r in self._requests if transport is None or t == transport]

    def log_requests(self) -> list[logs_service_pb2.ExportLogsServiceRequest]:
        """OTLP/gRPC log exports received, oldest first."""
        with self._lock:
            return list(self._log_requests)

    def spans(self, transport: str | None = None) -> list[SpanRecord]:
        return [span for request in self.requests(transport) for span in from_otlp_request(request)]

    def wait_for_spans(self, count: int, timeout: float = 10.0) -> list[SpanRecord]:
        """Block until at least ``count`` spans have arrived; return them all (fails the test on timeout)."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while self._span_count() < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"OTLP sink got {self._span_count()} spans, expected {count}")
                self._arrived.wait(left)
        return self.spans()

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()

    def _span_count(self) -> int:
        return sum(len(ss.spans) for _, r in self._requests for rs in r.resource_spans for ss in rs.scope_spans)

    def _add(self, transport: str, request: ExportTraceServiceRequest) -> None:
        with self._arrived:
            self._requests.append((transport, request))
            self._arrived.notify_all()


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
    def __init__(self, sink: OTLPSink) -> None:
        self._sink = sink

    def Export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:
        if self._sink.refuse:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "refused by the test sink")
        self._sink._add("grpc", request)
        return trace_service_pb2.ExportTraceServiceResponse()


class _LogsService(logs_service_pb2_grpc.LogsServiceServicer):  # type: ignore[misc]
    def __init__(self, sink: OTLPSink) -> None:
        self._sink = sink

    def Export(self, request: logs_service_pb2.ExportLogsServiceRequest, context: Any) -> Any:
        if self._sink.refuse:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "refused by the test sink")
        with self._sink._lock:
            self._sink._log_requests.append(request)
        return logs_service_pb2.ExportLogsServiceResponse()


def _http_handler(sink: OTLPSink) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path.rstrip("/") != HTTP_PATH:
                self._reply(404, b"not found", "text/plain")
                return
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                body = gzip.decompress(body)
            if sink.refuse:
                self._reply(400, b"refused by the test sink", "text/plain")
                return
            request = ExportTraceServiceRequest()
            json_body = self.headers.get("Content-Type", "").startswith("application/json")
            try:
                if json_body:
                    json_format.Parse(body, request, ignore_unknown_fields=True)
                else:
                    request.ParseFromString(body)
            except Exception as exc:  # a malformed body is the client's fault: say so, keep serving
                self._reply(400, str(exc).encode(), "text/plain")
                return
            sink._add("http", request)
            response = ExportTraceServiceResponse()
            if json_body:
                self._reply(200, json_format.MessageToJson(response).encode(), "application/json")
            else:
                self._reply(200, response.SerializeToString(), "application/x-protobuf")

        def _reply(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # quiet: no line per request
            pass

    return Handler


@contextmanager
def otlp_sink(*, refuse: bool = False) -> Iterator[OTLPSink]:
    """Start both receivers on 127.0.0.1 (free ports), yield the sink, stop them on exit."""
    sink = OTLPSink(refuse=refuse)
    grpc_server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_TraceService(sink), grpc_server)
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(_LogsService(sink), grpc_server)
    sink.grpc_port = grpc_server.add_insecure_port("127.0.0.1:0")
    grpc_server.start()
    http_server = ThreadingHTTPServer(("127.0.0.1", 0), _http_handler(sink))
    http_server.daemon_threads = True
    sink.http_port = http_server.server_address[1]
    http_thread = threading.Thread(target=http_server.serve_forever, name="otlp-sink-http", daemon=True)
    http_thread.start()
    try:
        yield sink
    finally:
        http_server.shutdown()
        http_server.server_close()
        http_thread.join(5)
        grpc_server.stop(grace=None).wait(5)
