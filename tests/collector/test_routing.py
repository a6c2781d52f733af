"""A collector run as several processes, its in-process parts: splitting a request by trace id, the front's answer
from its shards' answers, and the merged /metrics. Oracles: the decoded OTLP parts against the request sent, and
the outcomes a single collector gives for the same failures."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span
from prometheus_client import CollectorRegistry, Counter, Gauge

from mast_otel.collector.config import ConfigError
from mast_otel.collector.encoding import field
from mast_otel.collector.metrics import (
    REFUSE_DISK_FULL,
    REFUSE_INTERNAL,
    REFUSE_MALFORMED,
    REFUSE_SHARD_UNAVAILABLE,
    REFUSE_TOO_LARGE,
)
from mast_otel.collector.receive.ingest import Backpressure, Malformed, TooLarge
from mast_otel.collector.receive.refusal import Refusal, RefusalKind
from mast_otel.collector.scaleout.routing import Router, shard_of, split_request
from mast_otel.collector.scaleout.shard_metrics import ShardMetrics, merge_families
from mast_otel.collector.scaleout.shards import front_memory, leftover_stores, memory_total, shard_config, shard_store
from tests.collector.conftest import collector_config

# -- splitting -----------------------------------------------------------------------------------------------------


def _request(rng: random.Random, traces: int = 12, resources: int = 2, scopes: int = 2) -> ExportTraceServiceRequest:
    """Spans of ``traces`` traces spread over resources and scopes, each with a resource and scope of its own name;
    the last resource has neither a Resource nor a schema URL (both optional on the wire)."""
    tids = [rng.randbytes(16) for _ in range(traces)]
    request = ExportTraceServiceRequest()
    for r in range(resources):
        rs = request.resource_spans.add()
        if r < resources - 1 or resources == 1:
            rs.schema_url = f"https://schema/{r}"
            rs.resource.attributes.add(key="service.name").value.string_value = f"svc-{r}"
        for s in range(scopes):
            ss = rs.scope_spans.add()
            if s < scopes - 1 or scopes == 1:  # the last ScopeSpans has neither scope nor schema URL
                ss.schema_url = f"https://scope-schema/{r}/{s}"
                ss.scope.name = f"scope-{r}-{s}"
            for i in range(rng.randint(1, 9)):
                span = ss.spans.add(trace_id=rng.choice(tids), span_id=rng.randbytes(8), name=f"s{r}{s}{i}")
                span.attributes.append(KeyValue(key="k", value=AnyValue(string_value=f"{r}/{s}/{i}")))
    return request


def _share(request: ExportTraceServiceRequest, shard: int, shards: int) -> bytes:
    """What a shard must be sent, built with protobuf itself: each ResourceSpans and ScopeSpans that has spans of
    the shard's traces, with only those spans, in the order they came."""
    out = ExportTraceServiceRequest()
    for rs in request.resource_spans:
        kept = ExportTraceServiceRequest().resource_spans.add()
        kept.CopyFrom(rs)
        del kept.scope_spans[:]
        for ss in rs.scope_spans:
            spans = [s for s in ss.spans if shard_of(s.trace_id, shards) == shard]
            if spans:
                part = kept.scope_spans.add()
                part.CopyFrom(ss)
                del part.spans[:]
                part.spans.extend(spans)
        if kept.scope_spans:
            out.resource_spans.append(kept)
    return out.SerializeToString()


def _spans(request: ExportTraceServiceRequest) -> list[tuple[bytes, str, str, str, str]]:
    """Every span with where it came from: (bytes, service, resource schema, scope name, scope schema)."""
    out: list[tuple[bytes, str, str, str, str]] = []
    for rs in request.resource_spans:
        service = rs.resource.attributes[0].value.string_value if rs.resource.attributes else ""
        for ss in rs.scope_spans:
            out.extend((s.SerializeToString(), service, rs.schema_url, ss.scope.name, ss.schema_url) for s in ss.spans)
    return out


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("shards", [2, 3])
def test_split_puts_every_span_once_in_its_traces_shard_with_its_resource_and_scope(seed: int, shards: int) -> None:
    request = _request(random.Random(seed))
    parts = split_request(request.SerializeToString(), shards, max_items=10_000)
    got: list[tuple[bytes, str, str, str, str]] = []
    owner: dict[bytes, int] = {}
    for part in parts:
        decoded = ExportTraceServiceRequest.FromString(part.request)
        spans = _spans(decoded)
        assert part.spans == len(spans)
        for span in decoded.resource_spans:
            for ss in span.scope_spans:
                for s in ss.spans:
                    assert owner.setdefault(s.trace_id, part.shard) == part.shard  # a trace never spans two shards
        got.extend(spans)
    assert sorted(got) == sorted(_spans(request))
    assert len({p.shard for p in parts}) == len(parts)  # one part per shard
    assert all(0 <= p.shard < shards for p in parts)
    if len(parts) > 1:  # byte for byte what protobuf itself would write for each shard: nothing added or lost
        assert [p.request for p in parts] == [_share(request, p.shard, shards) for p in parts]


