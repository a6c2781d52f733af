"""Export: queued spans in the store -> OTLP downstream (gRPC or HTTP), retried with backoff until accepted.

Spans leave the store only after the downstream acknowledged them, so while it is down they wait (bounded by
``max_pending_bytes``, past which receivers push back on clients) and go out when it returns. Requests are
re-encoded from the stored protobufs (see :mod:`.encoding`). Retryable failures (gRPC UNAVAILABLE,
RESOURCE_EXHAUSTED with retry info, DEADLINE_EXCEEDED...; HTTP 429/502/503/504, connection errors) back off
exponentially up to ``export_backoff_max``, honouring RetryInfo/Retry-After; a batch the downstream finds too
large is split; any other refusal drops the batch, counted in ``mast_collector_spans_dropped_total``.

The same class forwards OTLP logs (``signal="logs"``): the queue is the store's ``log_outbox`` (``ScopeLogs`` as
received, :mod:`.logs_ingest`), the call is ``LogsService/Export`` or a POST to ``/v1/logs``, and the counts are the
``mast_collector_log_records_*`` ones. The two messages share their wire layout, so batching, splitting and
partial success read them alike.
"""

from __future__ import annotations

import http.client
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

import grpc
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from mast_otel.collector.config import export_target
from mast_otel.collector.encoding import ScopeSpansView, encode_request, scope_spans
from mast_otel.collector.metrics import DROP_EXPORT_PARTIAL, DROP_EXPORT_REJECTED, CollectorMetrics
from mast_otel.collector.receive.receiver_grpc import RETRY_INFO_KEY, SERVICE
from mast_otel.collector.store.api import OutRow, SpanStore

__all__ = ["Exporter", "GrpcSender", "HttpSender", "SendResult", "Sender", "make_sender"]

_log = logging.getLogger(__name__)
_INITIAL_BACKOFF = 0.5
# After a batch that was not full, the exporter waits this long for releases to gather: under load, an Export call
# per released conversation cost a fifth of the CPU (benchmarks section 6); idle, a conversation still leaves at once.
_LINGER_S = 0.05
_RETRYABLE_GRPC = {
    grpc.StatusCode.UNAVAILABLE: "unavailable",
    grpc.StatusCode.DEADLINE_EXCEEDED: "timeout",
    grpc.StatusCode.ABORTED: "error",
    grpc.StatusCode.CANCELLED: "error",
    grpc.StatusCode.OUT_OF_RANGE: "error",
    grpc.StatusCode.DATA_LOSS: "error",
}
_RETRYABLE_HTTP = {429: "throttled", 502: "unavailable", 503: "unavailable", 504: "timeout"}


@dataclass(frozen=True, slots=True)
class SendResult:
    ok: bool
    retryable: bool = False
    reason: str = ""  # a metrics.RETRY_REASONS value when retryable
    retry_after: float | None = None
    rejected: int = 0  # spans the downstream refused in a partial success
    too_large: bool = False
    message: str = ""


class Sender(Protocol):
    def send(self, payload: bytes, timeout: float) -> SendResult: ...
    def close(self) -> None: ...


def _partial(data: bytes) -> tuple[int, str]:
    try:
        response = ExportTraceServiceResponse.FromString(data)
    except DecodeError:
        return 0, ""
    return response.partial_success.rejected_spans, response.partial_success.error_message


