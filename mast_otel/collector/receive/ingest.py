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
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans

from mast_otel import semconv as sc
from mast_otel.adapters import (
    ANSWER_ATTRIBUTES,
    ROOT_CANDIDATE_KEYS,
    ROOT_CANDIDATE_NAMES,
    SpanMapping,
    evidence_of,
    root_candidate,
)
from mast_otel.collector.assemble.assembler import Assembler, Root
from mast_otel.collector.assemble.namespace import may_carry_owned, strip_owned
from mast_otel.collector.assemble.summaries import SpanSummaries, summary_record
from mast_otel.collector.assemble.trace_groups import Note, TraceGroups
from mast_otel.collector.encoding import (
    RawScopeSpans,
    ScopeSpansView,
    ShallowRequest,
    ShallowResource,
    scope_spans,
    string_value,
)
from mast_otel.collector.metrics import REFUSE_BACKPRESSURE, REFUSE_DISK_FULL, CollectorMetrics
from mast_otel.collector.store.api import NewSegment, OutRow, SpanStore, Tomb
from mast_otel.spans import SpanRecord, any_value, service_name

__all__ = [
    "Backpressure", "IngestResult", "Ingestor", "ItemBudget", "Malformed", "TooLarge", "parse_error_reason",
    "resource_service", "resource_spans_of", "root_window", "span_evidence", "span_facts", "tenant_of",
]  # fmt: skip

_log = logging.getLogger(__name__)
_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)


