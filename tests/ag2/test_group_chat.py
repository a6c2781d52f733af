"""A classic GroupChat recorded against AG2's own record: groupchat.messages and the speaker sequence."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from mast_otel import semconv as sc
from tests.ag2.scenarios import round_robin_group
from tests.span_query import attr, parent_id, span_id

REPLIES = {
    "planner": ["Plan: compute 6*7, then have it checked."],
    "coder": ["6*7 = 42"],
    "critic": ["Verified: 42 is correct. TERMINATE"],
}


def assert_messages_match_history(spans: Any, history: list[dict[str, Any]]) -> None:
    messages = spans.messages
    assert len(messages) == len(history), "one message span per history entry, broadcast copies excluded"
    for index, (span, entry) in enumerate(zip(messages, history, strict=True)):
        assert attr(span, sc.MESSAGE_INDEX) == index
        assert attr(span, sc.MESSAGE_CONTENT) == entry["content"]
        if entry.get("name"):
            assert attr(span, sc.MESSAGE_SENDER) == entry["name"]


def test_messages_match_groupchat_history_one_to_one(instrument: Any, spans: Any) -> None:
    user, manager, groupchat = round_robin_group(REPLIES, max_round=10)
    user.initiate_chat(manager, message="What is 6*7?", silent=True)

    got = spans()
    assert_messages_match_history(got, groupchat.messages)
    members = len(groupchat.agents)
    # every message is relayed by the manager to every member but its speaker: counted, never recorded as messages
    assert attr(got.root, sc.CONVERSATION_BROADCASTS) == len(groupchat.messages) * (members - 1)
    assert [list(attr(s, sc.MESSAGE_RECIPIENTS)) for s in got.messages] == [["chat_manager"]] * len(got.messages)
    first = got.messages[0]
    assert set(attr(first, sc.MESSAGE_BROADCAST_TO)) == {"planner", "coder", "critic"}


def test_handoffs_follow_the_speaker_sequence_with_reason(instrument: Any, spans: Any) -> None:
    user, manager, groupchat = round_robin_group(REPLIES, max_round=10)
    user.initiate_chat(manager, message="What is 6*7?", silent=True)

    speakers = [m["name"] for m in groupchat.messages]
    handoffs = spans().handoffs
    assert [(attr(h, sc.HANDOFF_FROM), attr(h, sc.HANDOFF_TO)) for h in handoffs] == list(itertools.pairwise(speakers))
    assert {attr(h, sc.HANDOFF_REASON) for h in handoffs} == {sc.HANDOFF_ROUND_ROBIN}
    # gen_ai.transfer.* exist only in an open proposal: not written unless asked for.
    assert all(attr(h, sc.GEN_AI_TRANSFER_TARGET_NAME) is None for h in handoffs)
    assert list(attr(handoffs[0], sc.HANDOFF_CANDIDATES)) == groupchat.agent_names


def test_termination_message_recorded_on_root(instrument: Any, spans: Any) -> None:
    user, manager, groupchat = round_robin_group(REPLIES, max_round=10)
    user.initiate_chat(manager, message="What is 6*7?", silent=True)

    root = spans().root
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_MESSAGE
    assert attr(root, sc.CONVERSATION_ROUNDS) == len(groupchat.messages)
    assert attr(root, sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_WORKFLOW
    assert attr(root, sc.MAST_FRAMEWORK) == "ag2"
    assert attr(root, sc.CONVERSATION_TASK) == "What is 6*7?"


def test_max_round_cut_off_is_recorded(instrument: Any, spans: Any) -> None:
    looping = {"planner": ["Let me plan again."], "coder": ["Working on it."], "critic": ["Not yet."]}
    user, manager, groupchat = round_robin_group(looping, max_round=5)
    user.initiate_chat(manager, message="Solve it.", silent=True)

    got = spans()
    assert attr(got.root, sc.TERMINATION_REASON) == sc.TERMINATION_MAX_ROUNDS
    assert attr(got.root, sc.CONVERSATION_MAX_ROUNDS) == 5
    assert len(groupchat.messages) == 5
    assert_messages_match_history(got, groupchat.messages)


def test_span_tree_is_one_trace_under_the_root(instrument: Any, spans: Any) -> None:
    user, manager, _ = round_robin_group(REPLIES, max_round=10)
    user.initiate_chat(manager, message="What is 6*7?", silent=True)

    got = spans()
    root = got.root
    assert root.parent is None
    assert {s.get_span_context().trace_id for s in got.all} == {root.get_span_context().trace_id}
    turns = {span_id(t): t for t in got.turns}
    for s in got.messages + got.handoffs + got.turns:
        assert parent_id(s) == span_id(root)
    assert sorted(attr(t, sc.GEN_AI_AGENT_NAME) for t in turns.values()) == ["coder", "critic", "planner"]
    conv_id = attr(root, sc.GEN_AI_CONVERSATION_ID)
    assert {attr(s, sc.GEN_AI_CONVERSATION_ID) for s in got.all} == {conv_id}


def _pick_critic_then_stop(last_speaker: Any, groupchat: Any) -> Any:
    return groupchat.agent_by_name("critic") if last_speaker.name == "user" else None


@pytest.mark.parametrize(
    ("method", "reason"),
    [
        ("random", sc.HANDOFF_RANDOM),
        ("round_robin", sc.HANDOFF_ROUND_ROBIN),
        (_pick_critic_then_stop, sc.HANDOFF_CUSTOM),
    ],
)
def test_each_selection_method_names_its_reason(instrument: Any, spans: Any, method: Any, reason: str) -> None:
    looping = {"planner": ["More planning."], "coder": ["More code."], "critic": ["More review."]}
    user, manager, groupchat = round_robin_group(looping, max_round=4, method=method)
    user.initiate_chat(manager, message="Go.", silent=True)

    handoffs = spans().handoffs
    speakers = [m["name"] for m in groupchat.messages]
    assert [attr(h, sc.HANDOFF_TO) for h in handoffs if attr(h, sc.HANDOFF_TO) != sc.HANDOFF_TO_TERMINATE] == speakers[
        1:
    ]
    assert {attr(h, sc.HANDOFF_REASON) for h in handoffs} == {reason}


def test_selection_that_names_nobody_is_a_handoff_to_terminate(instrument: Any, spans: Any) -> None:
    looping = {"planner": ["More planning."], "coder": ["More code."], "critic": ["More review."]}
    user, manager, groupchat = round_robin_group(looping, max_round=10, method=_pick_critic_then_stop)
    user.initiate_chat(manager, message="Go.", silent=True)

    got = spans()
    assert [attr(h, sc.HANDOFF_TO) for h in got.handoffs] == ["critic", sc.HANDOFF_TO_TERMINATE]
    assert [m["name"] for m in groupchat.messages] == ["user", "critic"]
    assert attr(got.root, sc.TERMINATION_REASON) == sc.TERMINATION_HANDOFF
    # Ending the chat on purpose is not an error: the root's status stays unset (no exception, no error event).
    assert got.root.status.status_code.name == "UNSET"
    assert [e.name for e in got.root.events] == []


def test_llm_auto_selection_records_handoff_but_not_the_selector_chat(instrument: Any, spans: Any) -> None:
    from autogen import GroupChat, GroupChatManager

    from tests.ag2.scenarios import ScriptedClient

    looping = {"planner": ["More planning."], "coder": ["More code."], "critic": ["More review."]}
    user, _, plain = round_robin_group(looping, max_round=4)
    groupchat = GroupChat(
        agents=plain.agents,
        messages=[],
        max_round=4,
        speaker_selection_method="auto",
        select_speaker_auto_llm_config={
            "config_list": [{"model": "selector", "model_client_cls": "ScriptedClient", "replies": ["critic"]}]
        },
        select_speaker_auto_model_client_cls=ScriptedClient,
    )
    manager = GroupChatManager(groupchat, llm_config=False)
    user.initiate_chat(manager, message="Go.", silent=True)

    got = spans()
    assert [m["name"] for m in groupchat.messages] == ["user", "critic", "critic", "critic"]
    assert [attr(h, sc.HANDOFF_TO) for h in got.handoffs] == ["critic", "critic", "critic"]
    assert {attr(h, sc.HANDOFF_REASON) for h in got.handoffs} == {sc.HANDOFF_LLM_SELECTION}
    # the internal selector chat (checking_agent <-> speaker_selection_agent) is machinery, not conversation
    assert len(got.roots) == 1
    assert len(got.messages) == len(groupchat.messages)
    assert {attr(t, sc.GEN_AI_AGENT_NAME) for t in got.turns} == {"critic"}


async def test_async_group_chat_keeps_parents(instrument: Any, spans: Any) -> None:
    user, manager, groupchat = round_robin_group(REPLIES, max_round=4)
    await user.a_initiate_chat(manager, message="What is 6*7?", silent=True)

    got = spans()
    root = got.root
    assert_messages_match_history(got, groupchat.messages)
    for s in got.messages + got.handoffs + got.turns:
        assert parent_id(s) == span_id(root)
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_MESSAGE
    speakers = [m["name"] for m in groupchat.messages]
    assert [attr(h, sc.HANDOFF_TO) for h in got.handoffs] == speakers[1:]


def test_proposal_stage_transfer_attributes_on_request(instrument: Any, spans: Any) -> None:
    from mast_otel import CaptureConfig

    instrument(config=CaptureConfig.from_env(proposed_semconv=True))
    user, manager, _ = round_robin_group(REPLIES, max_round=10)
    user.initiate_chat(manager, message="What is 6*7?", silent=True)
    handoffs = spans().handoffs
    assert handoffs
    assert all(attr(h, sc.GEN_AI_TRANSFER_TARGET_NAME) == attr(h, sc.HANDOFF_TO) for h in handoffs)
    assert {attr(h, sc.GEN_AI_TRANSFER_MODE) for h in handoffs} == {"pass_control"}
