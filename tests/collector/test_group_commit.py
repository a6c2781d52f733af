"""Releases written in groups (docs/collector.md, Judging): conversations queued for the judge together are written
in one transaction, up to 64; one alone is written at once; a group the store refuses is retried conversation by
conversation as one release alone would be; a stop writes what waited for its group.

The oracle is the store's own write calls (how many tombstones, one per release, each transaction carries) and the
spans the downstream decoded.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import semconv as sc
from mast_otel.judge.model import Verdict
from mast_otel.spans import SpanRecord
from tests.collector.conftest import FakeJudge, flag_messages, recorded, wait_until
from tests.collector.in_process import Delivered, InProcess, in_process
from tests.collector.test_judging_outcomes import Gate, opened_at_exit, roots, submit, unpaid
from tests.collector.test_store import FlakyStore

Hook = Callable[[dict[str, Sequence[Any]]], None]


class Writes:
    """A FlakyStore factory that notes the tombstones of each release write and lets ``fail`` refuse one."""

    def __init__(self, fail: Callable[[int], Exception | None] = lambda tombs: None) -> None:
        self.tombs: list[int] = []  # per transaction that carried releases: how many
        self._fail = fail

    def __call__(self, path: str) -> FlakyStore:
        return self.hook(FlakyStore(path))

    def hook(self, store: FlakyStore) -> FlakyStore:
        def note(kw: dict[str, Sequence[Any]]) -> None:
            n = len(kw.get("tombs") or ())
            if not n:
                return
            exc = self._fail(n)
            if exc is not None:
                raise exc
            self.tombs.append(n)

        store.on_write = note  # type: ignore[method-assign]
        return store


def labelled_roots(got: Sequence[Delivered]) -> list[str]:
    return sorted(str(r.attributes.get(sc.JUDGE_STATUS)) for r in roots(got))


def queued_behind_a_gate(tmp_path: Path, n: int, writes: Writes) -> tuple[list[str], FakeJudge, float]:
    """``n`` conversations submitted at once to one judge worker whose first call waits until all are queued;
    returns the downstream's root statuses once everything is released, the judge, and the store-error count.
    (A refused group is retried on the tick that follows the wait, not by the worker.)"""
    gate = Gate()
    judge = FakeJudge(on_judge=gate)
    with opened_at_exit(gate), in_process(tmp_path, judge=judge, judge_concurrency=1, make_store=writes) as c:
        submit(c, recorded(n))
        assert gate.started.wait(10)
        gate.opened.set()
        refused = lambda: c.metric("mast_judge_errors_total", {"reason": "store"})  # noqa: E731
        wait_until(lambda: c.service.judges.in_flight == 0 or refused() > 0, timeout=10)  # the worker, no tick
        c.release(0)
        return labelled_roots(c.downstream.spans()), judge, refused()


def test_conversations_queued_together_are_written_in_one_transaction(tmp_path: Path) -> None:
    writes = Writes()
    got, judge, errors = queued_behind_a_gate(tmp_path, 5, writes)
    assert writes.tombs == [5]
    assert got == [sc.JUDGE_OK] * 5 and len(judge.calls) == 5 and errors == 0


def test_a_group_holds_at_most_64_releases(tmp_path: Path) -> None:
    writes = Writes()
    got, _, _ = queued_behind_a_gate(tmp_path, 70, writes)
    assert writes.tombs == [64, 6] and len(got) == 70


def test_a_conversation_with_nothing_queued_behind_it_is_written_without_waiting_for_a_tick(tmp_path: Path) -> None:
    writes = Writes()
    with in_process(tmp_path, judge=FakeJudge(), make_store=writes) as c:
        submit(c, recorded(1))
        wait_until(lambda: c.service.judges.in_flight == 0, timeout=3)  # no tick, no flush: written by the worker
        assert writes.tombs == [1]


class FirstWrite:
    """A failure for :class:`Writes`: the first write of releases raises ``exc``; ``seen`` notes how many it held."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc
        self.seen: list[int] = []

    def __call__(self, tombs: int) -> Exception | None:
        if self.seen:
            return None
        self.seen.append(tombs)
        return self.exc