class Backpressure(Exception):
    """The store is full: refuse the whole request and tell the client to retry after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: float, reason: str = REFUSE_BACKPRESSURE) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.reason = reason  # a metrics.REFUSE_* value


class Malformed(ValueError):
    """The request can never be stored as sent (INVALID_ARGUMENT / 400): not OTLP, or not readable back."""


class TooLarge(ValueError):
    """The request alone exceeds a limit (RESOURCE_EXHAUSTED without retry info / 413): retrying cannot help."""


@dataclass(frozen=True, slots=True)
class IngestResult:
    accepted: int
    rejected: int = 0
    message: str = ""


# (trace_id, span_id, parent_id, index of the span in its ScopeSpans, conv_root, conv_id, conv_parent)
_Fact = tuple[bytes, bytes, bytes, int, Root, str | None, str | None]


class ItemBudget:
    """What a request may hold: ``max_items`` ResourceSpans, ScopeSpans and spans together, counted level by level
    from shallow parses (a few bytes per element, in C) before any per-element work."""

    def __init__(self, max_items: int) -> None:
        self._left = max_items
        self._max = max_items

    def take(self, items: int) -> None:
        self._left -= items
        if self._left < 0:
            raise TooLarge(f"the request holds more than max_request_spans={self._max} spans, ScopeSpans and "
                           "ResourceSpans; send smaller batches")  # fmt: skip


def resource_spans_of(raw: bytes, budget: ItemBudget) -> Iterator[tuple[bytes, ShallowResource]]:
    """Each non-empty ResourceSpans of a serialized request: its bytes and its shallow parse (``resource`` and
    ``scope_spans`` as bytes, as protobuf would read them); raises :class:`Malformed` for bytes protobuf cannot read,
    :class:`TooLarge` past the budget."""
    try:
        request = ShallowRequest.FromString(raw)
    except DecodeError as exc:
        raise Malformed(f"the body is not an OTLP protobuf request: {parse_error_reason(exc)}") from None
    budget.take(len(request.resource_spans))
    for rs_data in list(request.resource_spans):
        if not rs_data:
            continue
        try:
            rs = ShallowResource.parse(rs_data)
        except DecodeError as exc:
            raise Malformed(f"a ResourceSpans is not valid protobuf: {parse_error_reason(exc)}") from None
        budget.take(len(rs.scope_spans))
        yield rs_data, rs


def root_window(span: Any) -> Root:
    """A foreign root candidate's (start, end) in ns: the assembler holds a candidate that starts after the
    root above it ended as a run of its own (an instrumentation that leaves its context attached on the thread
    parents the next run on the finished root). A mast-otel root needs none: its conversation id places it."""
    return span.start_time_unix_nano, span.end_time_unix_nano


def span_evidence(span: Any, run_keys: tuple[str, ...] = ()) -> list[str]:
    """What ties a ``RawScopeSpans`` span's trace to other traces (the adapters' rules, :func:`evidence_of`)."""
    attributes = span.attributes
    return evidence_of(
        span.trace_id.hex(),
        (link.trace_id.hex() for link in span.links if len(link.trace_id) == 16),
        lambda key: string_value(attributes[key]) if key in attributes else None,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        run_keys=run_keys,
    )


def carries_evidence(span: Any, keys: tuple[str, ...]) -> bool:
    """Whether a ``RawScopeSpans`` span may tie its trace to others: a link, or one of ``keys`` (the answers'
    attribute and the declared run ids), read without decoding the span."""
    return bool(span.links) or any(k in span.attributes for k in keys)


def tenant_of(resource: bytes, attributes: tuple[str, ...]) -> str:
    """The tenant a serialized Resource belongs to: the values of ``attributes`` (``tenant_attributes``), joined
    (``""`` when it carries none of them; the Resource is decoded only when it may)."""
    if not attributes or not any(a.encode() in resource for a in attributes):
        return ""
    try:
        values = {kv.key: any_value(kv.value) for kv in Resource.FromString(resource).attributes}
    except (DecodeError, RecursionError):
        return ""  # refused as Malformed once the scope's spans are checked
    return "\x1f".join(str(values.get(a, "")) for a in attributes)


def span_facts(
    attributes: Mapping[str, bytes], name: bytes = b"", scope: bytes = b"", mappings: Sequence[SpanMapping] = ()
) -> tuple[bool, str | None, str | None, str | None]:
    """(is a conversation root, conversation id, parent conversation id, framework) from a ``RawScopeSpans``
    span's attributes (and its name and scope's name; an agent's run in the user's span ``mappings`` is a root
    too). The framework is read for roots only (it labels the conversation's metrics)."""
    get = attributes.get
    span_type = get(sc.MAST_SPAN_TYPE)
    if span_type is None and (scope, name) in ROOT_CANDIDATE_NAMES:
        return True, None, None, None
    if span_type is None:
        # Another instrumentation's span. Its agent/workflow span is held like a recorder root; the adapters
        # decide, once the unit is whole, whether it is a conversation (mast_otel.judge.foreign). Its conversation
        # id is not read: a framework's gen_ai.conversation.id (ADK's session, one per Pydantic AI run) groups
        # spans by its own rules, and placing by it made root-less "conversations" of them.
        root = any(key in attributes for key in ROOT_CANDIDATE_KEYS) and root_candidate(lambda k: string_value(get(k)))
        if not root and mappings and any(key in attributes for m in mappings for key in m.root_keys):
            root = root_candidate(lambda k: string_value(get(k)), name.decode(errors="replace"),
                                  scope.decode(errors="replace"), mappings)  # fmt: skip
        return root, None, None, None
    # A mast-otel root is known by mast-otel's own marker, never by gen_ai.operation.name (ADK's invoke_workflow).
    root = string_value(span_type) == sc.SPAN_TYPE_CONVERSATION
    conv_id = string_value(get(sc.GEN_AI_CONVERSATION_ID))
    raw_parent = get(sc.CONVERSATION_PARENT_ID)  # usually absent: no call then
    conv_parent = string_value(raw_parent) if raw_parent else None
    framework = string_value(get(sc.MAST_FRAMEWORK)) if root else None
    return root, conv_id or None, conv_parent or None, framework or None


_ResourceKey = tuple[bytes, str]  # (serialized Resource, schema URL); stored only with spans that use it


@dataclass(slots=True)
class _Scope:
    resource: _ResourceKey
    data: bytes
    spans: list[_Fact]
    invalid: int
    kept: dict[int, SpanRecord] | None = None  # the spans' summaries, by index (.summaries)
    fresh: list[_Fact] = field(default_factory=list)
    late: list[tuple[_Fact, str]] = field(default_factory=list)
    evidence: list[tuple[bytes, list[str]]] = field(default_factory=list)  # (trace, what ties it to other traces)
    tenant: str = ""  # whose spans these are (tenant_attributes of the resource)
    service: str = ""  # the resource's service.name, when the spans carry evidence (a history's owner)

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
        max_request_spans: int = 200_000,
        summaries: SpanSummaries | None = None,
        groups: TraceGroups | None = None,
        tenant_attributes: tuple[str, ...] = ("service.namespace",),
        run_id_attributes: tuple[str, ...] = (),
        mappings: Sequence[SpanMapping] = (),
    ) -> None:
        self._mappings = mappings  # the user's span mappings: their agent runs are held as roots
        self._store = store
        self._assembler = assembler
        self._lock = lock
        self._metrics = metrics
        self._hold = hold
        self._max_traces = max_pending_traces
        self._max_bytes = max_pending_bytes
        self._max_items = max_request_spans
        self._retry_after = retry_after
        self._clock = clock
        self._summaries = summaries  # None: the judge reads span content, so release decodes the spans anyway
        self._groups = groups  # None: each trace is judged on its own
        self._tenant_attributes = tenant_attributes
        self._run_keys = run_id_attributes
        self._evidence_keys = (*ANSWER_ATTRIBUTES, *run_id_attributes)
        self.on_queued: Callable[[], None] = lambda: None
        self.disk_full: Callable[[], bool] = lambda: False

    def ingest(self, raw: bytes, protocol: str) -> IngestResult:
        """Store and hold the spans of ``raw``, a serialized ExportTraceServiceRequest. Its ScopeSpans are stored
        as received (sliced, not re-encoded). Raises :class:`Malformed` or :class:`TooLarge` (permanent) and
        :class:`Backpressure` (retryable); returns only once the spans are committed."""
        now = self._clock()
        scopes, pairs = self._decode(raw)
        rejected = sum(s.invalid for s in scopes)
        if rejected:
            self._metrics.spans_refused.labels("invalid_id").inc(rejected)
        total = sum(len(s.spans) for s in scopes)
        with self._lock:
            self._check_room(scopes, len(raw))
            duplicates = self._classify(scopes)
            stored = [s for s in scopes if s.fresh or s.late]
            tombs = self._late_tombs(scopes, now)
            try:
                rid = self._resource_ids(stored)
                segments = [s for s in stored if s.fresh]
                outbox = self._outbox(stored, rid)
                ids = self._store.write(
                    segments=[NewSegment(rid[s.resource], now, s.data, exported=not self._hold) for s in segments],
                    outbox=outbox,
                    tombs=tombs,
                )
            except sqlite3.OperationalError as exc:
                if self.disk_full():
                    message = f"the store's disk is full ({exc})"
                    raise Backpressure(message, self._retry_after, REFUSE_DISK_FULL) from None
                raise
            if self._groups is not None:  # (before the spans are held: the pipeline takes both under this lock)
                for scope in stored:
                    for trace_id, keys in scope.evidence:
                        self._groups.submit(Note(trace_id, scope.tenant, scope.service, keys, now))
            for scope, segment in zip(segments, ids, strict=True):
                self._assembler.add_many(scope.fresh, segment, now, scope.tenant)
                if scope.kept is not None and self._summaries is not None:
                    if scope.kept:
                        self._summaries.put(segment, rid[scope.resource], scope.kept)
                    else:
                        self._summaries.put_foreign(segment)
        late = sum(len(s.late) for s in scopes)
        self._metrics.spans_received.labels(protocol).inc(total - duplicates)
        if duplicates:
            self._metrics.spans_duplicated.inc(duplicates)
        if late:
            self._metrics.spans_late.inc(late)
        for service, framework, version in pairs:  # their series at 0 before the first verdict counts
            self._metrics.label_pair(service, framework, version)
        if outbox:
            self.on_queued()
        message = f"{rejected} span(s) with invalid trace or span ids" if rejected else ""
        return IngestResult(total, rejected, message)

    # -- steps -----------------------------------------------------------------------------------------------
    def _decode(self, raw: bytes) -> tuple[list[_Scope], set[tuple[str, str, str | None]]]:
        """The request's ScopeSpans with their spans' facts, checked so that whatever is stored can be read back.

        Each level is first read shallowly (nested messages as bytes, counted in C), so the element count is
        known and capped before any per-element Python work; then each ScopeSpans that carries valid spans is
        parsed in full once: what release and the judge will do (release's span walker accepts whatever the full
        parse accepts; the fuzz tier checks that).
        """
        budget = ItemBudget(self._max_items)
        scopes: list[_Scope] = []
        pairs: set[tuple[str, str, str | None]] = set()  # (service, framework, service.version) of the roots
        for _, rs in resource_spans_of(raw, budget):
            key: _ResourceKey = (rs.resource, rs.schema_url)
            resource_checked = False
            service: str | None = None
            version: str | None = None
            tenant = tenant_of(rs.resource, self._tenant_attributes)
            summary_service: tuple[str | None] | None = None  # computed once per resource, when summaries are kept
            for data in list(rs.scope_spans):
                if not data:
                    continue
                try:
                    raw_scope = RawScopeSpans.FromString(data)
                except DecodeError as exc:
                    raise Malformed(f"a ScopeSpans is not valid protobuf: {parse_error_reason(exc)}") from None
                spans, scope_name = raw_scope.spans, raw_scope.scope.name
                budget.take(len(spans))
                facts: list[_Fact] = []
                evidence: list[tuple[bytes, list[str]]] = []
                summarise = self._summaries is not None and self._summaries.has_room()
                valid: list[Any] = []  # each fact's span (when summaries are kept), for the summaries below
                invalid = 0
                for index, span in enumerate(spans):
                    tid, sid = span.trace_id, span.span_id
                    if len(tid) != 16 or len(sid) != 8 or tid == _ZERO_TRACE or sid == _ZERO_SPAN:
                        invalid += 1
                        continue
                    root, conv_id, conv_parent, framework = span_facts(span.attributes, span.name, scope_name,
                                                                       self._mappings)  # fmt: skip
                    if root:
                        if service is None:
                            service = resource_service(rs.resource) or "unknown"
                            version = resource_service(rs.resource, "service.version")
                        pairs.add((service, framework or "unknown", version))
                    as_root: Root = root_window(span) if root and conv_id is None else root
                    if conv_id is None and carries_evidence(span, self._evidence_keys):
                        evidence.append((tid, span_evidence(span, self._run_keys)))
                    parent = span.parent_span_id
                    facts.append((tid, sid, parent if len(parent) == 8 else b"", index, as_root, conv_id, conv_parent))
                    if summarise:
                        valid.append(span)
                if facts:
                    if not resource_checked:
                        _readable(Resource, rs.resource, "the Resource")
                        resource_checked = True
                    data = self._checked(data, len(spans))
                kept = None
                if facts and summarise:
                    kept = {}  # a scope of other instrumentations' spans: noted, not summarised
                    if _native(valid):
                        if summary_service is None:
                            summary_service = (service_name(Resource.FromString(rs.resource)),)
                        service_of = summary_service[0]
                        kept = {f[3]: summary_record(span, service_of) for f, span in zip(facts, valid, strict=True)}
                owner = (resource_service(rs.resource) or "") if evidence else ""
                scopes.append(_Scope(key, data, facts, invalid, kept, evidence=evidence, tenant=tenant, service=owner))
        return scopes, pairs

    def _checked(self, data: bytes, spans: int) -> bytes:
        """``data`` as it will be stored: readable back by release, owned attributes removed."""
        _readable(ScopeSpans, data, "a ScopeSpans")  # then release's walker reads it too (the fuzz tier checks)
        if may_carry_owned(data):
            data, removed = strip_owned(data)
            if removed:
                self._metrics.attributes_removed.inc(removed)
                _log.debug("removed %d client-set attributes in the collector's namespace", removed)
        return data

    def _resource_ids(self, scopes: list[_Scope]) -> dict[_ResourceKey, int]:
        """Resources are stored only for spans that are stored."""
        return {key: self._store.resource_id(*key) for key in dict.fromkeys(s.resource for s in scopes)}

    def _check_room(self, scopes: list[_Scope], size: int) -> None:
        if self.disk_full():
            self._refuse(scopes, "the store's disk is full; delivery continues, retry later", REFUSE_DISK_FULL)
        _, pending_bytes = self._store.counts()
        if pending_bytes and pending_bytes + size > self._max_bytes:
            self._refuse(scopes, f"store full: {pending_bytes} bytes pending (max_pending_bytes={self._max_bytes})")
        has = self._assembler.has_trace
        new = sum(1 for tid in {f[0] for s in scopes for f in s.spans} if not has(tid))
        if new > self._max_traces:
            raise TooLarge(f"the request starts {new} traces, more than max_pending_traces={self._max_traces}")
        pending = self._assembler.pending_traces
        if new and pending + new > self._max_traces:
            self._refuse(scopes, f"too many traces pending: {pending} (max_pending_traces={self._max_traces})")

    def _refuse(self, scopes: list[_Scope], message: str, reason: str = REFUSE_BACKPRESSURE) -> None:
        self._metrics.spans_refused.labels(REFUSE_BACKPRESSURE).inc(sum(len(s.spans) for s in scopes))
        hint = "raise the limit or add capacity"
        if reason == REFUSE_DISK_FULL:
            hint = "free disk space or restore the downstream"
        _log.warning("refusing an Export request with backpressure: %s; %s", message, hint)
        raise Backpressure(message, self._retry_after, reason)

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

    def _outbox(self, scopes: list[_Scope], rid: Mapping[_ResourceKey, int]) -> list[OutRow]:
        """Passthrough: the fresh spans go out at once; late spans go out unlabelled in both modes."""
        out: list[OutRow] = []
        for s in scopes:
            if s.late:
                view, bodies = s.bodies(f for f, _ in s.late)
                out.append(OutRow(rid[s.resource], scope_spans(view, bodies), len(bodies)))
            if not self._hold and s.fresh:
                if len(s.fresh) == len(s.spans) and not s.invalid:  # every span of the ScopeSpans
                    data = s.data
                else:
                    view, bodies = s.bodies(s.fresh)
                    data = scope_spans(view, bodies)
                out.append(OutRow(rid[s.resource], data, len(s.fresh)))
        return out

    @staticmethod
    def _late_tombs(scopes: list[_Scope], now: float) -> list[Tomb]:
        by_unit: dict[tuple[bytes, str], list[bytes]] = {}
        for s in scopes:
            for fact, unit in s.late:
                by_unit.setdefault((fact[0], unit), []).append(fact[1])
        return [Tomb(tid, b"".join(ids), now, unit) for (tid, unit), ids in by_unit.items()]


