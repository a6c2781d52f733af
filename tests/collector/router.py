"""A tiny OTLP/gRPC trace-id router: what the OpenTelemetry Collector's ``loadbalancing`` exporter does with
``routing_key: traceID``, in 60 lines, because the real otelcol cannot be installed here.

Every span of a trace goes to the same backend (hash of the trace id), each backend gets one request per incoming
request with the original resource and scope. If any backend refuses, the client is told UNAVAILABLE and retries
the whole request; the collectors drop the duplicates (idempotent on trace_id+span_id).
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.servers import free_port

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def shard(trace_id: bytes, n: int) -> int:
    return int.from_bytes(hashlib.blake2b(trace_id, digest_size=8).digest(), "big") % n


class TraceIdRouter:
    def __init__(self, backends: list[str]) -> None:
        self.port = free_port()
        self._channels = [grpc.insecure_channel(b) for b in backends]
        self._calls = [c.unary_unary(EXPORT) for c in self._channels]
        self.routed = [0] * len(backends)  # spans sent to each backend
        self._server = grpc.server(ThreadPoolExecutor(4), options=[("grpc.so_reuseport", 0)])
        handler = grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.trace.v1.TraceService",
            {"Export": grpc.unary_unary_rpc_method_handler(self._export)},
        )
        self._server.add_generic_rpc_handlers((handler,))
        self._server.add_insecure_port(f"127.0.0.1:{self.port}")

    def start(self) -> TraceIdRouter:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop(0).wait(5)
        for c in self._channels:
            c.close()

    def _export(self, raw: bytes, context: Any) -> bytes:
        request = ExportTraceServiceRequest.FromString(raw)
        n = len(self._calls)
        parts = [ExportTraceServiceRequest() for _ in range(n)]
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                targets: dict[int, Any] = {}
                for span in ss.spans:
                    i = shard(span.trace_id, n)
                    if i not in targets:
                        out_rs = parts[i].resource_spans.add(resource=rs.resource, schema_url=rs.schema_url)
                        targets[i] = out_rs.scope_spans.add(scope=ss.scope, schema_url=ss.schema_url)
                    targets[i].spans.append(span)
        for i, part in enumerate(parts):
            if not part.resource_spans:
                continue
            try:
                self._calls[i](part.SerializeToString(), timeout=10)
            except grpc.RpcError as exc:
                context.abort(grpc.StatusCode.UNAVAILABLE, f"backend {i}: {exc.code()}")
            self.routed[i] += sum(len(ss.spans) for rs in part.resource_spans for ss in rs.scope_spans)
        return b""
