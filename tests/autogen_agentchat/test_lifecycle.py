"""How runs end (every stop condition, cancellation, errors), nesting, concurrency, and leaving the program alone."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from tests.autogen_agentchat.conftest import SKIP_REASON

pytest.importorskip("autogen_agentchat", reason=SKIP_REASON)

from autogen_agentchat.agents import AssistantAgent, BaseChatAgent
from autogen_agentchat.base import Response
from autogen_agentchat.conditions import (
    ExternalTermination,
    FunctionCallTermination,
    HandoffTermination,
    MaxMessageTermination,
    SourceMatchTermination,
    TextMentionTermination,
    TimeoutTermination,
    TokenUsageTermination,
)
from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_agentchat.teams import RoundRobinGroupChat, Swarm
from autogen_core import CancellationToken

from mast_otel import semconv as sc
from tests.autogen_agentchat import scenarios as s
from tests.autogen_agentchat.record import assert_messages_match, chat_messages, in_conversation
from tests.fault_injection import INSIDE_A_RUN, assert_failures_only_from, recorder_broken
from tests.span_query import Spans, attr, parent_id, span_id


def _stopped_early() -> ExternalTermination:
    external = ExternalTermination()
    external.set()
    return external


CONDITIONS = {
    "max_messages": (lambda: MaxMessageTermination(3), sc.TERMINATION_MAX_ROUNDS, "MaxMessageTermination"),
    "source_match": (lambda: SourceMatchTermination(["critic"]), sc.TERMINATION_SOURCE_MATCH, "SourceMatchTermination"),
    "external": (_stopped_early, sc.TERMINATION_EXTERNAL, "ExternalTermination"),
    # The scripted server reports 15 tokens per completion: the second agent message crosses 20.
    "token_usage": (lambda: TokenUsageTermination(max_total_token=20), sc.TERMINATION_BUDGET, "TokenUsageTermination"),
    "timeout": (lambda: TimeoutTermination(0.0), sc.TERMINATION_TIMEOUT, "TimeoutTermination"),
    "either": (lambda: MaxMessageTermination(2) | TextMentionTermination("nope"), sc.TERMINATION_MAX_ROUNDS,
               "MaxMessageTermination"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CONDITIONS))
async def test_stop_condition_that_fired(case: str, instrumentor: Any, server: Any, spans: Any) -> None:
    make, reason, condition = CONDITIONS[case]
    team = RoundRobinGroupChat(list(s.writer_critic(server.base_url)), termination_condition=make())
    result = await team.run(task=s.TASK)
    root = spans().root
    assert attr(root, sc.TERMINATION_REASON) == reason
    assert list(attr(root, sc.TERMINATION_CONDITION)) == [condition]
    assert attr(root, sc.TERMINATION_DETAIL) == result.stop_reason
    assert_messages_match(spans().messages, result)


async def test_max_turns(instrumentor: Any, server: Any, spans: Any) -> None:
    result = await RoundRobinGroupChat(list(s.writer_critic(server.base_url)), max_turns=3).run(task=s.TASK)
    root = spans().root
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_MAX_TURNS
    assert attr(root, sc.TERMINATION_DETAIL) == result.stop_reason == "Maximum number of turns 3 reached."
    assert attr(root, sc.TERMINATION_CONDITION) is None


async def test_function_call_and_handoff_conditions(instrumentor: Any, server: Any, spans: Any) -> None:
    team = s.swarm(server.base_url)
    team._termination_condition = FunctionCallTermination("lookup")
    result = await team.run(task="I want a refund")
    assert attr(spans().root, sc.TERMINATION_REASON) == sc.TERMINATION_FUNCTION_CALL
    assert attr(spans().root, sc.TERMINATION_DETAIL) == result.stop_reason


async def test_handoff_to_the_user(instrumentor: Any, spans: Any) -> None:
    from examples.scripted_openai import ScriptedOpenAI

    script = {
        "rules": [{"match": "ROLE_ALICE", "replies": [{"tool": "transfer_to_user", "args": {}}]}],
        "default": "OK",
    }
    with ScriptedOpenAI(script) as server:
        alice = AssistantAgent("alice", s.client(server.base_url), system_message="ROLE_ALICE", handoffs=["user"])
        result = await Swarm([alice], termination_condition=HandoffTermination("user")).run(task="Help")
    root = spans().root
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_HANDOFF
    assert attr(root, sc.TERMINATION_DETAIL) == result.stop_reason


class _Blocking(BaseChatAgent):
    """Waits until cancelled: lets a test cancel a run mid-turn."""

    def __init__(self, name: str, started: asyncio.Event) -> None:
        super().__init__(name, "waits")
        self._started = started

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage,)

    async def on_messages(self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken) -> Response:
        self._started.set()
        wait = asyncio.ensure_future(asyncio.sleep(30))
        cancellation_token.link_future(wait)
        await wait
        return Response(chat_message=TextMessage(content="never", source=self.name))

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        pass


class _Failing(_Blocking):
    async def on_messages(self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken) -> Response:
        raise ValueError("the agent broke")


async def test_cancellation_token_ends_the_root_as_cancelled(instrumentor: Any, spans: Any) -> None:
    started = asyncio.Event()
    token = CancellationToken()
    team = RoundRobinGroupChat([_Blocking("waiter", started)], max_turns=2)
    run = asyncio.ensure_future(team.run(task=s.TASK, cancellation_token=token))
    await asyncio.wait_for(started.wait(), 10)
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    root = spans().root
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_CANCELLED
    assert root.end_time is not None


async def test_a_run_that_raises_ends_the_root_with_error(instrumentor: Any, spans: Any) -> None:
    team = RoundRobinGroupChat([_Failing("broken", asyncio.Event())], max_turns=2)
    with pytest.raises(RuntimeError, match="the agent broke") as raised:
        await team.run(task=s.TASK)
    got = spans()
    assert attr(got.root, sc.TERMINATION_REASON) == sc.TERMINATION_ERROR
    assert "the agent broke" in attr(got.root, sc.TERMINATION_DETAIL)
    assert not got.root.status.is_ok
    (turn,) = got.turns
    assert not turn.status.is_ok  # the failed turn is evidence of where it broke
    assert str(raised.value)


async def test_closing_the_stream_early_ends_the_root(instrumentor: Any, server: Any, spans: Any) -> None:
    stream = s.round_robin(server.base_url).run_stream(task=s.TASK)
    async for _ in stream:
        break
    await stream.aclose()
    # Closing the stream waits for the team's runtime to go idle: the team finishes its turn-taking, and the
    # root says what stopped it then (here the critic's APPROVE), not that the caller stopped listening.
    root = spans().root
    assert root.end_time is not None
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_MESSAGE


async def test_nested_team_is_a_child_conversation(instrumentor: Any, server: Any, spans: Any) -> None:
    inner = RoundRobinGroupChat(list(s.writer_critic(server.base_url)), termination_condition=MaxMessageTermination(3),
                                name="drafting")  # fmt: skip
    bob = AssistantAgent("bob", s.client(server.base_url), system_message="ROLE_BOB")
    outer = RoundRobinGroupChat([inner, bob], max_turns=2, name="desk")
    result = await outer.run(task=s.TASK)
    got = spans()
    outer_root = next(r for r in got.roots if attr(r, sc.GEN_AI_WORKFLOW_NAME) == "desk")
    inner_root = next(r for r in got.roots if attr(r, sc.GEN_AI_WORKFLOW_NAME) == "drafting")
    outer_id = attr(outer_root, sc.GEN_AI_CONVERSATION_ID)
    # The outer conversation's messages are the outer team's record (the inner team's messages relayed).
    outer_messages = sorted(in_conversation(got.messages, outer_id), key=lambda m: attr(m, sc.MESSAGE_INDEX))
    assert_messages_match(outer_messages, result)
    # The inner team ran as an agent turn of the outer team, and its conversation is a child of that turn.
    turn = got.by_id(parent_id(inner_root))
    assert turn is not None and attr(turn, sc.GEN_AI_AGENT_NAME) == "drafting"
    assert parent_id(turn) == span_id(outer_root)
    assert attr(inner_root, sc.CONVERSATION_PARENT_ID) == outer_id
    inner_messages = in_conversation(got.messages, attr(inner_root, sc.GEN_AI_CONVERSATION_ID))
    relayed = [m for m in chat_messages(result) if m.source in ("writer", "critic")]
    assert [attr(m, sc.MESSAGE_CONTENT) for m in inner_messages][-len(relayed) :] == [m.to_text() for m in relayed]
    assert attr(inner_root, sc.TERMINATION_REASON) == sc.TERMINATION_MAX_ROUNDS
    assert attr(outer_root, sc.TERMINATION_REASON) == sc.TERMINATION_MAX_TURNS


async def test_two_teams_in_one_loop_keep_separate_conversations(instrumentor: Any, server: Any, spans: Any) -> None:
    first = RoundRobinGroupChat(list(s.writer_critic(server.base_url)), max_turns=4, name="first")
    second = s.swarm(server.base_url)
    results = await asyncio.gather(first.run(task=s.TASK), second.run(task="I want a refund"))
    got = spans()
    assert len(got.roots) == 2
    by_name = {attr(r, sc.GEN_AI_WORKFLOW_NAME): r for r in got.roots}
    for root, result in zip([by_name[first.name], by_name[second.name]], results, strict=True):
        conversation = attr(root, sc.GEN_AI_CONVERSATION_ID)
        mine = sorted(in_conversation(got.messages, conversation), key=lambda m: attr(m, sc.MESSAGE_INDEX))
        assert_messages_match(mine, result)
        assert attr(root, sc.TERMINATION_DETAIL) == result.stop_reason
        # Every span of this conversation descends from this root.
        for span in in_conversation(got.all, conversation):
            node = span
            while parent_id(node) is not None and node is not root:
                node = got.by_id(parent_id(node))  # type: ignore[assignment]
                assert node is not None
            assert node is root


async def test_the_program_sees_no_difference(server: Any, tracer_provider: Any, span_exporter: Any) -> None:
    from examples.scripted_openai import ScriptedOpenAI
    from mast_otel.integrations.autogen_agentchat import AutogenAgentChatInstrumentor

    plain = await s.swarm(server.base_url).run(task="I want a refund")
    inst = AutogenAgentChatInstrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    try:
        with ScriptedOpenAI(s.SCRIPT) as again:
            traced = await s.swarm(again.base_url).run(task="I want a refund")
    finally:
        inst.uninstrument()
    assert Spans(span_exporter).roots
    assert [(type(m), m.source, m.to_text()) for m in traced.messages] == [
        (type(m), m.source, m.to_text()) for m in plain.messages
    ]
    assert traced.stop_reason == plain.stop_reason
    # Uninstrumented again: nothing recorded, and the static tool executor is still a static method.
    span_exporter.clear()
    with ScriptedOpenAI(s.SCRIPT) as third:
        assert (await s.swarm(third.base_url).run(task="I want a refund")).stop_reason == plain.stop_reason
    assert span_exporter.get_finished_spans() == ()
    assert isinstance(vars(AssistantAgent)["_execute_tool_call"], staticmethod)
    from autogen_agentchat.teams._group_chat._magentic_one._magentic_one_orchestrator import MagenticOneOrchestrator
    from autogen_core import SingleThreadedAgentRuntime

    assert "publish_message" not in vars(MagenticOneOrchestrator)  # inherited before, inherited again
    assert not hasattr(vars(SingleThreadedAgentRuntime)["_process_send"], "__wrapped__")


async def test_a_recording_failure_is_counted_logged_once_and_never_raised(
    instrumentor: Any, server: Any, spans: Any, monkeypatch: Any, caplog: Any
) -> None:
    import mast_otel
    from mast_otel._safety import reset_recording_failures
    from mast_otel.recorder import Recorder

    text = "sk-secret-in-a-message"  # not on the raising line: the log quotes where it happened, not the text

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError(text)

    reset_recording_failures()
    monkeypatch.setattr(Recorder, "message", broken)
    result = await s.round_robin(server.base_url).run(task=s.TASK)
    assert result.stop_reason == "Text 'APPROVE' mentioned"  # the team ran as without mast-otel
    failures = mast_otel.recording_failures()
    reset_recording_failures()
    assert sum(failures.values()) == len(chat_messages(result)), failures
    warnings = [r for r in caplog.records if "recording failed" in r.getMessage()]
    assert len(warnings) == len(failures)  # once per kind
    assert all("sk-secret" not in w.getMessage() and w.exc_info is None for w in warnings)
    assert attr(spans().root, sc.TERMINATION_REASON) == sc.TERMINATION_MESSAGE  # the rest is still recorded


TEAMS = {
    "round_robin": lambda url: s.round_robin(url),
    "selector": lambda url: s.selector(url, allow_repeated_speaker=True),
    "swarm": lambda url: s.swarm(url),
    "graph_flow": lambda url: s.graph_flow(url),
    "magentic_one": lambda url: s.magentic_one(url),
}


@pytest.mark.parametrize("spare", [(), INSIDE_A_RUN], ids=["all", "inside_a_run"])
@pytest.mark.parametrize("team", list(TEAMS))
async def test_every_recorder_entry_point_raising_changes_nothing(team: str, spare: Any, instrumentor: Any) -> None:
    from opentelemetry.instrumentation.utils import suppress_instrumentation

    from examples.scripted_openai import ScriptedOpenAI

    def observed(result: Any) -> list[tuple[type, str, str]]:
        return [(type(m), m.source, m.to_text()) for m in result.messages]

    with ScriptedOpenAI(s.SCRIPT) as server, suppress_instrumentation():
        plain = await TEAMS[team](server.base_url).run(task=s.TASK)
    with ScriptedOpenAI(s.SCRIPT) as server, recorder_broken(spare) as failures:
        traced = await TEAMS[team](server.base_url).run(task=s.TASK)
    # the oracle: autogen's own TaskResult (its message list and stop reason)
    assert (observed(traced), traced.stop_reason) == (observed(plain), plain.stop_reason)
    assert_failures_only_from(failures, "autogen_agentchat")


async def test_a_runtime_the_program_started_itself(instrumentor: Any, server: Any, spans: Any) -> None:
    """Two teams on one runtime the program started before either run: each message carries its own run."""
    from autogen_core import SingleThreadedAgentRuntime

    runtime = SingleThreadedAgentRuntime()
    runtime.start()
    try:
        first = RoundRobinGroupChat(list(s.writer_critic(server.base_url)), max_turns=3, runtime=runtime, name="first")
        second = s.swarm(server.base_url)
        second = Swarm(second._participants, termination_condition=TextMentionTermination("TERMINATE"), runtime=runtime)
        results = await asyncio.gather(first.run(task=s.TASK), second.run(task="I want a refund"))
    finally:
        await runtime.stop()
    got = spans()
    by_name = {attr(r, sc.GEN_AI_WORKFLOW_NAME): r for r in got.roots}
    for name, result in zip([first.name, second.name], results, strict=True):
        conversation = attr(by_name[name], sc.GEN_AI_CONVERSATION_ID)
        mine = sorted(in_conversation(got.messages, conversation), key=lambda m: attr(m, sc.MESSAGE_INDEX))
        assert_messages_match(mine, result)
        assert attr(by_name[name], sc.TERMINATION_DETAIL) == result.stop_reason
        turns = [t for t in in_conversation(got.turns, conversation)]
        assert [attr(t, sc.GEN_AI_AGENT_NAME) for t in turns] == [
            m.source for m in chat_messages(result) if m.source != "user"
        ]
