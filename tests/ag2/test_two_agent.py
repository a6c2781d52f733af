"""Two-agent chats, nested chats and tool calls, against AG2's chat_messages."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from autogen import ConversableAgent

from mast_otel import semconv as sc
from tests.ag2.scenarios import is_terminate, scripted_agent
from tests.span_query import attr, parent_id, span_id


def test_two_agent_chat_messages_and_max_turns(instrument: Any, spans: Any) -> None:
    alice = scripted_agent("alice", ["Question again?"])
    bob = scripted_agent("bob", ["Answer again."])
    result = alice.initiate_chat(bob, message="Start", max_turns=3, silent=True)

    got = spans()
    history = result.chat_history
    assert len(got.messages) == len(history) == 6
    for span, entry in zip(got.messages, history, strict=True):
        assert attr(span, sc.MESSAGE_CONTENT) == entry["content"]
    senders = [attr(s, sc.MESSAGE_SENDER) for s in got.messages]
    assert senders == ["alice", "bob"] * 3
    assert [list(attr(s, sc.MESSAGE_RECIPIENTS)) for s in got.messages] == [["bob"], ["alice"]] * 3
    assert attr(got.root, sc.TERMINATION_REASON) == sc.TERMINATION_MAX_TURNS
    assert attr(got.root, sc.CONVERSATION_MAX_ROUNDS) == 3
    assert got.root.name == "invoke_workflow alice -> bob"
    assert not got.handoffs, "two-agent chats pass control by replying; there is no selection to record"


def test_max_consecutive_auto_reply(instrument: Any, spans: Any) -> None:
    alice = scripted_agent("alice", ["Again?"], max_consecutive_auto_reply=2)
    bob = scripted_agent("bob", ["Again."], max_consecutive_auto_reply=10)
    alice.initiate_chat(bob, message="Start", silent=True)

    root = spans().root
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_MAX_AUTO_REPLIES
    assert attr(root, sc.TERMINATION_AGENT) == "alice"


def test_termination_message_in_two_agent_chat(instrument: Any, spans: Any) -> None:
    alice = scripted_agent("alice", ["unused"], is_termination_msg=is_terminate)
    bob = scripted_agent("bob", ["All done. TERMINATE"])
    alice.initiate_chat(bob, message="Do it", silent=True)

    got = spans()
    assert attr(got.root, sc.TERMINATION_REASON) == sc.TERMINATION_MESSAGE
    assert [t for t in got.turns if attr(t, sc.GEN_AI_AGENT_NAME) == "alice"][-1].attributes[sc.TURN_REPLIED] is False


def test_nested_chat_is_a_child_conversation_of_the_turn(instrument: Any, spans: Any) -> None:
    writer = scripted_agent("writer", ["Draft: hello world"])
    reviewer = scripted_agent("reviewer", ["Looks fine."])
    lead = scripted_agent("lead", ["unused"])
    boss = scripted_agent("boss", ["Thanks. TERMINATE"])
    lead.register_nested_chats(
        [{"recipient": writer, "message": "Write a draft.", "max_turns": 1, "summary_method": "last_msg"}],
        trigger=boss,
    )
    boss.initiate_chat(lead, message="Get me a draft.", max_turns=1, silent=True)
    del reviewer

    got = spans()
    outer = [r for r in got.roots if r.parent is None]
    inner = [r for r in got.roots if r.parent is not None]
    assert len(outer) == 1 and len(inner) == 1
    lead_turn = next(t for t in got.turns if attr(t, sc.GEN_AI_AGENT_NAME) == "lead")
    assert parent_id(inner[0]) == span_id(lead_turn), "the nested chat hangs under the turn that started it"
    assert attr(inner[0], sc.CONVERSATION_PARENT_ID) == attr(outer[0], sc.GEN_AI_CONVERSATION_ID)
    nested_messages = [m for m in got.messages if parent_id(m) == span_id(inner[0])]
    assert [attr(m, sc.MESSAGE_CONTENT) for m in nested_messages] == ["Write a draft.", "Draft: hello world"]
    assert {s.get_span_context().trace_id for s in got.all} == {outer[0].get_span_context().trace_id}


def test_chat_queue_is_one_conversation(instrument: Any, spans: Any) -> None:
    a = scripted_agent("a", ["a says"])
    b = scripted_agent("b", ["b says"])
    c = scripted_agent("c", ["c says"])
    a.initiate_chats(
        [
            {"recipient": b, "message": "first", "max_turns": 1, "summary_method": "last_msg"},
            {"recipient": c, "message": "second", "max_turns": 1, "summary_method": "last_msg"},
        ]
    )
    got = spans()
    assert len(got.roots) == 1
    assert got.root.name == "invoke_workflow a chat queue"
    assert [attr(m, sc.MESSAGE_CONTENT)[:6] for m in got.messages] == ["first", "b says", "second", "c says"]


@pytest.mark.parametrize("fails", [False, True])
def test_tool_calls_and_results(instrument: Any, spans: Any, fails: bool) -> None:
    tool_call = {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}
    assistant = scripted_agent("assistant", [tool_call, "The sum is 5. TERMINATE"])
    executor = ConversableAgent("executor", llm_config=False, human_input_mode="NEVER", is_termination_msg=is_terminate)

    def add(a: int, b: int) -> int:
        if fails:
            raise ValueError("adder broke")
        return a + b

    executor.register_for_execution(name="add")(add)
    assistant.register_for_llm(name="add", description="add two ints")(add)
    executor.initiate_chat(assistant, message="Add 2 and 3", silent=True)

    got = spans()
    (tool,) = got.tools
    assert attr(tool, sc.GEN_AI_TOOL_NAME) == "add"
    assert json.loads(attr(tool, sc.GEN_AI_TOOL_CALL_ARGUMENTS)) == {"a": 2, "b": 3}
    call_id = attr(tool, sc.GEN_AI_TOOL_CALL_ID)  # the shared client numbers calls process-wide, as call_<n>
    assert re.fullmatch(r"call_\d+", call_id)
    assert attr(tool, sc.TOOL_SUCCESS) is (not fails)
    if fails:
        assert "adder broke" in attr(tool, sc.GEN_AI_TOOL_CALL_RESULT)
    else:
        assert attr(tool, sc.GEN_AI_TOOL_CALL_RESULT) == "5"
    kinds = [attr(m, sc.MESSAGE_KIND) for m in got.messages]
    assert kinds[:3] == [sc.KIND_MESSAGE, sc.KIND_TOOL_CALL, sc.KIND_TOOL_RESULT]
    (call,) = json.loads(attr(got.messages[1], sc.MESSAGE_TOOL_CALLS))
    assert (call["function"]["name"], call["id"]) == ("add", call_id)  # the span carries the id the model sent
    executor_turn = next(t for t in got.turns if attr(t, sc.GEN_AI_AGENT_NAME) == "executor")
    assert parent_id(tool) == span_id(executor_turn)