@pytest.mark.parametrize("shards", [2, 3, 4, 7])
def test_split_spreads_traces_over_the_shards_equally(shards: int) -> None:
    rng = random.Random(7)
    tids = [rng.randbytes(16) for _ in range(40_000)]
    owners = [shard_of(t, shards) for t in tids]
    # each shard a 1/N share, within a percent (more than four standard deviations at 40,000 ids)
    assert all(owners.count(k) / len(tids) == pytest.approx(1 / shards, abs=0.01) for k in range(shards))
    assert all(shard_of(t, 1) == 0 for t in tids[:100])
    # ids that are not random (a counter) spread too
    counted = [shard_of(n.to_bytes(16, "big"), shards) for n in range(1, 20_001)]
    assert all(counted.count(k) / len(counted) == pytest.approx(1 / shards, abs=0.015) for k in range(shards))


@given(st.lists(st.binary(min_size=16, max_size=16), min_size=1, max_size=50), st.integers(1, 40))
def test_going_from_n_to_n_plus_1_shards_moves_a_trace_only_to_the_new_shard(tids: list[bytes], n: int) -> None:
    """Consistency: a trace moves only when it must (to the shard added), never between the shards that stay."""
    for tid in tids:
        before, after = shard_of(tid, n), shard_of(tid, n + 1)
        assert 0 <= before < n and 0 <= after < n + 1
        assert after in (before, n)


def test_changing_the_number_of_shards_moves_the_fewest_traces() -> None:
    rng = random.Random(11)
    tids = [rng.randbytes(16) for _ in range(20_000)]
    for n, m in ((2, 3), (3, 2), (2, 4), (4, 3)):
        moved = sum(shard_of(t, n) != shard_of(t, m) for t in tids) / len(tids)
        assert moved == pytest.approx(abs(m - n) / max(m, n), abs=0.015), (n, m)  # the least any routing can move


def test_routing_is_the_same_in_every_process_and_release() -> None:
    # pinned values: a change of the hash moves traces between shards (a conversation in flight at an upgrade is
    # judged in two parts), so it must be a deliberate one
    ids = [bytes.fromhex(h) for h in ("fd3feb3c9250b7974a9b528b69636321", "a461b55ef55b7beafd809a9a9e925b79",
                                      "44066542ec38008d331dfd3b27241631", "755622d6d7a0b48cb048f279829caa65",
                                      "2af899a3e1f16bdc45cc8e26863d5f3b")]  # fmt: skip
    assert [shard_of(t, 2) for t in ids] == [1, 0, 1, 1, 1]
    assert [shard_of(t, 5) for t in ids] == [3, 3, 4, 1, 2]
    # and in another interpreter (Python's own hash() is salted per process)
    import subprocess
    import sys

    code = ("from mast_otel.collector.scaleout.routing import shard_of; import random; r = random.Random(5); "
            "print([shard_of(r.randbytes(16), 3) for _ in range(64)])")  # fmt: skip
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    rng = random.Random(5)
    assert there.strip() == str([shard_of(rng.randbytes(16), 3) for _ in range(64)])


def test_an_id_that_is_not_16_bytes_goes_to_shard_0() -> None:
    tid = random.Random(1).randbytes(16)
    assert any(shard_of(bytes([b]) + tid[1:], 17) != 0 for b in range(8))
    assert shard_of(tid[:15], 17) == 0 and shard_of(b"", 3) == 0 and shard_of(tid + b"x", 3) == 0


def test_a_scope_present_but_empty_stays_present_in_every_part() -> None:
    # protobuf writes an empty InstrumentationScope that was set (and an empty schema URL never): so must the split
    rng = random.Random(13)
    request = _request(rng, resources=1, scopes=1)
    while len({shard_of(s.trace_id, 2) for s in request.resource_spans[0].scope_spans[0].spans}) < 2:
        request = _request(rng, resources=1, scopes=1)
    ss = request.resource_spans[0].scope_spans[0]
    ss.ClearField("schema_url")
    ss.scope.Clear()
    ss.scope.SetInParent()
    parts = split_request(request.SerializeToString(), 2, max_items=10_000)
    assert len(parts) == 2
    assert [p.request for p in parts] == [_share(request, p.shard, 2) for p in parts]
    for part in parts:
        assert ExportTraceServiceRequest.FromString(part.request).resource_spans[0].scope_spans[0].HasField("scope")