def _native(spans: list[Any]) -> bool:
    """Whether a ScopeSpans holds a mast-otel span (among its valid ``spans``): only those are worth summarising
    (the adapters decode another instrumentation's conversation in full); a scope of other spans inside a mast-otel
    conversation has its summaries made at release instead."""
    key = sc.MAST_SPAN_TYPE
    return any(key in span.attributes for span in spans)


def _readable(cls: type[Message], data: bytes, what: str) -> None:
    try:
        cls.FromString(data)
    except (DecodeError, RecursionError) as exc:
        raise Malformed(f"{what} is not valid OTLP protobuf: {parse_error_reason(exc)}") from None


def parse_error_reason(exc: BaseException) -> str:
    """The parser's reason without the internal message type names."""
    return str(exc).rpartition("': ")[2] or type(exc).__name__


def resource_service(resource: bytes, key: str = "service.name") -> str | None:
    """The resource's ``service.name`` (or another string attribute, ``key``), read only when its bytes hold it."""
    if key.encode() not in resource:
        return None
    try:
        attributes = Resource.FromString(resource).attributes
    except (DecodeError, RecursionError):
        return None  # refused as Malformed once the scope's spans are checked
    for kv in attributes:
        if kv.key == key:
            value = any_value(kv.value)
            return str(value) if value is not None else None
    return None
