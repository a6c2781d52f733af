"""A collector in one process without sockets: OTLP requests go in through its ingestor, and what it exports is
captured by a downstream that decodes each payload with protobuf itself (the oracle: the bytes a real backend
receives). Each test costs milliseconds, not a gRPC server's start and stop, so the mutation runs can afford it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk.trace import ReadableSpan

from mast_otel.collector import CollectorService
from mast_otel.collector.release.exporter import SendResult
from mast_otel.collector.store.api import SpanStore
from mast_otel.spans import any_value
from tests.collector.conftest import FakeClock, FakeJudge, collector_config


@dataclass(frozen=True)
class Delivered:
    """One span as the downstream received it, with the resource's service name and the scope it came under."""

    service: str | None
    scope: InstrumentationScope
    span: Span

    @property
    def attributes(self) -> dict[str, Any]:
        return {kv.key: any_value(kv.value) for kv in self.span.attributes}

    @property
    def name(self) -> str:
        return self.span.name


class Downstream:
    """A sender that accepts every batch and keeps the decoded requests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[ExportTraceServiceRequest] = []

    def send(self, payload: bytes, timeout: float) -> SendResult:
        request = ExportTraceServiceRequest.FromString(payload)
        with self._lock:
            self._requests.append(request)
        return SendResult(True)

    def close(self) -> None:
        pass

    def spans(self) -> list[Delivered]:
        with self._lock:
            requests = list(self._requests)
        out: list[Delivered] = []
        for request in requests:
            for rs in request.resource_spans:
                service = next((any_value(kv.value) for kv in rs.resource.attributes if kv.key == "service.name"), None)
                out.extend(Delivered(service, ss.scope, s) for ss in rs.scope_spans for s in ss.spans)
        return out


@dataclass
class InProcess:
    service: CollectorService
    downstream: Downstream
    clock: FakeClock
    store: Path

    def send(self, spans: Sequence[ReadableSpan] | ExportTraceServiceRequest) -> None:
        """One OTLP/gRPC Export request, accepted."""
        request = spans if isinstance(spans, ExportTraceServiceRequest) else encode_spans(spans)
        result = self.service.ingestor.ingest(request.SerializeToString(), "grpc")
        assert result.accepted == sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)

    def release(self, seconds: float = 1.0) -> None:
        """The clock ``seconds`` on, one pipeline step, and everything due judged, released and exported."""
        self.clock.advance(seconds)
        self.service.tick()
        assert self.service.flush(timeout=10)

    def metric(self, name: str, labels: dict[str, str] | None = None) -> float:
        return self.service.metrics.registry.get_sample_value(name, labels or {}) or 0.0


@contextmanager
def in_process(
    tmp_path: Path,
    *,
    judge: Any = None,
    clock: FakeClock | None = None,
    make_store: Callable[[str], SpanStore] | None = None,
    **overrides: Any,
) -> Iterator[InProcess]:
    """A collector on a store file in ``tmp_path`` (``mast-otel report --store`` can read it; a second collector
    made on the same ``tmp_path`` after this one stopped is a restart), quiet period 1 s, max age 60 s."""
    clock = clock or FakeClock()
    downstream = Downstream()
    store = tmp_path / "in-process.db"
    config = collector_config(tmp_path, None, store=str(store), metrics="off", store_reserve=0, **overrides)
    service = CollectorService(config, judge=judge if judge is not None else FakeJudge(), clock=clock,
                               sender=downstream, store=make_store(str(store)) if make_store else None)  # fmt: skip
    try:
        yield InProcess(service, downstream, clock, store)
    finally:
        service.stop(grace=0.2)