def test_a_request_of_one_shard_is_forwarded_as_the_bytes_that_arrived() -> None:
    rng = random.Random(3)
    request = _request(rng, traces=1)
    raw = request.SerializeToString()
    (part,) = split_request(raw, 2, max_items=10_000)
    assert part.request is raw
    assert part.spans == len(_spans(request))


def test_a_span_whose_trace_id_is_not_first_on_the_wire_is_routed_by_it() -> None:
    rng = random.Random(5)
    tids = [rng.randbytes(16) for _ in range(40)]
    # name (field 5) written before trace_id (field 1), and a second trace_id field of which protobuf keeps the
    # last: valid protobuf in any order, which protobuf's own serializer would never write
    bodies = [field(5, b"x") + field(1, rng.randbytes(16)) + field(1, tid) + field(2, rng.randbytes(8)) for tid in tids]
    # and a 16-byte name first: the same length prefix as a trace id, under another field number
    bodies += [field(5, b"sixteen-byte-nam") + field(1, tid) + field(2, rng.randbytes(8)) for tid in tids]
    # and a group under field 1 first (protobuf skips it: not a trace id), whose next byte is 16 like a length
    group = bytes([0x0B, 0x10, 0x05, 0x0C])  # start group 1, field 2 = 5 (varint), end group 1
    bodies += [group + field(1, tid) + field(2, rng.randbytes(8)) for tid in tids]
    raw = field(1, field(2, b"".join(field(2, b) for b in bodies)))
    parts = split_request(raw, 2, max_items=10_000)
    assert sum(p.spans for p in parts) == 120 and len(parts) == 2
    for part in parts:
        for s in ExportTraceServiceRequest.FromString(part.request).resource_spans[0].scope_spans[0].spans:
            assert shard_of(s.trace_id, 2) == part.shard


_ID = st.binary(min_size=16, max_size=16)
_OTHER = st.sampled_from([field(2, b"12345678"), field(5, b"a name"), field(5, b"sixteen-byte-nam"),
                          bytes([0x39]) + bytes(8), bytes([0x30, 0x05]), field(9, field(1, b"k"))])  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(ids=st.lists(st.one_of(_ID, st.binary(max_size=20)), min_size=2, max_size=4),
       others=st.lists(_OTHER, max_size=4), first=st.booleans(), data=st.data())  # fmt: skip
def test_a_trace_id_given_twice_is_routed_by_the_one_protobuf_keeps(
    ids: list[bytes], others: list[bytes], first: bool, data: st.DataObject
) -> None:
    """A span carrying trace_id more than once (valid protobuf, which no SDK writes) goes to the shard of the id
    protobuf's parse keeps, the last, whatever the first one and the fields between: the shard files it under
    that id, so any other shard would split its trace. The span starts with a 16-byte id when ``first``."""
    fields = [field(1, i) for i in ids] + others
    if first:
        fields = [field(1, ids[0]), *data.draw(st.permutations(fields[1:]))]
    else:
        fields = data.draw(st.permutations(fields))
    body = b"".join(fields)
    kept = Span.FromString(body).trace_id
    raw = field(1, field(2, field(2, body)))
    for shards in (2, 3, 5):
        (part,) = split_request(raw, shards, max_items=100)
        assert part.shard == shard_of(kept, shards)
        (span,) = ExportTraceServiceRequest.FromString(part.request).resource_spans[0].scope_spans[0].spans
        assert span.SerializeToString() == Span.FromString(body).SerializeToString()


def test_a_span_starting_with_one_trace_id_and_ending_with_another_goes_to_the_last_ones_shard() -> None:
    """The example from the issue: the first 16 bytes are a trace id of one shard, the last field another's."""
    rng = random.Random(23)
    tids = {k: next(t for t in iter(lambda: rng.randbytes(16), None) if shard_of(t, 2) == k) for k in (0, 1)}
    for a, b in ((0, 1), (1, 0)):
        body = field(1, tids[a]) + field(2, rng.randbytes(8)) + field(5, b"n") + field(1, tids[b])
        (part,) = split_request(field(1, field(2, field(2, body))), 2, max_items=100)
        assert Span.FromString(body).trace_id == tids[b] and part.shard == b


