"""Which traces are one run (TraceGroups) and the wait for the rest of a run (RunJoiner): evidence ties traces
transitively, is forgotten once stale, is bounded; a unit whose trace is tied to another waits until the run is
quiet, then the run's units are judged as one, first root first; anything else passes at once.

The oracle is the evidence itself: which trace was noted with which keys, and when."""

from __future__ import annotations

import dataclasses

import pytest

from mast_otel.adapters._grouping import answer_keys, history_key
from mast_otel.collector.assemble.assembler import Assembler, Unit
from mast_otel.collector.assemble.trace_groups import Note, RunJoiner, TraceGroups

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

A, B, C, D = (bytes([n]) * 16 for n in range(1, 5))


def _unit(trace: bytes, *, start: int, received: float = 0.0, conv: tuple[str, ...] = ()) -> Unit:
    root = trace[:8]
    return Unit(trace_id=trace, key=root.hex(), root_id=root, locations=((root, 1, 0),), conv_ids=conv,
                partial=False, parent_hint=None, first_received=received, last_received=received,
                root_start=start)  # fmt: skip


def test_links_and_declared_run_ids_tie_traces_transitively() -> None:
    groups = TraceGroups()
    groups.note(B, [f"trace:{A.hex()}"], 0)  # B links to A
    groups.note(C, ["run:app.run_id=r1"], 0)
    groups.note(D, ["run:app.run_id=r1"], 0)  # C and D carry the run id the user declared
    assert groups.traces_with(A) == groups.traces_with(B) == {A, B}
    assert groups.traces_with(C) == {C, D}
    groups.note(D, [f"trace:{B.hex()}"], 5)  # and D links to B: one run of four
    assert groups.traces_with(A) == {A, B, C, D}
    assert groups.last_noted(C) == 5
    assert groups.traces_with(b"\x09" * 16) == {b"\x09" * 16} and groups.last_noted(b"\x09" * 16) is None


def test_nothing_ties_runs_across_tenants() -> None:
    # two tenants whose programs use the same run ids, and one that links to the other's trace
    groups = TraceGroups()
    groups.note(A, ["run:app.run_id=session_001"], 0, tenant="team-a")
    groups.note(B, ["run:app.run_id=session_001"], 0, tenant="team-b")
    groups.note(C, [f"trace:{A.hex()}"], 0, tenant="team-b")
    assert groups.traces_with(A, "team-a") == {A}
    assert groups.traces_with(B, "team-b") == {B}
    assert A not in groups.traces_with(C, "team-b") - {A} or groups.traces_with(A, "team-a") == {A}
    groups.note(D, ["run:app.run_id=session_001"], 1, tenant="team-a")
    assert groups.traces_with(D, "team-a") == {A, D}  # within a tenant, the same id still ties


def test_a_shared_history_ties_only_within_one_service_of_a_tenant() -> None:
    said = "Order A17 was charged 49.00 EUR twice on 2026-11-02."
    history = history_key("researcher", said, 150)
    assert history is not None
    for tenant, service, tied in [("t", "desk", True), ("t", "billing", False), ("u", "desk", False)]:
        groups = TraceGroups()
        groups.note(A, answer_keys("researcher", f'[{{"content": "{said}"}}]', 100, 110), 0, tenant="t",
                    service="desk")  # fmt: skip
        groups.note(B, [history], 0, tenant=tenant, service=service)
        assert (groups.traces_with(B, tenant) == {A, B}) is tied, (tenant, service)


def test_receivers_only_queue_their_notes_and_the_pipeline_applies_them() -> None:
    groups = TraceGroups()
    groups.submit(Note(B, "", "", [f"trace:{A.hex()}"], 0))
    assert groups.traces_with(B) == {B}  # not applied yet: submit does no grouping work
    groups.apply(groups.take())
    assert groups.traces_with(B) == {A, B} and groups.take() == []


def test_stale_groups_are_forgotten() -> None:
    groups = TraceGroups()
    groups.note(B, [f"trace:{A.hex()}"], 0)
    groups.note(C, ["run:app.run_id=c"], 10)
    assert groups.forget_older_than(5) == 1  # A and B's group, last noted at 0
    assert groups.traces_with(B) == {B} and groups.traces_with(C) == {C}
    assert groups.forgotten == 1


@settings(deadline=None)  # (up to 300 notes an example)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 3)), min_size=1, max_size=300),
       st.integers(2_000, 40_000))  # fmt: skip
def test_the_index_stays_within_its_bytes_dropping_the_least_recently_noted(
    notes: list[tuple[int, int]], memory: int
) -> None:
    groups = TraceGroups(memory=memory)
    for at, (trace, kind) in enumerate(notes):
        tid = trace.to_bytes(16, "big")
        keys = [f"trace:{(trace + 1):032x}"] if kind == 0 else [f"run:app.run_id={'x' * 1000}{trace % 7}"]
        groups.apply([Note(tid, "", "", keys, float(at))])
        assert groups.held_bytes <= memory
    last = notes[-1][0].to_bytes(16, "big")
    assert len(groups.traces_with(last)) >= 1
    if groups.evicted == 0:
        assert groups.held_bytes > 0


