"""The collector's readers of the OTLP wire format against protobuf's own parser, on generated encodings that are
valid protobuf but not what an SDK writes: fields out of order, a message field given twice (protobuf merges it), a
bytes field given twice (protobuf keeps the last), unknown fields of every wire type, packed and unpacked.

Oracle: ``ExportTraceServiceRequest.FromString`` of the same bytes. Readers: ingest's shallow parse
(:func:`.ingest.resource_spans_of`: the Resource a span is stored under), the raw parse (trace ids, scope name),
the view that release writes spans back from (:class:`.encoding.ScopeSpansView`), the summaries a model-free release
reads, and the front's split (:func:`.routing.split_request`: which shard, with which resource and scope). A span
must be read the same by all of them, or a trace is split across shards or stored under another service.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

from mast_otel.collector.assemble.summaries import summary_record
from mast_otel.collector.encoding import RawScopeSpans, RawSpan, ScopeSpansView, field, scope_spans, walk
from mast_otel.collector.receive.ingest import ItemBudget, resource_spans_of
from mast_otel.collector.scaleout.routing import shard_of, split_request
from mast_otel.spans import from_otlp_span


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _unknown(rng: random.Random) -> bytes:
    """One field protobuf does not know (numbers above OTLP's), of a random wire type, packed repeated included."""
    number = rng.randint(100, 2000)
    kind = rng.randrange(5)
    if kind == 0:  # varint
        return _varint(number << 3) + _varint(rng.getrandbits(40))
    if kind == 1:  # fixed64
        return _varint(number << 3 | 1) + rng.randbytes(8)
    if kind == 2:  # fixed32
        return _varint(number << 3 | 5) + rng.randbytes(4)
    if kind == 3:  # a packed repeated varint
        return field(number, b"".join(_varint(rng.getrandbits(20)) for _ in range(rng.randint(0, 5))))
    return field(number, rng.randbytes(rng.randint(0, 12)))


def _shuffle_fields(data: bytes, rng: random.Random) -> bytes:
    """The message's top-level fields interleaved at random, each field number's occurrences kept in their order
    (protobuf reads repeated elements in the order they come, whatever lies between them), with unknown fields
    inserted."""
    by_number: dict[int, list[bytes]] = {}
    for number, start, _, end in walk(data):
        by_number.setdefault(number, []).append(data[start:end])
    queues = [list(v) for v in by_number.values()] + [[_unknown(rng)] for _ in range(rng.randint(0, 2))]
    out = []
    while queues:
        queue = rng.choice(queues)
        out.append(queue.pop(0))
        if not queue:
            queues.remove(queue)
    return b"".join(out)


def _span(rng: random.Random, trace_id: bytes, n: int) -> bytes:
    span = Span(trace_id=trace_id, span_id=rng.randbytes(8), name=f"span-{n}", start_time_unix_nano=n,
                end_time_unix_nano=n + 5)  # fmt: skip
    for k in range(rng.randint(0, 3)):
        span.attributes.append(KeyValue(key=f"k{k}", value=AnyValue(string_value="v" * rng.randint(0, 200))))
    if rng.random() < 0.3:
        span.attributes.append(KeyValue(key="gen_ai.operation.name", value=AnyValue(string_value="invoke_agent")))
    data = span.SerializeToString()
    if rng.random() < 0.4:  # a decoy trace id first: protobuf keeps the last one given
        data = field(1, rng.randbytes(16)) + data
    return _shuffle_fields(data, rng)


def _in_two(message: Any, rng: random.Random) -> bytes:
    """A message's payload written as two occurrences of its field (protobuf merges them); one when it is short."""
    attributes = list(message.attributes) if hasattr(message, "attributes") else []
    first = type(message)()
    first.CopyFrom(message)
    second = type(message)()
    if len(attributes) > 1 and rng.random() < 0.7:
        cut = rng.randint(1, len(attributes) - 1)
        del first.attributes[cut:]
        second.attributes.extend(attributes[cut:])
    elif isinstance(message, InstrumentationScope) and rng.random() < 0.7:
        first.ClearField("version")
        second.version = message.version
    else:
        return field(1, first.SerializeToString())
    return field(1, first.SerializeToString()) + field(1, second.SerializeToString())


def _request(rng: random.Random) -> bytes:
    tids = [rng.randbytes(16) for _ in range(rng.randint(1, 6))]
    n = 0
    out = []
    for r in range(rng.randint(1, 3)):
        resource = Resource()
        for key in ("service.name", "host.name", "deployment.environment")[: rng.randint(0, 3)]:
            resource.attributes.append(KeyValue(key=key, value=AnyValue(string_value=f"{key}-{r}")))
        scopes = []
        for s in range(rng.randint(1, 3)):
            scope = InstrumentationScope(name=f"scope-{r}-{s}", version=f"1.{s}")
            spans = []
            for _ in range(rng.randint(0, 6)):
                n += 1
                spans.append(field(2, _span(rng, rng.choice(tids), n)))
            body = (_in_two(scope, rng) if rng.random() < 0.8 else b"") + b"".join(spans)
            if rng.random() < 0.5:
                body += field(3, f"https://scope/{s}".encode())
            scopes.append(field(2, _shuffle_fields(body, rng)))
        head = _in_two(resource, rng) if resource.attributes or rng.random() < 0.5 else b""
        tail = field(3, f"https://resource/{r}".encode()) if rng.random() < 0.5 else b""
        out.append(field(1, _shuffle_fields(head + b"".join(scopes) + tail, rng)))
    return b"".join(out)


def _protobuf_spans(raw: bytes) -> list[tuple[bytes, bytes, bytes, str, bytes]]:
    """Each span as protobuf reads it: (trace id, span, merged Resource, ResourceSpans schema, merged scope)."""
    request = ExportTraceServiceRequest.FromString(raw)
    return [
        (span.trace_id, span.SerializeToString(deterministic=True), rs.resource.SerializeToString(deterministic=True),
         rs.schema_url, ss.scope.SerializeToString(deterministic=True))
        for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans
    ]  # fmt: skip


def _canonical(message_type: Any, data: bytes, *, known: bool = False) -> bytes:
    message = message_type.FromString(data)
    if known:
        message.DiscardUnknownFields()
    return bytes(message.SerializeToString(deterministic=True))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32))
