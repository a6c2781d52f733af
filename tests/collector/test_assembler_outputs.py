"""What the assembler hands on, beyond when (tests/collector/test_assembler.py): where each released span is
stored (segment, index), which segments a release empties, the conversation ids and the verdict span's parent of
a unit, when the next check is due, and how spans of other instrumentations are placed.

The oracle is the input itself: spans added with known segments, indexes, times and parents, and the module
docstring's rules (quiet period, max age, conversation ids).
"""

from __future__ import annotations

import pytest

from mast_otel.collector.assemble.assembler import Assembler, Unit, Untouched

T = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
T2 = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")


def ids(*names: int) -> tuple[bytes, ...]:
    return tuple(bytes([n]) * 8 for n in names)


ROOT, TURN, M1, M2, MISSING, OTHER_MISSING, PLAIN, AGENT = ids(1, 2, 3, 4, 5, 6, 7, 8)


def units(out: list[Unit | Untouched]) -> list[Unit]:
    return [d for d in out if isinstance(d, Unit)]


def untouched(out: list[Unit | Untouched]) -> list[Untouched]:
    return [d for d in out if isinstance(d, Untouched)]


def conversation(asm: Assembler, at: float, *, root: bool = True, segment: int = 7) -> None:
    """root <- turn <- (m1, m2), conversation c1, stored as spans 0..3 of ``segment``."""
    asm.add(T, M1, TURN, at, segment=segment, index=0, conv_id="c1")
    asm.add(T, M2, TURN, at, segment=segment, index=1, conv_id="c1")
    asm.add(T, TURN, ROOT, at, segment=segment, index=2, conv_id="c1")
    if root:
        asm.add(T, ROOT, b"", at, segment=segment, index=3, conv_root=True, conv_id="c1")


# -- where released spans are stored, and the segments a release empties ------------------------------------------


def test_a_unit_says_where_each_span_is_stored() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    conversation(asm, 0)
    (unit,) = units(asm.poll(5))
    assert sorted(unit.locations) == sorted([(M1, 7, 0), (M2, 7, 1), (TURN, 7, 2), (ROOT, 7, 3)])
    assert set(unit.span_ids) == {ROOT, TURN, M1, M2}
    assert (unit.trace_id, unit.first_received, unit.last_received) == (T, 0, 0)


def test_add_many_holds_the_same_spans_as_add() -> None:
    # the receive path's bulk add: same units, same locations, same segment bookkeeping
    one, bulk = Assembler(quiet_period=5, max_age=100), Assembler(quiet_period=5, max_age=100)
    conversation(one, 3, segment=9)
    facts = [(T, M1, TURN, 0, False, "c1", None), (T, M2, TURN, 1, False, "c1", None),
             (T, TURN, ROOT, 2, False, "c1", None), (T, ROOT, b"", 3, True, "c1", None),
             (T, M1, TURN, 0, False, "c1", None)]  # fmt: skip  # the last: delivered twice
    bulk.add_many(facts, segment=9, received=3)
    bulk.add_many([], segment=10, received=3)
    for asm in (one, bulk):
        assert asm.held_spans == 4 and asm.pending_traces == 1 and asm.next_due() == 8
        assert asm.poll(7.9) == []
        (unit,) = units(asm.poll(8))
        assert sorted(unit.locations) == sorted([(M1, 9, 0), (M2, 9, 1), (TURN, 9, 2), (ROOT, 9, 3)])
        assert not unit.partial and unit.root_id == ROOT
        assert asm.consume(unit.locations) == [9] and asm.held_spans == 0


def test_add_many_schedules_each_trace_by_the_earliest_arrival() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    asm.add(T, PLAIN, b"", 20)
    asm.add_many([(T, AGENT, b"", 0, False, None, None), (T2, M1, b"", 1, False, None, None)], segment=1, received=4)
    assert asm.next_due() == 9
    out = asm.poll(9)
    assert sorted(s for d in untouched(out) for s in d.span_ids) == sorted([AGENT, PLAIN, M1])


