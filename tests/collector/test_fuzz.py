"""Fuzz tier: property-based fuzzing (Hypothesis) of the hand-written protobuf walker, ``ScopeSpansView``, OTLP
JSON decoding and ingest, with mutated valid requests and random protobuf.

The invariant, as otelcol's processor fuzzers hold theirs: every input is either refused with a permanent error,
or stored, judged and exported intact. Nothing is acknowledged that cannot be released: after an accepted input
is released the store is empty, nothing was quarantined, no release failed, and every span with valid ids that
a full protobuf parse of the input finds leaves exactly as it came (the collector's own label attributes aside).

CI runs a bounded, derandomized pass (well under a minute); ``MAST_OTEL_FUZZ_EXAMPLES=5000`` runs a longer random
one on demand.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

from mast_otel.collector import CollectorService
from mast_otel.collector.assemble.namespace import is_owned
from mast_otel.collector.encoding import ScopeSpansView, field
from mast_otel.collector.receive.ingest import Malformed, TooLarge
from mast_otel.collector.receive.receiver_http import _to_protobuf
from mast_otel.collector.release.exporter import SendResult
from mast_otel.collector.scaleout.routing import shard_of, split_request
from tests.collector.conftest import FakeJudge, collector_config, recorded

_EXAMPLES = os.environ.get("MAST_OTEL_FUZZ_EXAMPLES")
FUZZ = settings(
    max_examples=int(_EXAMPLES or 100),
    derandomize=_EXAMPLES is None,  # CI: the same examples every run; on demand: new ones
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
_BASES = [bytes(encode_spans(recorded(n, service=f"fuzz-{n}")).SerializeToString()) for n in (1, 2)]


class _Capture:
    """A downstream that accepts everything and keeps the payloads."""

    def __init__(self) -> None:
        self.payloads: list[bytes] = []

    def send(self, payload: bytes, timeout: float) -> SendResult:
        self.payloads.append(payload)
        return SendResult(True)

    def close(self) -> None:
        pass


@pytest.fixture
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A factory of in-process collectors (no sockets) on a ':memory:' store with a capturing downstream."""
    made: list[CollectorService] = []

    def make() -> tuple[CollectorService, _Capture]:
        sender = _Capture()
        config = collector_config(Path(tmp_path_factory.getbasetemp()), None, store=":memory:", metrics="off",
                                  quiet_period=0.0, max_pending_traces=100_000)  # fmt: skip
        service = CollectorService(config, judge=FakeJudge(), sender=sender)
        made.append(service)
        return service, sender

    yield make
    for service in made:
        service.stop(grace=0.1)


def _label_free(span: Span) -> Span:
    out = Span()
    out.CopyFrom(span)
    keep = [kv for kv in out.attributes if not is_owned(kv.key)]
    del out.attributes[:]
    out.attributes.extend(keep)
    return out


def _expected(raw: bytes) -> dict[tuple[bytes, bytes], Span] | None:
    """What an independent full parse says must come out: the first span per (trace, span) id with valid ids."""
    try:
        request = ExportTraceServiceRequest.FromString(raw)
    except (DecodeError, RecursionError):
        return None
    out: dict[tuple[bytes, bytes], Span] = {}
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                t, s = span.trace_id, span.span_id
                if len(t) == 16 and len(s) == 8 and any(t) and any(s):
                    out.setdefault((t, s), span)
    return out


def _note(outcome: str) -> None:
    """Shown by ``--hypothesis-show-statistics``: how many inputs were refused and how many went all the way."""
    if currently_in_test_context():
        event(outcome)


def check_ingest(fresh: Any, raw: bytes) -> None:
    service, sender = fresh()
    try:
        service.ingestor.ingest(raw, "grpc")
    except (Malformed, TooLarge) as exc:
        _note(f"refused: {type(exc).__name__}")
        return  # refused with a permanent error: fine, whatever the input
    _note("accepted")
    service.release_now()
    assert service.flush(timeout=20)
    assert service.assembler.held_spans == 0 and service.store.counts() == (0, 0)  # everything left the store
    m = service.metrics
    assert m.segments_quarantined.labels("release")._value.get() == 0
    assert m.judge_errors.labels("store")._value.get() == 0
    exported: dict[tuple[bytes, bytes], Span] = {}
    for payload in sender.payloads:
        for rs in ExportTraceServiceRequest.FromString(payload).resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    exported.setdefault((span.trace_id, span.span_id), span)
    expected = _expected(raw)
    if expected is None:
        return
    assert set(expected) <= set(exported)
    for key, span in expected.items():
        assert _label_free(exported[key]) == _label_free(span), key


_mutation = st.tuples(st.sampled_from(["flip", "insert", "delete", "duplicate", "truncate"]),
                      st.floats(0, 1), st.one_of(st.integers(32, 126), st.integers(0, 255)),
                      st.integers(1, 64))  # fmt: skip


def mutate(data: bytes, ops: list[tuple[str, float, int, int]]) -> bytes:
    buf = bytearray(data)
    for op, where, byte, size in ops:
        if not buf:
            break
        i = int(where * (len(buf) - 1))
        if op == "flip":
            buf[i] = byte
        elif op == "insert":
            buf[i:i] = bytes([byte]) * (size % 4 + 1)
        elif op == "delete":
            del buf[i : i + size]
        elif op == "duplicate":
            buf[i:i] = buf[i : i + size]
        else:
            del buf[i:]
    return bytes(buf)