def test_ingest_and_release_read_every_span_resource_and_scope_as_protobuf_does(seed: int) -> None:
    raw = _request(random.Random(seed))
    want = _protobuf_spans(raw)
    got = []
    for _, rs in resource_spans_of(raw, ItemBudget(1_000_000)):
        resource = _canonical(Resource, rs.resource)  # what ingest stores the spans under
        for data in rs.scope_spans:
            view = ScopeSpansView.parse(data)
            raw_scope = RawScopeSpans.FromString(data)
            scope = ScopeSpans.FromString(view.scope_field).scope
            assert raw_scope.scope.name == scope.name.encode()  # the root-candidate marker's scope
            bodies = [data[slice(*r)] for r in view.spans]
            assert [s.trace_id for s in raw_scope.spans] == [Span.FromString(b).trace_id for b in bodies]
            # release writes the spans back under the view's scope and schema: protobuf reads the same ScopeSpans
            # (less the fields OTLP does not define, which no exporter forwards either)
            written = scope_spans(view, bodies)
            assert _canonical(ScopeSpans, written, known=True) == _canonical(ScopeSpans, data, known=True)
            for body in bodies:
                span = Span.FromString(body)
                got.append((span.trace_id, span.SerializeToString(deterministic=True), resource, rs.schema_url,
                            scope.SerializeToString(deterministic=True)))  # fmt: skip
                # a model-free release reads the summary, a judge the full record: the same fields
                summary, full = summary_record(RawSpan.FromString(body), "svc"), from_otlp_span(span, "svc")
                assert (summary.trace_id, summary.span_id, summary.parent_span_id, summary.name) == (
                    full.trace_id, full.span_id, full.parent_span_id, full.name)  # fmt: skip
                assert (summary.start_ns, summary.end_ns, summary.error) == (full.start_ns, full.end_ns, full.error)
    assert got == want


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32), st.integers(2, 4))
def test_the_split_sends_each_span_to_its_traces_shard_with_its_resource_and_scope_as_protobuf_reads_them(
    seed: int, shards: int
) -> None:
    raw = _request(random.Random(seed))
    want = _protobuf_spans(raw)
    got = []
    for part in split_request(raw, shards, max_items=1_000_000):
        spans = _protobuf_spans(part.request)
        assert all(shard_of(tid, shards) == part.shard for tid, *_ in spans)  # the shard protobuf's id names
        assert part.spans == len(spans)
        got.extend(spans)
    assert sorted(got) == sorted(want)
