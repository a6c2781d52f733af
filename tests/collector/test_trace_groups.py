"""Which traces are one run (TraceGroups) and the wait for the rest of a run (RunJoiner): evidence ties traces
transitively, is forgotten once stale, is bounded; a unit whose trace is tied to another waits until the run is
quiet, then the run's units are judged as one, first root first; anything else passes at once.

The oracle is the evidence itself: which trace was noted with which keys, and when."""

from __future__ import annotations

from mast_otel.adapters._grouping import answer_keys, history_key
from mast_otel.collector.assemble.assembler import Assembler, Unit
from mast_otel.collector.assemble.trace_groups import RunJoiner, TraceGroups

A, B, C, D = (bytes([n]) * 16 for n in range(1, 5))


def _unit(trace: bytes, *, start: int, received: float = 0.0, conv: tuple[str, ...] = ()) -> Unit:
    root = trace[:8]
    return Unit(trace_id=trace, key=root.hex(), root_id=root, locations=((root, 1, 0),), conv_ids=conv,
                partial=False, parent_hint=None, first_received=received, last_received=received,
                root_start=start)  # fmt: skip


def test_links_and_shared_keys_tie_traces_transitively() -> None:
    groups = TraceGroups()
    groups.note(B, [f"trace:{A.hex()}"], 0)  # B links to A
    groups.note(C, ["session.id=s1"], 0)
    groups.note(D, ["session.id=s1"], 0)  # C and D share a session
    assert groups.traces_with(A) == groups.traces_with(B) == {A, B}
    assert groups.traces_with(C) == {C, D}
    groups.note(D, [f"trace:{B.hex()}"], 5)  # and D links to B: one run of four
    assert groups.traces_with(A) == {A, B, C, D}
    assert groups.last_noted(C) == 5
    assert groups.traces_with(b"\x09" * 16) == {b"\x09" * 16} and groups.last_noted(b"\x09" * 16) is None


def test_stale_groups_are_forgotten_and_the_index_is_bounded() -> None:
    groups = TraceGroups(max_entries=4)
    groups.note(B, [f"trace:{A.hex()}"], 0)
    groups.note(C, ["gen_ai.conversation.id=c"], 10)
    assert groups.forget_older_than(5) == 2  # A and B, last noted at 0
    assert groups.traces_with(B) == {B} and groups.traces_with(C) == {C}
    groups.note(A, ["k1", "k2"], 11)  # 2 kept + 3 new > 4: not recorded, counted
    assert groups.dropped == 1 and groups.traces_with(A) == {A}


def test_a_unit_with_nothing_tying_its_trace_passes_at_once() -> None:
    joiner = RunJoiner(TraceGroups(), Assembler(quiet_period=5, max_age=30), quiet_period=5, max_age=30)
    unit = _unit(A, start=1)
    assert joiner.offer(unit) is unit and joiner.waiting == 0


def test_a_mast_otel_unit_never_waits() -> None:
    groups = TraceGroups()
    groups.note(A, [f"trace:{B.hex()}"], 0)
    joiner = RunJoiner(groups, Assembler(quiet_period=5, max_age=30), quiet_period=5, max_age=30)
    unit = _unit(A, start=1, conv=("c1",))
    assert joiner.offer(unit) is unit


def test_a_run_waits_until_quiet_then_is_one_unit_rooted_at_its_first_root() -> None:
    groups = TraceGroups()
    assembler = Assembler(quiet_period=5, max_age=30)
    joiner = RunJoiner(groups, assembler, quiet_period=5, max_age=30)
    groups.note(A, ["session.id=s"], 0)
    groups.note(B, ["session.id=s"], 2)
    later, first = _unit(B, start=200, received=2), _unit(A, start=100, received=1)
    assert joiner.offer(later) is None and joiner.offer(first) is None
    assert joiner.poll(6) == []  # evidence joined at 2: quiet from 7
    (joined,) = joiner.poll(7)
    assert (joined.trace_id, joined.root_id) == (A, A[:8])  # the root that started first
    assert joined.trace_ids == (A, B) and joined.span_ids == (A[:8],) and joined.others == ((B, (B[:8],)),)
    assert set(joined.locations) == set(first.locations) | set(later.locations)
    assert joiner.waiting == 0


def test_a_run_waits_while_one_of_its_traces_is_still_held() -> None:
    groups = TraceGroups()
    assembler = Assembler(quiet_period=5, max_age=30)
    joiner = RunJoiner(groups, assembler, quiet_period=5, max_age=30)
    groups.note(B, [f"trace:{A.hex()}"], 0)
    assembler.add(A, b"\x07" * 8, b"", 0)  # a span of A, not yet released
    assert joiner.offer(_unit(B, start=1)) is None
    assert joiner.poll(10) == []
    assert len(joiner.poll(30)) == 1  # max age: judged with what arrived


def test_release_all_joins_what_waits() -> None:
    groups = TraceGroups()
    groups.note(B, [f"trace:{A.hex()}"], 0)
    joiner = RunJoiner(groups, Assembler(quiet_period=5, max_age=30), quiet_period=5, max_age=30)
    assert joiner.offer(_unit(B, start=1)) is None
    (unit,) = joiner.poll(0, release_all=True)
    assert unit.trace_id == B and unit.others == ()


def test_a_history_continues_the_turn_that_gave_its_answer_last_before_it_even_when_that_arrives_later() -> None:
    groups = TraceGroups()
    said = "Order A17 was charged 49.00 EUR twice on 2026-11-02."
    (history,) = [k for k in [history_key("researcher", said, 150)] if k]
    groups.note(D, [history], 0)  # the writer's turn of run 2, whose records came first
    assert groups.traces_with(D) == {D}
    groups.note(A, answer_keys("researcher", f'[{{"content": "{said}"}}]', 100), 1)  # run 1's answer, ended at 100
    assert groups.traces_with(D) == {A, D}
    groups.note(C, answer_keys("researcher", f'[{{"content": "{said}"}}]', 140), 2)  # run 2's, ended at 140: wins
    assert groups.traces_with(D) == {C, D} and groups.traces_with(A) == {A}
    assert groups.last_noted(D) == 2
    groups.forget_older_than(1.5)  # run 1's answer and run 2's history are stale
    assert groups.traces_with(C) == {C}