def test_a_segment_is_emptied_only_by_the_release_of_its_last_span() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    asm.add(T, PLAIN, b"", 0, segment=1, index=0)  # segment 1: a plain span and ...
    conversation(asm, 0, segment=1)  # ... the conversation
    asm.add(T2, M1, b"", 0, segment=2, index=0)
    assert asm.held_spans == 6
    out = asm.poll(5)
    (unit,) = units(out)
    plain = [d for d in untouched(out) if d.trace_id == T]
    other = [d for d in untouched(out) if d.trace_id == T2]
    assert asm.consume(unit.locations) == [] and asm.held_spans == 2  # segment 1 still holds the plain span
    assert asm.consume(plain[0].locations) == [1] and asm.held_spans == 1
    assert asm.consume(other[0].locations) == [2] and asm.held_spans == 0


def test_a_release_that_could_not_be_stored_gives_the_segment_back() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    conversation(asm, 0, segment=3)
    asm.add(T2, M1, b"", 0, segment=3, index=4)
    out = asm.poll(5)
    (unit,), (other,) = units(out), untouched(out)
    assert asm.consume(unit.locations) == []
    asm.unconsume(unit.locations)  # the store refused the release: the spans count again
    assert asm.held_spans == 5
    assert asm.consume(other.locations) == []  # the conversation's four spans still hold segment 3
    assert asm.consume(unit.locations) == [3] and asm.held_spans == 0


# -- what a unit carries -------------------------------------------------------------------------------------------


def test_a_unit_lists_its_conversation_ids_sorted_with_the_parent_conversation() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    asm.add(T, ROOT, b"", 0, conv_root=True, conv_id="zeta")
    asm.add(T, TURN, ROOT, 0, conv_id="zeta")
    asm.add(T, AGENT, TURN, 0, conv_root=True, conv_id="alpha", conv_parent="zeta")
    asm.add(T, M1, AGENT, 0, conv_id="alpha")
    asm.add(T, M2, AGENT, 0, conv_parent="mid")  # a span naming only a parent conversation
    (unit,) = units(asm.poll(5))
    assert unit.conv_ids == ("alpha", "mid", "zeta")
    assert unit.key == ROOT.hex() and unit.root_id == ROOT


def test_a_partial_unit_points_its_verdict_span_at_the_parent_most_of_its_spans_miss() -> None:
    asm = Assembler(quiet_period=5, max_age=50)
    asm.add(T, M1, MISSING, 0, conv_id="c1")
    asm.add(T, M2, MISSING, 3, conv_id="c1")
    asm.add(T, TURN, OTHER_MISSING, 6, conv_id="c1")
    assert asm.poll(49.9) == []
    (unit,) = units(asm.poll(50))
    assert unit.partial and unit.root_id is None and unit.key == "conv:c1"
    assert unit.parent_hint == MISSING
    assert (unit.first_received, unit.last_received) == (0, 6)


def test_a_whole_unit_has_no_parent_hint() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    conversation(asm, 0)
    (unit,) = units(asm.poll(5))
    assert unit.parent_hint is None and unit.conv_ids == ("c1",)


def test_max_age_counts_from_the_first_span_and_the_quiet_period_from_the_last() -> None:
    asm = Assembler(quiet_period=5, max_age=30)
    conversation(asm, 0)
    asm.add(T, bytes([9]) * 8, TURN, 4, conv_id="c1")
    assert asm.next_due() == 5
    assert asm.poll(8.9) == []
    assert asm.next_due() == 9  # rescheduled at last + quiet
    (unit,) = units(asm.poll(9))
    assert not unit.partial and (unit.first_received, unit.last_received) == (0, 4)


def test_a_conversation_without_its_root_is_checked_again_at_max_age() -> None:
    asm = Assembler(quiet_period=5, max_age=30)
    conversation(asm, 2, root=False)
    assert asm.poll(7) == []
    assert asm.next_due() == 32
    (unit,) = units(asm.poll(32))
    assert unit.partial


