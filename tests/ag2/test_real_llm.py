"""An AG2 Classic group chat against a real LLM server, traced by ``mast_otel.instrument()`` over real OTLP/gRPC.

The model is Gemma 3 270M *base* (tests/servers.py): what it says is meaningless, so every assertion is about
structure, checked against AG2's own record of the run: ``GroupChat.messages`` and the ``TerminationEvent`` it
sends to the IOStream.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import Any, Literal

import pytest
from autogen import Agent, ConversableAgent, GroupChat, GroupChatManager
from autogen.io import IOStream
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import mast_otel
from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord
from tests.otlp_sink import OTLPSink, otlp_sink
from tests.servers import LlamaServer

pytestmark = pytest.mark.integration

AGENTS = ("planner", "coder", "critic")
TASK = "Write a Python function that adds two numbers, then review it."
MANAGER = "chat_manager"


@pytest.fixture
def traced() -> Iterator[tuple[TracerProvider, OTLPSink]]:
    """``mast_otel.instrument()`` exporting over real OTLP/gRPC to a receiver in this process; uninstrumented after."""
    with otlp_sink() as sink:
        provider = TracerProvider(resource=Resource.create({"service.name": "mast-otel-real-llm-test"}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=sink.grpc_endpoint, insecure=True)))
        mast_otel.instrument(tracer_provider=provider)
        try:
            yield provider, sink
        finally:
            mast_otel.uninstrument()
            provider.shutdown()


# -- AG2's own record of the run ----------------------------------------------------
class _TerminationLog:
    """An AG2 IOStream that prints nothing and keeps the termination reasons AG2 announces."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def print(self, *objects: Any, sep: str = " ", end: str = "\n", flush: bool = False) -> None:
        pass

    def send(self, message: Any) -> None:
        if getattr(message, "type", None) == "termination":
            self.reasons.append(message.content.termination_reason)

    def input(self, prompt: str = "", *, password: bool = False) -> str:
        raise AssertionError("the chat asked for human input")


def _llm_config(llama: LlamaServer, max_tokens: int) -> dict[str, Any]:
    # AG2 0.14 takes a plain dict with "config_list" (LLMConfig(config_list=...) is a TypeError there).
    entry = {"api_type": "openai", "model": llama.model, "base_url": llama.base_url, "api_key": "x", "price": [0, 0]}
    return {"config_list": [entry], "temperature": 0.7, "max_tokens": max_tokens, "cache_seed": None}


def _run_group_chat(
    llama: LlamaServer, method: Literal["round_robin", "auto"], max_round: int
) -> tuple[GroupChat, GroupChatManager, list[str]]:
    agents = [
        ConversableAgent(
            name,
            system_message=f"You are the {name} of a small software team.",
            llm_config=_llm_config(llama, max_tokens=32),
            human_input_mode="NEVER",
        )
        for name in AGENTS
    ]
    groupchat = GroupChat(
        agents=list[Agent](agents),
        messages=[],
        max_round=max_round,
        speaker_selection_method=method,
        # The base model never names an agent cleanly; one attempt, then AG2's own fallback, keeps 'auto' short.
        max_retries_for_selecting_speaker=0,
    )
    selector = _llm_config(llama, max_tokens=8) if method == "auto" else False
    manager = GroupChatManager(groupchat, name=MANAGER, llm_config=selector)
    log = _TerminationLog()
    with IOStream.set_default(log):  # type: ignore[arg-type]
        agents[0].initiate_chat(manager, message=TASK)
    return groupchat, manager, log.reasons


def _exported(provider: TracerProvider, sink: OTLPSink) -> list[SpanRecord]:
    # force_flush exports synchronously: once it returns, the receiver has answered every Export call.
    assert provider.force_flush(30_000)
    assert not sink.requests("http")
    return sink.spans("grpc")


def _of_type(spans: list[SpanRecord], span_type: str, order_key: str | None = None) -> list[SpanRecord]:
    found = [s for s in spans if s.span_type == span_type]
    return sorted(found, key=lambda s: s.get(order_key) if order_key else s.start_ns)


