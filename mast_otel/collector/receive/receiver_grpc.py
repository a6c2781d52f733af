"""OTLP/gRPC receiver: ``opentelemetry.proto.collector.trace.v1.TraceService/Export`` and, given ``ingest_logs``,
``opentelemetry.proto.collector.logs.v1.LogsService/Export`` (same checks and answers; refusals counted under
``protocol="grpc_logs"``; see :mod:`.logs_ingest`).

The method is registered with raw-bytes (de)serializers so the collector decodes, and so can tell the client
*why* a request fails and count it: UNAUTHENTICATED (bad or missing bearer token), INVALID_ARGUMENT (not an
ExportTraceServiceRequest, or one that could not be read back once stored: never retry it), RESOURCE_EXHAUSTED
without retry info (over ``max_request_bytes`` or another per-request limit: do not retry it as is),
RESOURCE_EXHAUSTED *with* ``RetryInfo`` (every receiver thread busy past ``admission_wait``, store full, disk full
or ``memory_limit`` reached: standard OTLP exporters wait the given delay and retry), UNAVAILABLE (the store failed:
retry). gRPC itself refuses requests over twice ``max_request_bytes`` before they reach this code.

Admission is judged by resources, not by a count of calls (:mod:`.admission`): a call runs on one of
``receiver_threads`` threads; when all are busy it waits, first come first served, up to ``admission_wait`` seconds
for one, and only then is refused with RESOURCE_EXHAUSTED + RetryInfo (``retry_after``), counted as ``concurrency``.
Each call is charged :data:`UNREAD_CALL_BYTES` to the :class:`~.limits.MemoryLimiter` from its arrival until its
body is read; a call the limit has no room for is refused at once (RetryInfo, ``memory_limit``). Once read, a body
is charged its decoding cost instead. So a burst of small calls waits briefly and is stored, and the refusals come
only when threads stay busy past the wait or memory, the store or its disk is short. gRPC's own cap
(``maximum_concurrent_rpcs``) is not used: it answers RESOURCE_EXHAUSTED *without* RetryInfo, which the OTLP
specification tells exporters not to retry (the Go exporter drops the batch), and it counts nothing.

Why waiting and refused calls cost bounded bytes: the method is registered as client-streaming (on the wire a
unary call is the same HTTP/2 stream), so gRPC Python reads a call's message only when the handler asks for it,
on a receiver thread, where the bytes are then charged to the :class:`~.limits.MemoryLimiter`. Until then the
message stays with the client, held back by HTTP/2 flow control: gRPC core buffers at most a stream's window for
it (64 KiB: :data:`UNREAD_CALL_BYTES`) and opens the window to the message's size only once a read is pending.
That needs the bandwidth-delay probe off (``grpc.http2.bdp_probe``): with it, core raises every stream's initial
window toward the whole message, and a waiting or refused call was measured holding most of its body. A refused
call's body is never asked for, and the stream is reset once the status is sent. So each waiting call costs one
window and a few hundred bytes of call state, charged; at most ``receiver_threads`` bodies are read at once. The
price of the probe off: past its first 64 KiB, a body flows only once it is read (one round trip later).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc import code_pb2, error_details_pb2, status_pb2  # type: ignore[import-untyped]

from mast_otel.collector.limits import MemoryLimiter, OverLimit
from mast_otel.collector.metrics import (
    REFUSE_MALFORMED,
    REFUSE_TOO_LARGE,
    REFUSE_UNAUTHENTICATED,
    CollectorMetrics,
)
from mast_otel.collector.receive.admission import AdmissionPool, body_read, refusal_of_this_call
from mast_otel.collector.receive.auth import bearer_ok
from mast_otel.collector.receive.ingest import IngestResult
from mast_otel.collector.receive.refusal import (
    Refusal,
    RefusalKind,
    export_response,
    ingest_refusal,
    over_limit_refusal,
)

__all__ = ["GrpcReceiver"]

_log = logging.getLogger(__name__)
SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
METHOD = f"/{SERVICE}/Export"
LOGS_METHOD = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
UNREAD_CALL_BYTES = 64 * 1024  # what gRPC core buffers of a call not read yet: one stream window (bdp probe off)
DEFAULT_ADMISSION_WAIT = 1.0  # seconds a call may wait for a receiver thread before it is told to retry
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
        admission_wait: float = DEFAULT_ADMISSION_WAIT,
        ingest_logs: Callable[[bytes, str], IngestResult] | None = None,
    ) -> None:
        self._ingest = ingest
        self._ingest_logs = ingest_logs
        self._metrics = metrics
        self._token = token
        self._max = max_request_bytes
        self._limiter = limiter
        self._retry_after = retry_after
        self._pool = AdmissionPool(
            threads, wait=admission_wait, limiter=limiter, call_bytes=UNREAD_CALL_BYTES, retry_after=retry_after,
            name="otlp-grpc",
        )  # fmt: skip
        self._server = grpc.server(
            self._pool,
            options=[
                ("grpc.max_receive_message_length", 2 * max_request_bytes),
                ("grpc.so_reuseport", 0),
                ("grpc.http2.bdp_probe", 0),  # windows grow only for a read pending: see the module doc
            ],
            maximum_concurrent_rpcs=None,  # the receiver admits calls itself (AdmissionPool): see the module doc
        )
        self._server.add_generic_rpc_handlers((_ExportService(self),))
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
        self._pool.close()

    @property
    def admitted(self) -> int:
        """Export calls on a receiver thread."""
        return self._pool.running

    @property
    def waiting(self) -> int:
        """Export calls waiting for a receiver thread."""
        return self._pool.waiting

    def _refuse(self, context: Any, reason: str, code: grpc.StatusCode, message: str, protocol: str = "grpc") -> None:
        self._metrics.requests_refused.labels(protocol, reason).inc()
        context.abort(code, message)

    def _retry(self, context: Any, reason: str, message: str, delay: float, protocol: str = "grpc") -> None:
        self._metrics.requests_refused.labels(protocol, reason).inc()
        context.set_trailing_metadata(_retry_trailers(message, delay))
        context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, message)

    def _call(self, messages: Iterator[bytes], context: Any, protocol: str = "grpc") -> bytes:
        """An Export call: refused by the admission (its message never read), or, on a receiver thread: check the
        token, then read the one request message, then store. ``protocol``: ``grpc`` (traces) or ``grpc_logs``."""
        refusal = refusal_of_this_call()
        if refusal is not None:
            if context.is_active():  # else the client gave up waiting: nobody to tell, nothing to count
                self._answer(context, refusal, protocol)
            return b""  # unreachable when answered: abort raises
        if self._token is not None:
            auth = dict(context.invocation_metadata()).get("authorization")
            if not bearer_ok(auth, self._token):
                self._refuse(
                    context, REFUSE_UNAUTHENTICATED, grpc.StatusCode.UNAUTHENTICATED, "missing or bad token", protocol
                )
        raw = next(messages, None)
        body_read()  # its window's charge gives way to the decoding charge (see the module doc)
        if raw is None:
            if not context.is_active():
                return b""  # cancelled, or over the message size gRPC accepts: gRPC has answered
            self._refuse(context, REFUSE_MALFORMED, grpc.StatusCode.INVALID_ARGUMENT, "no request message", protocol)
            return b""  # unreachable: abort raises
        return self._export(raw, context, protocol)

    def _export(self, raw: bytes, context: Any, protocol: str = "grpc") -> bytes:
        if len(raw) > self._max:
            self._refuse(
                context, REFUSE_TOO_LARGE, grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"request of {len(raw)} bytes exceeds max_request_bytes={self._max}; send smaller batches", protocol,
            )  # fmt: skip
        try:
            charged = self._limiter.acquire(self._limiter.cost(len(raw)))
        except OverLimit as exc:
            self._answer(context, over_limit_refusal(exc, self._retry_after), protocol)
            raise  # unreachable: abort raises
        ingest = self._ingest_logs if protocol == "grpc_logs" and self._ingest_logs is not None else self._ingest
        try:
            result = ingest(raw, "grpc")
        except Exception as exc:
            self._answer(context, ingest_refusal(exc, _log), protocol)
            raise  # unreachable: abort raises
        finally:
            self._limiter.release(charged)
        return export_response(result).SerializeToString()

    def _answer(self, context: Any, refusal: Refusal, protocol: str = "grpc") -> None:
        """Count the refusal and abort the call with the status (and, to retry later, the delay) it calls for."""
        if refusal.kind is RefusalKind.RETRY_LATER:
            self._retry(context, refusal.reason, refusal.message, refusal.retry_after, protocol)
        elif refusal.kind is RefusalKind.STORE_FAILED:
            self._refuse(context, refusal.reason, _CODES[refusal.kind], f"could not store: {refusal.message}",
                         protocol)  # fmt: skip
        else:
            self._refuse(context, refusal.reason, _CODES[refusal.kind], refusal.message, protocol)


class _ExportService(grpc.GenericRpcHandler):  # type: ignore[misc]
    """Finds the handler of each arriving call, on gRPC's serving thread: Export (admitted or refused by the
    :class:`AdmissionPool` the server runs it on), or None (UNIMPLEMENTED, answered by gRPC) for any other method."""

    def __init__(self, receiver: GrpcReceiver) -> None:
        self._export = grpc.stream_unary_rpc_method_handler(receiver._call)
        self._logs = receiver._ingest_logs is not None
        self._export_logs = grpc.stream_unary_rpc_method_handler(partial(receiver._call, protocol="grpc_logs"))

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method = handler_call_details.method  # type: ignore[attr-defined]
        if method == LOGS_METHOD and self._logs:
            return self._export_logs
        return self._export if method == METHOD else None


def _retry_trailers(message: str, delay: float) -> tuple[tuple[str, bytes], ...]:
    seconds = int(delay)
    info = error_details_pb2.RetryInfo(retry_delay=Duration(seconds=seconds, nanos=int((delay - seconds) * 1e9)))
    status = status_pb2.Status(code=code_pb2.RESOURCE_EXHAUSTED, message=message)
    status.details.add().Pack(info)
    return ((RETRY_INFO_KEY, info.SerializeToString()), (STATUS_DETAILS_KEY, status.SerializeToString()))
