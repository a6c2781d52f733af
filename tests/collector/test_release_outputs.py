"""Releasing held spans, piece by piece: what a restart reads back from a paid verdict, which spans go to the
outbox and with which bodies, and what the judge reads.

Oracles: a second store opened on the same file (a restarted collector), the ``ScopeSpans`` protobufs the outbox
rows decode to, the segments as written, and ``dataclasses.asdict`` (the format ``verdict_to_json`` says it
writes).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from google.protobuf.message import DecodeError
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

from mast_otel.collector.assemble.assembler import Location
from mast_otel.collector.metrics import CollectorMetrics
from mast_otel.collector.release.commit import (
    Loaded,
    SegmentCache,
    commit_release,
    is_unreadable,
    persist_claim,
    persist_verdict,
    quarantine_release,
    verdict_from_json,
    verdict_to_json,
)
from mast_otel.collector.store.api import NewSegment, OutRow, SQLiteStore, StoredSegment, Tomb
from mast_otel.collector.store.verdicts import CLAIMED
from mast_otel.judge.model import DecisiveStep, ModeLabel, Verdict

TRACE = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
FULL = Verdict(
    status="partial",
    source="llm",
    modes=(ModeLabel("1.3", ("0202020202020202", "0303030303030303"), "said twice"), ModeLabel("3.2")),
    summary="looped",
    task_completed=False,
    model="gpt-judge",
    tokens_in=1500,
    tokens_out=90,
    cost_usd=0.0125,
    status_reason="max_trace_age reached",
    extra={"source": "openinference", "framework": "ag2"},
    decisive=DecisiveStep("0202020202020202", 4, "coder", "never ran the tests"),
)


# -- the verdict as the journal keeps it ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "verdict",
    [FULL, Verdict.error("llm", "timeout"), Verdict.skipped("sampled out"), Verdict(status="ok", source="rules")],
    ids=["full", "error", "skipped", "clean"],
)
def test_a_verdict_reads_back_equal_and_is_written_as_asdict(verdict: Verdict) -> None:
    text = verdict_to_json(verdict)
    assert json.loads(text) == json.loads(json.dumps(dataclasses.asdict(verdict)))
    assert verdict_from_json(text) == verdict


def test_consecutive_verdicts_each_get_their_own_text() -> None:
    # the last text is reused for an equal verdict only: a different one right after must not get it
    first, second = Verdict(status="ok", source="rules"), Verdict(status="ok", source="rules", summary="other")
    assert verdict_from_json(verdict_to_json(first)) == first
    assert verdict_from_json(verdict_to_json(first)) == first
    assert verdict_from_json(verdict_to_json(second)) == second
    assert verdict_from_json(verdict_to_json(dataclasses.replace(first))) == first


def test_a_verdict_from_another_version_reads_back() -> None:
    # a journal written by a newer version (an unknown field) or an older one (fields missing, nulls)
    modes = [{"mode_id": "2.1", "evidence_span_ids": None, "reason": None}, {"mode_id": "1.1"}]
    text = json.dumps({"status": "ok", "source": "llm", "new_field": 1, "modes": modes})
    assert verdict_from_json(text) == Verdict(status="ok", source="llm", modes=(ModeLabel("2.1"), ModeLabel("1.1")))
    bare = verdict_from_json(json.dumps({"status": "error", "source": "llm", "modes": None, "decisive": None}))
    assert bare == Verdict(status="error", source="llm")


# -- the journal writes around a paid judge call -------------------------------------------------------------------


def test_a_persisted_verdict_is_what_a_restarted_store_finds(tmp_path: Path) -> None:
    # prepare
    path = str(tmp_path / "collector.db")
    store = SQLiteStore(path)
    # test: the verdict is persisted; the process dies before the release (the store is never closed)
    persist_verdict(store, TRACE, "conv-1", FULL, 1_700_000_000.0)
    restarted = SQLiteStore(path)
    try:
        # verify: the paid verdict is there, whole, for this conversation only
        saved = restarted.verdict(TRACE, "conv-1")
        assert saved is not None and verdict_from_json(saved) == FULL
        assert restarted.verdict(TRACE, "conv-2") is None
    finally:
        restarted.close()
        store.close()


def test_a_claim_is_what_a_restarted_store_finds(tmp_path: Path) -> None:
    path = str(tmp_path / "collector.db")
    store = SQLiteStore(path)
    persist_claim(store, TRACE, "conv-1", 1_700_000_000.0)
    restarted = SQLiteStore(path)
    try:
        assert restarted.verdict(TRACE, "conv-1") == CLAIMED
    finally:
        restarted.close()
        store.close()


@dataclass
class RefusingStore:
    """A store whose journal writes fail the way a full disk or a locked database does."""

    error: BaseException
    calls: list[str] = field(default_factory=list)

    def save_verdict(self, trace_id: bytes, unit: str, verdict: str, at: float) -> None:
        self.calls.append("save")
        raise self.error

    def claim_verdict(self, trace_id: bytes, unit: str, at: float) -> None:
        self.calls.append("claim")
        raise self.error


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), sqlite3.OperationalError("locked")])
def test_a_journal_write_that_fails_is_logged_and_the_release_goes_on(
    error: BaseException, caplog: pytest.LogCaptureFixture
) -> None:
    store = RefusingStore(error)
    with caplog.at_level(logging.WARNING, logger="mast_otel.collector.release.commit"):
        persist_verdict(store, TRACE, "u", FULL, 1.0)  # type: ignore[arg-type]
        persist_claim(store, TRACE, "u", 1.0)  # type: ignore[arg-type]
    assert store.calls == ["save", "claim"]
    saving, claiming = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert saving == f"could not save the verdict of trace {TRACE.hex()} before releasing it: {error}"
    assert claiming == f"could not note the judge call for trace {TRACE.hex()}: {error}"


# -- spans read back and written out -------------------------------------------------------------------------------


def span(n: int, name: str) -> Span:
    return Span(trace_id=TRACE, span_id=bytes([n]) * 8, name=name, start_time_unix_nano=n, end_time_unix_nano=n + 1)


def scope(spans: list[Span], scope_name: str) -> bytes:
    return ScopeSpans(
        scope=InstrumentationScope(name=scope_name, version="1.0"), spans=spans, schema_url="https://schema/1"
    ).SerializeToString()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(str(tmp_path / "collector.db"))
    yield s
    s.close()


def service(name: str) -> bytes:
    resource = Resource()
    resource.attributes.add(key="service.name").value.string_value = name
    return resource.SerializeToString()


def two_segments(store: SQLiteStore, *, first_exported: bool = False) -> tuple[list[int], int, int]:
    """Segment A (service shop, scope a: spans 1, 2, 3) and B (service billing, scope b: span 4); returns the
    segment ids and the two resource ids."""
    shop = store.resource_id(service("shop"), "")
    billing = store.resource_id(service("billing"), "")
    ids = store.write(
        segments=[
            NewSegment(shop, 1.0, scope([span(1, "root"), span(2, "msg"), span(3, "tool")], "a"), first_exported),
            NewSegment(billing, 1.0, scope([span(4, "charge")], "b")),
        ]
    )
    return ids, shop, billing


def test_loaded_spans_are_the_stored_bodies_grouped_by_segment(store: SQLiteStore) -> None:
    (a, b), _shop, _billing = two_segments(store)
    locations: list[Location] = [(bytes([4]) * 8, b, 0), (bytes([3]) * 8, a, 2), (bytes([1]) * 8, a, 0)]
    loaded = Loaded.read(SegmentCache(store), locations)
    bodies = loaded.bodies()
    assert {sid: Span.FromString(body).name for sid, body in bodies.items()} == {
        bytes([4]) * 8: "charge", bytes([3]) * 8: "tool", bytes([1]) * 8: "root"}  # fmt: skip
    assert all(Span.FromString(body) == span(sid[0], Span.FromString(body).name) for sid, body in bodies.items())
    assert loaded.exported() == set()
    # what the judge reads: each span with its own resource's service name
    records = loaded.records(store)
    assert sorted((r.name, r.service_name) for r in records) == [
        ("charge", "billing"),
        ("root", "shop"),
        ("tool", "shop"),
    ]


def test_the_outbox_keeps_each_segments_resource_and_scope_and_takes_the_labelled_bodies(store: SQLiteStore) -> None:
    (a, b), shop, billing = two_segments(store)
    locations: list[Location] = [(bytes([1]) * 8, a, 0), (bytes([2]) * 8, a, 1), (bytes([4]) * 8, b, 0)]
    loaded = Loaded.read(SegmentCache(store), locations)
    labelled = span(2, "msg")
    labelled.attributes.add(key="mast.failure_mode", value={"string_value": "1.3"})
    rows = loaded.outbox({bytes([2]) * 8: labelled.SerializeToString()})
    got = {row.resource: (row.spans, ScopeSpans.FromString(row.data)) for row in rows}
    assert set(got) == {shop, billing}
    count, first = got[shop]
    assert count == 2 and first.scope.name == "a" and first.schema_url == "https://schema/1"
    assert list(first.spans) == [span(1, "root"), labelled]  # span 3 is not released here
    count, second = got[billing]
    assert count == 1 and second.scope.name == "b" and list(second.spans) == [span(4, "charge")]


def test_spans_already_forwarded_are_not_exported_again(store: SQLiteStore) -> None:
    (a, b), _shop, billing = two_segments(store, first_exported=True)
    locations: list[Location] = [(bytes([1]) * 8, a, 0), (bytes([2]) * 8, a, 1), (bytes([4]) * 8, b, 0)]
    loaded = Loaded.read(SegmentCache(store), locations)
    assert loaded.exported() == {bytes([1]) * 8, bytes([2]) * 8}
    rows = loaded.outbox({})
    assert [(r.resource, r.spans) for r in rows] == [(billing, 1)]
    assert len(loaded.records(store)) == 3  # the judge still reads them all


# -- the segment cache ---------------------------------------------------------------------------------------------


@dataclass
class CountingStore:
    """Segments of given sizes; counts how often each is read from the store."""

    sizes: dict[int, int]
    reads: list[int] = field(default_factory=list)
    on_segment: Callable[[int], None] = lambda segment_id: None

    def segment(self, segment_id: int) -> StoredSegment:
        self.reads.append(segment_id)
        self.on_segment(segment_id)
        body = Span(name="x" * self.sizes[segment_id]).SerializeToString()
        data = ScopeSpans(spans=[Span.FromString(body)]).SerializeToString()
        return StoredSegment(segment_id, 1, 1.0, data)


def test_the_cache_reads_a_segment_once_while_it_fits() -> None:
    store = CountingStore({1: 100, 2: 100})
    cache = SegmentCache(store, max_bytes=1000)  # type: ignore[arg-type]
    first = cache.get(1)
    assert cache.get(1) == first and cache.get(2)[0].id == 2 and cache.get(1) == first
    assert store.reads == [1, 2]
    assert first[1].spans == [(2, len(first[0].data))]  # the parsed layout: one span after its 2-byte header


def test_the_cache_is_bounded_by_bytes_and_drops_the_least_recently_used() -> None:
    store = CountingStore({1: 400, 2: 400, 3: 400})
    cache = SegmentCache(store, max_bytes=900)  # type: ignore[arg-type]  # two segments fit, not three
    cache.get(1), cache.get(2), cache.get(1)  # 1 is now the most recently used
    cache.get(3)  # over the bound: 2 goes
    store.reads.clear()
    cache.get(1), cache.get(3)
    assert store.reads == []
    cache.get(2)
    assert store.reads == [2]


def test_a_segment_bigger_than_the_bound_is_still_kept_alone() -> None:
    store = CountingStore({1: 5000, 2: 5000})
    cache = SegmentCache(store, max_bytes=1000)  # type: ignore[arg-type]
    cache.get(1), cache.get(1)
    assert store.reads == [1]
    cache.get(2), cache.get(1)
    assert store.reads == [1, 2, 1]


def test_forgotten_segments_are_read_again_and_free_their_bytes() -> None:
    store = CountingStore({1: 400, 2: 400, 3: 400})
    cache = SegmentCache(store, max_bytes=900)  # type: ignore[arg-type]
    cache.get(1), cache.get(2)
    cache.forget([1, 99])  # 99 was never cached
    cache.get(3)  # fits beside 2 now that 1's bytes are freed: 2 stays
    store.reads.clear()
    cache.get(2), cache.get(3)
    assert store.reads == []
    cache.get(1)
    assert store.reads == [1]


def test_a_segment_read_twice_at_once_is_counted_once() -> None:
    # two releases read the same segment concurrently: the second insert must not count its bytes again
    store = CountingStore({1: 400, 2: 400})
    cache = SegmentCache(store, max_bytes=900)  # type: ignore[arg-type]
    entered, go = threading.Event(), threading.Event()

    def slow_first_read(segment_id: int) -> None:
        if segment_id == 1 and not entered.is_set():
            entered.set()
            go.wait(5)

    store.on_segment = slow_first_read
    other = threading.Thread(target=cache.get, args=(1,))
    other.start()
    entered.wait(5)
    cache.get(1)  # the concurrent read, done first
    go.set()
    other.join(5)
    cache.get(2)  # 1 + 2 fit in 900 bytes only if 1 was counted once
    store.reads.clear()
    cache.get(1), cache.get(2)
    assert store.reads == []


# -- the release transaction ---------------------------------------------------------------------------------------


@dataclass
class RecordingAssembler:
    """The assembler's side of a release: which locations were consumed and given back."""

    emptied: list[int]
    log: list[tuple[str, tuple[Location, ...]]] = field(default_factory=list)

    def consume(self, locations: tuple[Location, ...]) -> list[int]:
        self.log.append(("consume", locations))
        return self.emptied

    def unconsume(self, locations: tuple[Location, ...]) -> None:
        self.log.append(("unconsume", locations))


