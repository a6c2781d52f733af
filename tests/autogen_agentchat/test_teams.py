"""Real teams of every type against the scripted server: the spans against the framework's own record."""

from __future__ import annotations

from typing import Any

import pytest

from tests.autogen_agentchat.conftest import SKIP_REASON

pytest.importorskip("autogen_agentchat", reason=SKIP_REASON)

from autogen_agentchat.messages import HandoffMessage, ToolCallExecutionEvent, ToolCallRequestEvent

from mast_otel import semconv as sc
from tests.autogen_agentchat import scenarios as s
from tests.autogen_agentchat.record import (
    assert_messages_match,
    assert_turns_hold_their_messages,
    chat_messages,
    served,
    served_ledgers,
    speakers,
)
from tests.span_query import attr

BUILDERS = {
    "RoundRobinGroupChat": s.round_robin,
    "SelectorGroupChat": lambda url: s.selector(url, allow_repeated_speaker=True),
    "Swarm": s.swarm,
    "GraphFlow": s.graph_flow,
    "MagenticOneGroupChat": s.magentic_one,
}


@pytest.mark.parametrize("team_type", list(BUILDERS))
async def test_spans_match_the_task_result(team_type: str, instrumentor: Any, server: Any, spans: Any) -> None:
    team = BUILDERS[team_type](server.base_url)
    participants = [p.name for p in team._participants]
    result = await team.run(task=s.TASK)
    got = spans()
    root = got.root

    assert_messages_match(got.messages, result)
    assert_turns_hold_their_messages(got, participants)
    who = speakers(result, participants)
    assert [attr(t, sc.GEN_AI_AGENT_NAME) for t in got.turns] == who
    assert [attr(h, sc.HANDOFF_TO) for h in got.handoffs] == who
    assert attr(root, sc.CONVERSATION_TEAM_TYPE) == team_type
    assert list(attr(root, sc.CONVERSATION_PARTICIPANTS)) == participants
    assert attr(root, sc.CONVERSATION_TASK) == s.TASK
    assert attr(root, sc.CONVERSATION_ROUNDS) == len(chat_messages(result))
    assert attr(root, sc.TERMINATION_DETAIL) == result.stop_reason


async def test_round_robin(instrumentor: Any, server: Any, spans: Any) -> None:
    result = await s.round_robin(server.base_url).run(task=s.TASK)
    got = spans()
    assert {attr(h, sc.HANDOFF_REASON) for h in got.handoffs} == {sc.HANDOFF_ROUND_ROBIN}
    sources = ["user", *speakers(result, ["writer", "critic"])[:-1]]
    assert [attr(h, sc.HANDOFF_FROM) for h in got.handoffs] == sources
    assert attr(got.root, sc.TERMINATION_REASON) == sc.TERMINATION_MESSAGE
    assert list(attr(got.root, sc.TERMINATION_CONDITION)) == ["TextMentionTermination"]
    assert attr(got.root, sc.TERMINATION_AGENT) == chat_messages(result)[-1].source


async def test_selector_records_the_llm_answer_per_selection(instrumentor: Any, server: Any, spans: Any) -> None:
    await s.selector(server.base_url, allow_repeated_speaker=True).run(task=s.TASK)
    handoffs = spans().handoffs
    answers = served(server, "role play game")
    assert [attr(h, sc.HANDOFF_REASON) for h in handoffs] == [sc.HANDOFF_LLM_SELECTION] * len(answers)
    assert [attr(h, sc.HANDOFF_DETAIL) for h in handoffs] == answers
    assert {attr(h, sc.HANDOFF_ATTEMPTS) for h in handoffs} == {1}


async def test_selector_retries_count_as_attempts(instrumentor: Any, spans: Any) -> None:
    from examples.scripted_openai import ScriptedOpenAI

    script = {**s.SCRIPT, "rules": [{"match": "role play game", "replies": ["nobody", "critic"]}, *s.SCRIPT["rules"]]}
    with ScriptedOpenAI(script) as server:
        team = s.selector(server.base_url, allow_repeated_speaker=True, max_turns=1)
        result = await team.run(task=s.TASK)
    (handoff,) = spans().handoffs
    assert speakers(result, ["writer", "critic"]) == ["critic"] == [attr(handoff, sc.HANDOFF_TO)]
    assert attr(handoff, sc.HANDOFF_ATTEMPTS) == 2
    assert attr(handoff, sc.HANDOFF_DETAIL) == "critic"
    assert attr(spans().root, sc.TERMINATION_REASON) == sc.TERMINATION_MAX_TURNS


