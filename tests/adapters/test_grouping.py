"""A run written as several traces is one conversation when evidence ties the traces (mast_otel.adapters._grouping):
span links, a run id the user declares, and a shared history, on any span of the trace; a conversation or session id
names a session and ties nothing; units of one trace are never joined. The oracle for the first property is a plain
graph search over the same evidence; for the history's, the runs each span was written for."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, adapt, foreign_units
from mast_otel.adapters._grouping import evidence, group
from mast_otel.spans import SpanRecord

hypothesis = pytest.importorskip("hypothesis")  # the property runs in the main tier
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_ids = itertools.count(1)


def _span(trace: int, *, parent: SpanRecord | None = None, name: str = "step", start: int = 0, end: int = 10,
          links: tuple[SpanRecord, ...] = (), **attributes: object) -> SpanRecord:  # fmt: skip
    return SpanRecord(
        trace_id=f"{trace:032x}", span_id=f"{next(_ids):016x}", parent_span_id=parent.span_id if parent else None,
        name=name, start_ns=start, end_ns=end, attributes=attributes,
        links=tuple((s.trace_id, s.span_id) for s in links),
    )  # fmt: skip


def _agent_turn(trace: int, agent: str, reply: str, start: int, **attributes: object) -> list[SpanRecord]:
    """One agent's turn as a trace of its own: invoke_agent with one chat answer under it."""
    turn = _span(trace, name=f"invoke_agent {agent}", start=start, end=start + 10, **{
        sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.GEN_AI_AGENT_NAME: agent}, **attributes)  # fmt: skip
    output = f'[{{"role": "assistant", "parts": [{{"type": "text", "content": "{reply}"}}]}}]'
    chat = _span(trace, parent=turn, name="chat", start=start + 1, end=start + 9, **{
        sc.GEN_AI_OPERATION_NAME: "chat", "gen_ai.output.messages": output})  # fmt: skip
    return [turn, chat]


def test_linked_traces_are_one_conversation_under_the_first_turns_root() -> None:
    researcher = _agent_turn(1, "researcher", "A17 was charged twice.", 0)
    # the runtime's message span in trace 2 links to the span that sent it in trace 1, above the writer's turn
    message = _span(2, name="agent_runtime publish", start=20, end=40, links=(researcher[1],))
    writer = _agent_turn(2, "writer", "Refunded.", 21)
    writer[0] = dataclasses.replace(writer[0], parent_span_id=message.span_id)
    (unit,) = foreign_units([*researcher, message, *writer])
    adapted = adapt(unit)
    assert isinstance(adapted, Adapted)
    assert adapted.root_span_id == researcher[0].span_id  # labels go to a real span: the first turn's root
    assert [m.get(sc.MESSAGE_SENDER) for m in adapted.messages] == ["researcher", "writer"]
    assert adapted.framework is not None


@pytest.mark.parametrize("key", [sc.GEN_AI_CONVERSATION_ID, sc.OI_SESSION_ID])
def test_a_conversation_or_session_id_names_a_session_and_ties_no_runs(key: str) -> None:
    # two runs of one session (ADK's session, OpenInference's session.id), each with a root of its own
    first = _agent_turn(1, "researcher", "found", 0, **{key: "session_001"})
    second = _agent_turn(2, "writer", "written", 20, **{key: "session_001"})
    units = foreign_units([*first, *second])
    assert sorted(len({s.trace_id for s in u}) for u in units) == [1, 1]


def test_a_run_id_the_user_declares_ties_traces() -> None:
    first = _agent_turn(1, "researcher", "found", 0, **{"app.run_id": "r-1"})
    second = _agent_turn(2, "writer", "written", 20, **{"app.run_id": "r-1"})
    other = _agent_turn(3, "writer", "unrelated", 40, **{"app.run_id": "r-2"})
    units = foreign_units([*first, *second, *other], run_keys=("app.run_id",))
    assert sorted(len({s.trace_id for s in u}) for u in units) == [1, 2]
    assert len(foreign_units([*first, *second, *other])) == 3  # undeclared: an attribute like any other


def test_traces_with_nothing_in_common_stay_apart() -> None:
    units = foreign_units([*_agent_turn(1, "a", "x", 0), *_agent_turn(2, "b", "y", 20)])
    assert len(units) == 2 and all(adapt(u).__class__.__name__ == "NotAConversation" for u in units)