def test_spans_with_invalid_trace_ids_go_to_shard_0_which_rejects_them() -> None:
    request = ExportTraceServiceRequest()
    ss = request.resource_spans.add().scope_spans.add()
    for n in range(40):  # ids of every wrong length, and none: none may be hashed to another shard
        ss.spans.add(trace_id=bytes([n + 1]) * (n % 16 + (n >= 16) * 17), span_id=b"12345678")
    ss.spans.add(span_id=b"12345678")
    for shards in (2, 3, 5):
        (part,) = split_request(request.SerializeToString(), shards, max_items=100)
        assert part.shard == 0 and part.spans == 41


def test_empty_entries_are_skipped_and_what_follows_is_still_split() -> None:
    rng = random.Random(9)
    request = _request(rng, resources=1, scopes=1)
    rs = request.resource_spans[0]
    ss = rs.scope_spans[0].SerializeToString()
    # an empty ResourceSpans, then one whose first ScopeSpans is empty: protobuf reads both as empty messages
    raw = field(1, b"") + field(1, field(1, rs.resource.SerializeToString()) + field(2, b"") + field(2, ss))
    parts = split_request(raw, 2, max_items=10_000)
    assert sum(p.spans for p in parts) == len(rs.scope_spans[0].spans)


def test_a_scope_given_twice_reaches_every_shard_merged_as_protobuf_merges_it() -> None:
    rng = random.Random(19)
    tids = {k: next(t for t in iter(lambda: rng.randbytes(16), None) if shard_of(t, 2) == k) for k in (0, 1)}
    spans = b"".join(field(2, Span(trace_id=tids[k], span_id=rng.randbytes(8), name=f"s{k}").SerializeToString())
                     for k in (0, 1))  # fmt: skip
    first, second = InstrumentationScope(name="lib"), InstrumentationScope(version="2.0")
    raw = field(1, field(2, field(1, first.SerializeToString()) + spans + field(1, second.SerializeToString())))
    expected = ExportTraceServiceRequest.FromString(raw).resource_spans[0].scope_spans[0].scope
    assert (expected.name, expected.version) == ("lib", "2.0")  # protobuf merged the two
    parts = split_request(raw, 2, max_items=10_000)
    assert len(parts) == 2
    for part in parts:
        assert ExportTraceServiceRequest.FromString(part.request).resource_spans[0].scope_spans[0].scope == expected


def test_a_resource_of_one_shard_loses_its_empty_scope_spans_when_the_request_is_split() -> None:
    # the first resource's spans all go to one shard, behind an empty ScopeSpans; the second's to the other shard
    rng = random.Random(17)
    tids = {k: next(t for t in iter(lambda: rng.randbytes(16), None) if shard_of(t, 2) == k) for k in (0, 1)}
    request = ExportTraceServiceRequest()
    for k in (0, 1):
        rs = request.resource_spans.add()
        rs.resource.attributes.add(key="service.name").value.string_value = f"svc-{k}"
        if k == 0:
            rs.scope_spans.add().scope.name = "nothing here"
        rs.scope_spans.add().spans.add(trace_id=tids[k], span_id=rng.randbytes(8), name=f"s{k}")
    parts = split_request(request.SerializeToString(), 2, max_items=10_000)
    assert [p.shard for p in parts] == [0, 1]
    assert [p.request for p in parts] == [_share(request, p.shard, 2) for p in parts]


def test_split_refuses_what_no_shard_could_read_and_counts_items_first() -> None:
    with pytest.raises(Malformed, match="not an OTLP protobuf request"):
        split_request(b"\x0a\x05abc", 2, max_items=100)  # a length past the end
    with pytest.raises(Malformed, match="a ResourceSpans is not valid protobuf"):
        split_request(b"\x0a\x02\x12\x05", 2, max_items=100)  # its ScopeSpans field cut short
    with pytest.raises(Malformed, match="a ScopeSpans is not valid protobuf") as refused:
        split_request(b"\x0a\x04\x12\x02\x12\x05", 2, max_items=100)  # a span field cut short
    with pytest.raises(DecodeError) as parser:  # what protobuf says of those bytes, as a single process reports it
        ScopeSpans.FromString(b"\x12\x05")  # the ScopeSpans of that request
    reason = str(parser.value).rpartition("': ")[2]
    assert reason and str(refused.value).endswith(f": {reason}") and "mast_otel" not in str(refused.value)
    request = ExportTraceServiceRequest()
    ss = request.resource_spans.add().scope_spans.add()
    for _ in range(50):
        ss.spans.add()
    with pytest.raises(TooLarge, match="more than max_request_spans=40 spans, ScopeSpans and ResourceSpans; send "
                       "smaller batches"):  # fmt: skip
        split_request(request.SerializeToString(), 2, max_items=40)
    with pytest.raises(TooLarge):  # every level counts: 1 + 1 + 50 items
        split_request(request.SerializeToString(), 2, max_items=51)
    assert split_request(request.SerializeToString(), 2, max_items=52)[0].spans == 50


