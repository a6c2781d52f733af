"""Assembly rules, driven by an explicit clock: when a conversation is whole, partial, or not a conversation."""

from __future__ import annotations

import os

from mast_otel.collector.assemble.assembler import Assembler, Unit, Untouched

T = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")


def sid() -> bytes:
    return os.urandom(8)


def units(out: list[Unit | Untouched]) -> list[Unit]:
    return [d for d in out if isinstance(d, Unit)]


def untouched(out: list[Unit | Untouched]) -> list[Untouched]:
    return [d for d in out if isinstance(d, Untouched)]


class Conv:
    """Span ids of one synthetic conversation: root, a turn, two messages under the turn."""

    def __init__(self, conv_id: str = "c1", parent: bytes = b"", conv_parent: str | None = None) -> None:
        self.conv_id, self.parent, self.conv_parent = conv_id, parent, conv_parent
        self.root, self.turn, self.m1, self.m2 = sid(), sid(), sid(), sid()

    def children(self, asm: Assembler, at: float) -> None:
        for s, p in ((self.m1, self.turn), (self.m2, self.turn), (self.turn, self.root)):
            asm.add(T, s, p, at, conv_id=self.conv_id)

    def add_root(self, asm: Assembler, at: float) -> None:
        asm.add(T, self.root, self.parent, at, conv_root=True, conv_id=self.conv_id, conv_parent=self.conv_parent)

    @property
    def all(self) -> set[bytes]:
        return {self.root, self.turn, self.m1, self.m2}


def test_ready_only_after_root_and_quiet_period() -> None:
    # prepare
    asm = Assembler(quiet_period=5, max_age=100)
    conv = Conv()
    conv.children(asm, at=0)
    # test / verify: without the root nothing is released, however quiet
    assert asm.poll(50) == []
    conv.add_root(asm, at=50)
    assert asm.poll(54.9) == []
    (unit,) = units(asm.poll(55))
    assert set(unit.span_ids) == conv.all
    assert unit.root_id == conv.root and not unit.partial and unit.key == conv.root.hex()
    assert asm.pending_traces == 0


def test_new_span_restarts_the_quiet_period() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    conv = Conv()
    conv.children(asm, at=0)
    conv.add_root(asm, at=1)
    late_child = sid()
    asm.add(T, late_child, conv.turn, 4, conv_id="c1")
    assert asm.poll(6) == []
    (unit,) = units(asm.poll(9))
    assert late_child in unit.span_ids


def test_root_never_ends_is_judged_partial_at_max_age() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    conv = Conv()
    conv.children(asm, at=0)
    assert asm.poll(99) == []
    (unit,) = units(asm.poll(100))
    assert unit.partial and unit.root_id is None
    assert unit.key == "conv:c1"
    assert unit.parent_hint == conv.root  # where the verdict span goes
    assert set(unit.span_ids) == {conv.turn, conv.m1, conv.m2}


def test_conversation_that_never_goes_quiet_is_partial_at_max_age() -> None:
    asm = Assembler(quiet_period=5, max_age=20)
    conv = Conv()
    conv.children(asm, at=0)
    conv.add_root(asm, at=1)
    for t in range(2, 20, 2):
        asm.add(T, sid(), conv.turn, t, conv_id="c1")
        assert units(asm.poll(t)) == []
    (unit,) = units(asm.poll(20))
    assert unit.partial and unit.root_id == conv.root


def test_each_conversation_in_a_trace_is_judged_on_its_own() -> None:
    # prepare: a user's batch-job span holding two conversations; only the first is finished
    asm = Assembler(quiet_period=5, max_age=100)
    job = sid()
    first, second = Conv("c1", parent=job), Conv("c2", parent=job)
    first.children(asm, 0)
    first.add_root(asm, 1)
    second.children(asm, 2)
    # test
    out = asm.poll(10)
    # verify: the first conversation goes, the second waits for its root, the job span waits for its parent
    (unit,) = units(out)
    assert set(unit.span_ids) == first.all
    second.add_root(asm, 20)
    asm.add(T, job, b"", 21)  # the job span ends last; it is outside any conversation
    out = asm.poll(30)
    (unit2,) = units(out)
    assert set(unit2.span_ids) == second.all
    (outside,) = untouched(out)
    assert outside.span_ids == (job,) and outside.reason == "no_conversation"


def test_nested_conversation_belongs_to_the_outer_one() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    outer = Conv("outer")
    inner = Conv("inner", parent=outer.turn, conv_parent="outer")
    inner.children(asm, 0)
    inner.add_root(asm, 1)
    outer.children(asm, 2)
    assert units(asm.poll(8)) == []  # the inner root is not a unit of its own
    outer.add_root(asm, 9)
    (unit,) = units(asm.poll(14))
    assert set(unit.span_ids) == outer.all | inner.all
    assert set(unit.conv_ids) == {"outer", "inner"}


def test_span_whose_parent_never_arrives_leaves_untouched_at_max_age() -> None:
    asm = Assembler(quiet_period=5, max_age=30)
    stray = sid()
    asm.add(T, stray, sid(), 0)  # no conversation id, parent unknown
    assert asm.poll(29) == []
    (out,) = untouched(asm.poll(30))
    assert out.span_ids == (stray,) and out.reason == "parent_timeout"


def test_spans_of_a_plain_trace_leave_after_the_quiet_period() -> None:
    asm = Assembler(quiet_period=5, max_age=30)
    top, child = sid(), sid()
    asm.add(T, child, top, 0)
    asm.add(T, top, b"", 0)
    (out,) = untouched(asm.poll(5))
    assert set(out.span_ids) == {top, child}


def test_release_all_releases_everything_now() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    done, open_ = Conv("a"), Conv("b")
    done.children(asm, 0)
    done.add_root(asm, 0)
    open_.children(asm, 0)
    out = asm.poll(0.1, release_all=True)
    by_key = {u.key: u for u in units(out)}
    assert not by_key[done.root.hex()].partial
    assert by_key["conv:b"].partial
    assert asm.pending_traces == 0


def test_in_flight_unit_claims_late_spans_until_finished() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    conv = Conv()
    conv.children(asm, 0)
    conv.add_root(asm, 0)
    (unit,) = units(asm.poll(5))
    late = sid()
    assert asm.inflight_unit(T, conv.turn, None) is unit
    asm.adopt_late(unit, late)
    assert asm.inflight_unit(T, late, None) is unit  # a child of the late span is late too
    assert asm.inflight_unit(T, sid(), "c1") is unit  # by conversation id
    asm.finished(unit)
    assert asm.inflight_unit(T, conv.turn, "c1") is None and asm.inflight == 0


def test_duplicate_add_is_ignored() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    conv = Conv()
    conv.children(asm, 0)
    conv.children(asm, 3)  # delivered again later: must not restart the quiet period
    conv.add_root(asm, 0)
    (unit,) = units(asm.poll(5))
    assert len(unit.span_ids) == 4


def test_parent_cycle_in_bad_data_terminates() -> None:
    asm = Assembler(quiet_period=1, max_age=10)
    a, b = sid(), sid()
    asm.add(T, a, b, 0)
    asm.add(T, b, a, 0)
    out = asm.poll(10)
    assert {s for d in untouched(out) for s in d.span_ids} == {a, b}
