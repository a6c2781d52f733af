"""A swarm and generic graphs (plain function nodes marked as agents), recorded against LangGraph's own record."""

from __future__ import annotations

from typing import Any

import pytest

from tests.langgraph.conftest import SKIP_REASON

pytest.importorskip("langgraph_swarm", reason=SKIP_REASON)

import itertools

from langgraph.types import Command

from examples.scripted_openai import ScriptedOpenAI
from mast_otel import semconv as sc
from tests.langgraph import scenarios
from tests.langgraph.record import agent_turns, assert_messages_match_state, handoff_pairs, run_streamed, tool_calls_in
from tests.span_query import attr

INPUT = {"messages": [{"role": "user", "content": scenarios.TASK}]}


def test_swarm_handoff_matches_active_agent_and_messages(instrumentor: Any, spans: Any) -> None:
    config = {"configurable": {"thread_id": "thread-7"}}
    with ScriptedOpenAI(scenarios.SWARM_SCRIPT) as server:
        out = scenarios.swarm(server.base_url).invoke(INPUT, config)

    got = spans()
    messages = out["messages"]
    assert_messages_match_state(got, messages)
    root = got.root
    assert attr(root, sc.CONVERSATION_THREAD_ID) == "thread-7"
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_COMPLETED
    assert attr(root, sc.TERMINATION_AGENT) == out["active_agent"]
    # The swarm's router picks the default agent first; alice's handoff tool call moves control to bob, whom the
    # swarm's state names as the active agent at the end.
    (initial, transfer) = got.handoffs
    assert handoff_pairs(got) == [
        ("user", "alice", sc.HANDOFF_INITIAL),
        ("alice", out["active_agent"], sc.HANDOFF_TOOL_CALL),
    ]
    assert "route_to_active_agent" in attr(initial, sc.HANDOFF_DETAIL)
    (name, args, sender), _ = tool_calls_in(messages)
    assert (name, sender) == ("transfer_to_bob", "alice")
    assert attr(transfer, sc.HANDOFF_DETAIL) == f"{name}({args or {}})".replace("'", '"')
    assert agent_turns(got) == ["alice", "bob"]
    assert [attr(t, sc.GEN_AI_TOOL_NAME) for t in got.tools] == ["transfer_to_bob", "lookup"]


def test_generic_graph_marked_nodes_conditional_edges_and_commands(instrumentor: Any, spans: Any) -> None:
    record = run_streamed(scenarios.routed_team(), INPUT)

    got = spans()
    agents = {"planner", "coder"}  # marked in node metadata; the linter is a plain node
    assert agent_turns(got) == [n for n in record.nodes if n in agents]
    assert "linter" in record.nodes
    # Unnamed messages are the writing node's; the linter's message is in the state, sent by a non-agent node.
    assert_messages_match_state(got, record.final["messages"], record.added_by)
    # Handoffs between agents only: the planner's router sends control to the coder; the coder's Command goes to
    # the linter (no agent), whose edge returns control to the planner: a handoff coder -> planner.
    expected = [("user", "planner")]
    order = [n for n in record.nodes if n in agents]
    expected += list(itertools.pairwise(order))
    assert [(f, t) for f, t, _ in handoff_pairs(got)] == expected
    details = [attr(h, sc.HANDOFF_DETAIL) for h in got.handoffs]
    assert details[0] == "edge __start__ -> planner"
    assert details[1] == "conditional edge _route -> coder"
    assert details[2] == "edge linter -> planner"
    assert {r for _, _, r in handoff_pairs(got)[1:]} == {sc.HANDOFF_ROUTING}
    assert attr(got.root, sc.GEN_AI_WORKFLOW_NAME) == "routed_team"


def test_interrupt_ends_human_input_and_resume_is_a_new_conversation(instrumentor: Any, spans: Any) -> None:
    graph = scenarios.approval_graph()
    config = {"configurable": {"thread_id": "t-1"}}
    first = graph.invoke(INPUT, config)
    (pending,) = first["__interrupt__"]
    second = graph.invoke(Command(resume="yes"), config)

    got = spans()
    paused, resumed = got.roots
    assert attr(paused, sc.TERMINATION_REASON) == sc.TERMINATION_HUMAN_INPUT
    assert "Approve the plan?" in attr(paused, sc.TERMINATION_DETAIL)
    assert attr(paused, sc.TERMINATION_AGENT) == "reviewer"
    assert pending.value == {"question": "Approve the plan?"}
    assert attr(resumed, sc.TERMINATION_REASON) == sc.TERMINATION_COMPLETED
    assert attr(resumed, sc.CONVERSATION_TASK) == "resume: yes"
    assert attr(paused, sc.CONVERSATION_THREAD_ID) == attr(resumed, sc.CONVERSATION_THREAD_ID) == "t-1"
    # The resumed run adds the reviewer's approval to the thread's state: its one new message.
    by_conv = [
        m for m in got.messages if attr(m, sc.GEN_AI_CONVERSATION_ID) == attr(resumed, sc.GEN_AI_CONVERSATION_ID)
    ]
    new = [m for m in second["messages"] if m.id not in {x.id for x in first["messages"]}]
    assert [(attr(m, sc.MESSAGE_SENDER), attr(m, sc.MESSAGE_CONTENT)) for m in by_conv] == [
        (m.name, m.content) for m in new
    ]


def test_node_command_is_a_routing_handoff(instrumentor: Any, spans: Any) -> None:
    record = run_streamed(scenarios.command_team(), INPUT, {"configurable": {"thread_id": "c-1"}})

    got = spans()
    assert record.nodes == ["writer", "reviewer"]
    assert agent_turns(got) == record.nodes
    assert handoff_pairs(got) == [
        ("user", "writer", sc.HANDOFF_INITIAL),
        ("writer", "reviewer", sc.HANDOFF_ROUTING),
    ]
    assert attr(got.handoffs[1], sc.HANDOFF_DETAIL) == "Command(goto='reviewer')"
    assert_messages_match_state(got, record.final["messages"])


def test_breakpoint_before_a_node_ends_human_input(instrumentor: Any, spans: Any) -> None:
    graph = scenarios.command_team()
    config = {"configurable": {"thread_id": "c-2"}}
    graph.invoke(INPUT, config, interrupt_before=["reviewer"])

    got = spans()
    assert graph.get_state(config).next == ("reviewer",)  # LangGraph's record: paused before the reviewer
    assert attr(got.root, sc.TERMINATION_REASON) == sc.TERMINATION_HUMAN_INPUT
    assert agent_turns(got) == ["writer"]