def test_a_group_the_store_refuses_is_written_release_by_release_at_once(tmp_path: Path) -> None:
    """A full disk may have room for one release and not for 64: each release of a refused group is written alone
    at once; only one that fails alone is a store error, retried on the next tick."""
    refused = FirstWrite(OSError("disk full"))
    writes = Writes(refused)
    got, judge, errors = queued_behind_a_gate(tmp_path, 4, writes)
    assert refused.seen == [4] and writes.tombs == [1, 1, 1, 1] and errors == 0
    assert got == [sc.JUDGE_OK] * 4 and len(judge.calls) == 4


def test_a_release_a_refused_group_cannot_write_alone_is_retried_with_its_verdict(tmp_path: Path) -> None:
    first_alone = FirstWrite(OSError("disk full"))
    writes = Writes(lambda tombs: OSError("disk full") if tombs > 1 else first_alone(tombs))
    got, judge, errors = queued_behind_a_gate(tmp_path, 3, writes)
    assert first_alone.seen == [1] and errors == 1  # counted once, as one release alone would be
    assert writes.tombs == [1, 1, 1] and got == [sc.JUDGE_OK] * 3
    assert len(judge.calls) == 3  # retried with the verdict it had: never judged again


def test_on_a_disk_close_to_full_releases_are_written_one_by_one(tmp_path: Path) -> None:
    """A disk that is full, or close to it (SQLiteStore.tight), has room for one release at a time: no group is
    tried."""
    full: list[bool] = []

    class FillsUp(FlakyStore):
        @property
        def tight(self) -> bool:
            return bool(full) or super().tight

    writes = Writes()
    gate = Gate()
    with opened_at_exit(gate), in_process(tmp_path, judge=FakeJudge(on_judge=gate), judge_concurrency=1,
                                          make_store=lambda path: writes.hook(FillsUp(path))) as c:  # fmt: skip
        submit(c, recorded(3))
        assert gate.started.wait(10)
        full.append(True)  # after ingest
        gate.opened.set()
        c.release(0)
        got = labelled_roots(c.downstream.spans())
    assert writes.tombs == [1, 1, 1] and got == [sc.JUDGE_OK] * 3


def test_a_group_with_unreadable_bytes_is_written_release_by_release(tmp_path: Path) -> None:
    """An error that says stored bytes cannot be read back is not a store error: each release is tried alone, so
    only the one that holds them would be quarantined (here none does: the group alone failed)."""
    writes = Writes(lambda tombs: ValueError("unreadable") if tombs > 1 else None)
    got, _, errors = queued_behind_a_gate(tmp_path, 2, writes)
    assert writes.tombs == [1, 1] and got == [sc.JUDGE_OK] * 2 and errors == 0


def test_a_release_alone_whose_write_says_its_bytes_are_unreadable_is_quarantined(tmp_path: Path) -> None:
    failed = FirstWrite(ValueError("unreadable"))
    with in_process(tmp_path, judge=FakeJudge(), make_store=Writes(failed)) as c:
        c.send(recorded(1))
        c.release()
        assert failed.seen == [1] and c.downstream.spans() == []
        assert c.metric("mast_collector_segments_quarantined_total", {"stage": "release"}) == 1
        assert c.metric("mast_judge_errors_total", {"reason": "store"}) == 0 and c.service.judges.in_flight == 0


