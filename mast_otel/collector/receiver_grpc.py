"""OTLP/gRPC receiver: ``opentelemetry.proto.collector.trace.v1.TraceService/Export``.

The method is registered with raw-bytes (de)serializers so the collector decodes, and so can tell the client
*why* a request fails and count it: UNAUTHENTICATED (bad or missing bearer token), RESOURCE_EXHAUSTED without
retry info (request over ``max_request_bytes``: do not retry it), INVALID_ARGUMENT (not an
ExportTraceServiceRequest), RESOURCE_EXHAUSTED *with* ``RetryInfo`` (store full: standard SDK exporters wait the
given delay and retry). gRPC itself refuses requests over twice ``max_request_bytes`` before they reach this code.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import DecodeError
from google.rpc import code_pb2, error_details_pb2, status_pb2  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from .auth import bearer_ok
from .ingest import Backpressure, IngestResult
from .metrics import (
    REFUSE_BACKPRESSURE,
    REFUSE_INTERNAL,
    REFUSE_MALFORMED,
    REFUSE_TOO_LARGE,
    REFUSE_UNAUTHENTICATED,
    CollectorMetrics,
)

__all__ = ["GrpcReceiver"]

_log = logging.getLogger(__name__)
SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
RETRY_INFO_KEY = "google.rpc.retryinfo-bin"  # what the OTel Python exporter reads
STATUS_DETAILS_KEY = "grpc-status-details-bin"  # the standard rich-status trailer


class GrpcReceiver:
    """A ``grpc.server`` bound to ``host:port`` (port 0 = any free port; see :attr:`port`)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        ingest: Callable[[ExportTraceServiceRequest, str, int, bytes | None], IngestResult],
        metrics: CollectorMetrics,
        token: str | None,
        max_request_bytes: int,
        threads: int,
    ) -> None:
        self._ingest = ingest
        self._metrics = metrics
        self._token = token
        self._max = max_request_bytes
        self._server = grpc.server(
            ThreadPoolExecutor(max_workers=threads, thread_name_prefix="otlp-grpc"),
            options=[
                ("grpc.max_receive_message_length", 2 * max_request_bytes),
                ("grpc.so_reuseport", 0),
            ],
        )
        handler = grpc.method_handlers_generic_handler(
            SERVICE, {"Export": grpc.unary_unary_rpc_method_handler(self._export)}
        )
        self._server.add_generic_rpc_handlers((handler,))
        try:
            address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"  # IPv6 literals need brackets
            bound = self._server.add_insecure_port(address)
        except RuntimeError as exc:
            raise OSError(f"cannot bind OTLP/gRPC receiver to {host}:{port}: {exc}") from None
        if not bound:
            raise OSError(f"cannot bind OTLP/gRPC receiver to {host}:{port}")
        self.host = host
        self.port: int = bound

    def start(self) -> None:
        self._server.start()

    def stop(self, grace: float = 2.0) -> None:
        self._server.stop(grace).wait(grace + 1)

    def _refuse(self, context: Any, reason: str, code: grpc.StatusCode, message: str) -> None:
        self._metrics.requests_refused.labels("grpc", reason).inc()
        context.abort(code, message)

    def _export(self, raw: bytes, context: Any) -> bytes:
        if self._token is not None:
            auth = dict(context.invocation_metadata()).get("authorization")
            if not bearer_ok(auth, self._token):
                self._refuse(context, REFUSE_UNAUTHENTICATED, grpc.StatusCode.UNAUTHENTICATED, "missing or bad token")
        if len(raw) > self._max:
            self._refuse(
                context, REFUSE_TOO_LARGE, grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"request of {len(raw)} bytes exceeds max_request_bytes={self._max}; send smaller batches",
            )  # fmt: skip
        try:
            request = ExportTraceServiceRequest.FromString(raw)
        except DecodeError as exc:
            self._refuse(context, REFUSE_MALFORMED, grpc.StatusCode.INVALID_ARGUMENT, f"not an OTLP request: {exc}")
            raise  # unreachable: abort raises
        try:
            result = self._ingest(request, "grpc", len(raw), raw)
        except Backpressure as exc:
            self._metrics.requests_refused.labels("grpc", REFUSE_BACKPRESSURE).inc()
            context.set_trailing_metadata(_retry_trailers(str(exc), exc.retry_after))
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
            raise  # unreachable
        except Exception as exc:  # the store failed: nothing was acknowledged, so the client must retry
            _log.exception("could not store an Export request")
            self._refuse(
                context, REFUSE_INTERNAL, grpc.StatusCode.UNAVAILABLE, f"could not store: {type(exc).__name__}"
            )
            raise  # unreachable
        response = ExportTraceServiceResponse()
        if result.rejected:
            response.partial_success.rejected_spans = result.rejected
            response.partial_success.error_message = result.message
        return response.SerializeToString()


def _retry_trailers(message: str, delay: float) -> tuple[tuple[str, bytes], ...]:
    seconds = int(delay)
    info = error_details_pb2.RetryInfo(retry_delay=Duration(seconds=seconds, nanos=int((delay - seconds) * 1e9)))
    status = status_pb2.Status(code=code_pb2.RESOURCE_EXHAUSTED, message=message)
    status.details.add().Pack(info)
    return ((RETRY_INFO_KEY, info.SerializeToString()), (STATUS_DETAILS_KEY, status.SerializeToString()))
