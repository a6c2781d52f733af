"""What ingest keeps of each span for a model-free release (:mod:`mast_otel.collector.assemble.summaries`).

The oracle is the path without summaries: the same conversations through a collector with ``summary_memory=0``,
which decodes every stored span at release as before. Both must export the same labels and signals.
"""

from __future__ import annotations

import sqlite3
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common._internal import _encode_value
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from mast_otel import semconv as sc
from mast_otel.collector.assemble import summaries
from mast_otel.collector.assemble.namespace import is_owned
from mast_otel.collector.assemble.summaries import SUMMARY_KEYS, SpanSummaries, summary_record
from mast_otel.collector.encoding import RawScopeSpans, field
from mast_otel.collector.receive import ingest
from mast_otel.collector.release import commit as release
from mast_otel.judge.rules import NoModelJudge
from mast_otel.spans import SpanRecord, from_otlp_span
from tests.collector.conftest import FakeJudge
from tests.collector.in_process import in_process
from tests.judge.test_signals import CASES


def _any(value: Any) -> AnyValue:
    """A value as the OpenTelemetry SDK's OTLP exporter encodes it."""
    return _encode_value(list(value) if isinstance(value, tuple) else value)


def otlp(records: Sequence[SpanRecord], service: str = "shop") -> ExportTraceServiceRequest:
    """SpanRecords (the judge tests' recorded conversations) as the Export request an SDK would send."""
    spans = []
    for r in records:
        span = Span(trace_id=bytes.fromhex(r.trace_id), span_id=bytes.fromhex(r.span_id), name=r.name,
                    parent_span_id=bytes.fromhex(r.parent_span_id or ""), start_time_unix_nano=r.start_ns,
                    end_time_unix_nano=r.end_ns, status=Status(code=2 if r.error else 0))  # fmt: skip
        span.attributes.extend(KeyValue(key=k, value=_any(v)) for k, v in r.attributes.items())
        spans.append(span)
    resource = Resource(attributes=[KeyValue(key="service.name", value=AnyValue(string_value=service))])
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(resource=resource, scope_spans=[ScopeSpans(
        spans=spans)])])  # fmt: skip


def conversations() -> list[list[SpanRecord]]:
    """Every structural signal's case and controls: between them they raise each signal and each non-event."""
    return [make() for case, controls in CASES.values() for make in (case, *controls)]


def exported(tmp_path: Path, batches: Sequence[ExportTraceServiceRequest], judge: Any = None,
             **overrides: Any) -> dict[str, Any]:  # fmt: skip
    """Span id -> (name, attributes) of what a collector (the signals judge by default) exports for these
    requests."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    with in_process(tmp_path, judge=judge or NoModelJudge(), **overrides) as c:
        for request in batches:
            c.send(request)
        c.release()
        kept = c.service.cache.summaries
        assert kept is None or kept.bytes == 0, "a released segment's summaries were not forgotten"
        out: dict[str, Any] = {d.span.span_id.hex(): (d.name, d.attributes) for d in c.downstream.spans()}
        # what is counted, by service and framework (the root's, read from the records) and by signal
        counted = ("mast_conversations_judged", "mast_signal")
        out["metrics"] = sorted((m.name, tuple(sorted(sample.labels.items())), sample.value)
                                for m in c.service.metrics.registry.collect() if m.name in counted
                                for sample in m.samples if not sample.name.endswith("_created"))  # fmt: skip
        return out


def test_labels_and_signals_are_the_same_with_summaries_and_without(tmp_path: Path) -> None:
    batches = [otlp(records) for records in conversations()]
    with_summaries = exported(tmp_path / "kept", batches)
    made_at_release = exported(tmp_path / "full", batches, summary_memory=1)  # ingest keeps the first request's
    decoded = exported(tmp_path / "decoded", batches, summary_memory=0)
    assert with_summaries == decoded
    assert made_at_release == decoded
    signals = {v[1].get(sc.SIGNALS) for key, v in decoded.items() if key != "metrics"} - {None}
    skipped = (("framework", "test"), ("service", "shop"), ("status", sc.JUDGE_SKIPPED), ("version", "unknown"))
    assert ("mast_conversations_judged", skipped, float(len(batches))) in decoded["metrics"]  # fmt: skip
    assert len({name for names in signals for name in names}) == len(CASES)  # every signal was raised and compared


def counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each read of stored spans at release: True for a summary, False for a full decode."""
    reads: list[bool] = []
    real = release.Loaded.records

    def records(self: release.Loaded, store: Any, *, summary: bool = False) -> list[SpanRecord]:
        reads.append(summary)
        made = real(self, store, summary=summary)
        if summary:  # made with the cheap parse: only what a summary keeps, no events
            assert all(set(r.attributes) <= SUMMARY_KEYS and not r.events for r in made)
        return made

    monkeypatch.setattr(release.Loaded, "records", records)
    return reads