def test_runs_in_one_trace_are_one_only_when_evidence_ties_them() -> None:
    team = _agent_turn(1, "lead", "done", 0, **{"app.run_id": "s"})
    later = _agent_turn(1, "clerk", "later", 50, **{"app.run_id": "s"})  # after the first root ended
    later[0] = dataclasses.replace(later[0], parent_span_id=team[0].span_id)
    elsewhere = _agent_turn(2, "writer", "w", 60, **{"app.run_id": "t"})
    apart = foreign_units([*team, *later, *elsewhere], run_keys=("app.run_id",))
    assert sorted(len(u) for u in apart) == [2, 4]  # the two runs of trace 1 declared one, trace 2's its own
    assert sorted(len(u) for u in foreign_units([*team, *later, *elsewhere])) == [2, 2, 2]  # nothing declared


def test_evidence_names_links_to_other_traces_and_declared_run_ids_only() -> None:
    a = _span(1)
    b = _span(2, links=(a, _span(2)), **{sc.GEN_AI_CONVERSATION_ID: "c", sc.OI_SESSION_ID: "s", "app.run_id": "r"})
    assert evidence(b) == [f"trace:{a.trace_id}"]
    assert evidence(b, ("app.run_id", "app.missing")) == [f"trace:{a.trace_id}", "run:app.run_id=r"]


@given(
    st.lists(st.sets(st.integers(0, 5), max_size=3), min_size=1, max_size=8),  # each trace's keys
    st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)), max_size=6),  # links between traces
)
def test_units_are_merged_exactly_when_evidence_connects_their_traces(
    keys: list[set[int]], links: list[tuple[int, int]]
) -> None:
    traces = len(keys)
    links = [(a % traces, b % traces) for a, b in links]
    units = [[_span(t + 1)] for t in range(traces)]  # one unit per trace; the evidence is on other spans of it
    spans = [_span(t + 1, **{"app.run_id": f"k{k}"}) for t in range(traces) for k in keys[t]]
    spans += [_span(a + 1, links=(units[b][0],)) for a, b in links]
    merged = group(units, spans, ("app.run_id",))
    # oracle: breadth-first search over traces sharing a key or linked
    edges = {t: set() for t in range(traces)}
    for a in range(traces):
        for b in range(traces):
            if keys[a] & keys[b] or (a, b) in links or (b, a) in links:
                edges[a].add(b)
    seen: set[int] = set()
    components = []
    for start in range(traces):
        if start in seen:
            continue
        component, frontier = set(), [start]
        while frontier:
            t = frontier.pop()
            if t not in component:
                component.add(t)
                frontier.extend(edges[t] - component)
        seen |= component
        components.append(component)
    got = sorted(sorted(int(s.trace_id, 16) - 1 for s in unit) for unit in merged)
    assert got == sorted(sorted(c) for c in components)


def _history(span: SpanRecord, *said: tuple[str, str]) -> SpanRecord:
    """``span`` with the earlier answers its model was given (``gen_ai.assistant.message`` events by name)."""
    from mast_otel.spans import SpanEvent

    events = tuple(SpanEvent("gen_ai.assistant.message", {"name": n, "content": c}) for n, c in said)
    return dataclasses.replace(span, events=span.events + events)


_FOUND = "Order A17 was charged 49.00 EUR twice on 2026-11-02."
_WRITTEN = "Dear customer, the duplicate charge on order A17 is refunded."


def _group_chat(base: int, start: int) -> list[SpanRecord]:
    """A group chat writing each turn as a trace of its own, rooted at its agent (Semantic Kernel's AgentGroupChat):
    the researcher answers, the writer is given that answer, the reviewer both."""
    output = '[{{"role": "assistant", "content": "{}", "name": "{}"}}]'
    researcher = _agent_turn(base, "researcher", "x", start, **{"gen_ai.output.messages": output.format(_FOUND, "r")})
    writer = _agent_turn(
        base + 1, "writer", "y", start + 20, **{"gen_ai.output.messages": output.format(_WRITTEN, "w")}
    )
    reviewer = _agent_turn(base + 2, "reviewer", "z", start + 40)
    writer[1] = _history(writer[1], ("researcher", _FOUND))
    reviewer[1] = _history(reviewer[1], ("researcher", _FOUND), ("writer", _WRITTEN))
    return [*researcher, *writer, *reviewer]


