"""The framework's own record of a team run, and the spans' account of it, side by side.

The oracle is always autogen-agentchat's: ``TaskResult.messages`` (chat messages and events, in output order),
``TaskResult.stop_reason``, and the requests the scripted model server answered (what the selector or the
Magentic-One orchestrator was told).
"""

from __future__ import annotations

import json
from typing import Any

from autogen_agentchat.base import TaskResult
from autogen_agentchat.messages import BaseChatMessage
from opentelemetry.sdk.trace import ReadableSpan

from mast_otel import semconv as sc
from tests.span_query import Spans, attr, parent_id


def chat_messages(result: TaskResult) -> list[BaseChatMessage]:
    return [m for m in result.messages if isinstance(m, BaseChatMessage)]


def speakers(result: TaskResult, participants: list[str]) -> list[str]:
    """Who the team activated, in order: each activation of a participant ends in exactly one chat message."""
    return [m.source for m in chat_messages(result) if m.source in participants]


def in_conversation(spans: list[ReadableSpan], conversation_id: str) -> list[ReadableSpan]:
    return [s for s in spans if attr(s, sc.GEN_AI_CONVERSATION_ID) == conversation_id]


def assert_messages_match(messages: list[ReadableSpan], result: TaskResult) -> None:
    """Every chat message is one message span, in order, and nothing else is (no agent event)."""
    expected = [(m.source, type(m).__name__, m.to_text()) for m in chat_messages(result)]
    got = [(attr(s, sc.MESSAGE_SENDER), attr(s, sc.MESSAGE_TYPE), attr(s, sc.MESSAGE_CONTENT)) for s in messages]
    assert got == expected
    assert [attr(s, sc.MESSAGE_INDEX) for s in messages] == list(range(len(messages)))
    assert len(messages) < len(result.messages) or len(messages) == len(chat_messages(result))


def assert_turns_hold_their_messages(got: Spans, participants: list[str]) -> None:
    """A participant's message is recorded inside that participant's turn."""
    turns = {s.get_span_context().span_id: s for s in got.turns}
    for message in got.messages:
        sender = attr(message, sc.MESSAGE_SENDER)
        if sender in participants:
            turn = turns.get(parent_id(message))
            assert turn is not None and attr(turn, sc.GEN_AI_AGENT_NAME) == sender, message.name


def served(server: Any, marker: str) -> list[Any]:
    """The replies the scripted server gave to requests whose rule matched ``marker``, in order."""
    from tests.autogen_agentchat.scenarios import SCRIPT

    index = next(i for i, rule in enumerate(SCRIPT["rules"]) if rule["match"] == marker)
    return [r.reply for r in server.requests if r.rule == index]


def served_ledgers(server: Any, marker: str = "Recall we are working on the following request") -> list[Any]:
    return [json.loads(reply) for reply in served(server, marker)]
