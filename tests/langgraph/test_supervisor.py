"""langgraph-supervisor runs, recorded against LangGraph's own record: final messages, node order, transfers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.langgraph.conftest import SKIP_REASON

pytest.importorskip("langgraph_supervisor", reason=SKIP_REASON)

from langgraph.errors import GraphRecursionError
from opentelemetry.trace import StatusCode

from examples.scripted_openai import ScriptedOpenAI
from mast_otel import semconv as sc
from tests.langgraph import scenarios
from tests.langgraph.record import (
    agent_turns,
    assert_messages_match_state,
    handoff_pairs,
    run_streamed,
    tool_calls_in,
)
from tests.span_query import attr, parent_id, span_id

TASK = scenarios.supervisor_example.TASK
INPUT = {"messages": [{"role": "user", "content": TASK}]}


def test_invoke_matches_final_messages_and_transfers(instrumentor: Any, spans: Any) -> None:
    with ScriptedOpenAI(scenarios.supervisor_example.SCRIPT) as server:
        out = scenarios.supervisor(server.base_url).invoke(INPUT)

    got = spans()
    messages = out["messages"]
    assert_messages_match_state(got, messages)
    root = got.root
    assert attr(root, sc.MAST_FRAMEWORK) == "langgraph"
    assert attr(root, sc.CONVERSATION_TASK) == TASK
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_COMPLETED
    assert attr(root, sc.CONVERSATION_ROUNDS) == len(messages)
    # Every transfer the state shows, in order: the supervisor's transfer tool calls (decided by the model), each
    # followed by langgraph-supervisor's synthetic transfer back.
    calls = tool_calls_in(messages)
    transfers = [(name, sender) for name, _, sender in calls if name.startswith("transfer_")]
    assert transfers == [
        ("transfer_to_researcher", "supervisor"),
        ("transfer_back_to_supervisor", "researcher"),
        ("transfer_to_writer", "supervisor"),
        ("transfer_back_to_supervisor", "writer"),
    ]
    want: list[tuple[str, str, str]] = [("user", "supervisor", sc.HANDOFF_INITIAL)]
    for name, sender in transfers:
        target = "supervisor" if name.startswith("transfer_back_") else name.removeprefix("transfer_to_")
        reason = sc.HANDOFF_ROUTING if name.startswith("transfer_back_") else sc.HANDOFF_TOOL_CALL
        want.append((sender, target, reason))
    assert handoff_pairs(got) == want
    handoffs = got.handoffs
    for (name, args, _), h in zip([c for c in calls if c[0].startswith("transfer_")], handoffs[1:], strict=True):
        assert name in attr(h, sc.HANDOFF_DETAIL)
        if name.startswith("transfer_back_"):
            assert attr(h, sc.HANDOFF_SYNTHETIC) is True
        else:
            assert attr(h, sc.HANDOFF_DETAIL) == f"{name}({json.dumps(args)})"
            assert attr(h, sc.HANDOFF_SYNTHETIC) is None
    assert set(attr(handoffs[1], sc.HANDOFF_CANDIDATES)) == {"supervisor", "researcher", "writer"}


def test_stream_turns_follow_node_order_and_tools_nest_in_turns(instrumentor: Any, spans: Any) -> None:
    with ScriptedOpenAI(scenarios.supervisor_example.SCRIPT) as server:
        record = run_streamed(scenarios.supervisor(server.base_url), INPUT)

    got = spans()
    assert record.nodes == ["supervisor", "researcher", "supervisor", "writer", "supervisor"]
    assert agent_turns(got) == record.nodes
    assert_messages_match_state(got, record.final["messages"])
    # The researcher's search ran inside the researcher's turn (its steps stay in its own graph: output_mode
    # "last_message"), the transfer tools inside the supervisor's turns.
    turns = {span_id(t): attr(t, sc.GEN_AI_AGENT_NAME) for t in got.turns}
    tools = [(attr(t, sc.GEN_AI_TOOL_NAME), turns.get(_turn_above(got, t))) for t in got.tools]
    assert tools == [
        ("transfer_to_researcher", "supervisor"),
        ("search", "researcher"),
        ("transfer_to_writer", "supervisor"),
    ]
    search = next(t for t in got.tools if attr(t, sc.GEN_AI_TOOL_NAME) == "search")
    assert json.loads(attr(search, sc.GEN_AI_TOOL_CALL_ARGUMENTS)) == {"query": "Freedonia GDP"}
    assert "about 42" in attr(search, sc.GEN_AI_TOOL_CALL_RESULT)
    # Every span of the run is in the root's trace; messages and handoffs sit in the turn that produced them.
    root = got.root
    assert {s.context.trace_id for s in got.all} == {root.context.trace_id}
    for m in got.messages[1:]:
        assert turns.get(parent_id(m)) is not None


def _turn_above(got: Any, span: Any) -> int | None:
    by_id = {span_id(s): s for s in got.all}
    turns = {span_id(t) for t in got.turns}
    current = parent_id(span)
    while current is not None and current not in turns:
        current = parent_id(by_id[current]) if current in by_id else None
    return current


async def test_ainvoke_records_the_same_as_invoke(instrumentor: Any, spans: Any) -> None:
    with ScriptedOpenAI(scenarios.supervisor_example.SCRIPT) as server:
        out = await scenarios.supervisor(server.base_url).ainvoke(INPUT)

    got = spans()
    assert_messages_match_state(got, out["messages"])
    assert agent_turns(got) == ["supervisor", "researcher", "supervisor", "writer", "supervisor"]
    assert [r for _, _, r in handoff_pairs(got)] == [
        sc.HANDOFF_INITIAL, sc.HANDOFF_TOOL_CALL, sc.HANDOFF_ROUTING, sc.HANDOFF_TOOL_CALL, sc.HANDOFF_ROUTING
    ]  # fmt: skip
    assert [attr(t, sc.GEN_AI_TOOL_NAME) for t in got.tools] == [
        "transfer_to_researcher",
        "search",
        "transfer_to_writer",
    ]


def test_recursion_limit_ends_max_turns(instrumentor: Any, spans: Any) -> None:
    with ScriptedOpenAI(scenarios.LOOP_SCRIPT) as server:
        graph = scenarios.endless_supervisor(server.base_url)
        with pytest.raises(GraphRecursionError) as raised:
            graph.invoke(INPUT, {"recursion_limit": 6})

    got = spans()
    root = got.root
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_MAX_TURNS
    assert attr(root, sc.TERMINATION_DETAIL) == "recursion_limit=6"
    assert root.status.status_code == StatusCode.ERROR
    assert attr(root, sc.ERROR_TYPE) == "GraphRecursionError"
    assert "Recursion limit of 6" in str(raised.value)
    # Six supersteps: supervisor and researcher take turns; each turn ended handing control to the other (the last
    # hand-back happened, only the supervisor's next turn never ran).
    turns = agent_turns(got)
    assert turns == ["supervisor", "researcher"] * 3
    assert [(f, t) for f, t, _ in handoff_pairs(got)] == [
        ("user", "supervisor"),
        *zip(turns, [*turns[1:], "supervisor"], strict=False),
    ]