def test_turns_that_share_their_history_are_one_conversation() -> None:
    (unit,) = foreign_units(_group_chat(10, 0))
    adapted = adapt(unit)
    assert isinstance(adapted, Adapted)
    assert [m.get(sc.MESSAGE_SENDER) for m in adapted.messages] == ["researcher", "writer", "reviewer"]


def test_the_same_answers_in_every_run_of_a_batch_tie_each_turn_to_its_own_run() -> None:
    # two runs giving the same answers (a scripted or temperature-0 model): each history continues the turn that
    # gave its answer last before it, so the runs stay apart
    units = foreign_units([*_group_chat(10, 0), *_group_chat(20, 100)])
    assert sorted(sorted({int(s.trace_id, 16) for s in u}) for u in units) == [[10, 11, 12], [20, 21, 22]]


def test_a_short_answer_or_one_given_after_the_history_ties_nothing() -> None:
    output = '[{"role": "assistant", "content": "OK, done."}]'
    short = _agent_turn(1, "researcher", "x", 0, **{"gen_ai.output.messages": output})
    writer = _agent_turn(2, "writer", "y", 20)
    writer[1] = _history(writer[1], ("researcher", "OK, done."))
    assert len(foreign_units([*short, *writer])) == 2
    later = _agent_turn(3, "researcher", "x", 50, **{"gen_ai.output.messages": f'[{{"content": "{_FOUND}"}}]'})
    reader = _agent_turn(4, "writer", "y", 20)  # its history is written at 21, before the answer ended at 60
    reader[1] = _history(reader[1], ("researcher", _FOUND))
    assert len(foreign_units([*later, *reader])) == 2


def test_a_history_continues_its_own_runs_giver_even_when_that_turn_is_not_its_traces_root() -> None:
    # run 1: turns that are traces of their own; run 2 (later): the same answers, the researcher's turn under a
    # runtime span of its trace (an orchestration): the writer of run 2 continues run 2's researcher, not run 1's
    first = _group_chat(10, 0)
    second = _group_chat(20, 100)
    runtime = _span(20, name="agent_runtime process", start=99, end=120)
    second = [dataclasses.replace(s, parent_span_id=runtime.span_id) if s.parent_span_id is None and
              int(s.trace_id, 16) == 20 else s for s in second]  # fmt: skip
    units = foreign_units([*first, runtime, *second])
    assert sorted(sorted({int(s.trace_id, 16) for s in u}) for u in units) == [[10, 11, 12], [20, 21, 22]]


