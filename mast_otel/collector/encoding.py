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
from google.protobuf.message import Message
from opentelemetry.proto.common.v1.common_pb2 import KeyValue

__all__ = [
    "RawScopeSpans", "ScopeSpansView", "StringAttributes", "encode_request", "field", "scope_spans",
    "scope_spans_slices", "walk",
]  # fmt: skip


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field: tag, length, payload."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


@dataclass(frozen=True, slots=True)
class ScopeSpansView:
    """Where things are in a serialized ``ScopeSpans``: the scope and schema fields (raw, header included) and
    each span's body as a ``(start, end)`` byte range, in order."""

    scope_field: bytes
    schema_field: bytes
    spans: list[tuple[int, int]]

    @classmethod
    def parse(cls, data: bytes) -> ScopeSpansView:
        scope = schema = b""
        spans: list[tuple[int, int]] = []
        for number, start, body, end in walk(data):
            if number == 2:
                spans.append((body, end))
            elif number == 1:
                scope = data[start:end]
            elif number == 3:
                schema = data[start:end]
        return cls(scope, schema, spans)


def walk(data: bytes) -> list[tuple[int, int, int, int]]:
    """The top-level fields of a serialized message: ``(field number, field start, payload start, end)``.

    Length-delimited fields give their payload; other wire types are stepped over. Raises ValueError when the
    bytes end inside a field.
    """
    out: list[tuple[int, int, int, int]] = []
    i, n = 0, len(data)
    while i < n:
        start = i
        tag = shift = 0
        while True:
            b = data[i]
            i += 1
            tag |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
        wire = tag & 7
        if wire == 2:
            length = shift = 0
            while True:
                b = data[i]
                i += 1
                length |= (b & 0x7F) << shift
                if not b & 0x80:
                    break
                shift += 7
            end = i + length
        elif wire == 0:
            while data[i] & 0x80:
                i += 1
            end = i + 1
        elif wire == 1:
            end = i + 8
        elif wire == 5:
            end = i + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        out.append((tag >> 3, start, i, end))
        i = end
    if i != n:
        raise ValueError("truncated message")
    return out


def scope_spans_slices(request: bytes) -> list[list[bytes]]:
    """Per ResourceSpans of a serialized ExportTraceServiceRequest, its ScopeSpans as byte slices, in order."""
    out = []
    for number, _, body, end in walk(request):
        if number == 1:
            rs = request[body:end]
            out.append([rs[b:e] for num, _, b, e in walk(rs) if num == 2])
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
    """``ScopeSpans`` as seen by ingest: per span only the ids and the attributes, each KeyValue left as bytes.

    Parsing into this (a real protobuf parse, in C) and reading the few attributes assembly needs from the
    KeyValue bytes costs a third of walking the standard message's attribute objects, the receive path's
    largest per-span cost. The other span fields are kept as unknown fields and never looked at.
    """
    fp = descriptor_pb2.FileDescriptorProto(name="mast_otel_collector_raw.proto", package="mast_otel.raw")
    fp.syntax = "proto3"
    F = descriptor_pb2.FieldDescriptorProto
    span = fp.message_type.add(name="Span")
    for name, number in (("trace_id", 1), ("span_id", 2), ("parent_span_id", 4)):
        span.field.add(name=name, number=number, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    span.field.add(name="attributes", number=9, type=F.TYPE_BYTES, label=F.LABEL_REPEATED)
    scope = fp.message_type.add(name="ScopeSpans")
    scope.field.add(
        name="spans", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED, type_name=".mast_otel.raw.Span"
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("mast_otel.raw.ScopeSpans"))


RawScopeSpans: Any = _raw_scope_spans_class()


def _read_varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


class StringAttributes:
    """Reads the string values of a few attribute keys from KeyValue bytes (a ``RawScopeSpans`` span's
    ``attributes``). The usual encoding (key first, then a string AnyValue) is read in place; anything else is
    parsed properly, so the answer is always what a full decode would give."""

    def __init__(self, keys: Iterable[str]) -> None:
        self.keys = tuple(keys)
        self._slots = {k.encode(): i for i, k in enumerate(self.keys)}
        self._lengths = frozenset(len(k) for k in self._slots)

    def read(self, raw_attributes: Iterable[bytes]) -> list[str | None]:
        """One value per key, in ``keys`` order; None where absent or not a string."""
        out: list[str | None] = [None] * len(self.keys)
        slots, lengths = self._slots, self._lengths
        for a in raw_attributes:
            if len(a) > 2 and a[0] == 0x0A and a[1] < 0x80:
                n = a[1]
                if n not in lengths:
                    continue
                slot = slots.get(a[2 : 2 + n])
                if slot is None:
                    continue
                regular, value = _string_value(a, 2 + n)
                if regular:
                    out[slot] = value
                    continue
            kv = KeyValue.FromString(a)
            found = slots.get(kv.key.encode())
            if found is not None:
                out[found] = kv.value.string_value if kv.value.WhichOneof("value") == "string_value" else None
        return out


def _string_value(a: bytes, i: int) -> tuple[bool, str | None]:
    """(regular, AnyValue.string_value) of a KeyValue whose value field starts at ``i``; regular is False when
    the bytes are not in the usual shape (then the caller parses them properly)."""
    end = len(a)
    if i >= end or a[i] != 0x12:
        return False, None
    length, j = _read_varint(a, i + 1)
    if j + length != end:
        return False, None
    if length == 0:
        return True, None  # an empty AnyValue
    if a[j] != 0x0A:
        return True, None  # another value type (int, bool, ...): not a string
    size, k = _read_varint(a, j + 1)
    if k + size != end:
        return False, None
    return True, a[k:end].decode("utf-8", "replace")