def test_a_conversation_that_never_goes_quiet_is_checked_at_max_age() -> None:
    asm = Assembler(quiet_period=5, max_age=12)
    conversation(asm, 0)
    for t in (4, 8, 11):
        asm.add(T, bytes([20 + t]) * 8, TURN, t, conv_id="c1")
        asm.poll(t)
    assert asm.next_due() == 12  # min(last + quiet = 16, first + max age = 12)
    (unit,) = units(asm.poll(12))
    assert unit.partial and unit.root_id == ROOT


# -- scheduling ----------------------------------------------------------------------------------------------------


def test_next_due_is_the_earliest_check_and_none_when_nothing_is_held() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    assert asm.next_due() is None
    asm.add(T, PLAIN, b"", 10)
    assert asm.next_due() == 15
    asm.add(T2, M1, b"", 2)  # another trace, earlier
    assert asm.next_due() == 7
    asm.add(T, M2, b"", 1)  # a span that arrived earlier (received times are the caller's): T checked sooner
    assert asm.next_due() == 6
    (out,) = asm.poll(6)
    assert out.trace_id == T and set(out.span_ids) == {PLAIN, M2}
    assert asm.has_trace(T2) and not asm.has_trace(T)


def test_a_check_left_over_from_an_earlier_schedule_releases_nothing_twice() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    asm.add(T, PLAIN, b"", 10)  # due 15
    asm.add(T, M1, b"", 2)  # due 7: rescheduled earlier
    (out,) = untouched(asm.poll(7))
    assert set(out.span_ids) == {PLAIN, M1} and out.reason == "no_conversation"
    assert asm.poll(15) == [] and asm.pending_traces == 0


def test_a_trace_with_a_waiting_conversation_stays_scheduled() -> None:
    asm = Assembler(quiet_period=5, max_age=30)
    conversation(asm, 0, root=False)
    asm.add(T, PLAIN, b"", 0)  # plain span, leaves at the quiet period
    (plain,) = untouched(asm.poll(5))
    assert plain.span_ids == (PLAIN,)
    assert asm.pending_traces == 1 and asm.held_spans == 3 + 1  # consume() is the caller's: nothing counted off
    assert asm.next_due() == 30
    assert units(asm.poll(30))


# -- placement of spans from other instrumentations ---------------------------------------------------------------


def test_an_agent_span_whose_parent_is_missing_waits_for_it() -> None:
    # another instrumentation's root (no conversation id) under a span not yet arrived: its parent may hold the
    # conversation, so it is not judged on its own
    asm = Assembler(quiet_period=5, max_age=30)
    asm.add(T, AGENT, MISSING, 0, conv_root=True)
    assert asm.poll(29) == []
    asm.add(T, MISSING, b"", 29, conv_root=True, conv_id="c9")  # the parent: a conversation root
    (unit,) = units(asm.poll(34))
    assert set(unit.span_ids) == {AGENT, MISSING} and unit.root_id == MISSING


def test_an_agent_span_whose_parent_never_arrives_leaves_at_max_age() -> None:
    asm = Assembler(quiet_period=5, max_age=30)
    asm.add(T, AGENT, MISSING, 0, conv_root=True)
    (out,) = untouched(asm.poll(30))
    assert out.span_ids == (AGENT,) and out.reason == "parent_timeout"


def test_an_agent_span_under_a_plain_span_already_released_is_judged() -> None:
    # prepare: a plain span leaves at its quiet period while a stray span keeps the trace held
    asm = Assembler(quiet_period=5, max_age=30)
    asm.add(T, PLAIN, b"", 0)
    asm.add(T, M1, MISSING, 0)
    (released,) = untouched(asm.poll(5))
    assert released.span_ids == (PLAIN,) and released.reason == "no_conversation"
    # test: an agent span of another instrumentation arrives under the released plain span
    asm.add(T, AGENT, PLAIN, 10, conv_root=True)
    out = asm.poll(15)
    # verify: its parent can no longer bring a conversation, so it is a conversation of its own
    (unit,) = units(out)
    assert unit.span_ids == (AGENT,) and unit.root_id == AGENT and not unit.partial


