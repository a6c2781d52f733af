"""Adapter properties found missing by hand-written mutants of shapes mutmut does not make (issue 24: a mutant set
nobody here had seen; the batch and its results are in scripts/adapter_hand_mutants.py)."""

from __future__ import annotations

import dataclasses

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
