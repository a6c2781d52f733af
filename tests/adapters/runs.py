"""Real offline runs traced by another instrumentation (and, for the mixed case, by mast-otel as well).

Each run takes the tracer provider to trace with and returns the framework's own record of the conversation
(the oracle): ``messages``, ``(sender, content)`` pairs in order (AG2: the group chat's message list; the OpenAI
Agents SDK: the task, then each model answer in ``RunResult.new_items``), and ``handoffs``, ``(from, to)`` pairs
(AG2: its speaker order; the SDK: its ``HandoffOutputItem``s). The fixture recorder
(``python -m tests.adapters.record``) and the real-collector tests both use these runs. Frameworks are imported
inside each run: each lives in the environment that has it (AG2: the main one; the SDK: ``nox -s
adapters_openai_agents``).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace import TracerProvider

import mast_otel

Pairs = list[tuple[str, str]]
Oracle = dict[str, Pairs]
TASK = "Write a Python function nth_prime(n) and use it to report the 10th prime number."
REFUND_TASK = "My order B2 arrived damaged"


def speaker_handoffs(messages: Pairs) -> Pairs:
    """AG2's speaker sequence as from -> to pairs (the task's sender excluded: it is not a member)."""
    speakers = [sender for sender, _ in messages[1:]]
    return [(a, b) for a, b in itertools.pairwise(speakers) if a != b]


def _messages(groupchat: Any) -> Oracle:
    messages = [(str(m.get("name")), str(m.get("content") or "")) for m in groupchat.messages]
    return {"messages": messages, "handoffs": speaker_handoffs(messages)}


def _group_chat() -> tuple[Any, Any, Any]:
    from examples.ag2_group_chat import TASK as EXAMPLE_TASK
    from examples.ag2_group_chat import build

    assert EXAMPLE_TASK == TASK
    user, manager, groupchat = build()
    return user, manager, groupchat


def ag2_builtin(provider: TracerProvider) -> Oracle:
    """AG2's own ``autogen.opentelemetry``: every agent instrumented, as AG2's docs show."""
    from autogen.opentelemetry import instrument_agent

    user, manager, groupchat = _group_chat()
    for agent in (user, manager, *groupchat.agents):
        instrument_agent(agent, tracer_provider=provider)
    user.initiate_chat(manager, message=TASK, silent=True)
    return _messages(groupchat)


def openinference_ag2(provider: TracerProvider) -> Oracle:
    """``openinference-instrumentation-ag2`` (global patches, removed again after the run)."""
    from openinference.instrumentation.ag2 import AG2Instrumentor

    instrumentor = AG2Instrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        user, manager, groupchat = _group_chat()
        user.initiate_chat(manager, message=TASK, silent=True)
    finally:
        instrumentor.uninstrument()
    return _messages(groupchat)


def mixed(provider: TracerProvider) -> Oracle:
    """The same run traced twice: mast-otel's AG2 integration and OpenInference together."""
    from openinference.instrumentation.ag2 import AG2Instrumentor

    instrumentor = AG2Instrumentor()
    instrumentor.instrument(tracer_provider=provider)
    mast_otel.instrument(tracer_provider=provider)
    try:
        user, manager, groupchat = _group_chat()
        user.initiate_chat(manager, message=TASK, silent=True)
    finally:
        mast_otel.uninstrument()
        instrumentor.uninstrument()
    return _messages(groupchat)


def openinference_single_agent(provider: TracerProvider) -> Oracle:
    """Not a multi-agent conversation: one agent answers one message (one LLM call), traced by OpenInference."""
    from openinference.instrumentation.ag2 import AG2Instrumentor

    instrumentor = AG2Instrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        _, _, groupchat = _group_chat()
        planner = groupchat.agents[0]
        reply = planner.generate_reply(messages=[{"role": "user", "content": TASK, "name": "user"}])
    finally:
        instrumentor.uninstrument()
    messages = [("user", TASK), (planner.name, str(reply))]
    return {"messages": messages, "handoffs": []}


def openinference_openai_agents(provider: TracerProvider) -> Oracle:
    """``openinference-instrumentation-openai-agents`` on an SDK run with two handoffs and two tools, against
    the scripted server (the triage -> orders -> refund specialist scenario of tests/openai_agents)."""
    from agents import ItemHelpers, set_trace_processors
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    from examples.scripted_openai import ScriptedOpenAI
    from tests.openai_agents import scenarios as sn

    set_trace_processors([])  # no export to OpenAI (offline); the instrumentor adds its own processor
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with ScriptedOpenAI(sn.CHAIN_SCRIPT) as server:
            agent = sn.chain_agents(sn.model_for("chat_completions", server.base_url))
            result = asyncio.run(sn.run(agent, REFUND_TASK))
    finally:
        instrumentor.uninstrument()
    messages = [("user", REFUND_TASK)]
    handoffs = []
    for item in result.new_items:
        kind = type(item).__name__
        if kind == "MessageOutputItem":
            messages.append((item.agent.name, ItemHelpers.text_message_output(item)))
        elif kind in ("ToolCallItem", "HandoffCallItem"):
            messages.append((item.agent.name, str(item.raw_item.name)))
        elif kind == "HandoffOutputItem":
            handoffs.append((item.source_agent.name, item.target_agent.name))
    return {"messages": messages, "handoffs": handoffs}


RUNS: dict[str, Callable[[TracerProvider], Oracle]] = {
    "ag2_builtin": ag2_builtin,
    "openinference_ag2": openinference_ag2,
    "mixed_ag2": mixed,
    "openinference_single_agent": openinference_single_agent,
}
AG2_RUNS = tuple(RUNS)
RUNS["openinference_openai_agents"] = openinference_openai_agents