def test_a_retry_that_cannot_read_the_store_is_retried_again_with_the_same_verdict(tmp_path: Path) -> None:
    """The release's write is refused; its retry reads the spans again and the store fails that read once: the
    next retry still carries the judge's verdict (the judge is not asked again)."""
    refused: list[int] = []

    class ResourceFailsOnce(FlakyStore):
        def resource(self, resource_id: int) -> tuple[bytes, str]:
            if len(refused) == 1:
                refused.append(0)
                raise sqlite3.OperationalError("database is locked")
            return super().resource(resource_id)

    def make(path: str) -> FlakyStore:
        store = ResourceFailsOnce(path)

        def refuse_first_release(kw: dict[str, Sequence[Any]]) -> None:
            if kw.get("tombs") and not refused:
                refused.append(1)
                raise OSError("disk full")

        store.on_write = refuse_first_release  # type: ignore[method-assign]
        return store

    judge = FakeJudge(on_judge=flag_messages("1.3"))
    with in_process(tmp_path, judge=judge, make_store=make) as c:
        c.send(recorded(1))
        c.release()
        (root,) = roots(c.downstream.spans())
        assert refused == [1, 0] and c.metric("mast_judge_errors_total", {"reason": "store"}) == 2
    assert root.attributes[sc.JUDGE_STATUS] == sc.JUDGE_OK and root.attributes[sc.FAILURE_MODES] == ("1.3",)
    assert len(judge.calls) == 1


def test_a_stop_writes_the_releases_that_waited_for_their_group(tmp_path: Path) -> None:
    """The first conversation's release waits for the ones queued behind it; the stop cancels the queued one and
    writes the waiting release: the next start exports it as judged (its verdict was not paid for, so only the
    written release keeps it), judges the cancelled one, and reports the call the stop cut short as interrupted."""
    queued, second_started, answer = threading.Event(), threading.Event(), threading.Event()
    calls: list[int] = []

    def first_answers_then_thinks(spans: Sequence[SpanRecord], partial: bool) -> Verdict:
        calls.append(1)
        if len(calls) == 1:
            assert queued.wait(10)  # the other two are queued behind it
        else:
            second_started.set()
            answer.wait(10)  # still thinking when the collector stops
        return unpaid(spans, partial)

    try:
        with in_process(tmp_path, judge=FakeJudge(on_judge=first_answers_then_thinks), judge_concurrency=1,
                        judge_shutdown_grace=0.1) as first:  # fmt: skip
            submit(first, recorded(3))
            queued.set()
            assert second_started.wait(10)
    finally:
        answer.set()
    again = FakeJudge(on_judge=unpaid)
    with in_process(tmp_path, judge=again) as second:
        second.release()
        got = labelled_roots(second.downstream.spans())
    assert got == [sc.JUDGE_ERROR, sc.JUDGE_OK, sc.JUDGE_OK] and len(again.calls) == 1


class NoRoom(FlakyStore):
    """A disk close to full (tight) with room for a release only while ``room[-1]`` is true; ``asked`` notes the size
    of every release that asked. The tick's question before any release asked (size 0) is yes: the units go out."""

    def __init__(self, path: str, room: list[bool], asked: list[int]) -> None:
        super().__init__(path)
        self.room, self.asked = room, asked

    @property
    def tight(self) -> bool:
        return True

    def room_to_release(self, size: int = 0) -> bool:
        if size:
            self.asked.append(size)
        elif not self.asked:
            return True
        return self.room[-1]


def without_room(c: InProcess, n: int, asked: list[int]) -> None:
    """``n`` conversations sent, judged, and their releases turned away for room."""
    c.send(recorded(n))
    c.clock.advance(1)
    c.service.tick()
    wait_until(lambda: len(asked) >= n, timeout=10)


def test_on_a_full_disk_a_release_without_room_waits_uncounted_and_goes_once_there_is_room(tmp_path: Path) -> None:
    """A release that would spend the room delivery needs (SQLiteStore.room_to_release) is not written and not
    an error: it waits with its verdict (the judge is not asked again) and goes out once the room is back."""
    room, asked = [False], []
    writes = Writes()
    judge = FakeJudge()
    with in_process(tmp_path, judge=judge, make_store=lambda path: writes.hook(NoRoom(path, room, asked))) as c:
        without_room(c, 2, asked)
        c.service.tick()  # still no room: not built again
        assert len(asked) == 2 and writes.tombs == [] and c.downstream.spans() == []
        assert c.service.judges.in_flight == 2
        room.append(True)
        c.release(0)
        got = labelled_roots(c.downstream.spans())
        errors = c.metric("mast_judge_errors_total", {"reason": "store"})
    assert got == [sc.JUDGE_OK] * 2 and writes.tombs == [1, 1] and len(judge.calls) == 2 and errors == 0