class GrpcSender:
    """OTLP/gRPC client on one channel (reconnects by itself, quickly: the channel backoff is capped at 5 s)."""

    def __init__(self, target: str, headers: Mapping[str, str], service: str = SERVICE) -> None:
        self._channel = grpc.insecure_channel(
            target,
            options=[
                ("grpc.initial_reconnect_backoff_ms", 250),
                ("grpc.min_reconnect_backoff_ms", 250),
                ("grpc.max_reconnect_backoff_ms", 5000),
            ],
        )
        self._call = self._channel.unary_unary(f"/{service}/Export")
        self._metadata = tuple(headers.items())

    def send(self, payload: bytes, timeout: float) -> SendResult:
        try:
            data = self._call(payload, timeout=timeout, metadata=self._metadata)
        except grpc.RpcError as exc:
            code = exc.code()
            detail = str(exc.details())
            retry_after = _retry_info(exc)
            if code in _RETRYABLE_GRPC:
                return SendResult(False, True, _RETRYABLE_GRPC[code], retry_after, message=detail)
            if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                if retry_after is None and "larger than max" in detail:
                    return SendResult(False, too_large=True, message=detail)
                return SendResult(False, True, "throttled", retry_after, message=detail)
            return SendResult(False, message=f"{code.name}: {detail}")
        rejected, message = _partial(data)
        return SendResult(True, rejected=rejected, message=message)

    def close(self) -> None:
        self._channel.close()


def _retry_info(exc: grpc.RpcError) -> float | None:
    try:
        trailers = dict(exc.trailing_metadata() or ())
    except Exception:
        return None
    raw = trailers.get(RETRY_INFO_KEY)
    if not isinstance(raw, bytes):
        return None
    info = error_details_pb2.RetryInfo.FromString(raw)
    return float(info.retry_delay.seconds + info.retry_delay.nanos / 1e9)


