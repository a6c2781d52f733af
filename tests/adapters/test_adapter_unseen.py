"""Adapter properties found missing by hand-written mutants of shapes mutmut does not make (issue 24: a mutant set
nobody here had seen; the batch and its results are in scripts/adapter_hand_mutants.py)."""

from __future__ import annotations

import dataclasses

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, adapt
from mast_otel.spans import SpanRecord
from tests.adapters._fixtures import fixture, messages, recipients


def test_ag2_replies_go_to_the_manager_through_another_librarys_span() -> None:
    """Another library's span (an HTTP call, a task wrapper) between AG2's chat manager and its members' replies
    does not change who a reply went to: each still goes to the chat manager, as AG2 recorded it, never to the
    unnamed span in between."""
    spans, oracle = fixture("ag2_builtin_tools")
    manager = next(s for s in spans if s.name == "invoke_agent chat_manager")
    members = [s for s in spans if s.parent_span_id == manager.span_id]
    wrappers = {
        m.span_id: SpanRecord(
            m.trace_id,
            f"{i:016x}",
            manager.span_id,
            "HTTP POST",
            m.start_ns - 1,
            m.end_ns,
            {"http.request.method": "POST"},
        )
        for i, m in enumerate(members, start=0xE0)
    }
    moved = [
        dataclasses.replace(s, parent_span_id=wrappers[s.span_id].span_id) if s.span_id in wrappers else s
        for s in spans
    ]
    adapted = adapt([*moved, *wrappers.values()])
    assert isinstance(adapted, Adapted)
    assert messages(adapted.records) == oracle["messages"]
    assert sorted({(s, r) for s, rs in recipients(adapted.records) for r in rs}) == oracle["recipients"]


def test_ag2_task_goes_to_the_first_agent_even_after_another_librarys_span() -> None:
    """A span another library opened under AG2's conversation before the chat started (an HTTP call the
    initiator made) is not an agent: the task still goes to the agent AG2 recorded receiving it."""
    spans, oracle = fixture("ag2_builtin_tools")
    root = next(s for s in spans if s.parent_span_id is None)
    first_child = min((s for s in spans if s.parent_span_id == root.span_id), key=lambda s: s.start_ns)
    before = SpanRecord(
        root.trace_id,
        "00000000000000ef",
        root.span_id,
        "HTTP GET",
        first_child.start_ns - 2,
        first_child.start_ns - 1,
        {"http.request.method": "GET"},
    )
    adapted = adapt([*spans, before])
    assert isinstance(adapted, Adapted)
    task_sender, task = oracle["messages"][0]
    first = min(adapted.messages, key=lambda m: m.get(sc.MESSAGE_INDEX))
    assert (first.get(sc.MESSAGE_SENDER), first.get(sc.MESSAGE_CONTENT)) == (task_sender, task)
    assert [(task_sender, r) for r in first.get(sc.MESSAGE_RECIPIENTS) or ()] == [
        pair for pair in oracle["recipients"] if pair[0] == task_sender
    ]
