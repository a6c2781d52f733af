"""A real MetaGPT team with the scripted provider, recorded against MetaGPT's own record (history and memory)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.metagpt.conftest import SKIP_REASON
from tests.span_query import attr, parent_id, span_id

pytest.importorskip("metagpt", reason=SKIP_REASON)

from opentelemetry.trace import StatusCode

from mast_otel import semconv as sc
from tests.metagpt.record import assert_matches_metagpt
from tests.metagpt.scenarios import IDEA, scripted_context, software_team

USER_REQUIREMENT = "metagpt.actions.add_requirement.UserRequirement"


async def test_pipeline_matches_metagpt_record_and_ends_idle(instrumentor: Any, script: Any, spans: Any) -> None:
    team = software_team(scripted_context())
    history = await team.run(n_round=10, idea=IDEA)

    got = spans()
    assert history == team.env.history
    assert_matches_metagpt(got, team.env)
    root = got.root
    assert root.name == "invoke_workflow Team"
    assert attr(root, sc.MAST_FRAMEWORK) == "metagpt"
    assert attr(root, sc.CONVERSATION_TASK) == IDEA
    assert attr(root, sc.CONVERSATION_MAX_ROUNDS) == 10
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_IDLE
    # The scripted provider never yields, so each role task runs to its end in gather order and the next role
    # already sees its message: the pipeline runs in round 1, round 2 is everyone reading the review nobody watches.
    assert attr(root, sc.TERMINATION_DETAIL) == "every role idle after 2 of 10 rounds"
    assert list(attr(root, sc.CONVERSATION_AGENTS)) == ["Human", "Alice", "Bob", "Carol"]

    senders = [attr(m, sc.MESSAGE_SENDER) for m in got.messages]
    assert senders == ["Human", "Alice", "Bob", "Carol"]
    assert [list(attr(m, sc.MESSAGE_RECIPIENTS)) for m in got.messages] == [["<all>"]] * 4
    assert attr(got.messages[0], sc.MESSAGE_CAUSE) == USER_REQUIREMENT
    assert list(attr(got.messages[0], sc.MESSAGE_BROADCAST_TO)) == ["Alice", "Bob", "Carol"]
    assert list(attr(got.messages[1], sc.MESSAGE_BROADCAST_TO)) == ["Bob", "Carol"]  # not back to its sender
    pairs = [(attr(h, sc.HANDOFF_FROM), attr(h, sc.HANDOFF_TO)) for h in got.handoffs]
    assert pairs == [("Human", "Alice"), ("Alice", "Bob"), ("Bob", "Carol")]
    assert list(attr(got.handoffs[1], sc.HANDOFF_CANDIDATES)) == ["Bob", "Carol"]
    turns = sorted(got.turns, key=lambda s: s.start_time)
    assert [(attr(t, sc.GEN_AI_AGENT_NAME), attr(t, sc.TURN_ACTION)) for t in turns] == [
        ("Alice", "WriteCode"),
        ("Bob", "WriteTest"),
        ("Carol", "ReviewCode"),
    ]


async def test_round_limit_with_work_pending_is_max_rounds(instrumentor: Any, script: Any, spans: Any) -> None:
    team = software_team(scripted_context(), cycle=True)  # the Coder answers every review: never idle
    await team.run(n_round=5, idea=IDEA)

    got = spans()
    assert_matches_metagpt(got, team.env)
    root = got.root
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_MAX_ROUNDS
    assert attr(root, sc.TERMINATION_DETAIL).startswith("all 5 rounds used; roles not idle: ")
    assert [attr(m, sc.MESSAGE_SENDER) for m in got.messages][:5] == ["Human", "Alice", "Bob", "Carol", "Alice"]
    assert len([t for t in got.turns if attr(t, sc.GEN_AI_AGENT_NAME) == "Alice"]) == 5  # one per round


async def test_budget_stop_is_budget_exceeded_not_an_error(instrumentor: Any, script: Any, spans: Any) -> None:
    script.usage = (1000, 1000)  # $0.09 per call at gpt-4 prices
    team = software_team(scripted_context(), cycle=True)
    team.invest(0.2)
    result = await team.run(n_round=10, idea=IDEA)

    assert result is None  # MetaGPT logs NoMoneyException, serializes the team and returns nothing
    got = spans()
    assert_matches_metagpt(got, team.env)
    root = got.root
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_BUDGET
    assert "Insufficient funds: 0.2" in attr(root, sc.TERMINATION_DETAIL)
    assert root.status.status_code != StatusCode.ERROR
    assert len(got.turns) == 3  # three paid calls: 0.27 >= 0.2 stops the fourth round


async def test_failing_action_is_an_error_on_its_turn_and_the_root(instrumentor: Any, script: Any, spans: Any) -> None:
    script.fail_for = "Bob"
    team = software_team(scripted_context())
    result = await team.run(n_round=10, idea=IDEA)

    assert result is None  # swallowed by MetaGPT's serialize_decorator: the spans are the only trace of it
    got = spans()
    assert_matches_metagpt(got, team.env)
    (failed,) = [t for t in got.turns if t.status.status_code == StatusCode.ERROR]
    assert attr(failed, sc.GEN_AI_AGENT_NAME) == "Bob"
    assert attr(failed, sc.ERROR_TYPE) == "ScriptFailure"
    root = got.root
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_ERROR
    assert attr(root, sc.ERROR_TYPE) == "ScriptFailure"  # the action's exception, not MetaGPT's re-wrapped one
    assert root.status.status_code == StatusCode.ERROR
    assert "scripted failure for Bob" in attr(root, sc.TERMINATION_DETAIL)


async def test_concurrent_roles_keep_their_parents(instrumentor: Any, script: Any, spans: Any) -> None:
    script.delay = 0.05  # both roles of round 1 are inside their LLM call at the same time
    team = software_team(scripted_context(), parallel=True)
    await team.run(n_round=10, idea=IDEA)

    got = spans()
    assert_matches_metagpt(got, team.env)
    alice = next(t for t in got.turns if attr(t, sc.GEN_AI_AGENT_NAME) == "Alice")
    bob = min((t for t in got.turns if attr(t, sc.GEN_AI_AGENT_NAME) == "Bob"), key=lambda t: t.start_time)
    assert alice.start_time < bob.end_time and bob.start_time < alice.end_time, "the two turns overlap"
    for turn in (alice, bob):
        (message,) = [m for m in got.messages if parent_id(m) == span_id(turn)]
        assert attr(message, sc.MESSAGE_SENDER) == attr(turn, sc.GEN_AI_AGENT_NAME)


async def test_two_actions_in_one_reaction_are_two_turns(instrumentor: Any, script: Any, spans: Any) -> None:
    team = software_team(scripted_context(), two_step_review=True)
    await team.run(n_round=10, idea=IDEA)

    got = spans()
    assert_matches_metagpt(got, team.env)
    carol = sorted((t for t in got.turns if attr(t, sc.GEN_AI_AGENT_NAME) == "Carol"), key=lambda t: t.start_time)
    assert [attr(t, sc.TURN_ACTION) for t in carol] == ["ReviewCode", "Summarize"]
    assert carol[0].end_time <= carol[1].start_time
    # only the last action's output is published, as a child of that action's turn
    (published,) = [m for m in got.messages if attr(m, sc.MESSAGE_SENDER) == "Carol"]
    assert parent_id(published) == span_id(carol[1])
    assert not [m for m in got.messages if parent_id(m) == span_id(carol[0])]
    memory = [m.content for m in team.env.roles["Reviewer"].rc.memory.get() if m.sent_from.endswith("Reviewer")]
    assert memory == ["Carol output 1", "Carol output 2"]


async def test_send_to_routes_only_to_the_named_role(instrumentor: Any, script: Any, spans: Any) -> None:
    team = software_team(scripted_context())
    await team.run(n_round=10, idea=IDEA, send_to="Bob")  # the Tester does not watch the idea: named instead

    got = spans()
    assert_matches_metagpt(got, team.env)
    idea = got.messages[0]
    assert list(attr(idea, sc.MESSAGE_RECIPIENTS)) == ["Bob"]
    assert attr(idea, sc.MESSAGE_BROADCAST_TO) is None
    pairs = [(attr(h, sc.HANDOFF_FROM), attr(h, sc.HANDOFF_TO)) for h in got.handoffs]
    assert pairs == [("Human", "Bob"), ("Bob", "Carol")]
    assert list(attr(got.handoffs[0], sc.HANDOFF_CANDIDATES)) == ["Bob"]


async def test_environment_run_alone_is_a_root(instrumentor: Any, script: Any, spans: Any) -> None:
    from metagpt.actions import UserRequirement
    from metagpt.schema import Message

    script.delay = 0.01  # a role's task yields in its LLM call: one step of the pipeline per round
    team = software_team(scripted_context())
    env = team.env
    env.publish_message(Message(role="Human", content=IDEA, cause_by=UserRequirement))  # no run yet: not traced
    await env.run(k=2)

    got = spans()
    root = got.root
    assert root.name == "invoke_workflow Environment"
    assert attr(root, sc.CONVERSATION_MAX_ROUNDS) == 2
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_MAX_ROUNDS
    assert attr(root, sc.TERMINATION_DETAIL) == "all 2 rounds used; roles not idle: Alice, Bob, Carol"
    assert [attr(m, sc.MESSAGE_SENDER) for m in got.messages] == ["Alice", "Bob"]
    assert all(parent_id(t) == span_id(root) for t in got.turns)


async def test_team_inside_a_role_action_is_a_child_conversation(instrumentor: Any, script: Any, spans: Any) -> None:
    from metagpt.actions import Action, UserRequirement
    from metagpt.roles import Role

    class Delegate(Action):
        name: str = "Delegate"

        async def run(self, history: list[Any]) -> str:
            inner = software_team(scripted_context())
            await inner.run(n_round=10, idea="inner task")
            return "delegated"

    team = software_team(scripted_context())
    lead = Role(name="Dan", profile="Lead", watch=[UserRequirement], context=team.env.context)
    lead.set_actions([Delegate])
    team.hire([lead])
    await team.run(n_round=10, idea=IDEA)

    roots = got_roots = spans().of_type(sc.SPAN_TYPE_CONVERSATION)
    assert len(got_roots) == 2
    outer = next(r for r in roots if r.parent is None)
    inner = next(r for r in roots if r.parent is not None)
    assert attr(inner, sc.CONVERSATION_PARENT_ID) == attr(outer, sc.GEN_AI_CONVERSATION_ID)
    assert attr(inner, sc.CONVERSATION_TASK) == "inner task"
    assert attr(inner, sc.TERMINATION_REASON) == sc.TERMINATION_IDLE
    assert attr(outer, sc.TERMINATION_REASON) == sc.TERMINATION_IDLE