# -- the structure, checked against AG2's record ----------------------------------------
def _assert_structure(
    spans: list[SpanRecord],
    groupchat: GroupChat,
    manager: GroupChatManager,
    ag2_terminations: list[str],
    handoff_reason: str,
) -> None:
    history = groupchat.messages
    speakers = [m["name"] for m in history]
    assert len(history) >= 2, "the chat ended before any agent replied"

    # One conversation root; every span in one trace, parented to the root (no tools or nested chats here).
    (root,) = [s for s in spans if s.is_conversation_root]
    assert root.parent_span_id is None
    assert root.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_WORKFLOW
    assert root.get(sc.MAST_FRAMEWORK) == "ag2"
    assert root.get(sc.GEN_AI_WORKFLOW_NAME) == MANAGER
    assert root.get(sc.CONVERSATION_TASK) == TASK
    assert root.service_name == "mast-otel-real-llm-test"
    assert {s.trace_id for s in spans} == {root.trace_id}
    others = [s for s in spans if s is not root]
    assert {s.span_type for s in others} <= {sc.SPAN_TYPE_MESSAGE, sc.SPAN_TYPE_HANDOFF, sc.SPAN_TYPE_AGENT_TURN}
    assert all(s.parent_span_id == root.span_id for s in others)
    assert all(s.get(sc.GEN_AI_CONVERSATION_ID) == root.get(sc.GEN_AI_CONVERSATION_ID) for s in others)
    assert not [s for s in spans if s.error]

    # A message span per entry of groupchat.messages, same order and senders; broadcast copies are not messages.
    messages = _of_type(spans, sc.SPAN_TYPE_MESSAGE, sc.MESSAGE_INDEX)
    assert [m.get(sc.MESSAGE_INDEX) for m in messages] == list(range(len(history)))
    assert [m.get(sc.MESSAGE_SENDER) for m in messages] == speakers
    assert [m.start_ns for m in messages] == sorted(m.start_ns for m in messages)
    for span, entry in zip(messages, history, strict=True):
        assert span.get(sc.MESSAGE_RECIPIENTS) == (MANAGER,)
        assert span.get(sc.MESSAGE_KIND) == sc.KIND_MESSAGE
        assert span.get(sc.MESSAGE_BROADCAST_TO) == tuple(a for a in AGENTS if a != entry["name"])
        if not span.get(sc.MESSAGE_REDACTED) and not span.get(sc.MESSAGE_TRUNCATED):
            assert span.get(sc.MESSAGE_CONTENT) == (entry.get("content") or "")
    # The manager relays each message to the two other members.
    assert root.get(sc.CONVERSATION_BROADCASTS) == len(history) * (len(AGENTS) - 1)

    # An agent turn per generated message (the first message is the task itself).
    turns = _of_type(spans, sc.SPAN_TYPE_AGENT_TURN)
    assert [t.get(sc.GEN_AI_AGENT_NAME) for t in turns] == speakers[1:]

    # A handoff per speaker selection: from the speaker of message i to the speaker of message i + 1.
    handoffs = _of_type(spans, sc.SPAN_TYPE_HANDOFF, sc.HANDOFF_INDEX)
    assert [h.get(sc.HANDOFF_INDEX) for h in handoffs] == list(range(len(history) - 1))
    assert [(h.get(sc.HANDOFF_FROM), h.get(sc.HANDOFF_TO)) for h in handoffs] == list(pairwise(speakers))
    assert {h.get(sc.HANDOFF_REASON) for h in handoffs} == {handoff_reason}
    assert all(h.get(sc.HANDOFF_CANDIDATES) == AGENTS for h in handoffs)
    # Each handoff sits between the message that gave up control and the one that took it.
    for i, h in enumerate(handoffs):
        assert messages[i].start_ns <= h.start_ns <= messages[i + 1].start_ns

    # Termination: AG2 announced exactly one reason for the group chat (selection chats are suppressed).
    assert ag2_terminations, "AG2 sent no TerminationEvent"
    ag2_reason = ag2_terminations[-1]
    if ag2_reason.startswith("Maximum rounds"):
        expected = sc.TERMINATION_MAX_ROUNDS
        assert len(history) == groupchat.max_round
    else:
        assert ag2_reason.startswith("Termination message condition"), ag2_reason
        expected = sc.TERMINATION_MESSAGE
        assert manager._is_termination_msg(history[-1])
    assert root.get(sc.TERMINATION_REASON) == expected
    assert root.get(sc.TERMINATION_DETAIL) == ag2_reason
    assert root.get(sc.CONVERSATION_ROUNDS) == len(history)
    assert root.get(sc.CONVERSATION_HANDOFFS) == len(handoffs)
    assert root.get(sc.CONVERSATION_MAX_ROUNDS) == groupchat.max_round


def test_round_robin_group_chat(llama: LlamaServer, traced: tuple[TracerProvider, OTLPSink]) -> None:
    provider, sink = traced
    groupchat, manager, terminations = _run_group_chat(llama, "round_robin", max_round=4)
    speakers = [m["name"] for m in groupchat.messages]
    assert speakers == ["planner", "coder", "critic", "planner"][: len(speakers)]  # AG2's round robin
    _assert_structure(_exported(provider, sink), groupchat, manager, terminations, sc.HANDOFF_ROUND_ROBIN)


def test_auto_selection_group_chat(llama: LlamaServer, traced: tuple[TracerProvider, OTLPSink]) -> None:
    provider, sink = traced
    groupchat, manager, terminations = _run_group_chat(llama, "auto", max_round=4)
    spans = _exported(provider, sink)
    _assert_structure(spans, groupchat, manager, terminations, sc.HANDOFF_LLM_SELECTION)
    # The selector's internal two-agent chats are machinery: no second root, no extra messages (checked above).
    assert len([s for s in spans if s.is_conversation_root]) == 1