def test_a_paid_verdict_waiting_for_room_is_kept_across_a_restart(tmp_path: Path) -> None:
    """The judge reported no tokens, so only the wait keeps its verdict (in the journal): the next start releases
    the conversation with it, neither judging it again nor calling the cut-short claim interrupted."""
    room, asked = [False], []
    with in_process(tmp_path, judge=FakeJudge(on_judge=unpaid), judge_shutdown_grace=0.1,
                    make_store=lambda path: NoRoom(path, room, asked)) as first:  # fmt: skip
        without_room(first, 2, asked)
    again = FakeJudge(on_judge=unpaid)
    with in_process(tmp_path, judge=again) as second:
        second.release()
        got = labelled_roots(second.downstream.spans())
    assert got == [sc.JUDGE_OK] * 2 and again.calls == []


def test_a_model_free_verdict_waiting_for_room_is_not_journaled(tmp_path: Path) -> None:
    """A model-free judge costs nothing to run again: its verdicts never go to the journal, even while they wait
    (on a full disk the journal's write would only fail)."""
    room, asked = [False], []
    with in_process(tmp_path, judge=FakeJudge(name="signals"), make_store=lambda path: NoRoom(path, room, asked)) as c:
        without_room(c, 2, asked)
        journal = tmp_path / "in-process.db.verdicts"
        assert not journal.exists() or journal.read_bytes() == b""
        room.append(True)
        c.release(0)
        assert len(roots(c.downstream.spans())) == 2


def test_a_group_that_waited_is_written_one_by_one_when_the_disk_became_close_to_full(tmp_path: Path) -> None:
    """Two releases wait for the third (queued behind them); by the third's verdict the disk is close to full: the
    three are written one per transaction, and every one of them is finished (none left in flight)."""
    full: list[bool] = []
    gate = Gate()

    class FillsUp(FlakyStore):
        @property
        def tight(self) -> bool:
            return bool(full)

    def answer(spans: Sequence[SpanRecord], partial: bool) -> Verdict:
        calls.append(1)
        if len(calls) == 1:
            return gate(spans, partial)
        if len(calls) == 3:
            full.append(True)
        return flag_messages("1.3")(spans, partial)

    calls: list[int] = []
    writes = Writes()
    with opened_at_exit(gate), in_process(tmp_path, judge=FakeJudge(on_judge=answer), judge_concurrency=1,
                                          make_store=lambda path: writes.hook(FillsUp(path))) as c:  # fmt: skip
        submit(c, recorded(3))
        assert gate.started.wait(10)
        gate.opened.set()
        c.release(0)
        got = labelled_roots(c.downstream.spans())
        assert c.service.judges.in_flight == 0
    assert writes.tombs == [1, 1, 1] and got == [sc.JUDGE_OK] * 3


def test_on_a_full_disk_spans_outside_conversations_whose_release_failed_wait_for_room_too(tmp_path: Path) -> None:
    """Spans outside any conversation go out untouched; when that release failed, its retry follows the full-disk
    rule as well: not written while the disk lacks room for delivery, written once the room is back."""
    room = [True]

    class Gated(FlakyStore):
        def room_to_release(self, size: int = 0) -> bool:
            return room[-1]

    memory = InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(memory))
    with tracer.get_tracer("app").start_as_current_span("GET /health"):
        pass
    refused = FirstWrite(OSError("disk full"))
    writes = Writes(refused)
    with in_process(tmp_path, make_store=lambda path: writes.hook(Gated(path))) as c:
        c.send(list(memory.get_finished_spans()))
        c.clock.advance(1)
        c.service.tick()
        assert refused.seen == [1] and writes.tombs == []  # the untouched release failed: kept for a retry
        room.append(False)
        c.service.tick()
        assert writes.tombs == []  # no room: not retried
        room.append(True)
        c.release(0)
        assert writes.tombs == [1] and [d.name for d in c.downstream.spans()] == ["GET /health"]