@pytest.mark.parametrize(
    ("agent_window", "own_unit"),
    [
        ((101, 150), True),  # starts after the root ended: a later run left on the thread, its own unit
        ((100, 150), False),  # starts as the root ends: not after it
        ((50, 90), False),  # inside the root's run: a member agent
    ],
)  # fmt: skip
def test_a_root_candidate_that_starts_after_the_root_above_it_ended_is_its_own_unit(
    agent_window: tuple[int, int], own_unit: bool
) -> None:
    asm = Assembler(quiet_period=5, max_age=30)
    asm.add(T, ROOT, b"", 0, conv_root=(0, 100))  # another instrumentation's root, ended at 100 ns
    asm.add(T, M1, ROOT, 0)
    asm.add(T, AGENT, ROOT, 0, conv_root=agent_window)  # parented on the root
    asm.add(T, M2, AGENT, 0)  # under the agent: goes where the agent goes
    found = {u.root_id: set(u.span_ids) for u in units(asm.poll(5))}
    if own_unit:
        assert found == {ROOT: {ROOT, M1}, AGENT: {AGENT, M2}}
    else:
        assert found == {ROOT: {ROOT, M1, AGENT, M2}}


def test_a_unit_knows_when_its_foreign_root_started_and_a_join_roots_at_the_earliest() -> None:
    # another instrumentation's roots carry their start (a run written as several traces is rooted at the first);
    # a mast-otel root carries none
    asm = Assembler(quiet_period=5, max_age=30)
    asm.add(T, ROOT, b"", 0, conv_root=(300, 400))
    asm.add(T2, AGENT, b"", 0, conv_root=(100, 200))
    asm.add(T2, M1, b"", 0, conv_root=True, conv_id="c1")
    found = {u.root_id: u for u in units(asm.poll(5))}
    assert (found[ROOT].root_start, found[AGENT].root_start, found[M1].root_start) == (300, 100, None)
    joined = asm.join([found[ROOT], found[AGENT]])
    assert (joined.trace_id, joined.root_id, joined.others) == (T2, AGENT, ((T, (ROOT,)),))


def test_a_root_with_no_end_never_splits_off_what_is_under_it() -> None:
    asm = Assembler(quiet_period=5, max_age=30)
    asm.add(T, ROOT, b"", 0, conv_root=(100, 0))  # an end before its start is no end
    asm.add(T, AGENT, ROOT, 0, conv_root=(200, 300))
    asm.add(T, M1, ROOT, 0, conv_root=True, conv_id="c1")  # a mast-otel root under it carries no window
    (unit,) = units(asm.poll(5))
    assert set(unit.span_ids) == {ROOT, AGENT, M1}


def test_a_nested_conversation_under_a_missing_outer_root_goes_with_the_outer_conversation() -> None:
    asm = Assembler(quiet_period=5, max_age=30)
    asm.add(T, TURN, ROOT, 0, conv_id="outer")  # the outer root never arrives
    asm.add(T, AGENT, MISSING, 0, conv_root=True, conv_id="inner", conv_parent="outer")  # its parent missing too
    asm.add(T, M1, AGENT, 0, conv_id="inner")
    assert units(asm.poll(29)) == []
    (unit,) = units(asm.poll(30))
    assert unit.key == "conv:outer" and set(unit.span_ids) == {TURN, AGENT, M1} and unit.partial
    assert unit.conv_ids == ("inner", "outer")


def test_a_nested_root_whose_outer_root_arrived_is_part_of_it_even_without_a_parent_link() -> None:
    asm = Assembler(quiet_period=5, max_age=30)
    asm.add(T, ROOT, b"", 0, conv_root=True, conv_id="outer")
    asm.add(T, AGENT, MISSING, 0, conv_root=True, conv_id="inner", conv_parent="outer")
    (unit,) = units(asm.poll(5))
    assert unit.root_id == ROOT and set(unit.span_ids) == {ROOT, AGENT}


def test_conversations_naming_each_other_as_parents_terminate() -> None:
    # bad data: a -> b -> a, neither with a root of its own
    asm = Assembler(quiet_period=5, max_age=30)
    asm.add(T, AGENT, MISSING, 0, conv_root=True, conv_id="a", conv_parent="b")
    asm.add(T, M1, OTHER_MISSING, 0, conv_root=True, conv_id="b", conv_parent="a")
    out = asm.poll(30)
    assert {s for d in out for s in d.span_ids} == {AGENT, M1}
    assert asm.pending_traces == 0


