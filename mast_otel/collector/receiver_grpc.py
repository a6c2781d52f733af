"""OTLP/gRPC receiver: ``opentelemetry.proto.collector.trace.v1.TraceService/Export``.

The method is registered with raw-bytes (de)serializers so the collector decodes, and so can tell the client
*why* a request fails and count it: UNAUTHENTICATED (bad or missing bearer token), INVALID_ARGUMENT (not an
ExportTraceServiceRequest, or one that could not be read back once stored: never retry it), RESOURCE_EXHAUSTED
without retry info (over ``max_request_bytes`` or another per-request limit: do not retry it as is),
RESOURCE_EXHAUSTED *with* ``RetryInfo`` (store full, disk full or ``memory_limit`` reached: standard SDK exporters
wait the given delay and retry), UNAVAILABLE (the store failed: retry). gRPC itself refuses requests over twice
``max_request_bytes`` before they reach this code, and holds at most ``4 x receiver_threads`` calls at once (more
get RESOURCE_EXHAUSTED from gRPC).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc import code_pb2, error_details_pb2, status_pb2  # type: ignore[import-untyped]

from .auth import bearer_ok
from .ingest import IngestResult
from .limits import MemoryLimiter, OverLimit
from .metrics import REFUSE_TOO_LARGE, REFUSE_UNAUTHENTICATED, CollectorMetrics
from .refusal import Refusal, RefusalKind, export_response, ingest_refusal, over_limit_refusal

__all__ = ["GrpcReceiver"]

_log = logging.getLogger(__name__)
SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
RETRY_INFO_KEY = "google.rpc.retryinfo-bin"  # what the OTel Python exporter reads
STATUS_DETAILS_KEY = "grpc-status-details-bin"  # the standard rich-status trailer
_CODES = {
    RefusalKind.MALFORMED: grpc.StatusCode.INVALID_ARGUMENT,
    RefusalKind.TOO_LARGE: grpc.StatusCode.RESOURCE_EXHAUSTED,  # without RetryInfo: do not retry as is
    RefusalKind.STORE_FAILED: grpc.StatusCode.UNAVAILABLE,  # the exporter's own backoff: no delay to give
}


class GrpcReceiver:
    """A ``grpc.server`` bound to ``host:port`` (port 0 = any free port; see :attr:`port`)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        ingest: Callable[[bytes, str], IngestResult],
        metrics: CollectorMetrics,
        token: str | None,
        max_request_bytes: int,
        threads: int,
        limiter: MemoryLimiter,
        retry_after: float = 1.0,
    ) -> None:
        self._ingest = ingest
        self._metrics = metrics
        self._token = token
        self._max = max_request_bytes
        self._limiter = limiter
        self._retry_after = retry_after
        self._server = grpc.server(
            ThreadPoolExecutor(max_workers=threads, thread_name_prefix="otlp-grpc"),
            options=[
                ("grpc.max_receive_message_length", 2 * max_request_bytes),
                ("grpc.so_reuseport", 0),
            ],
            maximum_concurrent_rpcs=4 * threads,  # calls queued for a thread hold their bytes: bounded
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

    def _retry(self, context: Any, reason: str, message: str, delay: float) -> None:
        self._metrics.requests_refused.labels("grpc", reason).inc()
        context.set_trailing_metadata(_retry_trailers(message, delay))
        context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, message)

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
            charged = self._limiter.acquire(self._limiter.cost(len(raw)))
        except OverLimit as exc:
            self._answer(context, over_limit_refusal(exc, self._retry_after))
            raise  # unreachable: abort raises
        try:
            result = self._ingest(raw, "grpc")
        except Exception as exc:
            self._answer(context, ingest_refusal(exc, _log))
            raise  # unreachable: abort raises
        finally:
            self._limiter.release(charged)
        return export_response(result).SerializeToString()

    def _answer(self, context: Any, refusal: Refusal) -> None:
        """Count the refusal and abort the call with the status (and, to retry later, the delay) it calls for."""
        if refusal.kind is RefusalKind.RETRY_LATER:
            self._retry(context, refusal.reason, refusal.message, refusal.retry_after)
        elif refusal.kind is RefusalKind.STORE_FAILED:
            self._refuse(context, refusal.reason, _CODES[refusal.kind], f"could not store: {refusal.message}")
        else:
            self._refuse(context, refusal.reason, _CODES[refusal.kind], refusal.message)


def _retry_trailers(message: str, delay: float) -> tuple[tuple[str, bytes], ...]:
    seconds = int(delay)
    info = error_details_pb2.RetryInfo(retry_delay=Duration(seconds=seconds, nanos=int((delay - seconds) * 1e9)))
    status = status_pb2.Status(code=code_pb2.RESOURCE_EXHAUSTED, message=message)
    status.details.add().Pack(info)
    return ((RETRY_INFO_KEY, info.SerializeToString()), (STATUS_DETAILS_KEY, status.SerializeToString()))
