"""LangGraph's message ids are the same with mast-otel on: its own suite pins them by fixing ``uuid.uuid4``.

LangGraph 1.2.24's ``tests/test_large_cases.py::test_root_graph`` patches ``uuid.uuid4`` with a fixed sequence
(its ``deterministic_uuids`` fixture) and compares the messages, ids included; mast-otel's conversation ids used
to come from ``uuid.uuid4()`` and shifted them, failing 3 of its tests. Here the same fixture's sequence, a real
graph with a checkpointer and one without, plain and instrumented; the oracle is LangGraph's own message list.
The whole suite is ``nox -s "transparency(framework='langgraph')"`` (docs/robustness.md).
"""

from __future__ import annotations

import random
import uuid
from typing import Any
from unittest import mock

import pytest

from tests.langgraph.conftest import SKIP_REASON

pytest.importorskip("langgraph", reason=SKIP_REASON)

from langchain_core.messages import HumanMessage

from tests.langgraph import scenarios
from tests.program_randomness import SEED, fixed_uuid4s

GRAPHS = {"routed_team": scenarios.routed_team, "command_team": scenarios.command_team}


def _messages(build: Any, draw_first: bool = False) -> list[tuple[str, str | None, Any]]:
    """Run the graph under LangGraph's fixed uuid4 sequence and a seeded ``random``; its messages with their ids."""
    random.seed(SEED)
    with mock.patch("uuid.uuid4", side_effect=fixed_uuid4s()):
        if draw_first:
            uuid.uuid4()  # what mast-otel's conversation id used to do
        graph = build()
        result = graph.invoke({"messages": [HumanMessage(scenarios.TASK)]}, {"configurable": {"thread_id": "t1"}})
    return [(m.type, m.id, m.content) for m in result["messages"]]


@pytest.mark.parametrize("graph", GRAPHS)
def test_message_ids_unchanged_by_instrumentation(graph: str, tracer_provider: Any, span_exporter: Any) -> None:
    from mast_otel.integrations.langgraph import LangGraphInstrumentor

    build = GRAPHS[graph]
    _messages(build)  # a first run imports lazily; the runs compared are the next ones
    plain = _messages(build)
    assert all(i is not None and i.startswith("00000000-0000-4000-8000-") for _, i, _ in plain), plain
    assert _messages(build, draw_first=True) != plain  # the oracle is sharp: one extra uuid4() shifts the ids

    instrumentor = LangGraphInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider)
    try:
        instrumented = _messages(build)
    finally:
        instrumentor.uninstrument()
    assert span_exporter.get_finished_spans(), "nothing recorded: the comparison would prove nothing"
    assert instrumented == plain