async def test_selector_without_a_choice(instrumentor: Any, server: Any, spans: Any) -> None:
    """Repeated speakers not allowed, two participants: after the first pick only one candidate is left."""
    await s.selector(server.base_url).run(task=s.TASK)
    reasons = [attr(h, sc.HANDOFF_REASON) for h in spans().handoffs]
    assert reasons[0] == sc.HANDOFF_LLM_SELECTION
    assert set(reasons[1:]) == {sc.HANDOFF_ONLY_CANDIDATE}
    assert len(served(server, "role play game")) == 1


async def test_selector_func_is_a_custom_function(instrumentor: Any, server: Any, spans: Any) -> None:
    def pick(thread: Any) -> str:
        return "critic" if thread[-1].source == "writer" else "writer"

    await s.selector(server.base_url, selector_func=pick).run(task=s.TASK)
    handoffs = spans().handoffs
    assert {attr(h, sc.HANDOFF_REASON) for h in handoffs} == {sc.HANDOFF_CUSTOM}
    assert {attr(h, sc.HANDOFF_DETAIL) for h in handoffs} == {"selector_func"}
    assert served(server, "role play game") == []


async def test_swarm_handoff_message_and_tools(instrumentor: Any, server: Any, spans: Any) -> None:
    result = await s.swarm(server.base_url).run(task="I want a refund")
    got = spans()
    chat = chat_messages(result)
    # The reason follows the thread: the first speaker, then a HandoffMessage or no handoff (the speaker stays).
    expected = []
    for before in [None, *[m for m in chat if m.source in ("alice", "bob")][:-1]]:
        if before is None:
            expected.append((sc.HANDOFF_INITIAL, "alice"))
        elif isinstance(before, HandoffMessage):
            expected.append((sc.HANDOFF_TOOL_CALL, before.target))
        else:
            expected.append((sc.HANDOFF_SAME_SPEAKER, before.source))
    assert [(attr(h, sc.HANDOFF_REASON), attr(h, sc.HANDOFF_TO)) for h in got.handoffs] == expected
    handoff_message = next(m for m in chat if isinstance(m, HandoffMessage))
    assert attr(got.handoffs[-1], sc.HANDOFF_DETAIL).startswith(handoff_message.content)
    # Tool calls: one span per execution, with the model's arguments and the tool's result.
    requests = [c for m in result.messages if isinstance(m, ToolCallRequestEvent) for c in m.content]
    results = [r for m in result.messages if isinstance(m, ToolCallExecutionEvent) for r in m.content]
    assert [
        (attr(t, sc.GEN_AI_TOOL_NAME), attr(t, sc.GEN_AI_TOOL_CALL_ID), attr(t, sc.GEN_AI_TOOL_CALL_ARGUMENTS))
        for t in got.tools
    ] == [(c.name, c.id, c.arguments) for c in requests]
    assert [attr(t, sc.GEN_AI_TOOL_CALL_RESULT) for t in got.tools] == [r.content for r in results]
    # The requests ride on the chat message they led to, not as messages of their own.
    with_calls = [m for m in got.messages if attr(m, sc.MESSAGE_TOOL_CALLS)]
    assert [attr(m, sc.MESSAGE_TYPE) for m in with_calls] == ["ToolCallSummaryMessage", "HandoffMessage"]
    assert attr(got.root, sc.TERMINATION_REASON) == sc.TERMINATION_MESSAGE


async def test_graph_flow_edges(instrumentor: Any, server: Any, spans: Any) -> None:
    result = await s.graph_flow(server.base_url).run(task=s.TASK)
    got = spans()
    handoffs = got.handoffs
    assert attr(handoffs[0], sc.HANDOFF_REASON) == sc.HANDOFF_INITIAL
    assert [attr(h, sc.HANDOFF_REASON) for h in handoffs[1:]] == [sc.HANDOFF_GRAPH_EDGE] * 2
    assert [(attr(h, sc.HANDOFF_FROM), attr(h, sc.HANDOFF_TO)) for h in handoffs[1:]] == [
        ("writer", "critic"),
        ("critic", "editor"),
    ]
    critic_said = next(m.to_text() for m in chat_messages(result) if m.source == "critic")
    assert "Too short" in critic_said and "'Too short'" in attr(handoffs[2], sc.HANDOFF_DETAIL)
    assert attr(got.root, sc.TERMINATION_REASON) == sc.TERMINATION_GRAPH_COMPLETE


