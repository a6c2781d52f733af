"""A real downstream OTLP receiver for the collector tests: OTLP/gRPC + OTLP/HTTP on 127.0.0.1.

It keeps every span it is sent, with the resource and scope it came under, its events and links, and when it
arrived; and every log record (OTLP/gRPC LogsService, POST /v1/logs), as its serialized bytes with its resource and
scope. ``stop()`` then ``start()`` on the same ports simulates a downstream outage (connections refused);
``fail_with`` answers with an error instead (e.g. ``grpc.StatusCode.UNAVAILABLE``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from mast_otel.spans import any_value

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"


@dataclass
class SinkLog:
    """One log record as the sink received it: its bytes (to compare with what was sent) and where it came under."""

    data: bytes  # the serialized LogRecord
    resource: bytes  # the serialized Resource
    scope: bytes  # the serialized InstrumentationScope
    transport: str = ""


@dataclass
class SinkSpan:
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    links: list[tuple[str, dict[str, Any]]]
    resource: dict[str, Any]
    scope: str
    end_ns: int
    arrived: float = field(default=0.0)
    transport: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return self.trace_id, self.span_id


def _attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in kvs}


class OtlpSink:
    def __init__(self) -> None:
        from tests.servers import free_port

        self.grpc_port = free_port()
        self.http_port = free_port()
        self.fail_with: grpc.StatusCode | None = None
        self._lock = threading.Condition()
        self._spans: list[SinkSpan] = []
        self._logs: list[SinkLog] = []
        self.requests = 0
        self._grpc: grpc.Server | None = None
        self._http: ThreadingHTTPServer | None = None
        self._known = False  # once an endpoint was read (or the sink started), its ports are kept

    @property
    def grpc_endpoint(self) -> str:
        self._known = True
        return f"http://127.0.0.1:{self.grpc_port}"

    @property
    def http_endpoint(self) -> str:
        self._known = True
        return f"http://127.0.0.1:{self.http_port}/v1/traces"

    @property
    def http_logs_endpoint(self) -> str:
        self._known = True
        return f"http://127.0.0.1:{self.http_port}/v1/logs"

    # -- servers ---------------------------------------------------------------------------------------------
    def start(self) -> OtlpSink:
        server = grpc.server(ThreadPoolExecutor(4), options=[("grpc.so_reuseport", 0)])
        handler = grpc.method_handlers_generic_handler(
            SERVICE, {"Export": grpc.unary_unary_rpc_method_handler(self._grpc_export)}
        )
        logs_handler = grpc.method_handlers_generic_handler(
            LOGS_SERVICE, {"Export": grpc.unary_unary_rpc_method_handler(self._grpc_export_logs)}
        )
        server.add_generic_rpc_handlers((handler, logs_handler))
        for _ in range(50):  # the port may linger briefly after a stop
            try:
                if server.add_insecure_port(f"127.0.0.1:{self.grpc_port}"):
                    break
            except RuntimeError:
                pass
            self.grpc_port = self._port_again(self.grpc_port)
        server.start()
        self._grpc = server
        sink = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/v1/logs":
                    sink._keep_logs(ExportLogsServiceRequest.FromString(body), "http")
                    payload = ExportLogsServiceResponse().SerializeToString()
                else:
                    sink._keep(ExportTraceServiceRequest.FromString(body), "http")
                    payload = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        for attempt in range(50):
            try:
                self._http = ThreadingHTTPServer(("127.0.0.1", self.http_port), Handler)
                break
            except OSError:
                if attempt == 49:
                    raise
                self.http_port = self._port_again(self.http_port)
        assert self._http is not None
        self._known = True
        self._http.daemon_threads = True
        threading.Thread(target=self._http.serve_forever, args=(0.1,), daemon=True).start()
        return self

    def _port_again(self, port: int) -> int:
        """The port to try next: while no test knows it yet, another free one (free_port's port can be taken
        between its check and the bind, by any connection's local port); once known, the same one a little later
        (it may linger briefly after a stop)."""
        if not self._known:
            from tests.servers import free_port

            return free_port()
        time.sleep(0.1)
        return port

    def stop(self) -> None:
        if self._grpc is not None:
            self._grpc.stop(0).wait(5)
            self._grpc = None
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None

    def _grpc_export(self, raw: bytes, context: Any) -> bytes:
        if self.fail_with is not None:
            context.abort(self.fail_with, "sink told to fail")
        self._keep(ExportTraceServiceRequest.FromString(raw), "grpc")
        return ExportTraceServiceResponse().SerializeToString()

    def _grpc_export_logs(self, raw: bytes, context: Any) -> bytes:
        if self.fail_with is not None:
            context.abort(self.fail_with, "sink told to fail")
        self._keep_logs(ExportLogsServiceRequest.FromString(raw), "grpc")
        return ExportLogsServiceResponse().SerializeToString()

    def _keep_logs(self, request: ExportLogsServiceRequest, transport: str) -> None:
        got = [
            SinkLog(r.SerializeToString(), rl.resource.SerializeToString(), sl.scope.SerializeToString(), transport)
            for rl in request.resource_logs
            for sl in rl.scope_logs
            for r in sl.log_records
        ]
        with self._lock:
            self.requests += 1
            self._logs.extend(got)
            self._lock.notify_all()

    def logs(self) -> list[SinkLog]:
        with self._lock:
            return list(self._logs)

    def wait_logs(self, n: int, timeout: float = 30.0) -> list[SinkLog]:
        """Wait until ``n`` log records arrived (counting repeats)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self._logs) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{n} log records expected in {timeout}s; {len(self._logs)} arrived")
                self._lock.wait(min(left, 0.2))
            return list(self._logs)

    def _keep(self, request: ExportTraceServiceRequest, transport: str) -> None:
        now = time.time()
        got = []
        for rs in request.resource_spans:
            resource = _attrs(rs.resource.attributes)
            for ss in rs.scope_spans:
                for s in ss.spans:
                    got.append(
                        SinkSpan(
                            trace_id=s.trace_id.hex(),
                            span_id=s.span_id.hex(),
                            parent_span_id=s.parent_span_id.hex(),
                            name=s.name,
                            attributes=_attrs(s.attributes),
                            events=[(e.name, _attrs(e.attributes)) for e in s.events],
                            links=[(link.span_id.hex(), _attrs(link.attributes)) for link in s.links],
                            resource=resource,
                            scope=ss.scope.name,
                            end_ns=s.end_time_unix_nano,
                            arrived=now,
                            transport=transport,
                        )
                    )
        with self._lock:
            self.requests += 1
            self._spans.extend(got)
            self._lock.notify_all()

    # -- queries ---------------------------------------------------------------------------------------------
    def spans(self) -> list[SinkSpan]:
        with self._lock:
            return list(self._spans)

    def by_key(self) -> dict[tuple[str, str], SinkSpan]:
        return {s.key: s for s in self.spans()}

    def wait_for(self, predicate: Callable[[list[SinkSpan]], bool], timeout: float = 30.0) -> list[SinkSpan]:
        """Wait until ``predicate(spans)`` holds; AssertionError (with what arrived) if it never does."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not predicate(self._spans):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"sink condition not met in {timeout}s; {len(self._spans)} spans arrived")
                self._lock.wait(min(left, 0.2))
            return list(self._spans)

    def wait_count(self, n: int, timeout: float = 30.0) -> list[SinkSpan]:
        """Wait until ``n`` distinct spans (trace_id+span_id) arrived."""
        return self.wait_for(lambda spans: len({s.key for s in spans}) >= n, timeout)