def test_a_release_writes_outbox_tomb_and_emptied_segments_in_one_step(store: SQLiteStore) -> None:
    (a, b), _shop, _billing = two_segments(store)
    cache = SegmentCache(store)
    locations: tuple[Location, ...] = ((bytes([4]) * 8, b, 0),)
    loaded = Loaded.read(cache, locations)
    assembler = RecordingAssembler(emptied=[b])
    tomb = Tomb(TRACE, bytes([4]) * 8, 5.0, unit="u", verdict=verdict_to_json(FULL))
    commit_release(store=store, assembler=assembler, lock=threading.RLock(), cache=cache,  # type: ignore[arg-type]
                   locations=locations, outbox=loaded.outbox({}), tomb=tomb)  # fmt: skip
    assert assembler.log == [("consume", locations)]
    assert [t.ids() for t in store.tombs(TRACE)] == [{bytes([4]) * 8}]
    assert [ScopeSpans.FromString(r.data).spans[0].name for r in store.outbox(100, 1 << 20)] == ["charge"]
    assert [s.id for s in store.segments()] == [a]
    with pytest.raises(KeyError):  # the cache forgot it too: the segment is read again, and is gone
        cache.get(b)


def test_a_release_that_cannot_be_written_gives_the_spans_back(store: SQLiteStore) -> None:
    (_a, b), shop, _billing = two_segments(store)
    cache = SegmentCache(store)
    locations: tuple[Location, ...] = ((bytes([4]) * 8, b, 0),)
    assembler = RecordingAssembler(emptied=[b])
    store.close()  # every write now fails
    with pytest.raises(sqlite3.Error):
        commit_release(store=store, assembler=assembler, lock=threading.RLock(), cache=cache,  # type: ignore[arg-type]
                       locations=locations, outbox=[OutRow(shop, b"", 0)], tomb=Tomb(TRACE, b"", 1.0))  # fmt: skip
    assert assembler.log == [("consume", locations), ("unconsume", locations)]