def test_what_the_index_counts_is_what_it_holds() -> None:
    # the per-entry costs the bound is kept with are measured: 2,000 runs of two linked traces and a history each
    import gc
    import tracemalloc

    said = "Order A17 was charged 49.00 EUR twice on 2026-11-02."
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    groups = TraceGroups(memory=1 << 40)
    for n in range(2_000):
        a, b = (2 * n).to_bytes(16, "big"), (2 * n + 1).to_bytes(16, "big")
        notes = [Note(b, "tenant", "svc", [f"trace:{a.hex()}", f"run:app.run_id=run-{n}"], float(n)),
                 Note(a, "tenant", "svc", answer_keys("r", f'[{{"content": "{said} {n}"}}]', n, n + 1), float(n)),
                 Note(b, "tenant", "svc", [history_key("r", f"{said} {n}", n + 2) or ""], float(n))]  # fmt: skip
        groups.apply(notes)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert groups.traces_with((1).to_bytes(16, "big"), "tenant") == {(0).to_bytes(16, "big"), (1).to_bytes(16, "big")}
    assert held <= groups.held_bytes <= 3 * held, (held, groups.held_bytes)


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
    groups.note(A, ["run:app.run_id=s"], 0)
    groups.note(B, ["run:app.run_id=s"], 2)
    later, first = _unit(B, start=200, received=2), _unit(A, start=100, received=1)
    assert joiner.offer(later) is None and joiner.offer(first) is None
    assert joiner.poll(6) == []  # evidence joined at 2: quiet from 7
    (run,) = joiner.poll(7)
    joined = assembler.join(run)
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
    assert [len(run) for run in joiner.poll(30)] == [1]  # max age: judged with what arrived


def test_release_all_joins_what_waits() -> None:
    groups = TraceGroups()
    groups.note(B, [f"trace:{A.hex()}"], 0)
    joiner = RunJoiner(groups, Assembler(quiet_period=5, max_age=30), quiet_period=5, max_age=30)
    assert joiner.offer(_unit(B, start=1)) is None
    ((unit,),) = joiner.poll(0, release_all=True)
    assert unit.trace_id == B and unit.others == ()


def test_units_of_two_tenants_are_never_one_run() -> None:
    groups = TraceGroups()
    assembler = Assembler(quiet_period=5, max_age=30)
    joiner = RunJoiner(groups, assembler, quiet_period=5, max_age=30)
    groups.note(B, [f"trace:{A.hex()}"], 0, tenant="team-b")  # team B's trace links to team A's
    mine, theirs = _unit(A, start=1), dataclasses.replace(_unit(B, start=2), tenant="team-b")
    mine = dataclasses.replace(mine, tenant="team-a")
    assert joiner.offer(mine) is mine  # team A's trace: nothing of team A ties it
    assert joiner.offer(theirs) is None  # team B's link names a trace: it waits for it (in vain)
    assert [[u.tenant for u in run] for run in joiner.poll(30)] == [["team-b"]]


def test_a_history_continues_the_turn_that_gave_its_answer_last_before_it_even_when_that_arrives_later() -> None:
    groups = TraceGroups()
    said = "Order A17 was charged 49.00 EUR twice on 2026-11-02."
    answer = f'[{{"content": "{said}"}}]'
    (history,) = [k for k in [history_key("researcher", said, 150)] if k]
    groups.note(D, [history], 0)  # the writer's turn of run 2, whose records came first
    assert groups.traces_with(D) == {D}
    groups.note(A, answer_keys("researcher", answer, 100, 110), 1)  # run 1's answer
    assert groups.traces_with(D) == {A, D}
    groups.note(B, [history_key("researcher", said, 120) or ""], 1)  # read on by run 1's writer
    groups.note(C, answer_keys("researcher", answer, 140, 145), 2)  # run 2's, given after: it wins
    assert groups.traces_with(D) == {C, D} and groups.traces_with(A) == {A, B}
    assert groups.last_noted(D) == 2
    groups.forget_older_than(1.5)  # run 1's groups and run 2's history are stale
    assert groups.traces_with(C) == {C}


def test_a_history_two_runs_at_once_could_have_given_ties_nothing_and_is_counted() -> None:
    groups = TraceGroups()
    said = "Order A17 was charged 49.00 EUR twice on 2026-11-02."
    answer = f'[{{"content": "{said}"}}]'
    groups.note(A, answer_keys("researcher", answer, 100, 110), 0)  # run 1's researcher
    groups.note(C, answer_keys("researcher", answer, 105, 115), 0)  # run 2's, 5 ns later, before anyone read run 1's
    groups.note(B, [history_key("researcher", said, 120) or ""], 0)  # a writer: of run 1 or of run 2?
    assert groups.traces_with(B) == {B} and groups.ambiguous == 1


def test_a_history_its_own_trace_answered_last_ties_nothing_elsewhere() -> None:
    # two requests, each a group chat under its handler's span (one trace each, pieces inside); the same script,
    # so the same answer: request A's writer quotes A's own researcher, never request B's
    groups = TraceGroups()
    said = "Order A17 was charged 49.00 EUR twice on 2026-11-02."
    answer = f'[{{"content": "{said}"}}]'
    groups.note(B, answer_keys("researcher", answer, 90, 95), 0)  # request B's researcher, earlier
    groups.note(A, answer_keys("researcher", answer, 100, 105), 0)  # request A's own, the last before its writer
    groups.note(A, [history_key("researcher", said, 120) or ""], 0)
    assert groups.traces_with(A) == {A} and groups.traces_with(B) == {B}