def test_two_runs_at_once_that_give_the_same_answers_are_never_merged() -> None:
    # two group chats 5 ns apart (two users at once), the same script: every history could continue either run's
    # turn; guessing (the last giver before it) would tie one run's writer to the other's researcher
    units = foreign_units([*_group_chat(10, 0), *_group_chat(20, 5)])
    assert all(len({int(s.trace_id, 16) // 10 for s in u}) == 1 for u in units)  # no unit of two runs
    assert sorted(len(u) for u in units) == [2] * 6  # each turn alone: nothing told them apart


def test_a_service_s_history_never_continues_another_service_s_turn() -> None:
    run = _group_chat(10, 0)
    elsewhere = [dataclasses.replace(s, service_name="billing") if int(s.trace_id, 16) == 11 else s for s in run]
    units = foreign_units(elsewhere)
    assert sorted(sorted({int(s.trace_id, 16) for s in u}) for u in units) == [[10, 12], [11]]


@settings(deadline=None)  # (a run's history is resolved again as each answer arrives: slow on a loaded machine)
@given(st.lists(st.integers(0, 400), min_size=1, max_size=6))
def test_a_history_ties_each_turn_to_its_own_run_or_to_nothing(starts: list[int]) -> None:
    # runs of one script (the same answers) starting anywhere, overlapping or not: a unit never holds two runs, and
    # a run that no other run overlapped is whole when every run before it was (its answers read on by its own next
    # turns: after two runs gave an answer at once, nothing says which of them a later turn read, so a later run
    # giving it again ties nothing while those are remembered)
    runs = [_group_chat(10 * (n + 1), start) for n, start in enumerate(starts)]
    units = foreign_units([s for run in runs for s in run])
    owner = [{int(s.trace_id, 16) // 10 for s in u} for u in units]
    assert all(len(o) == 1 for o in owner)
    whole = True
    for n in sorted(range(len(starts)), key=lambda m: starts[m]):
        start = starts[n]
        alone = all(abs(other - start) >= 60 for m, other in enumerate(starts) if m != n)
        whole = whole and alone  # (a run spans 0-50 of its start: researcher 0-10, writer 20-30, reviewer 40-50)
        if whole:
            assert sum(1 for o in owner if o == {n + 1}) == 1, (n, starts)


def _wrapped(spans: list[SpanRecord], trace: int = 999) -> list[SpanRecord]:
    """``spans`` moved into one trace under an application span (a web handler's, as server instrumentation makes
    it): every parentless span under it, every link naming the new trace."""
    new = f"{trace:032x}"
    app = _span(trace, name="POST /chat", start=min(s.start_ns for s in spans) - 1, end=max(s.end_ns for s in spans))
    moved = [dataclasses.replace(s, trace_id=new, parent_span_id=s.parent_span_id or app.span_id,
                                 links=tuple((new, span) for _, span in s.links)) for s in spans]  # fmt: skip
    return [app, *moved]


def test_a_group_chat_under_an_application_span_is_one_conversation() -> None:
    (unit,) = [u for u in foreign_units(_wrapped(_group_chat(10, 0))) if len(u) > 1]
    adapted = adapt(unit)
    assert isinstance(adapted, Adapted)
    assert [m.get(sc.MESSAGE_SENDER) for m in adapted.messages] == ["researcher", "writer", "reviewer"]


def test_two_runs_under_one_batch_span_stay_two() -> None:
    first, second = _group_chat(10, 0), _group_chat(20, 100)
    units = [u for u in foreign_units(_wrapped([*first, *second])) if len(u) > 1]
    assert sorted(len(u) for u in units) == [len(first), len(second)]
    assert sorted(len(adapt(u).messages) for u in units) == [3, 3]  # type: ignore[union-attr]


def test_linked_turns_under_an_application_span_are_one_conversation_and_the_handler_ties_nothing() -> None:
    researcher = _agent_turn(1, "researcher", "A17 was charged twice.", 0)
    message = _span(2, name="agent_runtime publish", start=20, end=40, links=(researcher[1],))
    writer = _agent_turn(2, "writer", "Refunded.", 21)
    writer[0] = dataclasses.replace(writer[0], parent_span_id=message.span_id)
    bystander = _agent_turn(3, "clerk", "Filed.", 50)  # a third agent the handler ran, tied to nothing
    units = foreign_units(_wrapped([*researcher, message, *writer, *bystander]))
    joined = [u for u in units if len(u) > 2]
    (adapted,) = [adapt(u) for u in joined]
    assert isinstance(adapted, Adapted)
    assert [m.get(sc.MESSAGE_SENDER) for m in adapted.messages] == ["researcher", "writer"]
    assert sorted(len(u) for u in units if u not in joined and len(u) > 1) == [2]  # the clerk alone


def test_agents_a_program_calls_one_after_another_handing_on_answers_by_name_are_one_run() -> None:
    # the program runs each agent itself under its handler's span, handing the next the last one's answer as an
    # assistant message by name in gen_ai.input.messages (no link, no event, no log record)
    output = '[{{"role": "assistant", "content": "{}"}}]'
    handed = '[{{"role": "user", "content": "Refund A17."}}, {{"role": "assistant", "name": "{}", "content": "{}"}}]'
    researcher = _agent_turn(1, "researcher", "x", 0, **{"gen_ai.output.messages": output.format(_FOUND)})
    writer = _agent_turn(2, "writer", "y", 20, **{"gen_ai.output.messages": output.format(_WRITTEN),
                                                 "gen_ai.input.messages": handed.format("researcher", _FOUND)})
    reviewer = _agent_turn(3, "reviewer", "z", 40, **{"gen_ai.input.messages": handed.format("writer", _WRITTEN)})
    runs = [u for u in foreign_units(_wrapped([*researcher, *writer, *reviewer])) if len(u) > 1]
    assert [len(u) for u in runs] == [6]
    anonymous = _agent_turn(3, "reviewer", "z", 40, **{"gen_ai.input.messages": handed.replace(
        '"name": "{}", ', "").format(_WRITTEN)})  # fmt: skip
    apart = [u for u in foreign_units(_wrapped([*researcher, *writer, *anonymous])) if len(u) > 1]
    assert sorted(len(u) for u in apart) == [2, 4]  # handed on by no name: the answer names no agent
