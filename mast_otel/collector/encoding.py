"""The protobuf wire format, by hand where it saves decoding: locating spans inside a stored ``ScopeSpans`` and
writing ``ExportTraceServiceRequest``/``ScopeSpans`` from stored bytes without re-encoding the spans.

Field numbers used: ExportTraceServiceRequest.resource_spans = 1; ResourceSpans.resource = 1, .scope_spans = 2,
.schema_url = 3; ScopeSpans.scope = 1, .spans = 2, .schema_url = 3. All are length-delimited (wire type 2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = ["ScopeSpansView", "encode_request", "field", "scope_spans"]


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
        i, n = 0, len(data)
        while i < n:
            start = i
            tag = 0
            shift = 0
            while True:
                b = data[i]
                i += 1
                tag |= (b & 0x7F) << shift
                if not b & 0x80:
                    break
                shift += 7
            wire = tag & 7
            if wire == 2:
                length = 0
                shift = 0
                while True:
                    b = data[i]
                    i += 1
                    length |= (b & 0x7F) << shift
                    if not b & 0x80:
                        break
                    shift += 7
                end = i + length
            elif wire == 0:  # a varint field (unknown to ScopeSpans): skip it
                while data[i] & 0x80:
                    i += 1
                end = i + 1
            elif wire == 1:
                end = i + 8
            elif wire == 5:
                end = i + 4
            else:
                raise ValueError(f"unsupported wire type {wire} in ScopeSpans")
            number = tag >> 3
            if number == 2 and wire == 2:
                spans.append((i, end))
            elif number == 1:
                scope = data[start:end]
            elif number == 3:
                schema = data[start:end]
            i = end
        if i != n:
            raise ValueError("truncated ScopeSpans")
        return cls(scope, schema, spans)


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