# -- the front's answer ----------------------------------------------------------------------------------------------


class _Exchange:
    def __init__(self, answer: ExportTraceServiceResponse | Refusal | OSError) -> None:
        self._answer = answer
        self.read = False

    def answer(self) -> ExportTraceServiceResponse | Refusal:
        self.read = True
        if isinstance(self._answer, OSError):
            raise self._answer
        return self._answer


class _Shard:
    """A shard's link answering each part with a fixed outcome, recording what it was sent."""

    def __init__(self, answer: ExportTraceServiceResponse | Refusal | OSError, *, send_fails: bool = False) -> None:
        self.answer = answer
        self.send_fails = send_fails
        self.sent: list[tuple[bytes, str]] = []
        self.exchanges: list[_Exchange] = []

    def send(self, request: bytes, protocol: str) -> _Exchange:
        if self.send_fails:
            assert isinstance(self.answer, OSError)
            raise self.answer
        self.sent.append((request, protocol))
        self.exchanges.append(_Exchange(self.answer))
        return self.exchanges[-1]


def _two_shard_request() -> bytes:
    rng = random.Random(11)
    for _ in range(100):
        raw = _request(rng).SerializeToString()
        if len(split_request(raw, 2, max_items=10_000)) == 2:
            return raw
    raise AssertionError("no request with traces on both shards")


def _router(shards: list[Any]) -> Router:
    return Router(shards=len(shards), link_of=lambda k: shards[k], max_items=10_000, retry_after=2.5)


OK = ExportTraceServiceResponse()


def _partial(n: int, why: str) -> ExportTraceServiceResponse:
    answer = ExportTraceServiceResponse()
    answer.partial_success.rejected_spans = n
    answer.partial_success.error_message = why
    return answer


def test_the_front_acknowledges_once_every_shard_committed_its_part_and_says_the_transport() -> None:
    raw = _two_shard_request()
    shards = [_Shard(OK), _Shard(OK)]
    result = _router(shards).route(raw, "http")
    parts = split_request(raw, 2, max_items=10_000)
    assert (result.accepted, result.rejected, result.message) == (sum(p.spans for p in parts), 0, "")
    for shard, part in zip(shards, parts, strict=True):
        assert shard.sent == [(part.request, "http")]


def test_a_part_refused_for_now_makes_the_whole_request_retryable_with_the_shards_delay_and_reason() -> None:
    full = Refusal(RefusalKind.RETRY_LATER, REFUSE_DISK_FULL, "the store's disk is full", 4.5)
    shards = [_Shard(OK), _Shard(full)]
    with pytest.raises(Backpressure) as caught:
        _router(shards).route(_two_shard_request(), "grpc")
    assert caught.value.retry_after == 4.5 and caught.value.reason == REFUSE_DISK_FULL
    assert str(caught.value) == "the store's disk is full"
    assert all(e.read for shard in shards for e in shard.exchanges)  # every answer read: no connection left behind
    # the longest delay any shard asked for, whichever comes first
    busy = Refusal(RefusalKind.RETRY_LATER, "backpressure", "full", 1.0)
    for pair in ([busy, full], [full, busy]):
        with pytest.raises(Backpressure) as caught:
            _router([_Shard(pair[0]), _Shard(pair[1])]).route(_two_shard_request(), "grpc")
        assert (caught.value.retry_after, caught.value.reason) == (4.5, REFUSE_DISK_FULL)
    tie = Refusal(RefusalKind.RETRY_LATER, REFUSE_DISK_FULL, "the store's disk is full", 1.0)
    with pytest.raises(Backpressure) as caught:  # the same delay twice: the first part's reason
        _router([_Shard(busy), _Shard(tie)]).route(_two_shard_request(), "grpc")
    assert (caught.value.retry_after, caught.value.reason) == (1.0, "backpressure")
    # a store that failed: the shard's reason and delay, as a single process counts and answers it
    failed = Refusal(RefusalKind.STORE_FAILED, REFUSE_INTERNAL, "OperationalError", 1.0)
    with pytest.raises(Backpressure) as caught:
        _router([_Shard(OK), _Shard(failed)]).route(_two_shard_request(), "grpc")
    assert (caught.value.retry_after, caught.value.reason) == (1.0, REFUSE_INTERNAL)
    assert str(caught.value) == "collector shard 1: could not store: OperationalError"
    # refused for now by one shard and for good by the other: the client retries the whole request
    bad = Refusal(RefusalKind.MALFORMED, REFUSE_MALFORMED, "a ScopeSpans is not valid protobuf")
    with pytest.raises(Backpressure):
        _router([_Shard(bad), _Shard(full)]).route(_two_shard_request(), "grpc")


