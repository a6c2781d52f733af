"""Ingest: one decoded Export request -> stored segments -> spans held in the assembler, before the receiver acks.

Each ``ScopeSpans`` of the request is stored as received (a segment, see :mod:`.store`); per span only what
assembly needs is kept in memory (ids, parent, conversation ids, where its bytes are). Checks, in order: room in
the store (else the whole request is refused with :class:`Backpressure`, which the receivers turn into
RESOURCE_EXHAUSTED + RetryInfo or 503 + Retry-After), ids valid (else the span is rejected and the client told
via partial success), duplicate (same trace_id+span_id held, being judged, or released: ignored, counted), late
(its conversation was already judged: straight to the outbox unlabelled, counted).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

from mast_otel import semconv as sc
from mast_otel.adapters import ROOT_CANDIDATE_KEYS, root_candidate
from mast_otel.spans import any_value

from .assembler import Assembler
from .encoding import RawScopeSpans, ScopeSpansView, scope_spans, scope_spans_slices, string_value
from .metrics import REFUSE_BACKPRESSURE, CollectorMetrics
from .store import NewSegment, OutRow, SpanStore, Tomb

__all__ = ["Backpressure", "IngestResult", "Ingestor", "span_facts"]

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


# (trace_id, span_id, parent_id, index of the span in its ScopeSpans, conv_root, conv_id, conv_parent)
_Fact = tuple[bytes, bytes, bytes, int, bool, str | None, str | None]


def span_facts(attributes: Mapping[str, bytes]) -> tuple[bool, str | None, str | None, str | None]:
    """(is a conversation root, conversation id, parent conversation id, framework) from a ``RawScopeSpans``
    span's attributes. The framework is read for roots only (it labels the conversation's metrics)."""
    get = attributes.get
    root = string_value(get(sc.GEN_AI_OPERATION_NAME)) == sc.OP_INVOKE_WORKFLOW
    if not root and any(key in attributes for key in ROOT_CANDIDATE_KEYS):
        # Another instrumentation's agent/workflow span is held like a recorder root; the adapters decide, once
        # the unit is whole, whether it is a conversation (mast_otel.judge.foreign).
        root = root_candidate(lambda key: string_value(get(key)))
    conv_id = string_value(get(sc.GEN_AI_CONVERSATION_ID))
    raw_parent = get(sc.CONVERSATION_PARENT_ID)  # usually absent: no call then
    conv_parent = string_value(raw_parent) if raw_parent else None
    framework = string_value(get(sc.MAST_FRAMEWORK)) if root else None
    return root, conv_id or None, conv_parent or None, framework or None


@dataclass(slots=True)
class _Scope:
    resource: int
    data: bytes
    spans: list[_Fact]
    invalid: int
    fresh: list[_Fact] = field(default_factory=list)
    late: list[tuple[_Fact, str]] = field(default_factory=list)

    def bodies(self, facts: Iterable[_Fact]) -> tuple[ScopeSpansView, list[bytes]]:
        """The layout of this ScopeSpans (parsed only when needed: late spans, passthrough) and those spans' bytes."""
        view = ScopeSpansView.parse(self.data)
        return view, [self.data[slice(*view.spans[f[3]])] for f in facts]


@dataclass(slots=True)
class _Released:
    """What the store says about a trace's released spans (for duplicates and late spans)."""

    ids: set[bytes] = field(default_factory=set)
    unit_of: dict[bytes, str] = field(default_factory=dict)  # span id -> conversation key
    conv_unit: dict[str, str] = field(default_factory=dict)  # conversation id -> conversation key