async def test_magentic_one_ledger_reasons_on_handoffs(instrumentor: Any, server: Any, spans: Any) -> None:
    result = await s.magentic_one(server.base_url).run(task=s.TASK)
    got = spans()
    ledgers = served_ledgers(server)
    delegating = [entry for entry in ledgers if not entry["is_request_satisfied"]["answer"]]
    assert [
        (
            attr(h, sc.HANDOFF_FROM),
            attr(h, sc.HANDOFF_TO),
            attr(h, sc.HANDOFF_REASON),
            attr(h, sc.HANDOFF_STATED_REASON),
        )
        for h in got.handoffs
    ] == [
        (
            "MagenticOneOrchestrator",
            e["next_speaker"]["answer"],
            sc.HANDOFF_PROGRESS_LEDGER,
            e["next_speaker"]["reason"],
        )
        for e in delegating
    ]
    satisfied = ledgers[-1]["is_request_satisfied"]
    assert satisfied["answer"] is True
    assert attr(got.root, sc.TERMINATION_REASON) == sc.TERMINATION_COMPLETED
    assert attr(got.root, sc.TERMINATION_DETAIL) == satisfied["reason"] == result.stop_reason
    plans = [e for e in got.root.events if e.name == sc.EVENT_PLAN]
    assert len(plans) == 1 and "5-7-5" in plans[0].attributes[sc.ORCHESTRATOR_FACTS]


async def test_magentic_one_stall_and_replan(instrumentor: Any, spans: Any) -> None:
    from examples.scripted_openai import ScriptedOpenAI

    stalled = s.ledger(satisfied=False, speaker="writer", instruction="Draft.", reason="draft", progress=False)
    script = {**s.SCRIPT, "rules": [
        {"match": "Recall we are working on the following request", "replies": [
            s._json(stalled),
            s._json(s.ledger(satisfied=False, speaker="writer", instruction="Draft again.", reason="new plan")),
            s._json(s.ledger(satisfied=True, speaker="-", instruction="-", reason="-", done_reason="done")),
        ]},
        {"match": "As a reminder, we are working to solve", "replies": ["Facts v2: syllables matter."]},
        {"match": "what went wrong on this last run", "replies": ["Plan v2: the writer counts syllables."]},
        *s.SCRIPT["rules"],
    ]}  # fmt: skip
    with ScriptedOpenAI(script) as server:
        result = await s.magentic_one(server.base_url, max_stalls=1).run(task=s.TASK)
    root = spans().root
    names = [e.name for e in root.events]
    assert names == [sc.EVENT_PLAN, sc.EVENT_STALL, sc.EVENT_REPLAN, sc.EVENT_PLAN]
    # The framework's record: the orchestrator wrote its task ledger once per outer-loop entry.
    ledgers_written = [m for m in chat_messages(result) if "We are working to address" in m.to_text()]
    assert len(ledgers_written) == names.count(sc.EVENT_PLAN)
    assert "Plan v2" in root.events[-1].attributes[sc.ORCHESTRATOR_PLAN]
    assert "no progress" in root.events[1].attributes[sc.ORCHESTRATOR_REASON]
    (handoff,) = spans().handoffs  # the stalled step handed off to nobody: it re-planned instead
    assert attr(handoff, sc.HANDOFF_STATED_REASON) == "new plan"


async def test_magentic_one_max_rounds(instrumentor: Any, server: Any, spans: Any) -> None:
    result = await s.magentic_one(server.base_url, max_turns=1).run(task=s.TASK)
    root = spans().root
    assert result.stop_reason == "Max rounds reached."
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_MAX_ROUNDS
    assert attr(root, sc.TERMINATION_DETAIL) == result.stop_reason


async def test_events_are_never_messages(instrumentor: Any, server: Any, spans: Any) -> None:
    """Streamed chunks and the selector's events are in the stream; they are folded into turns, not messages."""
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.messages import ModelClientStreamingChunkEvent, SelectSpeakerEvent
    from autogen_agentchat.teams import SelectorGroupChat

    writer = AssistantAgent("writer", s.client(server.base_url), system_message="ROLE_WRITER", model_client_stream=True)
    critic = AssistantAgent("critic", s.client(server.base_url), system_message="ROLE_CRITIC")
    team = SelectorGroupChat([writer, critic], model_client=s.client(server.base_url), termination_condition=s.stop(),
                             allow_repeated_speaker=True, emit_team_events=True)  # fmt: skip
    streamed = [item async for item in team.run_stream(task=s.TASK)]
    result = streamed[-1]
    assert any(isinstance(m, ModelClientStreamingChunkEvent) for m in streamed)
    assert any(isinstance(m, SelectSpeakerEvent) for m in result.messages)
    got = spans()
    assert_messages_match(got.messages, result)
    chunks = [m for m in streamed if isinstance(m, ModelClientStreamingChunkEvent)]
    assert sum(attr(t, sc.TURN_STREAM_CHUNKS) or 0 for t in got.turns) == len(chunks)


