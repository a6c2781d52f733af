"""The protobuf wire format, by hand where it saves decoding: locating spans inside a stored ``ScopeSpans`` and
writing ``ExportTraceServiceRequest``/``ScopeSpans`` from stored bytes without re-encoding the spans.

Field numbers used: ExportTraceServiceRequest.resource_spans = 1; ResourceSpans.resource = 1, .scope_spans = 2,
.schema_url = 3; ScopeSpans.scope = 1, .spans = 2, .schema_url = 3. All are length-delimited (wire type 2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

__all__ = [
    "RawScopeSpans", "RawSpan", "ScopeSpansView", "ShallowRequest", "ShallowResource", "ShallowResourceSpans",
    "ShallowScopeSpans",
    "encode_request", "field", "scope_spans", "string_value", "walk",
]  # fmt: skip


def _encode_varint(n: int) -> bytes:
    if n < _SHORT:
        return _SHORT_VARINTS[n]
    return _varint_bytes(n)


def _varint_bytes(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


_SHORT = 1 << 14  # every length up to 16 KiB (most spans) is one table lookup: varints cost a release a lot
_SHORT_VARINTS = [_varint_bytes(n) for n in range(_SHORT)]


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field: tag, length, payload."""
    return _encode_varint(number << 3 | 2) + _encode_varint(len(payload)) + payload


@dataclass(frozen=True, slots=True)
class ScopeSpansView:
    """Where things are in a serialized ``ScopeSpans``: the scope fields (every occurrence, raw, headers included:
    protobuf merges a scope given twice, and so does a parse of them written back together), the schema field (the
    last, as protobuf keeps it) and each span's body as a ``(start, end)`` byte range, in order."""

    scope_field: bytes
    schema_field: bytes
    spans: list[tuple[int, int]]

    @classmethod
    def parse(cls, data: bytes) -> ScopeSpansView:
        """Raises ValueError for bytes no protobuf parser accepts; wherever ``ScopeSpans.FromString`` succeeds
        this succeeds too and finds the same spans (tests/collector/test_fuzz.py holds it to that)."""
        scopes: list[bytes] = []
        schema = b""
        spans: list[tuple[int, int]] = []
        for number, start, body, end in walk(data):
            if body < 0:
                continue  # a field of another wire type is an unknown field to protobuf: skipped too
            if number == 2:
                spans.append((body, end))
            elif number == 1:
                scopes.append(data[start:end])
            elif number == 3:
                schema = data[start:end]
        return cls(b"".join(scopes), schema, spans)


_MAX_GROUP_DEPTH = 100  # protobuf's own recursion limit


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def _skip(data: bytes, i: int, wire: int, number: int, depth: int) -> int:
    """The end of a field's value starting at ``i`` (after its tag)."""
    if wire == 2:
        length, i = _varint(data, i)
        return i + length
    if wire == 0:
        while data[i] & 0x80:
            i += 1
        return i + 1
    if wire == 1:
        return i + 8
    if wire == 5:
        return i + 4
    if wire == 3:  # a group (deprecated, but valid protobuf): fields until the matching end-group tag
        if depth >= _MAX_GROUP_DEPTH:
            raise ValueError("groups nested too deep")
        while True:
            tag, i = _varint(data, i)
            if tag & 7 == 4:
                if tag >> 3 != number:
                    raise ValueError("mismatched end-group tag")
                return i
            i = _skip(data, i, tag & 7, tag >> 3, depth + 1)
    raise ValueError(f"unsupported wire type {wire}")


def walk(data: bytes) -> list[tuple[int, int, int, int]]:
    """The top-level fields of a serialized message: ``(field number, field start, payload start, end)``.

    Length-delimited fields give their payload start; other wire types (groups included) are stepped over and
    give -1. Raises ValueError when the bytes are not a protobuf message (truncated, bad wire type).
    """
    out: list[tuple[int, int, int, int]] = []
    i, n = 0, len(data)
    try:
        while i < n:
            start = i
            tag, i = _varint(data, i)
            wire = tag & 7
            if wire == 2:
                length, i = _varint(data, i)
                end = i + length
                out.append((tag >> 3, start, i, end))
            else:
                end = _skip(data, i, wire, tag >> 3, 0)
                out.append((tag >> 3, start, -1, end))
            i = end
    except IndexError:
        raise ValueError("truncated message") from None
    if i != n:
        raise ValueError("truncated message")
    return out