_NOTHING_RELEASED = _Released()  # shared, never modified


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
        self.on_queued: Callable[[], None] = lambda: None

    def ingest(
        self, request: ExportTraceServiceRequest, protocol: str, size: int, raw: bytes | None = None
    ) -> IngestResult:
        """Store and hold the request's spans. ``raw`` is the request as received (protobuf), when there is one:
        its ScopeSpans are stored as sliced from it instead of re-encoded."""
        now = self._clock()
        scopes, pairs = self._decode(request, raw)
        rejected = sum(s.invalid for s in scopes)
        if rejected:
            self._metrics.spans_refused.labels("invalid_id").inc(rejected)
        total = sum(len(s.spans) for s in scopes)
        with self._lock:
            self._check_room(scopes, size)
            duplicates = self._classify(scopes)
            segments = [s for s in scopes if s.fresh]
            outbox = self._outbox(scopes)
            tombs = self._late_tombs(scopes, now)
            ids = self._store.write(
                segments=[NewSegment(s.resource, now, s.data, exported=not self._hold) for s in segments],
                outbox=outbox,
                tombs=tombs,
            )
            for scope, segment in zip(segments, ids, strict=True):
                self._assembler.add_many(scope.fresh, segment, now)
        late = sum(len(s.late) for s in scopes)
        self._metrics.spans_received.labels(protocol).inc(total - duplicates)
        if duplicates:
            self._metrics.spans_duplicated.inc(duplicates)
        if late:
            self._metrics.spans_late.inc(late)
        for service, framework in pairs:
            self._metrics.label_pair(service, framework)
        if outbox:
            self.on_queued()
        message = f"{rejected} span(s) with invalid trace or span ids" if rejected else ""
        return IngestResult(total, rejected, message)

    # -- steps -----------------------------------------------------------------------------------------------
    def _decode(
        self, request: ExportTraceServiceRequest, raw: bytes | None
    ) -> tuple[list[_Scope], set[tuple[str, str]]]:
        scopes: list[_Scope] = []
        pairs: set[tuple[str, str]] = set()
        slices = scope_spans_slices(raw) if raw is not None else None
        if slices is not None and [len(x) for x in slices] != [len(rs.scope_spans) for rs in request.resource_spans]:
            slices = None  # cannot happen for bytes that parsed into ``request``; re-encode to be safe
        for i, rs in enumerate(request.resource_spans):
            resource = self._store.resource_id(rs.resource.SerializeToString(), rs.schema_url)
            service: str | None = None
            for j, ss in enumerate(rs.scope_spans):
                if not ss.spans:
                    continue
                data = slices[i][j] if slices is not None else ss.SerializeToString()
                facts: list[_Fact] = []
                invalid = 0
                for index, span in enumerate(RawScopeSpans.FromString(data).spans):
                    tid, sid = span.trace_id, span.span_id
                    if len(tid) != 16 or len(sid) != 8 or tid == _ZERO_TRACE or sid == _ZERO_SPAN:
                        invalid += 1
                        continue
                    root, conv_id, conv_parent, framework = span_facts(span.attributes)
                    if root:
                        if service is None:
                            service = _service_name(rs) or "unknown"
                        pairs.add((service, framework or "unknown"))
                    parent = span.parent_span_id
                    facts.append((tid, sid, parent if len(parent) == 8 else b"", index, root, conv_id, conv_parent))
                scopes.append(_Scope(resource, data, facts, invalid))
        return scopes, pairs

    def _check_room(self, scopes: list[_Scope], size: int) -> None:
        _, pending_bytes = self._store.counts()
        if pending_bytes and pending_bytes + size > self._max_bytes:
            self._refuse(scopes, f"store full: {pending_bytes} bytes pending (max_pending_bytes={self._max_bytes})")
        pending = self._assembler.pending_traces
        if pending:
            has = self._assembler.has_trace
            new = sum(1 for tid in {f[0] for s in scopes for f in s.spans} if not has(tid))
            if pending + new > self._max_traces:
                self._refuse(scopes, f"too many traces pending: {pending} (max_pending_traces={self._max_traces})")

    def _refuse(self, scopes: list[_Scope], message: str) -> None:
        self._metrics.spans_refused.labels(REFUSE_BACKPRESSURE).inc(sum(len(s.spans) for s in scopes))
        _log.warning("refusing an Export request with backpressure: %s; raise the limit or add capacity", message)
        raise Backpressure(message, self._retry_after)

    def _classify(self, scopes: list[_Scope]) -> int:
        """Split each scope's spans into fresh, late and duplicate; returns the number of duplicates."""
        asm = self._assembler
        context: dict[bytes, tuple[Mapping[bytes, object], AbstractSet[bytes], _Released]] = {}
        seen: set[bytes] = set()
        late_unit: dict[bytes, str] = {}
        duplicates = 0
        for scope in scopes:
            fresh = scope.fresh.append
            for fact in scope.spans:
                tid, sid, parent = fact[0], fact[1], fact[2]
                ctx = context.get(tid)
                if ctx is None:
                    ctx = context[tid] = (asm.held_map(tid), asm.inflight_members(tid), self._released(tid))
                held, inflight, rel = ctx
                key = tid + sid
                if key in seen or sid in held or (inflight and sid in inflight) or (rel.ids and sid in rel.ids):
                    duplicates += 1
                    continue
                seen.add(key)
                if parent in held or not (inflight or rel.ids or late_unit):
                    fresh(fact)  # the common case: nothing of this trace was released yet
                    continue
                unit = late_unit.get(tid + parent)
                if unit is None and inflight:
                    found = asm.inflight_unit(tid, parent, fact[5])
                    if found is not None:
                        unit = found.key
                        asm.adopt_late(found, sid)
                if unit is None:
                    conv_id = fact[5]
                    unit = rel.unit_of.get(parent) or (rel.conv_unit.get(conv_id) if conv_id else None)
                if unit is not None:
                    late_unit[key] = unit
                    scope.late.append((fact, unit))
                else:
                    fresh(fact)
        return duplicates

    def _released(self, trace_id: bytes) -> _Released:
        tombs = self._store.tombs(trace_id)
        if not tombs:
            return _NOTHING_RELEASED  # the usual case: spare building an empty _Released per trace
        rel = _Released()
        for tomb in tombs:
            ids = tomb.ids()
            rel.ids |= ids
            if tomb.unit is not None:
                rel.unit_of.update(dict.fromkeys(ids, tomb.unit))
                rel.conv_unit.update(dict.fromkeys((c for c in tomb.conv_ids.split(",") if c), tomb.unit))
        return rel

    def _outbox(self, scopes: list[_Scope]) -> list[OutRow]:
        """Passthrough: the fresh spans go out at once; late spans go out unlabelled in both modes."""
        out: list[OutRow] = []
        for s in scopes:
            if s.late:
                view, bodies = s.bodies(f for f, _ in s.late)
                out.append(OutRow(s.resource, scope_spans(view, bodies), len(bodies)))
            if not self._hold and s.fresh:
                if len(s.fresh) == len(s.spans) and not s.invalid:  # every span of the ScopeSpans
                    data = s.data
                else:
                    view, bodies = s.bodies(s.fresh)
                    data = scope_spans(view, bodies)
                out.append(OutRow(s.resource, data, len(s.fresh)))
        return out

    @staticmethod
    def _late_tombs(scopes: list[_Scope], now: float) -> list[Tomb]:
        by_unit: dict[tuple[bytes, str], list[bytes]] = {}
        for s in scopes:
            for fact, unit in s.late:
                by_unit.setdefault((fact[0], unit), []).append(fact[1])
        return [Tomb(tid, b"".join(ids), now, unit) for (tid, unit), ids in by_unit.items()]


def _service_name(resource_spans: ResourceSpans) -> str | None:
    for kv in resource_spans.resource.attributes:
        if kv.key == "service.name":
            value = any_value(kv.value)
            return str(value) if value is not None else None
    return None
