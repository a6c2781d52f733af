"""Ingest: one decoded Export request -> stored span rows -> held in the assembler, before the receiver acks.

Per span it keeps only what assembly needs (parent, conversation ids) next to the untouched protobuf body. Checks,
in order: ids valid (else the span is rejected and the client told via partial success), room in the store (else
the whole request is refused with :class:`Backpressure`, which receivers turn into RESOURCE_EXHAUSTED + RetryInfo
or 503 + Retry-After), duplicate (same trace_id+span_id: ignored, counted), late (its conversation was already
judged: queued for export unlabelled, counted).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

from mast_otel import semconv as sc
from mast_otel.spans import any_value

from .assembler import Assembler
from .metrics import REFUSE_BACKPRESSURE, CollectorMetrics
from .store import HELD, QUEUED, Envelope, NewSpan, SpanStore

__all__ = ["Backpressure", "IngestResult", "Ingestor"]

_log = logging.getLogger(__name__)
_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)


class Backpressure(Exception):
    """The store is full: refuse the whole request and tell the client to retry after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class IngestResult:
    accepted: int
    rejected: int = 0
    message: str = ""


@dataclass(slots=True)
class _Row:
    span: NewSpan
    late_unit: str | None


class Ingestor:
    """Receivers call :meth:`ingest`; it returns only once the spans are committed to the store."""

    def __init__(
        self,
        *,
        store: SpanStore,
        assembler: Assembler,
        lock: threading.RLock,
        metrics: CollectorMetrics,
        hold: bool,
        max_pending_traces: int,
        max_pending_bytes: int,
        retry_after: float,
        clock: Callable[[], float],
        recently_judged: dict[bytes, float],
    ) -> None:
        self._store = store
        self._assembler = assembler
        self._lock = lock
        self._metrics = metrics
        self._hold = hold
        self._max_traces = max_pending_traces
        self._max_bytes = max_pending_bytes
        self._retry_after = retry_after
        self._clock = clock
        self._recently_judged = recently_judged
        self.on_queued: Callable[[], None] = lambda: None

    def ingest(self, request: ExportTraceServiceRequest, protocol: str, size: int) -> IngestResult:
        now = self._clock()
        rows, rejected, pairs = self._decode(request, now)
        if rejected:
            self._metrics.spans_refused.labels("invalid_id").inc(rejected)
        if not rows:
            return IngestResult(0, rejected, "spans with invalid trace or span ids" if rejected else "")
        with self._lock:
            self._check_room(rows, size)
            self._mark_late(rows)
            inserted = self._store.insert([r.span for r in rows])
            queued = 0
            for row, added in zip(rows, inserted, strict=True):
                s = row.span
                if not added:
                    continue
                if row.late_unit is None:
                    self._assembler.add(
                        s.trace_id, s.span_id, s.parent_id, s.received,
                        conv_root=s.conv_root, conv_id=s.conv_id, conv_parent=s.conv_parent,
                    )  # fmt: skip
                if s.state & QUEUED:
                    queued += 1
        accepted = sum(inserted)
        duplicates = len(rows) - accepted
        late = sum(1 for r, added in zip(rows, inserted, strict=True) if added and r.late_unit is not None)
        self._metrics.spans_received.labels(protocol).inc(accepted)
        if duplicates:
            self._metrics.spans_duplicated.inc(duplicates)
        if late:
            self._metrics.spans_late.inc(late)
        for service, framework in pairs:
            self._metrics.label_pair(service, framework)
        if queued:
            self.on_queued()
        message = f"{rejected} span(s) with invalid trace or span ids" if rejected else ""
        return IngestResult(accepted + duplicates, rejected, message)

    def _check_room(self, rows: list[_Row], size: int) -> None:
        _, _, pending_bytes = self._store.counts()
        if pending_bytes and pending_bytes + size > self._max_bytes:
            self._refuse(rows, f"store full: {pending_bytes} bytes pending (max_pending_bytes={self._max_bytes})")
        pending = self._assembler.pending_traces
        if pending:
            new = {r.span.trace_id for r in rows if not self._assembler.has_trace(r.span.trace_id)}
            if pending + len(new) > self._max_traces:
                self._refuse(rows, f"too many traces pending: {pending} (max_pending_traces={self._max_traces})")

    def _refuse(self, rows: list[_Row], message: str) -> None:
        self._metrics.spans_refused.labels(REFUSE_BACKPRESSURE).inc(len(rows))
        _log.warning("refusing an Export request with backpressure: %s; raise the limit or add capacity", message)
        raise Backpressure(message, self._retry_after)

    def _mark_late(self, rows: list[_Row]) -> None:
        """Late spans (their conversation was already taken for judging) are queued unlabelled, never held."""
        late_here: dict[bytes, str] = {}
        for row in rows:
            s = row.span
            tid = s.trace_id
            if self._assembler.holds(tid, s.parent_id):
                continue
            unit_key = late_here.get(s.parent_id) if s.parent_id else None
            if unit_key is None:
                inflight = self._assembler.inflight_unit(tid, s.parent_id, s.conv_id)
                if inflight is not None:
                    unit_key = inflight.key
                    self._assembler.adopt_late(inflight, s.span_id)
                elif tid in self._recently_judged:
                    unit_key = self._judged_unit(tid, s.parent_id, s.conv_id)
            if unit_key is not None:
                row.late_unit = unit_key
                late_here[s.span_id] = unit_key
                row.span = NewSpan(
                    trace_id=tid, span_id=s.span_id, parent_id=s.parent_id, envelope=s.envelope, body=s.body,
                    received=s.received, state=QUEUED, conv_root=s.conv_root, conv_id=s.conv_id,
                    conv_parent=s.conv_parent, unit=unit_key,
                )  # fmt: skip

    def _judged_unit(self, trace_id: bytes, parent_id: bytes, conv_id: str | None) -> str | None:
        if parent_id:
            unit = self._store.unit_of(trace_id, parent_id)
            if unit is not None:
                return unit
        if conv_id:
            for unit, conv_ids in self._store.units(trace_id):
                if conv_id in conv_ids:
                    return unit
        return None

    def _decode(self, request: ExportTraceServiceRequest, now: float) -> tuple[list[_Row], int, set[tuple[str, str]]]:
        rows: list[_Row] = []
        rejected = 0
        pairs: set[tuple[str, str]] = set()
        state = HELD if self._hold else HELD | QUEUED
        op_key, cid_key, cpar_key, fw_key = (
            sc.GEN_AI_OPERATION_NAME, sc.GEN_AI_CONVERSATION_ID, sc.CONVERSATION_PARENT_ID, sc.MAST_FRAMEWORK,
        )  # fmt: skip
        workflow = sc.OP_INVOKE_WORKFLOW
        for rs in request.resource_spans:
            resource = rs.resource.SerializeToString()
            service: str | None = None
            for ss in rs.scope_spans:
                envelope = self._store.envelope_id(
                    Envelope(resource, rs.schema_url, ss.scope.SerializeToString(), ss.schema_url)
                )
                for span in ss.spans:
                    tid, sid = span.trace_id, span.span_id
                    if len(tid) != 16 or len(sid) != 8 or tid == _ZERO_TRACE or sid == _ZERO_SPAN:
                        rejected += 1
                        continue
                    conv_root = False
                    conv_id = conv_parent = framework = None
                    for kv in span.attributes:
                        key = kv.key
                        if key == op_key:
                            conv_root = kv.value.string_value == workflow
                        elif key == cid_key:
                            conv_id = kv.value.string_value or None
                        elif key == cpar_key:
                            conv_parent = kv.value.string_value or None
                        elif key == fw_key:
                            framework = kv.value.string_value or None
                    if conv_root:
                        if service is None:
                            service = _service_name(rs) or ""
                        pairs.add((service or "unknown", framework or "unknown"))
                    parent = span.parent_span_id if len(span.parent_span_id) == 8 else b""
                    rows.append(
                        _Row(
                            NewSpan(
                                trace_id=tid,
                                span_id=sid,
                                parent_id=parent,
                                envelope=envelope,
                                body=span.SerializeToString(),
                                received=now,
                                state=state,
                                conv_root=conv_root,
                                conv_id=conv_id,
                                conv_parent=conv_parent,
                                error=span.status.code == 2,
                            ),
                            None,
                        )
                    )
        return rows, rejected, pairs


def _service_name(resource_spans: ResourceSpans) -> str | None:
    for kv in resource_spans.resource.attributes:
        if kv.key == "service.name":
            value = any_value(kv.value)
            return str(value) if value is not None else None
    return None