def scope_spans(view: ScopeSpansView, bodies: Iterable[bytes]) -> bytes:
    """A ``ScopeSpans`` with ``view``'s scope and schema and the given span bodies."""
    return view.scope_field + b"".join(field(2, b) for b in bodies) + view.schema_field


def encode_request(rows: Iterable[tuple[int, bytes]], resource: Callable[[int], tuple[bytes, str]]) -> bytes:
    """An ExportTraceServiceRequest from ``(resource id, ScopeSpans bytes)`` rows, one ResourceSpans per resource."""
    by_resource: dict[int, list[bytes]] = {}
    for rid, data in rows:
        by_resource.setdefault(rid, []).append(data)
    out = []
    for rid, blobs in by_resource.items():
        res, schema = resource(rid)
        resource_spans = field(1, res) + b"".join(field(2, s) for s in blobs)
        if schema:
            resource_spans += field(3, schema.encode())
        out.append(field(1, resource_spans))
    return b"".join(out)


def _raw_scope_spans_class() -> type[Message]:
    """``ScopeSpans`` as seen by ingest: the scope's name, and per span only the ids, the name, times, status code,
    the linked trace ids and the attributes, as a map from key to the serialized ``AnyValue``.

    A ``KeyValue`` (key = 1, value = 2) is on the wire exactly a map entry, so the C parser builds the map and
    ingest looks up the few keys assembly needs instead of looping over every attribute in Python, the receive
    path's largest per-span cost. A repeated key keeps its last value, as protobuf maps do; the other span fields
    are kept as unknown fields and never looked at. One difference from a full decode: a KeyValue carrying a
    field other than key and value (none exists in OTLP) is not in the map, so placement does not see that
    attribute; the span itself is stored and exported unchanged.
    """
    fp = descriptor_pb2.FileDescriptorProto(name="mast_otel_collector_raw.proto", package="mast_otel.raw")
    fp.syntax = "proto3"
    F = descriptor_pb2.FieldDescriptorProto
    span = fp.message_type.add(name="Span")
    for name, number in (("trace_id", 1), ("span_id", 2), ("parent_span_id", 4)):
        span.field.add(name=name, number=number, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    # The name as bytes (no UTF-8 check here: the full parse checks it): Google ADK's legacy root has no attribute.
    span.field.add(name="name", number=5, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    # Times and status: the summaries ingest keeps for a model-free release (.summaries) carry them too.
    span.field.add(name="start_time_unix_nano", number=7, type=F.TYPE_FIXED64, label=F.LABEL_OPTIONAL)
    span.field.add(name="end_time_unix_nano", number=8, type=F.TYPE_FIXED64, label=F.LABEL_OPTIONAL)
    # A message, not bytes: a status field given twice is merged, as the full parse merges it.
    status = fp.message_type.add(name="Status")
    status.field.add(name="code", number=3, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    span.field.add(name="status", number=15, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                   type_name=".mast_otel.raw.Status")  # fmt: skip
    # Links: the trace each names ties this span's trace to another (a run written as a trace per message).
    link = span.nested_type.add(name="Link")
    link.field.add(name="trace_id", number=1, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    span.field.add(name="links", number=13, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                   type_name=".mast_otel.raw.Span.Link")  # fmt: skip
    entry = span.nested_type.add(name="AttributesEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    span.field.add(
        name="attributes", number=9, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
        type_name=".mast_otel.raw.Span.AttributesEntry",
    )  # fmt: skip
    # The InstrumentationScope's name as bytes: a root candidate known by its span name is known only within the
    # scope that writes it (Google ADK's legacy ``invocation``). A message, so a scope given twice is merged.
    instrumentation_scope = fp.message_type.add(name="Scope")
    instrumentation_scope.field.add(name="name", number=1, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    scope = fp.message_type.add(name="ScopeSpans")
    scope.field.add(name="scope", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                    type_name=".mast_otel.raw.Scope")  # fmt: skip
    scope.field.add(
        name="spans", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED, type_name=".mast_otel.raw.Span"
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("mast_otel.raw.ScopeSpans"))


RawScopeSpans: Any = _raw_scope_spans_class()
# One span of it: ids and the attribute map (key -> serialized AnyValue), every other field kept unparsed.
RawSpan: Any = message_factory.GetMessageClass(RawScopeSpans.DESCRIPTOR.fields_by_name["spans"].message_type)


_F = descriptor_pb2.FieldDescriptorProto


def _message_classes(file: str, package: str, syntax: str,
                     messages: dict[str, tuple[tuple[str, int, int, int], ...]]) -> list[type[Message]]:  # fmt: skip
    """Classes of ``messages`` (name -> fields as ``(name, number, type, label)``), declared in a file and pool of
    their own so that their names never meet OTLP's."""
    fp = descriptor_pb2.FileDescriptorProto(name=file, package=package)
    fp.syntax = syntax
    for name, fields in messages.items():
        message = fp.message_type.add(name=name)
        for field_name, number, kind, label in fields:
            message.field.add(name=field_name, number=number, type=kind, label=label)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fp)
    return [message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{name}")) for name in messages]


# ``ExportTraceServiceRequest`` and ``ResourceSpans`` with their nested messages as bytes.
#
# Parsing one costs a few bytes per element (the C parser keeps slices, builds no message per element), so ingest
# learns how many elements a request holds, and caps them, before the per-element work; a request of millions of
# empty ResourceSpans or spans costs a fraction of its full decode. Same wire format, so the bytes read are exactly
# what a full parse would read.
ShallowRequest: Any
ShallowResourceSpans: Any
_SHALLOW_FILE = "mast_otel_collector_shallow.proto"
# ``resource`` is repeated: protobuf merges a Resource given twice, which a bytes field would not (it keeps the last);
# the occurrences joined are the merged message's encoding (:class:`ShallowResource`).
ShallowRequest, ShallowResourceSpans = _message_classes(_SHALLOW_FILE, "mast_otel.shallow", "proto3", {
    "Request": (("resource_spans", 1, _F.TYPE_BYTES, _F.LABEL_REPEATED),),
    "ResourceSpans": (("resource", 1, _F.TYPE_BYTES, _F.LABEL_REPEATED),
                      ("scope_spans", 2, _F.TYPE_BYTES, _F.LABEL_REPEATED),
                      ("schema_url", 3, _F.TYPE_STRING, _F.LABEL_OPTIONAL)),
})  # fmt: skip

# ``ScopeSpans`` with its scope and each span as bytes, for the front's split: the C parser slices out every span, so
# the split reads each span's trace id with protobuf (the last one given) and copies the span as it came. Every
# scope field is kept (repeated), since protobuf merges a scope given twice; proto2, so a schema URL present but
# empty stays present. All bytes, so no UTF-8 check here (the shard's full parse makes it).
_SPLIT_FILE = "mast_otel_collector_split.proto"
ShallowScopeSpans: Any
(ShallowScopeSpans,) = _message_classes(_SPLIT_FILE, "mast_otel.split", "proto2", {
    "ScopeSpans": (("scope", 1, _F.TYPE_BYTES, _F.LABEL_REPEATED), ("spans", 2, _F.TYPE_BYTES, _F.LABEL_REPEATED),
                   ("schema_url", 3, _F.TYPE_BYTES, _F.LABEL_OPTIONAL)),
})  # fmt: skip


@dataclass(frozen=True, slots=True)
class ShallowResource:
    """A ``ResourceSpans`` (or ``ResourceLogs``: the same field numbers) read shallowly, as protobuf reads it: the
    Resource as bytes (every occurrence joined, which parses as protobuf's merge of them), the scope entries as bytes,
    the schema URL (the last one given)."""

    resource: bytes
    scope_spans: list[bytes]
    schema_url: str

    @classmethod
    def parse(cls, data: bytes) -> ShallowResource:
        """Raises DecodeError for bytes protobuf cannot read."""
        parsed = ShallowResourceSpans.FromString(data)
        resources = parsed.resource
        resource = resources[0] if len(resources) == 1 else b"".join(resources)
        return cls(resource, list(parsed.scope_spans), parsed.schema_url)


def string_value(any_value: bytes | None) -> str | None:
    """``AnyValue.string_value`` of a serialized AnyValue (a ``RawScopeSpans`` attribute); None when absent or
    not a string, or not a valid AnyValue (ingest then refuses the ScopeSpans, whose full parse fails). The usual
    encoding (one short string field) is read in place, anything else is parsed."""
    if not any_value:
        return None
    if any_value[0] == 0x0A and len(any_value) >= 2 and any_value[1] < 0x80 and len(any_value) == any_value[1] + 2:
        return any_value[2:].decode("utf-8", "replace")
    try:
        parsed = AnyValue.FromString(any_value)
    except (DecodeError, RecursionError):
        return None
    return parsed.string_value if parsed.WhichOneof("value") == "string_value" else None
