"""``mast-otel collector``: the OTLP service that labels conversations with MAST failure modes.

Data flows one way: receive (OTLP gRPC/HTTP) -> store (SQLite WAL, before the ack) -> assemble (whole
conversations) -> judge -> label (span protobuf edits) -> export (OTLP downstream), with Prometheus ``/metrics``
on the side. :class:`CollectorService` wires the stages; :class:`CollectorConfig` is the whole configuration.
See docs/collector.md for the manual.
"""

from __future__ import annotations

from mast_otel.collector.config import CollectorConfig, ConfigError
from mast_otel.collector.service import CollectorService

__all__ = ["CollectorConfig", "CollectorService", "ConfigError"]
