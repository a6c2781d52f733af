"""The store and the wire-format helpers: what is written is what comes back, byte for byte."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

from mast_otel import semconv as sc
from mast_otel.collector import CollectorService
from mast_otel.collector.encoding import RawScopeSpans, ScopeSpansView, field, scope_spans
from mast_otel.collector.receive.ingest import span_facts
from mast_otel.collector.store.api import NewSegment, OutRow, SQLiteStore, Tomb
from tests.collector.conftest import FakeClock, FakeJudge, collector_config, metric, recorded, scrape
from tests.collector.sink import OtlpSink
from tests.collector.test_pipeline import send


def scope_with(*spans: Span) -> bytes:
    ss = ScopeSpans(schema_url="https://example/schema")
    ss.scope.name = "lib"
    ss.spans.extend(spans)
    return ss.SerializeToString()


def test_scope_spans_view_finds_every_span() -> None:
    spans = [Span(trace_id=bytes(16), span_id=bytes([i]) * 8, name="x" * (i * 100)) for i in range(1, 4)]
    data = scope_with(*spans)
    view = ScopeSpansView.parse(data)
    assert [Span.FromString(data[a:b]).span_id for a, b in view.spans] == [s.span_id for s in spans]
    rebuilt = ScopeSpans.FromString(scope_spans(view, [data[a:b] for a, b in view.spans[1:]]))
    assert rebuilt.scope.name == "lib" and rebuilt.schema_url == "https://example/schema"
    assert [s.span_id for s in rebuilt.spans] == [s.span_id for s in spans[1:]]


def _facts(*attrs: KeyValue | bytes) -> tuple[bool, str | None, str | None, str | None]:
    """span_facts of a span with these attributes (KeyValues, or raw KeyValue bytes), parsed as ingest does."""
    raw = [a if isinstance(a, bytes) else a.SerializeToString() for a in attrs]
    span = Span(trace_id=b"t" * 16, span_id=b"s" * 8).SerializeToString() + b"".join(field(9, a) for a in raw)
    (parsed,) = RawScopeSpans.FromString(field(2, span)).spans
    return span_facts(parsed.attributes)


def kv(key: str, **value: Any) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(**value))


def test_span_facts_reads_the_usual_encoding_in_place() -> None:
    assert _facts(
        kv(sc.GEN_AI_OPERATION_NAME, string_value=sc.OP_INVOKE_WORKFLOW),
        kv(sc.MAST_SPAN_TYPE, string_value=sc.SPAN_TYPE_CONVERSATION),
        kv("mast.message.content", string_value="x" * 300),
        kv(sc.GEN_AI_CONVERSATION_ID, string_value="c-1"),
        kv(sc.MAST_FRAMEWORK, string_value="ag2"),
    ) == (True, "c-1", None, "ag2")


def test_span_facts_is_exact_for_unusual_encodings() -> None:
    value_first = (
        b"\x12" + bytes([len(AnyValue(string_value="c-2").SerializeToString())])
        + AnyValue(string_value="c-2").SerializeToString()
        + b"\x0a" + bytes([len(sc.GEN_AI_CONVERSATION_ID)]) + sc.GEN_AI_CONVERSATION_ID.encode()
    )  # fmt: skip
    assert KeyValue.FromString(value_first).key == sc.GEN_AI_CONVERSATION_ID
    typed = kv(sc.MAST_SPAN_TYPE, string_value=sc.SPAN_TYPE_MESSAGE)  # conversation ids are read on mast-otel's spans
    assert _facts(value_first, typed) == (False, "c-2", None, None)
    assert _facts(kv(sc.GEN_AI_OPERATION_NAME, int_value=3)) == (False, None, None, None)  # not a string
    long_value = "p" * 300  # two-byte lengths
    assert _facts(kv(sc.CONVERSATION_PARENT_ID, string_value=long_value), typed)[2] == long_value
    assert _facts(kv("k" * 200, string_value="v"), kv(sc.GEN_AI_CONVERSATION_ID, string_value=""), typed) == (
        False, None, None, None,
    )  # fmt: skip


def test_raw_parse_sees_ids_and_attributes() -> None:
    span = Span(trace_id=b"t" * 16, span_id=b"s" * 8, parent_span_id=b"p" * 8, name="n")
    span.attributes.append(kv(sc.GEN_AI_CONVERSATION_ID, string_value="c"))
    span.attributes.append(kv(sc.MAST_SPAN_TYPE, string_value=sc.SPAN_TYPE_MESSAGE))
    (raw,) = RawScopeSpans.FromString(scope_with(span)).spans
    assert (raw.trace_id, raw.span_id, raw.parent_span_id) == (b"t" * 16, b"s" * 8, b"p" * 8)
    assert span_facts(raw.attributes)[1] == "c"


def test_write_read_and_counts(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "s.db"))
    rid = store.resource_id(b"\x0a\x00", "")
    assert store.resource_id(b"\x0a\x00", "") == rid  # deduplicated
    (seg,) = store.write(segments=[NewSegment(rid, 1.0, b"abc")])
    store.write(outbox=[OutRow(rid, b"defg", 2)], tombs=[Tomb(b"t" * 16, b"s" * 8 + b"r" * 8, 5.0, unit="u")])
    assert store.counts() == (2, 7)
    assert store.segment(seg).data == b"abc"
    (tomb,) = store.tombs(b"t" * 16)
    assert tomb.ids() == {b"s" * 8, b"r" * 8} and tomb.unit == "u"
    (row,) = store.outbox(10, 10)
    store.write(drop_outbox=[row.id], drop_segments=[seg])
    assert store.counts() == (0, 0)
    store.close()
    reopened = SQLiteStore(str(tmp_path / "s.db"))  # state survives a reopen
    assert reopened.tombs(b"t" * 16) and reopened.resource(rid) == (b"\x0a\x00", "")
    reopened.close()


def test_tombstones_outlive_the_segments_that_need_them(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "s.db"))
    store.write(segments=[NewSegment(1, 100.0, b"x")], tombs=[Tomb(b"t" * 16, b"s" * 8, 150.0)])
    assert store.gc(before=1000.0) == 0  # a segment from t=100 is still held: its tombstones stay
    store.write(drop_segments=[1])
    assert store.gc(before=1000.0) == 1
    store.close()


class FlakyStore(SQLiteStore):
    """A real store whose write can be made to fail (function-valued hook)."""

    on_write: Callable[[dict[str, Sequence[Any]]], None] = staticmethod(lambda kw: None)

    def write(self, **kw: Any) -> list[int]:  # type: ignore[override]
        self.on_write(kw)
        return super().write(**kw)


def flaky_service(
    tmp_path: Path, sink: OtlpSink, clock: FakeClock, on_write: Callable[[dict[str, Sequence[Any]]], None]
) -> CollectorService:
    """A collector (fake judge, fake clock) on a FlakyStore whose every write passes through ``on_write`` first."""
    store = FlakyStore(str(tmp_path / "flaky.db"))
    store.on_write = on_write  # type: ignore[method-assign]
    return CollectorService(collector_config(tmp_path, sink), judge=FakeJudge(), store=store, clock=clock)


def test_store_failure_on_release_is_retried(sink: OtlpSink, tmp_path: Path) -> None:
    # prepare: the first release fails
    clock = FakeClock()
    failures = []

    def fail_first_release(kw: dict[str, Sequence[Any]]) -> None:
        if kw.get("tombs") and not failures:
            failures.append(1)
            raise OSError("disk full")

    service = flaky_service(tmp_path, sink, clock, fail_first_release)
    try:
        service.start(pipeline=False)
        spans = recorded(1)
        send(service, spans)
        # test
        clock.advance(1)
        service.tick()  # the verdict cannot be stored; the next pipeline step (flush runs one) stores it
        assert service.flush()
        # verify
        assert failures
        got = sink.wait_count(len(spans))
        assert len(got) == len(spans)
        assert metric(scrape(service), "mast_judge_errors_total", reason="store") == 1
    finally:
        service.stop(grace=0.2)


def test_tombstone_filter_never_hides_a_tombstone(tmp_path: Path) -> None:
    # prepare: tombstones written over time, garbage-collected in between (the filter rotates)
    store = SQLiteStore(str(tmp_path / "f.db"))
    trace = [bytes([i]) * 16 for i in range(4)]
    store.write(tombs=[Tomb(trace[0], b"a" * 8, at=100.0)])
    store.gc(before=50.0)  # rotation 1: trace 0 now in the previous generation
    store.write(tombs=[Tomb(trace[1], b"b" * 8, at=200.0)])
    store.gc(before=150.0)  # deletes trace 0's tombstone; rotation 2
    store.write(tombs=[Tomb(trace[2], b"c" * 8, at=300.0)])
    # verify: what exists is found, what does not is not
    assert store.tombs(trace[0]) == []
    assert [t.span_ids for t in store.tombs(trace[1])] == [b"b" * 8]
    assert [t.span_ids for t in store.tombs(trace[2])] == [b"c" * 8]
    assert store.tombs(trace[3]) == []
    store.close()
    reopened = SQLiteStore(str(tmp_path / "f.db"))  # the filter is rebuilt from the table
    assert [t.span_ids for t in reopened.tombs(trace[2])] == [b"c" * 8]
    reopened.close()
