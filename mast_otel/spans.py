"""A framework-neutral, immutable view of one finished span: what the collector stores and the judge reads.

Converters from the three places spans come from: the SDK (``ReadableSpan``, in-process and in tests), OTLP
protobuf (the collector's receivers) and OTLP JSON (files given to ``mast-otel judge``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from . import semconv as sc


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """A span event: GenAI instrumentations put message content in events (``gen_ai.choice``, ...)."""

    name: str
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SpanRecord:
    trace_id: str  # 32 lowercase hex chars
    span_id: str  # 16 lowercase hex chars
    parent_span_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: Mapping[str, Any] = field(default_factory=dict)
    error: bool = False
    service_name: str | None = None
    events: tuple[SpanEvent, ...] = ()
    scope_name: str | None = None  # the instrumentation scope that wrote it (its tracer's name)
    links: tuple[tuple[str, str], ...] = ()  # (trace id, span id) of each span it links to, hex

    @property
    def span_type(self) -> str | None:
        value = self.attributes.get(sc.MAST_SPAN_TYPE)
        return value if isinstance(value, str) else None

    @property
    def is_conversation_root(self) -> bool:
        """A mast-otel conversation root, recognised by mast-otel's own marker: another framework's
        ``invoke_workflow`` span (Google ADK's root) is foreign, read by the adapters."""
        return self.attributes.get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_CONVERSATION

    def get(self, key: str, default: Any = None) -> Any:
        return self.attributes.get(key, default)


def from_readable_span(span: Any) -> SpanRecord:
    """From an OTel SDK ``ReadableSpan`` (e.g. ``InMemorySpanExporter.get_finished_spans()``)."""
    ctx = span.get_span_context()
    parent = span.parent
    resource_attrs = getattr(getattr(span, "resource", None), "attributes", {}) or {}
    return SpanRecord(
        trace_id=f"{ctx.trace_id:032x}",
        span_id=f"{ctx.span_id:016x}",
        parent_span_id=f"{parent.span_id:016x}" if parent is not None else None,
        name=span.name,
        start_ns=span.start_time or 0,
        end_ns=span.end_time or 0,
        attributes=dict(span.attributes or {}),
        error=span.status.status_code.name == "ERROR",
        service_name=resource_attrs.get("service.name"),
        events=tuple(SpanEvent(e.name, dict(e.attributes or {})) for e in getattr(span, "events", ()) or ()),
        scope_name=getattr(getattr(span, "instrumentation_scope", None), "name", None) or None,
        links=tuple(
            (f"{link.context.trace_id:032x}", f"{link.context.span_id:016x}")
            for link in getattr(span, "links", ()) or ()
        ),
    )


def any_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` protobuf as a plain Python value (lists become tuples, like SDK attributes)."""
    kind = value.WhichOneof("value")
    if kind == "string_value":  # most attributes: answered first
        return value.string_value
    if kind is None:
        return None
    if kind == "array_value":
        return tuple(any_value(v) for v in value.array_value.values)
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind)


def from_otlp_request(request: Any) -> Iterator[SpanRecord]:
    """Every span of an ``ExportTraceServiceRequest`` (or a ``TracesData``) as SpanRecords."""
    for resource_spans in request.resource_spans:
        service = service_name(resource_spans.resource)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name or None
            for span in scope_spans.spans:
                yield from_otlp_span(span, service, scope)


def service_name(resource: Any) -> Any:
    """An OTLP ``Resource``'s ``service.name`` (the last one, if repeated), or None."""
    service = None
    for kv in resource.attributes:
        if kv.key == "service.name":
            service = any_value(kv.value)
    return service


def from_otlp_span(span: Any, service: Any, scope_name: str | None = None) -> SpanRecord:
    """One OTLP ``Span`` protobuf as a SpanRecord, under a resource whose service name is ``service`` and an
    instrumentation scope named ``scope_name``."""
    return SpanRecord(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex() or None,
        name=span.name,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        attributes={kv.key: any_value(kv.value) for kv in span.attributes},
        error=span.status.code == 2,  # STATUS_CODE_ERROR
        service_name=service,
        events=tuple(SpanEvent(e.name, {kv.key: any_value(kv.value) for kv in e.attributes}) for e in span.events)
        if span.events
        else (),
        scope_name=scope_name,
        links=tuple((link.trace_id.hex(), link.span_id.hex()) for link in span.links) if span.links else (),
    )


def from_otlp_json(text: str | bytes) -> list[SpanRecord]:
    """OTLP JSON (``{"resourceSpans": [...]}``, as the OTLP/HTTP JSON encoding or a file exporter writes it).

    OTLP JSON encodes trace and span ids as hex strings, which protobuf's JSON parser would read as base64;
    they are converted first so ids round-trip exactly.
    """
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    data = json.loads(text)
    for resource_spans in data.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = _hex_to_b64(span[key])
                for link in span.get("links", ()):
                    for key in ("traceId", "spanId"):
                        if link.get(key):
                            link[key] = _hex_to_b64(link[key])
    request = ExportTraceServiceRequest()
    json_format.ParseDict(data, request, ignore_unknown_fields=True)
    return list(from_otlp_request(request))


def _hex_to_b64(value: str) -> str:
    import base64

    try:
        return base64.b64encode(bytes.fromhex(value)).decode()
    except ValueError:
        return value  # already base64


def conversation_roots(spans: Iterable[SpanRecord]) -> list[SpanRecord]:
    """The outermost recorder roots: conversation roots with no conversation root above them."""
    spans = list(spans)
    by_id = {s.span_id: s for s in spans}
    roots = []
    for s in spans:
        if not s.is_conversation_root:
            continue
        parent = by_id.get(s.parent_span_id) if s.parent_span_id else None
        nested, seen = False, set()
        while parent is not None and parent.span_id not in seen:  # a parent cycle (hostile input) ends the walk
            if parent.is_conversation_root:
                nested = True
                break
            seen.add(parent.span_id)
            parent = by_id.get(parent.parent_span_id) if parent.parent_span_id else None
        if not nested:
            roots.append(s)
    return roots


class TreeNode(Protocol):
    """What a walk down a span tree reads: :class:`SpanRecord` here, the report's own span type there."""

    @property
    def span_id(self) -> str: ...

    @property
    def parent_span_id(self) -> str | None: ...


NodeT = TypeVar("NodeT", bound=TreeNode)


def walk_down(spans: Iterable[NodeT], root: NodeT) -> list[NodeT]:
    """The root and every span below it, depth first. Each span id is walked once: a span that is its own
    parent, or an id used twice, is a cycle in hostile input, not a reason to loop."""
    children: dict[str | None, list[NodeT]] = {}
    for s in spans:
        children.setdefault(s.parent_span_id, []).append(s)
    out: list[NodeT] = []
    stack, walked = [root], {root.span_id}
    while stack:
        node = stack.pop()
        out.append(node)
        below = [c for c in children.get(node.span_id, ()) if c.span_id not in walked]
        walked.update(c.span_id for c in below)
        stack.extend(below)
    return out


def subtree(spans: Iterable[SpanRecord], root: SpanRecord) -> list[SpanRecord]:
    """The root and every span below it (:func:`walk_down`), in start order."""
    return sorted(walk_down(spans, root), key=lambda s: (s.start_ns, s.attributes.get(sc.MESSAGE_INDEX, -1)))
