"""A collector run as several processes: the front receives, routes each trace to its shard, answers the client.

``clients -> front (receivers, auth, limits) -> split by trace id -> shard k (a whole collector: store, assembly,
judge, release, export) -> downstream``

Why processes: the release path is Python holding the GIL, so one process cannot use a second core (measured:
benchmarks/results/2026-11-26-collector-benchmarks.md, "Cores"); shards that share nothing each run on their own
core. The front does no assembly and keeps nothing: it acknowledges a request only once every shard that got part of
it has committed that part, so a crash anywhere loses nothing acknowledged. Any part refused for now (a shard full,
restarting, its disk full) makes the whole request retryable; the parts other shards took then arrive again and are
dropped there as duplicates (counted), as a client's retry after a lost answer would be in a single process. Parts
refused for good (unreadable spans) are told to the client as rejected spans in a partial success, or as the single
process's INVALID_ARGUMENT / 400 when no part was taken.
"""

from __future__ import annotations

import logging

from mast_otel.collector.config import CollectorConfig, parse_hostport
from mast_otel.collector.limits import MemoryLimiter
from mast_otel.collector.metrics import CollectorMetrics, MetricsServer
from mast_otel.collector.receive.receiver_grpc import GrpcReceiver
from mast_otel.collector.receive.receiver_http import HttpReceiver
from mast_otel.collector.scaleout.routing import Router
from mast_otel.collector.scaleout.shard_metrics import ShardMetrics, registry_of
from mast_otel.collector.scaleout.shards import ShardSet, memory_total
from mast_otel.collector.service import addresses_of, build_receivers, configured_limits

__all__ = ["FrontService"]

_log = logging.getLogger(__name__)


class FrontService:
    """The front process of a collector run as ``config.process_count`` processes: :meth:`start`, :meth:`stop`."""

    def __init__(self, config: CollectorConfig) -> None:
        self.config = config
        self.metrics = CollectorMetrics(services=config.metrics_services, max_services=config.metrics_max_services)
        self.shards = ShardSet(config, count=config.process_count, max_request_bytes=config.max_request_bytes)
        # One share of memory_limit, like each shard process: the whole collector stays within what was configured.
        self.limiter = MemoryLimiter(self.shards.front_memory)
        self.router = Router(shards=self.shards.count, link_of=self.shards.link_of,
                             max_items=config.max_request_spans, retry_after=config.retry_after)  # fmt: skip
        self.metrics.memory_in_flight.set_function(lambda: self.limiter.in_flight)
        limits = configured_limits(config, memory_total(config, len(self.shards.shards)))
        self.metrics.set_limits({**limits, "judge_concurrency": config.judge_concurrency * self.shards.count})
        self.grpc: GrpcReceiver | None = None
        self.http: HttpReceiver | None = None
        self.metrics_server: MetricsServer | None = None

    @property
    def judge_name(self) -> str:
        return self.config.judge

    def start(self) -> None:
        """Start the shards (each reloads what its store holds), then the receivers, then /metrics."""
        c = self.config
        self.shards.start()
        try:
            self.grpc, self.http = build_receivers(
                c, self.router.route, self.metrics, self.limiter, ingest_logs=self.router.route_logs
            )  # fmt: skip
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