def test_a_root_placed_inside_another_conversation_is_not_its_key() -> None:
    # a span marked as a root but sitting under another conversation's spans belongs to that one
    asm = Assembler(quiet_period=5, max_age=30)
    conversation(asm, 0)
    asm.add(T, AGENT, M1, 0, conv_root=True, conv_id="c1")
    (unit,) = units(asm.poll(5))
    assert unit.root_id == ROOT and AGENT in unit.span_ids


@pytest.mark.parametrize("release_all", [False, True])
def test_release_all_lets_waiting_strays_go_at_once(release_all: bool) -> None:
    asm = Assembler(quiet_period=5, max_age=30)
    asm.add(T, M1, MISSING, 0)
    out = asm.poll(5, release_all=release_all)
    if release_all:
        (stray,) = untouched(out)
        assert stray.span_ids == (M1,) and stray.reason == "parent_timeout"
        assert asm.pending_traces == 0 and asm.poll(100) == []
    else:
        assert out == [] and asm.next_due() == 30


# -- queries the service makes while spans are held or judged ------------------------------------------------------


def test_what_is_held_and_what_is_being_judged() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    conversation(asm, 0)
    asm.add(T2, M1, b"", 0)
    assert asm.holds(T, ROOT) and not asm.holds(T, PLAIN) and not asm.holds(bytes(16), ROOT)
    assert set(asm.held_map(T)) == {ROOT, TURN, M1, M2} and dict(asm.held_map(bytes(16))) == {}
    assert asm.inflight_members(T) == set() and asm.inflight == 0
    (unit,) = units(asm.poll(5))
    assert not asm.holds(T, ROOT) and not asm.has_trace(T) and asm.pending_traces == 0
    assert asm.inflight_members(T) == {ROOT, TURN, M1, M2} and asm.inflight == 1
    asm.adopt_late(unit, PLAIN)
    assert PLAIN in asm.inflight_members(T)
    asm.finished(unit)
    assert asm.inflight_members(T) == set() and asm.inflight == 0
    asm.finished(unit)  # twice: nothing to forget


def test_finishing_one_unit_keeps_the_others_of_its_trace() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    asm.add(T, ROOT, b"", 0, conv_root=True, conv_id="a")
    asm.add(T, AGENT, b"", 0, conv_root=True, conv_id="b")
    first, second = units(asm.poll(5))
    assert asm.inflight == 2
    asm.finished(first)
    assert asm.inflight == 1
    assert asm.inflight_unit(T, second.span_ids[0], None) is second
    assert asm.inflight_unit(T, first.span_ids[0], None) is None
    assert asm.inflight_unit(T, PLAIN, second.conv_ids[0]) is second
    assert asm.inflight_unit(T, PLAIN, None) is None and asm.inflight_unit(T2, PLAIN, "a") is None
    asm.adopt_late(first, PLAIN)  # a finished unit adopts nothing
    assert PLAIN not in asm.inflight_members(T)


def test_a_failed_release_that_emptied_a_segment_empties_it_again_on_retry() -> None:
    # the store refused the release that would have deleted the segment: the retry must delete it, once
    asm = Assembler(quiet_period=5, max_age=100)
    asm.add(T, PLAIN, b"", 0, segment=4, index=0)
    (out,) = asm.poll(5)
    assert asm.consume(out.locations) == [4]
    asm.unconsume(out.locations)
    assert asm.held_spans == 1
    assert asm.consume(out.locations) == [4] and asm.held_spans == 0


def test_a_late_span_is_matched_to_its_own_conversation_by_id() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    asm.add(T, ROOT, b"", 0, conv_root=True, conv_id="a")
    asm.add(T, AGENT, b"", 0, conv_root=True, conv_id="b")
    by_conv = {u.conv_ids: u for u in units(asm.poll(5))}
    assert asm.inflight_unit(T, PLAIN, "b") is by_conv[("b",)]
    assert asm.inflight_unit(T, PLAIN, "a") is by_conv[("a",)]
    assert asm.inflight_unit(T, PLAIN, "neither") is None