def test_the_summaries_are_used_when_the_judge_reads_no_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = counting_reads(monkeypatch)
    batches = [otlp(records) for records in conversations()[:3]]
    exported(tmp_path / "kept", batches)
    assert reads == []  # ingest kept them all
    exported(tmp_path / "full", batches, summary_memory=1)
    assert reads == [True, True]  # the first request's were kept, the others made from the stored spans
    reads.clear()
    exported(tmp_path / "decoded", batches, summary_memory=0)
    assert reads == [False] * 3
    reads.clear()
    exported(tmp_path / "llm", batches, judge=FakeJudge())  # a judge that reads content: nothing kept at ingest
    assert reads == [False] * 3


def test_a_release_retried_after_a_store_error_reads_the_same_summaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The retry builds the release again (JudgePool._finish): from the summaries still kept, equal to a decode."""
    from mast_otel.collector.judge import judging

    real = judging.commit_releases
    failed: list[int] = []

    def once(**kw: Any) -> None:
        if not failed:
            failed.append(1)
            raise sqlite3.OperationalError("database is locked")
        real(**kw)

    monkeypatch.setattr(judging, "commit_releases", once)
    reads = counting_reads(monkeypatch)
    batches = [otlp(conversations()[0])]
    with in_process(tmp_path, judge=NoModelJudge()) as c:
        c.send(batches[0])
        c.release()  # the first write fails; the next tick builds the release again and writes it
        assert failed
        retried = {d.span.span_id.hex(): (d.name, d.attributes) for d in c.downstream.spans()}
    assert reads == []
    decoded = exported(tmp_path / "decoded", batches, summary_memory=0)
    assert retried == {k: v for k, v in decoded.items() if k != "metrics"}


class ReadKeys(dict[str, Any]):
    """Attributes that note every key read."""

    read: ClassVar[set[str]] = set()

    def get(self, key: str, default: Any = None) -> Any:
        ReadKeys.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        ReadKeys.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        ReadKeys.read.add(str(key))
        return super().__contains__(key)


@pytest.mark.parametrize("fraction", [1.0, 0.5])  # below 1, sampling reads the signals before the judge
def test_the_summary_keeps_every_attribute_a_model_free_release_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fraction: float
) -> None:
    real = release.Loaded.records

    def noting(self: release.Loaded, store: Any) -> list[SpanRecord]:
        return [SpanRecord(**{**{f: getattr(r, f) for f in r.__slots__}, "attributes": ReadKeys(r.attributes)})
                for r in real(self, store)]  # fmt: skip

    monkeypatch.setattr(release.Loaded, "records", noting)
    ReadKeys.read = set()
    exported(tmp_path, [otlp(records) for records in conversations()], summary_memory=0, judge_fraction=fraction)
    assert ReadKeys.read <= SUMMARY_KEYS, f"read but not kept at ingest: {sorted(ReadKeys.read - SUMMARY_KEYS)}"
    assert ReadKeys.read == SUMMARY_KEYS, f"kept but never read: {sorted(SUMMARY_KEYS - ReadKeys.read)}"


def test_no_kept_key_is_one_ingest_strips() -> None:
    assert not [key for key in SUMMARY_KEYS if is_owned(key)]


def test_a_foreign_conversation_is_decoded_in_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = counting_reads(monkeypatch)
    root = SpanRecord("ab" * 16, "01" * 8, None, "invoke_agent", 1, 9,
                      {sc.GEN_AI_OPERATION_NAME: "invoke_agent", sc.GEN_AI_AGENT_NAME: "planner"})  # fmt: skip
    child = SpanRecord("ab" * 16, "02" * 8, "01" * 8, "chat", 2, 3, {sc.GEN_AI_OPERATION_NAME: "chat"})
    exported(tmp_path / "kept", [otlp([root, child])])
    assert reads == [False]  # ingest found no mast-otel span: decoded in full at once
    with in_process(tmp_path, judge=NoModelJudge()) as c:
        kept = c.service.cache.summaries
        assert kept is not None
        c.send(otlp([root, child]))
        assert kept.bytes == 0  # nothing summarised for it
        c.send(otlp(conversations()[0]))
        assert kept.bytes > 0
    reads.clear()
    native = otlp(conversations()[0])  # fills the bound: ingest keeps nothing of the foreign request
    exported(tmp_path / "made", [native, otlp([root, child])], summary_memory=1)
    assert reads == [True, False]  # made from the stored spans, found foreign, decoded in full


# -- the records themselves --------------------------------------------------------------------------------------

_VALUES = st.one_of(
    st.text(max_size=300),
    st.integers(60, 9_000).map(lambda n: "é" * n),  # string lengths of 1, 2 and 3 varint bytes
    st.integers(-(2**63), 2**63 - 1), st.booleans(), st.floats(allow_nan=False),
    st.lists(st.text(max_size=20), max_size=3).map(tuple),
)  # fmt: skip
_KEYS = st.sampled_from([*sorted(SUMMARY_KEYS), "gen_ai.system", "other"])


@settings(max_examples=150, deadline=None)
@given(
    attributes=st.lists(st.tuples(_KEYS, _VALUES), max_size=8),
    status=st.sampled_from([Status(), Status(code=2), Status(code=1), Status(code=2, message="boom")]),
    parent=st.sampled_from([b"", b"\x07" * 8]),
    name=st.text(max_size=30),
)
def test_a_summary_is_the_decoded_span_with_the_kept_keys_only(
    attributes: list[tuple[str, Any]], status: Status, parent: bytes, name: str
) -> None:
    span = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, parent_span_id=parent, name=name,
                start_time_unix_nano=5, end_time_unix_nano=2**63, status=status)  # fmt: skip
    span.attributes.extend(KeyValue(key=k, value=_any(v)) for k, v in attributes)  # repeated keys: the last wins
    data = ScopeSpans(spans=[span]).SerializeToString()
    full = from_otlp_span(Span.FromString(span.SerializeToString()), "svc")
    kept = summary_record(RawScopeSpans.FromString(data).spans[0], "svc")
    assert kept == SpanRecord(**{**{f: getattr(full, f) for f in full.__slots__}, "events": (),
                                 "attributes": {k: v for k, v in full.attributes.items() if k in SUMMARY_KEYS}})


def _raw_span(raw_values: Sequence[bytes], status: bytes = b"") -> bytes:
    """A span whose attributes carry these AnyValue encodings as they are (any valid encoding, not only the one
    protobuf writes), keyed by kept keys."""
    body = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="s").SerializeToString()
    for key, raw in zip(sorted(SUMMARY_KEYS), raw_values, strict=False):
        body += field(9, field(1, key.encode()) + field(2, raw))
    return body + (field(15, status) if status else b"")


_TEXT = "é" * 100
ENCODINGS = [
    b"", b"\x0a\x00", b"\x0a\x05hello", b"\x0a\xc8\x01" + _TEXT.encode(), b"\x0a\x80\x80\x01" + b"y" * 16384,
    b"\x0a\x85\x00hello",  # a valid, non-minimal length
    b"\x0a\x01a\x18\x05", b"\x18\x05\x0a\x01a", b"\x0a\x05hello\x0a\x02hi",  # the last one wins
    b"\x0a\x80\x01" + b"z" * 128 + b"\x18\x01",
    # A one-byte length whose value continues with bytes that look like a second length byte.
    b"\x0a\x01\x01" + b"\x0a\x7f" + b"w" * 127, b"\x0a\x01\x01" + b"\x18\x80\x01" + b"\x18\x00" * 63,
    # Non-minimal lengths of 0 followed by a second string whose total length mimics a shorter encoding's.
    b"\x0a\x80\x00" + b"\x0a\x7d" + b"w" * 125, b"\x0a\x80\x80\x00" + b"\x0a\xfc\x7f" + b"w" * 16380,
    b"\x18\x00", b"\x18\x7f", b"\x18\x80\x01", b"\x18\x05\x18\x06", b"\x18" + b"\xff" * 9 + b"\x01",
    b"\x10\x01", b"\x21" + b"\x00" * 7 + b"\x40", AnyValue(bytes_value=b"\x01\x02").SerializeToString(),
    _any(("a", "b")).SerializeToString(),
]  # fmt: skip


@pytest.mark.parametrize("raw", ENCODINGS, ids=range(len(ENCODINGS)))
def test_every_encoding_of_a_value_reads_as_protobuf_reads_it(raw: bytes) -> None:
    body = _raw_span([raw])
    full = from_otlp_span(Span.FromString(body), None)
    kept = summary_record(RawScopeSpans.FromString(field(2, body)).spans[0], None)
    assert kept.attributes == {k: v for k, v in full.attributes.items() if k in SUMMARY_KEYS}
    assert len(kept.attributes) == 1


@pytest.mark.parametrize("status", [b"\x18\x02", b"\x12\x04boom\x18\x02", b"\x18\x01", b"\x18\x02\x18\x00",
                                    b"\x12\x01x", b"\x18\x02" + field(15, b"\x12\x01x")])  # fmt: skip
def test_the_error_status_reads_as_protobuf_reads_it(status: bytes) -> None:
    """The last one: a second status field, which protobuf merges into the first."""
    body = _raw_span([], status)
    full = from_otlp_span(Span.FromString(body), None)
    assert summary_record(RawScopeSpans.FromString(field(2, body)).spans[0], None).error is full.error


class _NoParse:
    @staticmethod
    def FromString(raw: bytes) -> AnyValue:  # protobuf's name
        raise AssertionError(f"parsed {raw[:8]!r}")


def test_the_usual_encodings_are_read_without_a_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """What recorders write (short and long strings, small message indexes) costs no parse."""
    monkeypatch.setattr(summaries, "AnyValue", _NoParse)
    usual = [b"\x0a\x00", b"\x0a\x05hello", b"\x0a\xc8\x01" + _TEXT.encode(), b"\x0a\x80\x01" + b"t" * 128,
             b"\x18\x00", b"\x18\x7f"]  # fmt: skip
    body = _raw_span(usual, b"\x18\x02")
    kept = summary_record(RawScopeSpans.FromString(field(2, body)).spans[0], None)
    assert sorted(map(str, kept.attributes.values())) == ["", "0", "127", "hello", "t" * 128, _TEXT] and kept.error


def test_a_bound_reached_exactly_is_full() -> None:
    records = _kept(10, "hello")
    probe = SpanSummaries(1 << 30)
    probe.put(1, 7, records)
    summaries_ = SpanSummaries(probe.bytes)
    summaries_.put(1, 7, records)
    assert summaries_.bytes == probe.bytes and not summaries_.has_room()
    summaries_.put(2, 7, records)
    assert summaries_.records([(b"", 2, 0)]) is None


def _kept(n: int, text: Any) -> dict[int, SpanRecord]:
    span = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="message", start_time_unix_nano=1)
    span.attributes.extend(KeyValue(key=k, value=_any(v)) for k, v in (
        (sc.MAST_SPAN_TYPE, sc.SPAN_TYPE_MESSAGE), (sc.MESSAGE_SENDER, "planner"), (sc.MESSAGE_CONTENT, text),
        (sc.GEN_AI_CONVERSATION_ID, "c" * 32)))  # fmt: skip
    span.attributes.add(key=sc.MESSAGE_INDEX, value=AnyValue(int_value=3))
    data = ScopeSpans(spans=[span] * n).SerializeToString()
    return {i: summary_record(s, "svc") for i, s in enumerate(RawScopeSpans.FromString(data).spans)}


@pytest.mark.parametrize("text", ["", "x" * 200, "long message " * 300, "wide 🙂 " * 300, tuple(map(str, range(500))),
                                  tuple(range(2**40, 2**40 + 500))])  # fmt: skip
def test_the_bound_counts_at_least_what_the_summaries_take(text: Any) -> None:
    """Whatever the values (text of any width, arrays), within twice what tracemalloc sees."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        records = _kept(200, text)
        taken = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    summaries = SpanSummaries(1 << 30)
    summaries.put(1, 1, records)
    assert taken <= summaries.bytes <= 2 * taken