# -- spans whose stored bytes cannot be read back ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "unreadable"),
    [
        (DecodeError("bad protobuf"), True),
        (ValueError("truncated varint"), True),
        (KeyError(12), True),  # the segment is gone
        (IndexError("span index"), True),
        (TypeError("bad field"), True),
        (RecursionError("nesting"), True),
        (sqlite3.OperationalError("database is locked"), False),  # a later try can succeed
        (OSError(28, "No space left on device"), False),
    ],
)
def test_only_bytes_that_can_never_be_read_are_unreadable(error: BaseException, unreadable: bool) -> None:
    assert is_unreadable(error) is unreadable


def test_an_unreadable_release_is_quarantined_once_and_never_retried(
    store: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    # prepare: spans 1 and 2 of segment A and span 4 of segment B cannot be read back
    (a, b), _, _ = two_segments(store)
    cache = SegmentCache(store)
    cache.get(a)
    metrics = CollectorMetrics()
    assembler = RecordingAssembler(emptied=[a, b])
    locations: tuple[Location, ...] = ((bytes([1]) * 8, a, 0), (bytes([2]) * 8, a, 1), (bytes([4]) * 8, b, 0))
    # test
    with caplog.at_level(logging.ERROR, logger="mast_otel.collector.release.commit"):
        quarantine_release(store=store, assembler=assembler, lock=threading.RLock(), cache=cache,  # type: ignore[arg-type]
                           metrics=metrics, locations=locations, trace_id=TRACE, exc=DecodeError("x" * 9))  # fmt: skip
    # verify: both segments set aside with the stage and the (bounded) reason, no longer held
    rows = sqlite3.connect(store.path).execute("SELECT segment, stage, reason FROM quarantine ORDER BY segment")
    quarantined = rows.fetchall()
    assert [(seg, stage) for seg, stage, _ in quarantined] == [(a, "release"), (b, "release")]
    assert all(reason == "DecodeError: xxxxxxxxx" for _, _, reason in quarantined)
    assert list(store.segments()) == []
    assert assembler.log == [("consume", locations)]
    # a tombstone names every span, so a restart does not try them again
    assert [t.ids() for t in store.tombs(TRACE)] == [{bytes([1]) * 8, bytes([2]) * 8, bytes([4]) * 8}]
    with pytest.raises(KeyError):  # the cache forgot the segment it held
        cache.get(a)
    assert metrics.registry.get_sample_value("mast_collector_segments_quarantined_total", {"stage": "release"}) == 2
    (logged,) = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert logged.startswith(f"3 spans of trace {TRACE.hex()} cannot be read back")
    assert "(DecodeError: xxxxxxxxx)" in logged and f"[{a}, {b}]" in logged  # why, and where to look


def test_a_quarantine_reason_is_bounded(store: SQLiteStore) -> None:
    # an exception text can be as long as the damaged bytes it quotes: the row and the log line stay short
    (a, _), _, _ = two_segments(store)
    quarantine_release(store=store, assembler=RecordingAssembler(emptied=[a]), lock=threading.RLock(),  # type: ignore[arg-type]
                       cache=SegmentCache(store), metrics=CollectorMetrics(), locations=((bytes([1]) * 8, a, 0),),
                       trace_id=TRACE, exc=ValueError("y" * 900))  # fmt: skip
    (reason,) = sqlite3.connect(store.path).execute("SELECT reason FROM quarantine").fetchone()
    assert reason == ("ValueError: " + "y" * 900)[:500]


def test_the_cache_holds_exactly_its_bound_and_counts_what_it_evicts_and_forgets() -> None:
    # prepare: five segments of one size; the bound is exactly three of them
    store = CountingStore(dict.fromkeys(range(1, 7), 300))
    size = len(store.segment(1).data)
    store.reads.clear()
    cache = SegmentCache(store, max_bytes=3 * size)  # type: ignore[arg-type]
    # test / verify: three fit exactly (the bound is not exceeded)
    cache.get(1), cache.get(2), cache.get(3)
    cache.get(1), cache.get(2), cache.get(3)
    assert store.reads == [1, 2, 3]
    # a fourth evicts the least recently used (1); a fifth then evicts 2: the evicted bytes were counted off
    cache.get(4), cache.get(5)
    store.reads.clear()
    cache.get(3), cache.get(4), cache.get(5)
    assert store.reads == []
    # forgetting 3 frees exactly one segment's bytes: one more fits (6), the next (1, read again) evicts 4
    cache.forget([3])
    cache.get(6)
    cache.get(1)
    store.reads.clear()
    cache.get(5), cache.get(6), cache.get(1)
    assert store.reads == []
    cache.get(4)
    assert store.reads == [4]


def test_a_verdict_whose_extra_values_json_cannot_hold_is_saved_as_their_text(tmp_path: Path) -> None:
    # a user judge's Verdict.extra is not checked: a value JSON cannot hold must not make the release fail
    verdict = Verdict(status="ok", source="mine", extra={"seen_at": Path("/runs/7")})  # type: ignore[dict-item]
    assert json.loads(verdict_to_json(verdict))["extra"] == {"seen_at": "/runs/7"}
    store = SQLiteStore(str(tmp_path / "collector.db"))
    try:
        persist_verdict(store, TRACE, "u", verdict, 1.0)
        saved = store.verdict(TRACE, "u")
        assert saved is not None and verdict_from_json(saved).extra == {"seen_at": "/runs/7"}
    finally:
        store.close()