def test_a_unit_finished_before_its_late_span_adopts_nothing() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    conversation(asm, 0)
    (unit,) = units(asm.poll(5))
    asm.finished(unit)
    asm.adopt_late(unit, PLAIN)
    assert asm.inflight_members(T) == set() and asm.inflight == 0


def test_a_stale_check_does_not_hold_up_other_traces_due_in_the_same_poll() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    asm.add(T, PLAIN, b"", 10)  # due 15 ...
    asm.add(T, M1, b"", 2)  # ... then 7: the check at 15 is stale once T leaves at 7
    asm.add(T2, M2, b"", 11)  # due 16
    assert {d.trace_id for d in asm.poll(7)} == {T}
    (out,) = asm.poll(20)
    assert out.trace_id == T2 and out.span_ids == (M2,)


def test_limits_hold_on_wall_clock_times() -> None:
    # the service's clock is time.time(): epoch seconds, not small numbers
    now = 1_700_000_000.0
    asm = Assembler(quiet_period=5, max_age=30)
    asm.add(T, PLAIN, MISSING, now)  # a stray: its parent never arrives
    conversation(asm, now, root=False)  # a conversation whose root never arrives
    assert asm.poll(now + 5) == [] and asm.poll(now + 29.9) == []
    out = asm.poll(now + 30)
    (stray,) = untouched(out)
    assert stray.span_ids == (PLAIN,) and stray.reason == "parent_timeout"
    (unit,) = units(out)
    assert unit.partial and unit.first_received == now and set(unit.span_ids) == {TURN, M1, M2}


def test_strays_are_checked_again_when_the_first_of_them_is_max_age_old() -> None:
    asm = Assembler(quiet_period=5, max_age=30)
    asm.add(T, PLAIN, MISSING, 4)
    asm.add(T, M1, OTHER_MISSING, 2)
    asm.add(T, M2, MISSING, 3)
    assert asm.poll(7) == [] and asm.poll(31.9) == []
    assert [d.span_ids for d in asm.poll(32)] == [(M1,)]
    assert asm.poll(32.9) == []
    assert [d.span_ids for d in asm.poll(33)] == [(M2,)]
    assert [d.span_ids for d in asm.poll(34)] == [(PLAIN,)]


def test_spans_of_a_conversation_whose_root_sits_in_another_conversation_wait_for_max_age() -> None:
    # conversation x's root arrived, but under conversation c1's message; x's other spans (parent missing) cannot
    # be judged with a root that is not theirs: they wait and go as a partial conversation without a root
    asm = Assembler(quiet_period=5, max_age=30)
    conversation(asm, 0)
    asm.add(T, AGENT, M1, 0, conv_root=True, conv_id="x")
    asm.add(T, PLAIN, MISSING, 0, conv_id="x")
    (whole,) = units(asm.poll(5))
    assert whole.root_id == ROOT and AGENT in whole.span_ids and PLAIN not in whole.span_ids
    assert asm.poll(29) == []
    (rest,) = units(asm.poll(30))
    assert rest.span_ids == (PLAIN,) and rest.root_id is None and rest.partial
    assert rest.key.startswith("conv:")


def test_a_span_added_without_a_segment_is_the_first_of_segment_zero() -> None:
    # add()'s defaults: the in-memory callers (tests, tools) that hold spans stored nowhere
    asm = Assembler(quiet_period=5, max_age=100)
    asm.add(T, PLAIN, b"", 0)
    (out,) = asm.poll(5)
    assert out.locations == ((PLAIN, 0, 0),)
    assert asm.consume(out.locations) == [0]