async def test_multimodal_task_text(instrumentor: Any, server: Any, spans: Any) -> None:
    from autogen_agentchat.messages import MultiModalMessage
    from autogen_core import Image
    from PIL import Image as PILImage

    picture = Image(PILImage.new("RGB", (4, 4)))
    task = MultiModalMessage(content=["Write a haiku about this leaf", picture], source="user")
    result = await s.round_robin(server.base_url).run(task=task)
    got = spans()
    assert_messages_match(got.messages, result)
    assert attr(got.messages[0], sc.MESSAGE_TYPE) == "MultiModalMessage"
    assert attr(got.messages[0], sc.MESSAGE_CONTENT) == task.to_text() != ""
    assert "<image>" in attr(got.messages[0], sc.MESSAGE_CONTENT)


async def test_mast_otel_instrument_covers_it(server: Any, tracer_provider: Any, span_exporter: Any) -> None:
    import mast_otel

    mast_otel.instrument(tracer_provider=tracer_provider)
    try:
        result = await s.round_robin(server.base_url).run(task=s.TASK)
    finally:
        mast_otel.uninstrument()
    from tests.span_query import Spans

    got = Spans(span_exporter)
    assert attr(got.root, sc.MAST_FRAMEWORK) == "autogen-agentchat"
    assert_messages_match(got.messages, result)


async def test_no_content_when_capture_is_off(server: Any, tracer_provider: Any, span_exporter: Any) -> None:
    """The selector's answer, the ledger's words, the plan: all LLM text, all kept out with content capture off."""
    from mast_otel.config import CaptureConfig
    from mast_otel.integrations.autogen_agentchat import AutogenAgentChatInstrumentor
    from tests.span_query import Spans

    inst = AutogenAgentChatInstrumentor()
    inst.instrument(tracer_provider=tracer_provider, config=CaptureConfig.from_env(capture_content=False))
    try:
        await s.magentic_one(server.base_url).run(task=s.TASK)
        await s.selector(server.base_url, allow_repeated_speaker=True).run(task=s.TASK)
    finally:
        inst.uninstrument()
    got = Spans(span_exporter)
    assert len(got.roots) == 2 and got.handoffs and got.messages
    keys = {k for span in got.all for k in (span.attributes or {})}
    assert not keys & {sc.MESSAGE_CONTENT, sc.HANDOFF_STATED_REASON, sc.HANDOFF_DETAIL, sc.CONVERSATION_TASK}
    event_keys = {k for root in got.roots for e in root.events for k in (e.attributes or {})}
    assert sc.ORCHESTRATOR_PLAN not in event_keys and sc.ORCHESTRATOR_FACTS not in event_keys
    m1 = next(r for r in got.roots if attr(r, sc.CONVERSATION_TEAM_TYPE) == "MagenticOneGroupChat")
    assert attr(m1, sc.TERMINATION_REASON) == sc.TERMINATION_COMPLETED
    assert attr(m1, sc.TERMINATION_DETAIL) is None  # the ledger's own words


async def test_a_thought_rides_on_its_message(instrumentor: Any, spans: Any) -> None:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.messages import ThoughtEvent
    from autogen_agentchat.teams import RoundRobinGroupChat

    from examples.scripted_openai import ScriptedOpenAI

    said = "The policy decides this; let me look it up first."
    script = {"rules": [{"match": "ROLE_ALICE", "replies": [{"text": said, "tool": "lookup", "args": {"query": "x"}}]}]}
    with ScriptedOpenAI(script) as server:
        alice = AssistantAgent("alice", s.client(server.base_url), system_message="ROLE_ALICE", tools=[s.lookup])
        result = await RoundRobinGroupChat([alice], max_turns=1).run(task="Can I get a refund?")
    thoughts = [m.content for m in result.messages if isinstance(m, ThoughtEvent)]
    assert thoughts == [said]
    got = spans()
    assert_messages_match(got.messages, result)
    assert attr(got.messages[-1], sc.MESSAGE_THOUGHT) == said


async def test_candidate_func_narrowing_to_one_is_a_custom_function(instrumentor: Any, server: Any, spans: Any) -> None:
    def only_the_other(thread: Any) -> list[str]:
        return ["critic"] if thread[-1].source == "writer" else ["writer"]

    result = await s.selector(server.base_url, candidate_func=only_the_other).run(task=s.TASK)
    handoffs = spans().handoffs
    assert [attr(h, sc.HANDOFF_TO) for h in handoffs] == speakers(result, ["writer", "critic"])
    assert {(attr(h, sc.HANDOFF_REASON), attr(h, sc.HANDOFF_DETAIL)) for h in handoffs} == {
        (sc.HANDOFF_CUSTOM, "candidate_func")
    }
    assert served(server, "role play game") == []