def test_past_the_bound_a_segment_is_not_kept_and_its_spans_are_decoded() -> None:
    records = _kept(10, "hello")
    summaries = SpanSummaries(1)
    summaries.put(1, 7, records)  # below the bound: kept, though it passes it
    assert not summaries.has_room()
    summaries.put(2, 7, records)
    assert summaries.records([(b"", 1, 0), (b"", 1, 3)]) == [records[0], records[3]]
    assert summaries.records([(b"", 1, 0), (b"", 2, 0)]) is None
    summaries.forget([1])
    assert summaries.bytes == 0 and summaries.has_room()
    summaries.put(2, 7, records)
    assert summaries.records([(b"", 2, 9)]) == [records[9]]
    assert summaries.records([(b"", 2, 10)]) is None  # an index it never kept


def test_a_full_bound_spares_ingest_the_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[int] = []
    real = ingest.summary_record
    monkeypatch.setattr(ingest, "summary_record", lambda span, service: made.append(1) or real(span, service))
    first, second = (otlp(records) for records in conversations()[:2])
    with in_process(tmp_path, judge=NoModelJudge(), summary_memory=1) as c:
        kept = c.service.cache.summaries
        assert kept is not None
        c.send(first)
        assert len(made) == len(first.resource_spans[0].scope_spans[0].spans) and not kept.has_room()
        c.send(second)
        assert len(made) == len(first.resource_spans[0].scope_spans[0].spans)
        c.release()
        assert kept.bytes == 0 and kept.has_room()


def test_records_come_in_the_order_a_decode_gives_them(tmp_path: Path) -> None:
    """The conversation split across three requests of two resources (a, b, a): the same order both ways, the
    resource first seen first, its segments in turn."""
    records = conversations()[0]
    seen: list[tuple[list[SpanRecord], list[SpanRecord]]] = []
    with in_process(tmp_path, judge=NoModelJudge()) as c:
        real = c.service.judges._records

        def compare(unit: Any, loaded: release.Loaded) -> list[SpanRecord]:
            got: list[SpanRecord] = real(unit, loaded)
            seen.append((got, loaded.records(c.service.store)))
            return got

        c.service.judges._records = compare  # type: ignore[method-assign]
        for part, service in ((records[::3], "a"), (records[1::3], "b"), (records[2::3], "a")):
            c.send(otlp(part, service))
        c.release()
    assert len(seen) == 1
    got, decoded = seen[0]
    assert [r.span_id for r in got] == [r.span_id for r in decoded]
    assert [r.service_name for r in got] == [r.service_name for r in decoded] and {"a", "b"} <= {
        r.service_name for r in got}
