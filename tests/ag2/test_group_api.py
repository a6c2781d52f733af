"""The group API (initiate_group_chat with a Pattern): handoff reasons come from AG2's transition events."""

from __future__ import annotations

from typing import Any

from autogen.agentchat import a_initiate_group_chat, initiate_group_chat
from autogen.agentchat.group import (
    AgentTarget,
    ContextExpression,
    ContextVariables,
    ExpressionContextCondition,
    OnContextCondition,
    TerminateTarget,
)
from autogen.agentchat.group.patterns import DefaultPattern, RoundRobinPattern

from mast_otel import semconv as sc
from tests.ag2.scenarios import scripted_agent
from tests.span_query import attr, parent_id, span_id


def _team() -> tuple[Any, Any, Any]:
    planner = scripted_agent("planner", ["Plan it."])
    coder = scripted_agent("coder", ["Code done."])
    critic = scripted_agent("critic", ["Approved."])
    return planner, coder, critic


def _after_work_pattern() -> tuple[DefaultPattern, list[Any]]:
    planner, coder, critic = _team()
    planner.handoffs.set_after_work(AgentTarget(coder))
    coder.handoffs.set_after_work(AgentTarget(critic))
    critic.handoffs.set_after_work(TerminateTarget())
    pattern = DefaultPattern(
        initial_agent=planner, agents=[planner, coder, critic], group_manager_args={"llm_config": False}
    )
    return pattern, [planner, coder, critic]


def test_after_work_handoffs_and_terminate_target(instrument: Any, spans: Any) -> None:
    pattern, _ = _after_work_pattern()
    result, _, _ = initiate_group_chat(pattern, messages="Build it", max_rounds=10)

    got = spans()
    assert len(got.roots) == 1
    root = got.root
    # initiate_group_chat was imported before instrument(), so the root comes from the inner initiate_chat
    assert root.name == "invoke_workflow chat_manager"
    assert attr(root, sc.CONVERSATION_MAX_ROUNDS) == 10
    transitions = [(attr(h, sc.HANDOFF_FROM), attr(h, sc.HANDOFF_TO), attr(h, sc.HANDOFF_REASON)) for h in got.handoffs]
    assert transitions == [
        ("_User", "planner", sc.HANDOFF_INITIAL),
        ("planner", "coder", sc.HANDOFF_AFTER_WORK),
        ("coder", "critic", sc.HANDOFF_AFTER_WORK),
        ("critic", sc.HANDOFF_TO_TERMINATE, sc.HANDOFF_AFTER_WORK),
    ]
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_HANDOFF
    history = result.chat_history
    assert [attr(m, sc.MESSAGE_CONTENT) for m in got.messages] == [h["content"] for h in history]
    assert root.status.status_code.name != "ERROR"


def test_context_condition_reason(instrument: Any, spans: Any) -> None:
    planner, coder, critic = _team()
    planner.handoffs.add_context_condition(
        OnContextCondition(
            target=AgentTarget(critic),
            condition=ExpressionContextCondition(ContextExpression("${skip_coding} == True")),
        )
    )
    planner.handoffs.set_after_work(AgentTarget(coder))
    coder.handoffs.set_after_work(AgentTarget(critic))
    critic.handoffs.set_after_work(TerminateTarget())
    pattern = DefaultPattern(
        initial_agent=planner,
        agents=[planner, coder, critic],
        context_variables=ContextVariables(data={"skip_coding": True}),
        group_manager_args={"llm_config": False},
    )
    initiate_group_chat(pattern, messages="Review only", max_rounds=10)

    reasons = {(attr(h, sc.HANDOFF_FROM), attr(h, sc.HANDOFF_TO)): attr(h, sc.HANDOFF_REASON) for h in spans().handoffs}
    assert reasons[("planner", "critic")] == sc.HANDOFF_CONTEXT_CONDITION
    assert ("planner", "coder") not in reasons


def test_round_robin_pattern_max_rounds(instrument: Any, spans: Any) -> None:
    planner, coder, critic = _team()
    pattern = RoundRobinPattern(
        initial_agent=planner, agents=[planner, coder, critic], group_manager_args={"llm_config": False}
    )
    result, _, _ = initiate_group_chat(pattern, messages="Loop", max_rounds=5)

    got = spans()
    assert attr(got.root, sc.TERMINATION_REASON) == sc.TERMINATION_MAX_ROUNDS
    assert len(got.messages) == len(result.chat_history)
    assert [attr(h, sc.HANDOFF_TO) for h in got.handoffs] == [h["name"] for h in result.chat_history[1:]]


async def test_async_group_api_keeps_parents(instrument: Any, spans: Any) -> None:
    pattern, _ = _after_work_pattern()
    await a_initiate_group_chat(pattern, messages="Build it", max_rounds=10)

    got = spans()
    root = got.root
    assert len(got.handoffs) == 4
    for s in got.messages + got.handoffs + got.turns:
        assert parent_id(s) == span_id(root)
    assert {s.get_span_context().trace_id for s in got.all} == {root.get_span_context().trace_id}


def test_entry_point_looked_up_after_instrument_names_the_pattern(instrument: Any, spans: Any) -> None:
    import autogen.agentchat

    pattern, _ = _after_work_pattern()
    autogen.agentchat.initiate_group_chat(pattern, messages="Build it", max_rounds=7)

    got = spans()
    assert len(got.roots) == 1, "the inner initiate_chat joins the pattern's conversation"
    assert got.root.name == "invoke_workflow group_chat DefaultPattern"
    assert attr(got.root, sc.CONVERSATION_TASK) == "Build it"
    assert attr(got.root, sc.CONVERSATION_MAX_ROUNDS) == 7