@pytest.mark.parametrize(
    ("second", "told"),
    [
        (None, "collector shard 1 is restarting; retry"),
        (_Shard(ConnectionRefusedError(111, "Connection refused"), send_fails=True),
         "collector shard 1 is not answering ([Errno 111] Connection refused); retry"),
        (_Shard(TimeoutError("timed out")), "collector shard 1 is not answering (timed out); retry"),
    ],
)  # fmt: skip
def test_a_shard_down_or_restarting_makes_the_request_retryable(second: Any, told: str) -> None:
    with pytest.raises(Backpressure) as caught:
        _router([_Shard(OK), second]).route(_two_shard_request(), "grpc")
    assert caught.value.reason == REFUSE_SHARD_UNAVAILABLE and caught.value.retry_after == 2.5  # the front's delay
    assert str(caught.value) == told


def test_a_part_refused_for_good_is_told_as_rejected_spans_and_all_parts_as_malformed() -> None:
    raw = _two_shard_request()
    parts = split_request(raw, 2, max_items=10_000)
    bad = Refusal(RefusalKind.MALFORMED, REFUSE_MALFORMED, "a ScopeSpans is not valid protobuf")
    result = _router([_Shard(OK), _Shard(bad)]).route(raw, "grpc")
    assert (result.accepted, result.rejected) == (parts[0].spans + parts[1].spans, parts[1].spans)
    assert result.message == "a ScopeSpans is not valid protobuf"
    result = _router([_Shard(_partial(2, "2 span(s) with invalid trace or span ids")), _Shard(bad)]).route(raw, "grpc")
    assert result.rejected == parts[1].spans + 2
    assert result.message == "2 span(s) with invalid trace or span ids; a ScopeSpans is not valid protobuf"
    too_large = Refusal(RefusalKind.TOO_LARGE, REFUSE_TOO_LARGE, "request of 9 bytes exceeds max_request_bytes=8")
    result = _router([_Shard(too_large), _Shard(OK)]).route(raw, "grpc")
    assert result.rejected == parts[0].spans and result.message.startswith("request of 9 bytes")
    with pytest.raises(Malformed, match="not valid protobuf"):
        _router([_Shard(bad), _Shard(bad)]).route(raw, "grpc")
    with pytest.raises(Malformed, match="not valid protobuf; request of 9 bytes"):
        _router([_Shard(bad), _Shard(too_large)]).route(raw, "grpc")
    with pytest.raises(TooLarge) as caught:  # too large on every shard: too large, as a single process says it
        _router([_Shard(too_large), _Shard(too_large)]).route(raw, "grpc")
    assert str(caught.value) == "; ".join([too_large.message] * 2)


def test_rejections_from_every_shard_add_up_and_are_all_told() -> None:
    raw = _two_shard_request()
    result = _router([_Shard(_partial(2, "two bad ids")), _Shard(_partial(3, "three bad ids"))]).route(raw, "grpc")
    assert (result.rejected, result.message) == (5, "two bad ids; three bad ids")
    bad = [_Shard(Refusal(RefusalKind.MALFORMED, REFUSE_MALFORMED, why)) for why in ("bad one", "bad two")]
    with pytest.raises(Malformed) as caught:
        _router(bad).route(raw, "grpc")
    assert str(caught.value) == "bad one; bad two"


# -- shards' options and stores ------------------------------------------------------------------------------------


def test_each_shard_gets_its_share_of_the_collector_wide_bounds(tmp_path: Any) -> None:
    config = collector_config(tmp_path, None, max_pending_traces=101, max_pending_bytes="64MiB",
                              judge_token_budget_per_hour=1001, memory_limit="1GiB", store_reserve="64MiB",
                              max_request_bytes="1MiB", summary_memory="100MiB",
                              auth_token="client-secret")  # fmt: skip
    one = shard_config(config, 1, 2)
    assert one["max_pending_traces"] == 50 and one["max_pending_bytes"] == 32 << 20
    assert one["summary_memory"] == 50 << 20 and one["store_reserve"] == 32 << 20
    assert one["judge_token_budget_per_hour"] == 500 and one["memory_limit"] == (1 << 30) // 3  # the front has one
    assert one["store"] == str(tmp_path / "collector.db") + ".shard1"
    assert one["auth_token"] is None  # the clients' secret stays in the front, which alone serves them
    assert one["otlp_http"] is None and one["processes"] == 1
    assert front_memory(config, 2) == (1 << 30) // 3