def test_add_many_keeps_going_after_a_duplicate_and_keeps_conversation_ids() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    asm.add_many([(T, TURN, ROOT, 0, False, "c1", None), (T, TURN, ROOT, 0, False, "c1", None),  # twice
                  (T, ROOT, b"", 1, True, "c1", None), (T, AGENT, TURN, 2, True, "inner", "c1"),
                  (T, M1, MISSING, 3, False, "inner", None)], segment=5, received=0)  # fmt: skip
    assert asm.held_spans == 4
    (unit,) = units(asm.poll(5))
    assert set(unit.span_ids) == {TURN, ROOT, AGENT, M1} and unit.root_id == ROOT
    assert unit.conv_ids == ("c1", "inner")


def test_add_many_adds_to_what_a_segment_already_holds() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    asm.add(T, PLAIN, b"", 0, segment=5, index=0)
    asm.add_many([(T2, M1, b"", 1, False, None, None)], segment=5, received=0)
    asm.add_many([(T2, M2, b"", 2, False, None, None)], segment=5, received=0)
    assert asm.held_spans == 3
    first, second = sorted(asm.poll(5), key=lambda d: d.trace_id == T2)
    assert asm.consume(first.locations) == [] and asm.held_spans == 2
    assert asm.consume(second.locations) == [5] and asm.held_spans == 0


def test_a_stray_span_of_a_nested_conversation_joins_the_outer_conversation() -> None:
    # the inner conversation's root names its parent conversation; a span of the inner one whose parent is
    # missing is placed by conversation id, up the chain to the outer root
    asm = Assembler(quiet_period=5, max_age=100)
    asm.add(T, ROOT, b"", 0, conv_root=True, conv_id="outer")
    asm.add(T, TURN, ROOT, 0, conv_id="outer")
    asm.add(T, AGENT, TURN, 0, conv_root=True, conv_id="inner", conv_parent="outer")
    asm.add(T, M1, MISSING, 0, conv_id="inner")
    (unit,) = units(asm.poll(5))
    assert unit.root_id == ROOT and set(unit.span_ids) == {ROOT, TURN, AGENT, M1} and unit.partial is False


def test_a_nested_root_without_a_parent_span_joins_its_outer_conversation() -> None:
    asm = Assembler(quiet_period=5, max_age=100)
    asm.add(T, ROOT, b"", 0, conv_root=True, conv_id="outer")
    asm.add(T, AGENT, b"", 0, conv_root=True, conv_id="inner", conv_parent="outer")
    (unit,) = units(asm.poll(5))
    assert unit.root_id == ROOT and set(unit.span_ids) == {ROOT, AGENT}


def test_a_conversation_chain_that_loops_back_terminates() -> None:
    # bad data: x -> a -> b -> a, no conversation with a root of its own
    asm = Assembler(quiet_period=5, max_age=30)
    asm.add(T, ROOT, MISSING, 0, conv_root=True, conv_id="x", conv_parent="a")
    asm.add(T, AGENT, OTHER_MISSING, 0, conv_root=True, conv_id="a", conv_parent="b")
    asm.add(T, TURN, bytes([40]) * 8, 0, conv_root=True, conv_id="b", conv_parent="a")
    asm.add(T, M1, bytes([41]) * 8, 0, conv_id="x")
    out = asm.poll(30)
    assert {s for d in out for s in d.span_ids} == {ROOT, AGENT, TURN, M1}
    assert asm.pending_traces == 0


@pytest.mark.parametrize("rootless_first", [True, False])
def test_a_trace_is_checked_again_for_its_earliest_waiting_conversation(rootless_first: bool) -> None:
    # two conversations wait in one trace: one for its quiet period (due 8), one without a root (due 30)
    asm = Assembler(quiet_period=5, max_age=30)
    rootless = [(M1, MISSING, "b")]
    rooted = [(ROOT, b"", "a")]
    for sid, parent, conv in rootless + rooted if rootless_first else rooted + rootless:
        asm.add(T, sid, parent, 0, conv_root=sid == ROOT, conv_id=conv)
    asm.add(T, TURN, ROOT, 3, conv_id="a")
    assert asm.poll(7.9) == []
    (unit,) = units(asm.poll(8))
    assert unit.root_id == ROOT and unit.trace_id == T
    (rest,) = units(asm.poll(30))
    assert rest.partial is True and rest.trace_id == T and rest.span_ids == (M1,)
