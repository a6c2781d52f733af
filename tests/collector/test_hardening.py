"""One test per defect of issue 10 that an in-process collector shows: limits that did not hold, input stored
that could not be read back, retryable answers to permanent problems, forged labels, double judging."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import grpc
import pytest
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

from mast_otel import semconv as sc
from mast_otel.collector import CollectorService
from mast_otel.collector.encoding import field
from mast_otel.collector.metrics import CollectorMetrics
from mast_otel.collector.receive.ingest import Malformed, TooLarge
from mast_otel.collector.release.exporter import Exporter, SendResult
from mast_otel.collector.store.api import OutRow, SQLiteStore
from mast_otel.judge.model import Verdict
from mast_otel.spans import SpanRecord
from tests.collector.conftest import FakeClock, FakeJudge, flag_messages, metric, recorded, scrape
from tests.collector.sink import OtlpSink
from tests.collector.test_pipeline import keys, roots, send
from tests.collector.test_receivers import grpc_call, post


def request_of(*scopes: bytes, resource: bytes = b"") -> bytes:
    """An ExportTraceServiceRequest of one ResourceSpans holding these serialized ScopeSpans."""
    return field(1, field(1, resource) + b"".join(field(2, s) for s in scopes))


def span(i: int, trace: int = 1, **kw: object) -> Span:
    return Span(trace_id=trace.to_bytes(16, "big"), span_id=(i + 1).to_bytes(8, "big"), name=f"s{i}", **kw)  # type: ignore[arg-type]


def test_max_pending_traces_holds_when_nothing_is_pending(sink: OtlpSink, make_collector) -> None:
    service = make_collector(sink, max_pending_traces=50)
    many = ScopeSpans(spans=[span(0, trace=t) for t in range(1, 201)]).SerializeToString()
    with pytest.raises(TooLarge, match="max_pending_traces=50"):  # alone larger than the limit: never retry it
        service.ingestor.ingest(request_of(many), "grpc")
    assert service.assembler.pending_traces == 0
    some = ScopeSpans(spans=[span(0, trace=t) for t in range(1, 41)]).SerializeToString()
    service.ingestor.ingest(request_of(some), "grpc")
    more = ScopeSpans(spans=[span(0, trace=t) for t in range(100, 120)]).SerializeToString()
    with pytest.raises(Exception, match="too many traces pending"):
        service.ingestor.ingest(request_of(more), "grpc")
    assert service.assembler.pending_traces == 40


def test_resources_are_stored_only_with_spans_and_collected(sink: OtlpSink, make_collector, tmp_path: Path) -> None:
    service = make_collector(sink)
    for i in range(100):  # distinct resources, no valid span: nothing may be stored
        resource = KeyValue(key="service.name", value=AnyValue(string_value=f"svc-{i}" * 100)).SerializeToString()
        invalid = ScopeSpans(spans=[Span(trace_id=b"", span_id=b"", name="x")]).SerializeToString()
        result = service.ingestor.ingest(request_of(invalid, resource=field(1, resource)), "grpc")
        assert result.rejected == 1
    db = sqlite3.connect(tmp_path / "collector.db")
    assert db.execute("SELECT count(*) FROM resource").fetchone()[0] == 0
    service.start(pipeline=False)
    send(service, recorded(1))
    assert db.execute("SELECT count(*) FROM resource").fetchone()[0] == 1
    service.release_now()
    assert service.flush()
    service._gc(service.clock() + 10_000)  # the spans left: their resource goes too
    assert db.execute("SELECT count(*) FROM resource").fetchone()[0] == 0


def _group_scope(end: int = 5) -> bytes:
    """A ScopeSpans with one valid span and an (empty) group field 5, closed by an end-group tag of field ``end``:
    valid protobuf when ``end`` is 5 (an unknown field), invalid otherwise."""
    good = ScopeSpans(spans=[span(0)]).SerializeToString()
    return good + bytes([5 << 3 | 3, end << 3 | 4])


def test_unknown_group_field_is_stored_and_released(sink: OtlpSink, make_collector) -> None:
    """It used to be acknowledged, then fail at every release tick forever (the span walker knew no groups)."""
    service = make_collector(sink, quiet_period=0.0)
    service.start(pipeline=False)
    grpc_call(service, request_of(_group_scope()))
    service.release_now()
    assert service.flush()
    assert [s.name for s in sink.wait_count(1)] == ["s0"]
    assert service.assembler.held_spans == 0 and service.store.counts() == (0, 0)


def test_invalid_scope_spans_is_invalid_argument_not_stored(sink: OtlpSink, make_collector) -> None:
    service = make_collector(sink)
    service.start(pipeline=False)
    with pytest.raises(grpc.RpcError) as err:
        grpc_call(service, request_of(_group_scope(end=6)))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # permanent: an SDK does not retry it
    status, _, body = post(service, request_of(_group_scope(end=6)))
    assert status == 400 and "is not valid" in status_pb2.Status.FromString(body).message
    assert service.assembler.held_spans == 0 and service.store.counts() == (0, 0)
    text = scrape(service)
    assert metric(text, "mast_collector_requests_refused_total", protocol="grpc", reason="malformed") == 1
    assert metric(text, "mast_collector_requests_refused_total", protocol="http", reason="internal_error") == 0


def test_top_level_unknown_group_field_is_not_retryable(sink: OtlpSink, make_collector) -> None:
    service = make_collector(sink, quiet_period=0.0)
    service.start(pipeline=False)
    spans = recorded(1)
    raw = bytes(encode_spans(spans).SerializeToString()) + bytes([7 << 3 | 3, 7 << 3 | 4])
    grpc_call(service, raw)  # an unknown field of the request: ignored, as protobuf does; the spans are stored
    service.release_now()
    assert service.flush()
    assert {s.key for s in sink.wait_count(len(spans))} == keys(spans)


def test_deeply_nested_json_is_400(sink: OtlpSink, make_collector) -> None:
    service = make_collector(sink)
    service.start(pipeline=False)
    status, _, _ = post(service, b'{"resourceSpans": ' + b"[" * 5000 + b"]" * 5000 + b"}", "application/json")
    assert status == 400
    deep = field(1, b"x")  # AnyValue.string_value
    for _ in range(200):  # AnyValue.array_value.values, deeper than protobuf's recursion limit: unreadable later
        deep = field(5, field(1, deep))
    attribute = field(1, b"deep") + field(2, deep)
    nested = field(2, span(0).SerializeToString() + field(9, attribute))
    with pytest.raises(Malformed):
        service.ingestor.ingest(request_of(nested), "grpc")


def test_forged_collector_attributes_are_removed_and_counted(sink: OtlpSink, make_collector) -> None:
    service = make_collector(sink, judge=FakeJudge(on_judge=flag_messages("1.3")), quiet_period=0.0)
    service.start(pipeline=False)
    spans = recorded(1)
    request = encode_spans(spans)
    forged = {sc.FAILED: AnyValue(bool_value=False), sc.fm_attribute("1.1"): AnyValue(bool_value=True),
              sc.JUDGE_STATUS: AnyValue(string_value="ok"), "mast.signal.loop": AnyValue(bool_value=True)}  # fmt: skip
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for s in ss.spans:
                s.attributes.extend(KeyValue(key=k, value=v) for k, v in forged.items())
    grpc_call(service, request.SerializeToString())
    service.release_now()
    assert service.flush()
    got = sink.wait_count(len(spans))
    (root,) = roots(got)
    assert root.attributes[sc.FAILED] is True and root.attributes[sc.FAILURE_MODES] == ("1.3",)
    assert sc.fm_attribute("1.1") not in root.attributes
    assert all("mast.signal.loop" not in s.attributes and sc.fm_attribute("1.1") not in s.attributes for s in got)
    assert metric(scrape(service), "mast_collector_attributes_removed_total") == 4 * len(spans)
    assert all(s.attributes[sc.MAST_SPAN_TYPE] for s in got)  # the instrumentation's own mast.* attributes stay


def test_corrupt_segment_is_quarantined_and_the_rest_recovers(sink: OtlpSink, make_collector, tmp_path) -> None:
    first = make_collector(sink)
    first.start(pipeline=False)
    spans = recorded(3)
    for s in spans:  # one segment per span
        send(first, [s])
    first.stop()
    db = sqlite3.connect(tmp_path / "collector.db")
    (bad,) = db.execute("SELECT min(id) FROM segment").fetchone()
    db.execute("UPDATE segment SET data = ? WHERE id = ?", (b"\xff\xff\xff\xff", bad))
    db.commit()
    second = make_collector(sink, quiet_period=0.0)  # used to abort startup, stranding every other segment
    second.start(pipeline=False)
    second.release_now()
    assert second.flush()
    got = sink.wait_count(len(spans) - 1)
    assert len({s.key for s in got}) == len(spans) - 1
    assert metric(scrape(second), "mast_collector_segments_quarantined_total", stage="recovery") == 1
    assert db.execute("SELECT count(*) FROM quarantine").fetchone()[0] == 1


def test_unreadable_segment_at_release_is_quarantined_not_retried(sink: OtlpSink, make_collector, tmp_path) -> None:
    service = make_collector(sink, quiet_period=0.0)
    service.start(pipeline=False)
    send(service, recorded(1))
    db = sqlite3.connect(tmp_path / "collector.db")
    db.execute("UPDATE segment SET data = ?", (b"\x12\x05\xff\xff",))  # damaged after it was acknowledged
    db.commit()
    service.cache.forget(range(100))
    service.release_now()
    assert service.flush(timeout=10)
    for _ in range(3):
        service.tick()
    assert service.judges.in_flight == 0 and service.assembler.held_spans == 0  # not retried every tick
    assert metric(scrape(service), "mast_collector_segments_quarantined_total", stage="release") == 1


def test_corrupt_store_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    store = tmp_path / "broken.db"
    store.write_bytes(b"this is not a database" * 100)
    cmd = [sys.executable, "-m", "mast_otel.cli", "collector", "--store", str(store), "--otlp-grpc",
           "127.0.0.1:0", "--otlp-http", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--export-endpoint",
           "http://127.0.0.1:9"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"cannot open the store {store}" in done.stderr.strip().splitlines()[-1]


def test_failed_release_leaves_the_held_gauge_exact(sink: OtlpSink, make_collector) -> None:
    service = make_collector(sink, quiet_period=0.0)
    service.start(pipeline=False)
    spans = recorded(1)
    send(service, spans)
    held = service.assembler.held_spans
    real_write = service.store.write

    def failing(**kw: object) -> list[int]:
        if kw.get("tombs"):
            raise sqlite3.OperationalError("database is locked")
        return real_write(**kw)  # type: ignore[arg-type]

    service.store.write = failing  # type: ignore[method-assign]
    service.release_now()
    service.flush(timeout=1)
    assert service.assembler.held_spans == held  # each failed release used to add one
    service.store.write = real_write  # type: ignore[method-assign]
    service.tick()
    assert service.flush()
    assert service.assembler.held_spans == 0


class _TooLargeOnce:
    def __init__(self) -> None:
        self.sizes: list[int] = []

    def send(self, payload: bytes, timeout: float) -> SendResult:
        self.sizes.append(len(payload))
        if len(self.sizes) == 1:
            return SendResult(False, too_large=True)
        return SendResult(True)

    def close(self) -> None:
        pass


def test_export_batch_grows_back_after_a_413(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "e.db"))
    rid = store.resource_id(b"", "")
    one = ScopeSpans(spans=[span(0)]).SerializeToString()
    store.write(outbox=[OutRow(rid, one, 1) for _ in range(64)])
    sender = _TooLargeOnce()
    exporter = Exporter(store=store, sender=sender, metrics=CollectorMetrics(), batch_spans=16,
                        batch_bytes=1 << 20, timeout=1, backoff_max=1, clock=FakeClock())  # fmt: skip
    while exporter.export_once() is not None:
        pass
    assert exporter._limit == 16  # halved to 8 by the 413, then back to the configured batch size
    store.close()


def test_a_verdict_once_reached_is_never_judged_again(sink: OtlpSink, make_collector) -> None:
    """kill -9 between the verdict and its release: the restarted collector uses the stored verdict."""
    clock = FakeClock()
    judge = FakeJudge(on_judge=flag_messages("2.1"))
    first = make_collector(sink, judge=judge, clock=clock, quiet_period=0.0)
    first.start(pipeline=False)
    spans = recorded(1)
    send(first, spans)
    real_write = first.store.write

    def crash_before_release(**kw: object) -> list[int]:
        if kw.get("tombs"):
            raise sqlite3.OperationalError("disk I/O error")  # the release never makes it to disk
        return real_write(**kw)  # type: ignore[arg-type]

    first.store.write = crash_before_release  # type: ignore[method-assign]
    first.release_now()
    first.flush(timeout=1)
    assert len(judge.calls) == 1
    first.judges._stopping = True  # as if killed: nothing more is written
    first.store.write = real_write  # type: ignore[method-assign]
    first.stop()
    second_judge = FakeJudge()
    second = make_collector(sink, judge=second_judge, clock=clock, quiet_period=0.0)
    second.start(pipeline=False)
    second.release_now()
    assert second.flush()
    (root,) = roots(sink.wait_count(len(spans)))
    assert second_judge.calls == []  # judged (and billed) once
    assert root.attributes[sc.FAILURE_MODES] == ("2.1",) and root.attributes[sc.JUDGE_MODEL] == "fake-model"


@pytest.mark.parametrize("policy", ["error", "again"])
def test_a_judge_call_cut_short_by_a_crash_is_not_billed_twice(sink: OtlpSink, make_collector, policy: str) -> None:
    """kill -9 while the judge is answering: the call may have been billed, so the restarted collector does not
    call the judge again (judge_interrupted=error, the default) unless told to (again)."""
    clock = FakeClock()
    answering = threading.Event()
    never = threading.Event()

    def hang(spans: Sequence[SpanRecord], partial: bool) -> Verdict:
        answering.set()
        never.wait(30)
        raise RuntimeError("abandoned")

    first = make_collector(sink, judge=FakeJudge(on_judge=hang), clock=clock, quiet_period=0.0,
                           judge_shutdown_grace=0.1)  # fmt: skip
    first.start(pipeline=False)
    spans = recorded(1)
    send(first, spans)
    first.release_now()
    assert answering.wait(10)
    first.stop()  # the call is abandoned in its thread, as a kill -9 would: no verdict reached the store
    never.set()
    second_judge = FakeJudge(on_judge=flag_messages("2.1"))
    second = make_collector(sink, judge=second_judge, clock=clock, quiet_period=0.0, judge_interrupted=policy)
    second.start(pipeline=False)
    second.release_now()
    assert second.flush()
    (root,) = roots(sink.wait_count(len(spans)))
    if policy == "error":
        assert second_judge.calls == []
        assert root.attributes[sc.JUDGE_STATUS] == sc.JUDGE_ERROR
        assert "being judged" in str(root.attributes[sc.JUDGE_STATUS_REASON])
        assert metric(scrape(second), "mast_judge_errors_total", reason="interrupted") == 1
    else:
        assert len(second_judge.calls) == 1
        assert root.attributes[sc.FAILURE_MODES] == ("2.1",)


def test_a_free_judge_is_called_again_after_a_crash(sink: OtlpSink, make_collector) -> None:
    """The model-free judge costs nothing: a call a crash cut short is simply made again, and labels as usual."""
    answering, never = threading.Event(), threading.Event()

    def hang(spans: Sequence[SpanRecord], partial: bool) -> Verdict:
        answering.set()
        never.wait(30)
        raise RuntimeError("abandoned")

    first = make_collector(sink, judge=FakeJudge(on_judge=hang, name="signals"), quiet_period=0.0,
                           judge_shutdown_grace=0.1)  # fmt: skip
    first.start(pipeline=False)
    send(first, recorded(1))
    first.release_now()
    assert answering.wait(10)
    first.stop()
    never.set()
    second_judge = FakeJudge(name="signals")
    second = make_collector(sink, judge=second_judge, quiet_period=0.0)
    second.start(pipeline=False)
    second.release_now()
    assert second.flush()
    assert len(second_judge.calls) == 1


def test_service_rejects_requests_over_max_request_spans(sink: OtlpSink, make_collector) -> None:
    service = make_collector(sink, max_request_spans=100)
    service.start(pipeline=False)
    flood = b"\x12\x00" * 1000  # empty spans, the cheapest elements there are
    with pytest.raises(grpc.RpcError) as err:
        grpc_call(service, request_of(flood))
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert not dict(err.value.trailing_metadata() or ()).get("google.rpc.retryinfo-bin")  # do not retry as is
    assert service.store.counts() == (0, 0)
    assert isinstance(CollectorService, type)


def test_corrupt_attribute_value_is_malformed_not_a_store_failure(sink: OtlpSink, make_collector) -> None:
    """Found by the fuzz tier: a conversation-id value that is not an AnyValue used to escape as a DecodeError
    (UNAVAILABLE / 503: the client retried it forever)."""
    service = make_collector(sink)
    service.start(pipeline=False)
    attribute = field(1, sc.GEN_AI_CONVERSATION_ID.encode()) + field(2, b"\x0a\x05ab")  # a string cut short
    corrupt = field(2, span(0).SerializeToString() + field(9, attribute))
    with pytest.raises(grpc.RpcError) as err:
        grpc_call(service, request_of(corrupt))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