@given(processes=st.integers(1, 6), leftover=st.integers(0, 3), memory=st.integers(0, 12),
       pending=st.integers(8, 10_000), pending_mib=st.integers(10, 200), reserve=st.integers(0, 256),
       summaries=st.integers(0, 100), budget=st.integers(0, 10**6))  # fmt: skip
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_bounds_of_every_process_add_up_to_at_most_what_was_configured(
    tmp_path: Any, processes: int, leftover: int, memory: int, pending: int, pending_mib: int, reserve: int,
    summaries: int, budget: int,
) -> None:  # fmt: skip
    """Whatever the processes, leftover stores included, each bound summed over the processes that enforce it (the
    shards, and the front for memory) is at most the configured one; or the configuration is refused by name."""
    config = collector_config(tmp_path, None, memory_limit=f"{memory * 64}MiB", max_request_bytes="1MiB",
                              max_pending_traces=pending, max_pending_bytes=f"{pending_mib}MiB",
                              store_reserve=f"{reserve}MiB", summary_memory=f"{summaries}MiB",
                              judge_token_budget_per_hour=budget, processes=processes)  # fmt: skip
    total = processes + leftover
    try:
        shares = [shard_config(config, i, total) for i in range(total)]
        front = front_memory(config, total)
    except ConfigError as exc:
        assert any(word in str(exc) for word in ("memory_limit", "max_pending_bytes", "max_pending_traces"))
        return
    for key in ("max_pending_traces", "max_pending_bytes", "store_reserve", "summary_memory"):
        assert sum(s[key] for s in shares) <= getattr(config, key), key
    assert front + sum(s["memory_limit"] for s in shares) <= memory_total(config, total)
    if config.memory_limit:  # 0: auto, raised to what every process needs
        assert memory_total(config, total) == config.memory_limit
    assert all(s["memory_limit"] >= 64 * config.max_request_bytes for s in shares)  # room for one request each
    if budget >= total:
        assert sum(s["judge_token_budget_per_hour"] for s in shares) <= budget


def test_a_shard_set_with_leftover_stores_shares_the_bounds_among_them_all(tmp_path: Any) -> None:
    """Two routed shards and two stores left by a run with four: four shard processes and the front share the
    bounds, as the ShardSet computes them before starting any process."""
    from mast_otel.collector.scaleout.shards import ShardSet

    config = collector_config(tmp_path, None, memory_limit="500MiB", max_request_bytes="1MiB",
                              max_pending_traces=400, processes=2)  # fmt: skip
    for k in (2, 3):
        (tmp_path / f"collector.db.shard{k}").write_bytes(b"")
    shards = ShardSet(config, count=2, max_request_bytes=config.max_request_bytes)
    assert [(s.index, s.routed) for s in shards.shards] == [(0, True), (1, True), (2, False), (3, False)]
    assert shards.front_memory == (500 << 20) // 5
    with pytest.raises(ConfigError, match=r"memory_limit=.* leaves .* to each of 4 shard processes and the front"):
        ShardSet(dataclasses.replace(config, memory_limit=300 << 20), count=2, max_request_bytes=1 << 20)


def test_shard_0_keeps_the_store_and_leftover_shard_stores_are_found(tmp_path: Any) -> None:
    store = str(tmp_path / "c.db")
    assert shard_store(store, 0) == store and shard_store(":memory:", 3) == ":memory:"
    for name in ("c.db.shard1", "c.db.shard2", "c.db.shard2-wal", "c.db.shard10", "other.db.shard5"):
        (tmp_path / name).write_bytes(b"")
    assert leftover_stores(store, 1) == [1, 2, 10]
    assert leftover_stores(store, 3) == [10]
    assert leftover_stores(":memory:", 1) == []


# -- one /metrics -------------------------------------------------------------------------------------------------


def _registry(received: float, refused: float, pending: float, link_refused: float = 0) -> CollectorRegistry:
    r = CollectorRegistry()
    Counter("mast_collector_spans_received", "d", ["protocol"], registry=r).labels("grpc").inc(received)
    counter = Counter("mast_collector_requests_refused", "d", ["protocol", "reason"], registry=r)
    counter.labels("grpc", "backpressure").inc(refused)
    if link_refused:  # a shard's refusals of connections to its link: the front never counts them
        counter.labels("link", "unauthenticated").inc(link_refused)
    Gauge("mast_collector_traces_pending", "d", registry=r).set(pending)
    return r


