"""Stored rows -> one serialized ``ExportTraceServiceRequest``, written straight in the protobuf wire format.

Bodies are concatenated as stored (no decode/re-encode), grouped by their envelope, so each span leaves with the
resource and scope it arrived with. Field numbers: ExportTraceServiceRequest.resource_spans = 1;
ResourceSpans.resource = 1, .scope_spans = 2, .schema_url = 3; ScopeSpans.scope = 1, .spans = 2, .schema_url = 3.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .store import Envelope, ReadyRow

__all__ = ["encode_request"]


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


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def encode_request(rows: Iterable[ReadyRow], envelope: Callable[[int], Envelope]) -> bytes:
    """The request carrying ``rows``; ``envelope`` looks an envelope id up (``SpanStore.envelope``)."""
    by_envelope: dict[int, list[bytes]] = {}
    for row in rows:
        by_envelope.setdefault(row.envelope, []).append(row.body)
    by_resource: dict[tuple[bytes, str], list[bytes]] = {}
    for env_id, bodies in by_envelope.items():
        env = envelope(env_id)
        scope_spans = _field(1, env.scope) + b"".join(_field(2, b) for b in bodies)
        if env.scope_schema:
            scope_spans += _field(3, env.scope_schema.encode())
        by_resource.setdefault((env.resource, env.resource_schema), []).append(scope_spans)
    out = []
    for (resource, schema), scopes in by_resource.items():
        resource_spans = _field(1, resource) + b"".join(_field(2, s) for s in scopes)
        if schema:
            resource_spans += _field(3, schema.encode())
        out.append(_field(1, resource_spans))
    return b"".join(out)