class HttpSender:
    """OTLP/HTTP protobuf client on one keep-alive connection (reopened after any error)."""

    def __init__(self, url: str, headers: Mapping[str, str]) -> None:
        parts = urlsplit(url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or (443 if self._https else 80)
        self._path = parts.path + (f"?{parts.query}" if parts.query else "")
        self._headers = {"Content-Type": "application/x-protobuf", **headers}
        self._conn: http.client.HTTPConnection | None = None

    def send(self, payload: bytes, timeout: float) -> SendResult:
        try:
            if self._conn is None:
                cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
                self._conn = cls(self._host, self._port, timeout=timeout)
            self._conn.timeout = timeout
            self._conn.request("POST", self._path, body=payload, headers=self._headers)
            response = self._conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            reason = "timeout" if isinstance(exc, TimeoutError) else "unavailable"
            return SendResult(False, True, reason, message=f"{type(exc).__name__}: {exc}")
        status = response.status
        if response.getheader("Connection", "").lower() == "close":
            self.close()
        if 200 <= status < 300:
            rejected, message = _partial(data)
            return SendResult(True, rejected=rejected, message=message)
        if status in _RETRYABLE_HTTP:
            return SendResult(False, True, _RETRYABLE_HTTP[status], _retry_after(response.getheader("Retry-After")),
                              message=f"HTTP {status}")  # fmt: skip
        if status == 413:
            return SendResult(False, too_large=True, message="HTTP 413")
        return SendResult(False, message=f"HTTP {status}: {data[:200]!r}")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None  # an HTTP date: use our own backoff


def make_sender(endpoint: str, headers: Mapping[str, str], service: str = SERVICE) -> Sender:
    """A sender to ``endpoint``; ``service`` is the gRPC service called (the trace service, or the logs one)."""
    protocol, target = export_target(endpoint, "/v1/traces" if service == SERVICE else "/v1/logs")
    return GrpcSender(target, headers, service) if protocol == "grpc" else HttpSender(target, headers)


class Exporter:
    """queued spans (or log records) -> batch (<= batch_spans, ~batch_bytes) -> sender -> mark exported | back off |
    drop."""

    def __init__(
        self,
        *,
        store: SpanStore,
        sender: Sender,
        metrics: CollectorMetrics,
        batch_spans: int,
        batch_bytes: int,
        timeout: float,
        backoff_max: float,
        clock: Callable[[], float],
        signal: str = "spans",
    ) -> None:
        self._store = store
        self._logs = signal == "logs"
        self._exported = metrics.log_records_exported if self._logs else metrics.spans_exported
        self._dropped = metrics.log_records_dropped if self._logs else metrics.spans_dropped
        self._what = "log records" if self._logs else "spans"
        self._sender = sender
        self._metrics = metrics
        self._batch_spans = batch_spans
        self._limit = batch_spans
        self._batch_bytes = batch_bytes
        self._timeout = timeout
        self._backoff_max = backoff_max
        self._backoff = 0.0
        self._clock = clock
        self._wake = threading.Event()
        self._down = False
        self._last_batch = 0  # spans in the last batch sent

    def wake(self) -> None:
        self._wake.set()

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                delay = self.export_once()
            except Exception:
                if stop.is_set():
                    return
                _log.exception("export step failed; retrying")
                delay = max(_INITIAL_BACKOFF, self._backoff)
            if delay is None:
                self._wake.wait(1.0)
                self._wake.clear()
            elif delay > 0:
                stop.wait(delay)
            elif self._last_batch < self._limit:  # a part batch went out: let releases gather before the next
                stop.wait(_LINGER_S)

    def export_once(self) -> float | None:
        """Send one batch. None: nothing queued; 0: sent (or dropped), go on; > 0: wait this long, then retry."""
        rows = (self._store.log_outbox if self._logs else self._store.outbox)(self._limit, self._batch_bytes)
        if not rows:
            return None
        n = sum(r.spans for r in rows)
        self._last_batch = n
        payload = encode_request(((r.resource, r.data) for r in rows), self._store.resource)
        result = self._sender.send(payload, self._timeout)
        ids = [r.id for r in rows]
        if result.ok:
            self._drop(ids)
            self._exported.inc(n - result.rejected)
            if result.rejected:
                self._dropped.labels(DROP_EXPORT_PARTIAL).inc(result.rejected)
                _log.warning("downstream rejected %d of %d %s: %s", result.rejected, n, self._what, result.message)
            self._recovered()
            if self._limit < self._batch_spans:  # a 413 halved the batch once; grow back while it is accepted
                self._limit = min(self._batch_spans, self._limit * 2)
            return 0.0
        if result.too_large and (len(rows) > 1 or rows[0].spans > 1):
            if len(rows) == 1:
                self._split(rows[0])
            self._limit = max(1, n // 2)
            _log.warning("downstream refused a batch of %d %s as too large; sending at most %d", n, self._what,
                         self._limit)  # fmt: skip
            return 0.0
        if result.retryable:
            self._metrics.export_retries.labels(result.reason).inc()
            self._backoff = min(self._backoff_max, max(_INITIAL_BACKOFF, self._backoff * 2))
            delay = min(self._backoff_max, result.retry_after) if result.retry_after is not None else self._backoff
            if not self._down:
                _log.warning("downstream unavailable (%s); %s wait in the store, retrying every <= %gs",
                             result.message, self._what, self._backoff_max)  # fmt: skip
            self._down = True
            return delay
        self._drop(ids)
        self._dropped.labels(DROP_EXPORT_REJECTED).inc(n)
        _log.error("downstream refused %d %s permanently (%s); dropped", n, self._what, result.message)
        self._recovered()
        return 0.0

    def _split(self, row: OutRow) -> None:
        """Replace one outbox row by two halves (the downstream refused it as too large)."""
        view = ScopeSpansView.parse(row.data)
        bodies = [row.data[s:e] for s, e in view.spans]
        half = len(bodies) // 2
        halves = [OutRow(row.resource, scope_spans(view, part), len(part)) for part in (bodies[:half], bodies[half:])]
        if self._logs:
            self._store.write(log_outbox=halves, drop_log_outbox=[row.id])
        else:
            self._store.write(outbox=halves, drop_outbox=[row.id])

    def _drop(self, ids: list[int]) -> None:
        """The rows the downstream acknowledged (or refused for good) leave the store."""
        if self._logs:
            self._store.write(drop_log_outbox=ids)
        else:
            self._store.write(drop_outbox=ids)

    def _recovered(self) -> None:
        if self._down:
            _log.info("downstream is back; exporting the queued spans")
        self._down = False
        self._backoff = 0.0