def test_metrics_of_front_and_shards_are_summed_and_refusals_counted_by_the_front_only(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import http.server
    import socket
    import threading

    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from mast_otel.collector.scaleout import shard_metrics

    front = _registry(0, 1, 0)
    shards = [generate_latest(_registry(5, 7, 2, 2)).decode(), generate_latest(_registry(3, 9, 4, 3)).decode()]
    served: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = shards[int(self.path.strip("/"))].encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            served.append(self.path)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    silent = socket.socket()  # a shard that accepts the connection and never answers: the scrape must not hang
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    monkeypatch.setattr(shard_metrics, "_SCRAPE_TIMEOUT_S", 0.3)
    gone = "http://127.0.0.1:1/metrics"
    try:
        urls = [gone, f"http://127.0.0.1:{silent.getsockname()[1]}/metrics", f"http://127.0.0.1:{port}/0",
                f"http://127.0.0.1:{port}/1"]  # fmt: skip
        with caplog.at_level("WARNING"):
            text = generate_latest(shard_metrics.registry_of(ShardMetrics(front, lambda: urls))).decode()
    finally:
        server.shutdown()
        silent.close()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    values = {(f.name, s.name): s.value for f in families.values() for s in f.samples}
    assert values[("mast_collector_spans_received", "mast_collector_spans_received_total")] == 8
    assert values[("mast_collector_traces_pending", "mast_collector_traces_pending")] == 6
    refused = {(s.labels["protocol"], s.labels["reason"]): s.value
               for s in families["mast_collector_requests_refused"].samples if s.name.endswith("_total")}  # fmt: skip
    assert refused == {("grpc", "backpressure"): 1}  # a shard's counts of refusals are never merged
    assert families["mast_collector_traces_pending"].documentation == "d"
    assert "# HELP mast_collector_traces_pending d" in text
    assert len(served) == 2
    unreachable = [m for m in caplog.messages if "could not read a collector shard's metrics" in m]
    assert len(unreachable) == 2 and "refused" in unreachable[0].lower()
    assert unreachable[0].startswith(f"could not read a collector shard's metrics at {gone}: ")


def test_merge_keeps_label_sets_apart() -> None:
    a, b = CollectorRegistry(), CollectorRegistry()
    Counter("c", "d", ["p"], registry=a).labels("grpc").inc(2)
    cb = Counter("c", "d", ["p"], registry=b)
    cb.labels("grpc").inc(3)
    cb.labels("http").inc(4)
    (family,) = merge_families([a.collect(), b.collect()])
    totals = {s.labels["p"]: s.value for s in family.samples if s.name == "c_total"}
    assert totals == {"grpc": 5, "http": 4}


def test_auto_counts_the_cores_this_process_may_use_capped_by_a_cgroup_quota(tmp_path: Any) -> None:
    import os

    from mast_otel.collector.config import usable_cores

    cores = len(os.sched_getaffinity(0))
    assert usable_cores(tmp_path) == cores  # no cgroup files: the affinity
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert usable_cores(tmp_path) == cores
    (tmp_path / "cpu.max").write_text("50000 100000\n")  # half a CPU: one shard
    assert usable_cores(tmp_path) == 1
    (tmp_path / "cpu.max").write_text(f"{150000 * cores} 100000\n")  # more quota than cores: the cores
    assert usable_cores(tmp_path) == cores
    (tmp_path / "cpu.max").unlink()
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert usable_cores(tmp_path) == cores
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")  # cgroup v1, one CPU
    assert usable_cores(tmp_path) == 1
    assert collector_config(tmp_path, None, processes="auto").process_count == usable_cores()
    assert collector_config(tmp_path, None, processes=3).process_count == 3


def test_processes_is_auto_or_a_count() -> None:
    from mast_otel.collector.config import ConfigError, load_config

    assert load_config({"processes": "auto", "export_endpoint": "http://127.0.0.1:9"}, environ={}).processes == 0
    assert load_config({}, environ={"MAST_OTEL_COLLECTOR_PROCESSES": "4"}).processes == 4
    assert load_config({}, environ={}).processes == 1  # one process unless asked
    for bad in ("-1", "two", "1.5"):
        with pytest.raises(ConfigError, match="processes"):
            load_config({"processes": bad}, environ={})
