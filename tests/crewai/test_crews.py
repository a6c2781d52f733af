"""Real CrewAI crews against the scripted server, recorded against CrewAI's own record: ``CrewOutput.tasks_output``
(agent and output of every task, in order), the crew's tasks and agents, and the manager's delegation tool calls."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.crewai.conftest import SKIP_REASON

pytest.importorskip("crewai", reason=SKIP_REASON)

import itertools

from examples.scripted_openai import ScriptedOpenAI
from mast_otel import semconv as sc
from tests.crewai import scenarios
from tests.span_query import Spans, attr, parent_id, span_id

USER = "user"


def _outputs(got: Spans) -> list[tuple[str, str]]:
    """Messages that are task outputs: not the task assignments (from the user), not the delegation exchange."""
    delegation = {span_id(t) for t in got.tools if attr(t, sc.GEN_AI_TOOL_NAME) == "Delegate work to coworker"}
    return [
        (attr(m, sc.MESSAGE_SENDER), attr(m, sc.MESSAGE_CONTENT))
        for m in got.messages
        if attr(m, sc.MESSAGE_SENDER) != USER and parent_id(m) not in delegation
    ]


def test_sequential_crew_matches_tasks_output_and_agent_order(instrumentor: Any, spans: Any) -> None:
    with ScriptedOpenAI(scenarios.SEQUENTIAL_SCRIPT) as server:
        crew = scenarios.sequential(server.base_url)
        out = crew.kickoff()

    got = spans()
    root = got.root
    agents = [t.agent for t in out.tasks_output]
    assert agents == ["Researcher", "Writer", "Editor"]
    assert _outputs(got) == [(t.agent, t.raw) for t in out.tasks_output]
    assert [attr(t, sc.GEN_AI_AGENT_NAME) for t in got.turns] == agents
    assert all(parent_id(t) == span_id(root) for t in got.turns)
    # Each task is assigned by the user (its description), then its output goes to the agents that take it as
    # context: the research explicitly to the writer and implicitly (no context given) to the editor.
    assignments = [(attr(m, sc.MESSAGE_RECIPIENTS), attr(m, sc.MESSAGE_CONTENT)) for m in got.messages
                   if attr(m, sc.MESSAGE_SENDER) == USER]  # fmt: skip
    assert assignments == [((t.agent,), t.description) for t in out.tasks_output]
    recipients = [attr(m, sc.MESSAGE_RECIPIENTS) for m in got.messages if attr(m, sc.MESSAGE_SENDER) != USER]
    assert recipients == [("Writer", "Editor"), ("Editor",), (USER,)]
    # Handoffs follow the task order, from the agent that finished a task to the next one's.
    assert [(attr(h, sc.HANDOFF_FROM), attr(h, sc.HANDOFF_TO), attr(h, sc.HANDOFF_REASON)) for h in got.handoffs] == [
        (USER, agents[0], sc.HANDOFF_INITIAL),
        *[(a, b, sc.HANDOFF_ROUTING) for a, b in itertools.pairwise(agents)],
    ]
    assert attr(got.handoffs[1], sc.HANDOFF_DETAIL) == "sequential task order: task 1 -> task 2"
    # The researcher's tool call, inside its turn.
    (lookup,) = got.tools
    assert attr(lookup, sc.GEN_AI_TOOL_NAME) == "lookup"
    assert json.loads(attr(lookup, sc.GEN_AI_TOOL_CALL_ARGUMENTS)) == {"query": "Freedonia GDP"}
    assert parent_id(lookup) == span_id(got.turns[0])
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_COMPLETED
    assert attr(root, sc.CONVERSATION_PROCESS) == "sequential"
    assert attr(root, sc.CONVERSATION_TASK) == "\n".join(f"{i + 1}. {t.description}" for i, t in enumerate(crew.tasks))
    assert attr(root, sc.MAST_FRAMEWORK) == "crewai"


def test_hierarchical_crew_records_the_managers_delegations(instrumentor: Any, spans: Any) -> None:
    with ScriptedOpenAI(scenarios.hierarchical_example.SCRIPT) as server:
        crew = scenarios.hierarchical(server.base_url)
        out = crew.kickoff()
        # CrewAI's record of the manager's decisions: the delegation tool calls it executed, in order.
        calls = [r.reply["args"] for r in server.requests if isinstance(r.reply, dict) and "tool" in r.reply]

    got = spans()
    (task_output,) = out.tasks_output
    assert task_output.agent == "Manager"
    assert _outputs(got) == [("Manager", task_output.raw)]
    delegations = [h for h in got.handoffs if attr(h, sc.HANDOFF_REASON) == sc.HANDOFF_DELEGATION]
    assert [(attr(h, sc.HANDOFF_FROM), attr(h, sc.HANDOFF_TO)) for h in delegations] == [
        ("Manager", c["coworker"]) for c in calls
    ]
    # CrewAI's own count of the task's delegations, and the coworkers it records as having processed it.
    (task,) = crew.tasks
    assert task.delegations == len(delegations) == 2
    assert {attr(h, sc.HANDOFF_TO) for h in delegations} <= task.processed_by_agents
    for h, c in zip(delegations, calls, strict=True):
        assert attr(h, sc.HANDOFF_DETAIL) == f"Delegate work to coworker({json.dumps(c, sort_keys=True)})"
        assert set(attr(h, sc.HANDOFF_CANDIDATES)) == {"Researcher", "Writer"}
    returns = [h for h in got.handoffs if attr(h, sc.HANDOFF_REASON) == sc.HANDOFF_TOOL_RETURN]
    assert [(attr(h, sc.HANDOFF_FROM), attr(h, sc.HANDOFF_TO)) for h in returns] == [
        (c["coworker"], "Manager") for c in calls
    ]
    # Each coworker's turn runs inside the manager's delegation tool call, inside the manager's turn; the request
    # and the answer are messages between the two.
    (manager,) = [t for t in got.turns if attr(t, sc.GEN_AI_AGENT_NAME) == "Manager"]
    tools = [t for t in got.tools if attr(t, sc.GEN_AI_TOOL_NAME) == "Delegate work to coworker"]
    assert len(tools) == len(calls)
    for tool, call in zip(tools, calls, strict=True):
        assert parent_id(tool) == span_id(manager)
        (turn,) = [t for t in got.turns if parent_id(t) == span_id(tool)]
        assert attr(turn, sc.GEN_AI_AGENT_NAME) == call["coworker"]
        exchange = [m for m in got.messages if parent_id(m) == span_id(tool)]
        assert [(attr(m, sc.MESSAGE_SENDER), attr(m, sc.MESSAGE_RECIPIENTS)) for m in exchange] == [
            ("Manager", (call["coworker"],)), (call["coworker"], ("Manager",))
        ]  # fmt: skip
        assert attr(exchange[0], sc.MESSAGE_CONTENT) == f"{call['task']}\n\nContext: {call['context']}"
        assert attr(exchange[1], sc.MESSAGE_CONTENT) == attr(tool, sc.GEN_AI_TOOL_CALL_RESULT)
    assert attr(got.root, sc.CONVERSATION_PROCESS) == "hierarchical"


def test_max_iter_ends_max_turns(instrumentor: Any, spans: Any) -> None:
    with ScriptedOpenAI(scenarios.LOOP_SCRIPT) as server:
        crew = scenarios.looping(server.base_url)
        out = crew.kickoff()
        forced = [r for r in server.requests if r.rule == 0]

    got = spans()
    assert len(forced) == 1  # CrewAI asked for the final answer once the agent had used up max_iter
    assert out.tasks_output[0].raw == "about 42, unverified."
    root = got.root
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_MAX_TURNS
    assert attr(root, sc.TERMINATION_AGENT) == "Researcher"
    assert "max_iter" in attr(root, sc.TERMINATION_DETAIL)
    assert len(got.tools) == crew.agents[0].max_iter


async def test_kickoff_async_records_the_same(instrumentor: Any, spans: Any) -> None:
    with ScriptedOpenAI(scenarios.SEQUENTIAL_SCRIPT) as server:
        out = await scenarios.sequential(server.base_url).kickoff_async()

    got = spans()
    assert _outputs(got) == [(t.agent, t.raw) for t in out.tasks_output]
    assert attr(got.root, sc.TERMINATION_REASON) == sc.TERMINATION_COMPLETED


async def test_native_akickoff_records_the_same(instrumentor: Any, spans: Any) -> None:
    with ScriptedOpenAI(scenarios.SEQUENTIAL_SCRIPT) as server:
        out = await scenarios.sequential(server.base_url).akickoff()

    got = spans()
    assert _outputs(got) == [(t.agent, t.raw) for t in out.tasks_output]
    assert [attr(t, sc.GEN_AI_AGENT_NAME) for t in got.turns] == [t.agent for t in out.tasks_output]
    assert [attr(t, sc.GEN_AI_TOOL_NAME) for t in got.tools] == ["lookup"]
    assert attr(got.root, sc.TERMINATION_REASON) == sc.TERMINATION_COMPLETED