@FUZZ
@given(base=st.sampled_from(_BASES), ops=st.lists(_mutation, min_size=1, max_size=3))
def test_fuzz_mutated_requests(fresh: Any, base: bytes, ops: list[tuple[str, float, int, int]]) -> None:
    check_ingest(fresh, mutate(base, ops))


def _fields(children: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """A protobuf message as a list of fields of every wire type, nested messages drawn from ``children``."""
    number = st.sampled_from([1, 2, 3, 4, 5, 7, 9, 10, 11, 15])
    one = st.one_of(
        st.builds(lambda n, p: field(n, p), number, children),
        st.builds(lambda n, v: bytes([n << 3]) + bytes([v]), number, st.integers(0, 127)),
        st.builds(lambda n, b: bytes([n << 3 | 1]) + b, number, st.binary(min_size=8, max_size=8)),
        st.builds(lambda n: bytes([n << 3 | 3, n << 3 | 4]), number),  # an empty group
    )
    return st.lists(one, max_size=6).map(b"".join)


_protobuf = st.recursive(st.binary(max_size=24), _fields, max_leaves=30)


@FUZZ
@given(raw=_protobuf)
def test_fuzz_random_protobuf(fresh: Any, raw: bytes) -> None:
    check_ingest(fresh, raw)


@FUZZ
@given(data=st.one_of(_protobuf, st.sampled_from(_BASES).flatmap(
    lambda b: st.lists(_mutation, max_size=4).map(lambda ops: mutate(field(1, b)[2:], ops)))))  # fmt: skip
def test_fuzz_walker_agrees_with_protobuf(data: bytes) -> None:
    """Wherever the protobuf parser accepts a ScopeSpans (what ingest checks), the hand-written walker release
    slices spans with accepts it too, and its byte ranges are exactly the parser's spans."""
    try:
        parsed = ScopeSpans.FromString(data)
    except (DecodeError, RecursionError):
        return  # ingest refuses what protobuf cannot parse; the walker may or may not
    view = ScopeSpansView.parse(data)  # must not raise: ingest stored it on the parser's word
    assert [Span.FromString(data[a:b]) for a, b in view.spans] == list(parsed.spans)


def _json_base() -> str:
    from google.protobuf import json_format

    request = ExportTraceServiceRequest.FromString(_BASES[0])
    data = json_format.MessageToDict(request)
    for rs in data.get("resourceSpans", []):  # OTLP JSON writes ids as hex
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        import base64

                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(data)


_JSON = _json_base()


@FUZZ
@given(ops=st.lists(_mutation, min_size=1, max_size=4))
def test_fuzz_json_requests(fresh: Any, ops: list[tuple[str, float, int, int]]) -> None:
    body = mutate(_JSON.encode(), ops)
    try:
        raw = _to_protobuf(body, as_json=True)
    except Malformed:
        return
    check_ingest(fresh, raw)


def test_json_base_round_trips(fresh: Any) -> None:
    check_ingest(fresh, _to_protobuf(_JSON.encode(), as_json=True))


def check_split(fresh: Any, raw: bytes, shards: int = 2) -> None:
    """A collector run as several processes: the front's split, then each part ingested by its own shard. Whatever
    a full parse accepts, every shard accepts its part and the spans leave the shards together exactly as a single
    process lets them leave; anything else is refused with a permanent error."""
    expected = _expected(raw)
    try:
        parts = split_request(raw, shards, max_items=200_000)
    except (Malformed, TooLarge):
        assert expected is None, "the front refused what protobuf reads"
        _note("refused by the front")
        return
    exported: dict[tuple[bytes, bytes], Span] = {}
    for part in parts:
        service, sender = fresh()
        try:
            service.ingestor.ingest(part.request, "grpc")
        except (Malformed, TooLarge):
            assert expected is None, "a shard refused a part of what protobuf reads"
            continue
        service.release_now()
        assert service.flush(timeout=20)
        for payload in sender.payloads:
            for rs in ExportTraceServiceRequest.FromString(payload).resource_spans:
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        assert shard_of(span.trace_id, shards) == part.shard
                        exported.setdefault((span.trace_id, span.span_id), span)
    _note("split")
    if expected is None:
        return
    assert set(expected) <= set(exported)
    for key, span in expected.items():
        assert _label_free(exported[key]) == _label_free(span), key


@FUZZ
@given(raw=st.one_of(_protobuf, st.sampled_from(_BASES).flatmap(
    lambda b: st.lists(_mutation, min_size=1, max_size=3).map(lambda ops: mutate(b, ops)))))  # fmt: skip
def test_fuzz_split_by_trace_for_shards(fresh: Any, raw: bytes) -> None:
    check_split(fresh, raw)


@pytest.mark.parametrize("base", _BASES)
def test_split_of_a_valid_request_leaves_intact(fresh: Any, base: bytes) -> None:
    check_split(fresh, base)
    check_split(fresh, b"".join(field(1, rs.SerializeToString())
                                for rs in ExportTraceServiceRequest.FromString(_BASES[1]).resource_spans) + base)
