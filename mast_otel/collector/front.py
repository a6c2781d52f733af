"""A collector run as several processes: the front receives, routes each trace to its shard, answers the client.

``clients -> front (receivers, auth, limits) -> split by trace id -> shard k (a whole collector: store, assembly,
judge, release, export) -> downstream``

Why processes: the release path is Python holding the GIL, so one process cannot use a second core (measured in
docs/collector.md, "Cores"); shards that share nothing each run on their own core. The front does no assembly
and keeps nothing: it acknowledges a request only once every shard that got part of it has committed that part,
so a crash anywhere loses nothing acknowledged. Any part refused for now (a shard full, restarting, its disk full)
makes the whole request retryable; the parts other shards took then arrive again and are dropped there as
duplicates (counted), as a client's retry after a lost answer would be in a single process. Parts refused for
good (unreadable spans) are told to the client as rejected spans in a partial success, or as the single process's
INVALID_ARGUMENT / 400 when no part was taken.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import grpc
from google.rpc import error_details_pb2  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from .config import CollectorConfig, parse_hostport
from .ingest import Backpressure, IngestResult, Malformed
from .limits import DECODE_AMPLIFICATION, MemoryLimiter, default_memory_limit
from .metrics import REFUSE_BACKPRESSURE, REFUSE_SHARD_UNAVAILABLE, CollectorMetrics, MetricsServer
from .receiver_grpc import FORWARDED_PROTOCOL_KEY, REFUSAL_REASON_KEY, RETRY_INFO_KEY, GrpcReceiver
from .receiver_http import HttpReceiver
from .routing import Part, split_request
from .service import addresses_of, build_receivers, configured_limits
from .shard_metrics import ShardMetrics, registry_of
from .shards import ShardSet

__all__ = ["FrontService", "Router"]

_log = logging.getLogger(__name__)
_FORWARD_TIMEOUT_S = 60.0


class Router:
    """``route(raw, protocol)``: what a receiver calls instead of ingest; same results and exceptions."""

    def __init__(
        self,
        *,
        shards: int,
        export_of: Callable[[int], object],
        token: str,
        max_items: int,
        retry_after: float,
        timeout: float = _FORWARD_TIMEOUT_S,
    ) -> None:
        self._shards = shards
        self._export_of = export_of
        self._auth = ("authorization", f"Bearer {token}")
        self._max_items = max_items
        self._retry_after = retry_after
        self._timeout = timeout

    def route(self, raw: bytes, protocol: str) -> IngestResult:
        parts = split_request(raw, self._shards, max_items=self._max_items)
        metadata = (self._auth, (FORWARDED_PROTOCOL_KEY, protocol))
        calls = []
        for part in parts:
            export = self._export_of(part.shard)
            calls.append((part, None if export is None else export.future(  # type: ignore[attr-defined]
                part.request, timeout=self._timeout, metadata=metadata)))  # fmt: skip
        total = sum(p.spans for p in parts)
        rejected, messages, refused_for_good = 0, [], 0
        retry: Backpressure | None = None
        for part, call in calls:
            if call is None:
                retry = retry or self._unavailable(part, "restarting")
                continue
            try:
                answer = ExportTraceServiceResponse.FromString(call.result())
            except grpc.RpcError as err:
                outcome = self._refused(part, err)
                if isinstance(outcome, Backpressure):
                    retry = retry or outcome
                else:
                    refused_for_good += 1
                    rejected += part.spans
                    messages.append(outcome)
                continue
            if answer.partial_success.rejected_spans:
                rejected += answer.partial_success.rejected_spans
                messages.append(answer.partial_success.error_message)
        if retry is not None:
            raise retry
        if parts and refused_for_good == len(parts):
            raise Malformed("; ".join(messages))
        return IngestResult(total, rejected, "; ".join(m for m in messages if m))

    def _unavailable(self, part: Part, why: str) -> Backpressure:
        return Backpressure(f"collector shard {part.shard} is {why}; retry", self._retry_after,
                            REFUSE_SHARD_UNAVAILABLE)  # fmt: skip

    def _refused(self, part: Part, err: grpc.RpcError) -> Backpressure | str:
        """A shard's refusal of a part: retryable (a Backpressure to raise) or for good (its message)."""
        code, details = err.code(), err.details() or ""  # type: ignore[attr-defined]
        trailers = dict(err.trailing_metadata() or ())  # type: ignore[attr-defined]
        if code == grpc.StatusCode.INVALID_ARGUMENT:
            return details
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED and RETRY_INFO_KEY in trailers:
            info = error_details_pb2.RetryInfo.FromString(trailers[RETRY_INFO_KEY])
            delay = info.retry_delay.seconds + info.retry_delay.nanos / 1e9
            return Backpressure(details, delay, str(trailers.get(REFUSAL_REASON_KEY, REFUSE_BACKPRESSURE)))
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED:  # too large for good (the front checks the same limits)
            return details
        return Backpressure(f"collector shard {part.shard}: {details or code.name}", self._retry_after,
                            REFUSE_SHARD_UNAVAILABLE)  # fmt: skip


class FrontService:
    """The front process of a collector run as ``config.process_count`` processes: :meth:`start`, :meth:`stop`."""

    def __init__(self, config: CollectorConfig) -> None:
        self.config = config
        self.metrics = CollectorMetrics(services=config.metrics_services, max_services=config.metrics_max_services)
        auto = max(default_memory_limit(), config.max_request_bytes * DECODE_AMPLIFICATION)
        self.limiter = MemoryLimiter(config.memory_limit or auto)
        self.shards = ShardSet(config, count=config.process_count, max_request_bytes=config.max_request_bytes)
        self.router = Router(shards=self.shards.count, export_of=self.shards.export_callable, token=self.shards.token,
                             max_items=config.max_request_spans, retry_after=config.retry_after)  # fmt: skip
        self.metrics.memory_in_flight.set_function(lambda: self.limiter.in_flight)
        limits = configured_limits(config, self.limiter.limit)
        self.metrics.set_limits({**limits, "judge_concurrency": config.judge_concurrency * self.shards.count})
        self.grpc: GrpcReceiver | None = None
        self.http: HttpReceiver | None = None
        self.metrics_server: MetricsServer | None = None
        self._stopped = threading.Event()

    @property
    def judge_name(self) -> str:
        return self.config.judge

    def start(self) -> None:
        """Start the shards (each reloads what its store holds), then the receivers, then /metrics."""
        c = self.config
        self.shards.start()
        try:
            self.grpc, self.http = build_receivers(c, self.router.route, self.metrics, self.limiter)
            if c.metrics:
                host, port = parse_hostport(c.metrics)
                merged = ShardMetrics(self.metrics.registry, self.shards.metrics_addresses)
                self.metrics_server = MetricsServer(host, port, registry_of(merged))
        except BaseException:
            self.shards.stop(grace=5.0)
            raise
        if self.grpc is not None:
            self.grpc.start()
        if self.http is not None:
            self.http.start()
        if self.metrics_server is not None:
            self.metrics_server.start()

    def stop(self, grace: float = 2.0) -> None:
        """Stop receiving, then stop every shard as a single collector stops (what is held stays in its store)."""
        if self.grpc is not None:
            self.grpc.stop(grace)
        if self.http is not None:
            self.http.stop()
        c = self.config
        self.shards.stop(grace=min(c.judge_timeout, c.judge_shutdown_grace) + c.export_timeout + grace + 5)
        if self.metrics_server is not None:
            self.metrics_server.stop()

    def addresses(self) -> dict[str, str]:
        return addresses_of(self.grpc, self.http, self.metrics_server)
