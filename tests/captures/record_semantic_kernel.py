"""Record Semantic Kernel multi-agent captures, traced by Semantic Kernel's own GenAI telemetry.

``nox -s "captures(framework='semantic_kernel')"`` (or ``python -m tests.captures.record_semantic_kernel [RUN ...]``
in that environment) writes ``tests/data/captures/semantic_kernel/<run>.json``. The telemetry is switched on the
way Semantic Kernel's docs say (``SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS`` and ``..._SENSITIVE``,
the global tracer provider, the OTel ``LoggingHandler`` on Python's logging): its spans go to ``"otlp"``, and its
log records, which alone carry the model's text (``gen_ai.user.message``, ``gen_ai.choice``... in ``event.name``,
the message as a JSON string body), to ``"otlp_logs"``.

The expectation is read from Semantic Kernel's own record of the run, never from a span: the orchestrations'
``agent_response_callback`` (every message an agent produced, the intermediate function-call and function-result
messages included), AgentGroupChat's chat history (``get_chat_messages``), the solo agent's thread. A model answer
is an assistant message (text, or the ``FunctionCallContent`` a tool call is); its speaker is the message's
``name``; a tool call is a ``FunctionCallContent`` (``plugin-function``, the name the model called), a handoff is a
``Handoff-transfer_to_<agent>`` call (handoff orchestration) or a change of speaker (group chats).

- ``handoff``: ``HandoffOrchestration``: Triage transfers to Billing, who calls ``orders-lookup_order`` and transfers
  to Reviewer, who answers.
- ``group-chat``: ``GroupChatOrchestration`` with ``RoundRobinGroupChatManager(max_rounds=3)``: Researcher (calls
  ``orders-lookup_order``), Writer, Reviewer.
- ``agent-group-chat``: the older ``AgentGroupChat`` (sequential selection, three turns): Researcher (calls
  ``orders-lookup_order``), Writer, Reviewer.
- ``solo``: one ``ChatCompletionAgent`` with the tool: the control run, not a multi-agent conversation.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import Any

from tests.captures._record import NO_RULE, Expectation, main, otlp_json, otlp_logs_json, recording, write

FRAMEWORK = "semantic_kernel"
PACKAGES = ["semantic-kernel", "openai", "opentelemetry-sdk"]
TASK = "I was charged twice for order A17. Please refund the duplicate charge."
SWITCHES = {
    "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS": "true",
    "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE": "true",
}
HANDOFF_PREFIX = "Handoff-transfer_to_"
LOOKUP = {"tool": "orders-lookup_order", "args": {"order_id": "A17"}}

SCRIPT = {
    "rules": [
        {"match": "ROLE_TRIAGE", "replies": [{"tool": "Handoff-transfer_to_Billing", "args": {}}]},
        {"match": "ROLE_BILLING", "replies": [LOOKUP, {"tool": "Handoff-transfer_to_Reviewer", "args": {}}]},
        {"match": "ROLE_REVIEWER", "replies": ["Approved: the duplicate 49.00 EUR charge on A17 is refunded."]},
        {"match": "ROLE_RESEARCHER", "replies": [LOOKUP, "Order A17 was charged 49.00 EUR twice on 2026-11-02."]},
        {"match": "ROLE_WRITER", "replies": ["Dear customer, the duplicate charge on order A17 will be refunded."]},
        {"match": "ROLE_CLERK", "replies": [LOOKUP, "Order A17 was charged twice; I have flagged the duplicate."]},
    ],
    "default": NO_RULE,
}  # fmt: skip


class OrdersPlugin:
    """The desk's one tool (a kernel function), as the plugin ``orders``."""

    def __init__(self) -> None:
        from semantic_kernel.functions import kernel_function

        @kernel_function(name="lookup_order", description="Look up an order's charges.")
        def lookup_order(order_id: str) -> str:
            return f"Order {order_id}: charged 49.00 EUR twice on 2026-11-02."

        self.lookup_order = lookup_order


def _agent(base_url: str, name: str, role: str, tools: bool = False) -> Any:
    from openai import AsyncOpenAI
    from semantic_kernel.agents import ChatCompletionAgent
    from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion
    from semantic_kernel.functions import KernelPlugin

    client = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)
    service = OpenAIChatCompletion(ai_model_id="gpt-4o", async_client=client)
    plugins = [KernelPlugin.from_object("orders", OrdersPlugin())] if tools else None
    return ChatCompletionAgent(service=service, name=name, description=f"The desk's {name.lower()}.",
                               instructions=f"{role}. You work on a refund desk.", plugins=plugins)  # fmt: skip


def _expectation(messages: Iterable[Any], source: str, conversation: bool, handoff_tools: bool) -> Expectation:
    """From the messages the framework recorded (user request first): speakers, tool calls and handoffs."""
    from semantic_kernel.contents import AuthorRole, FunctionCallContent

    speakers: list[str] = []
    tools: list[tuple[str, str]] = []
    handoffs: list[tuple[str, str]] = []
    answers = 0
    for message in messages:
        if message.role != AuthorRole.ASSISTANT or not (message.items or message.content):
            continue  # (a streamed turn that ended in a handoff adds an empty assistant message: no answer)
        answers += 1
        speakers.append(message.name)
        for item in message.items:
            if isinstance(item, FunctionCallContent):
                if item.name.startswith(HANDOFF_PREFIX):
                    handoffs.append((message.name, item.name.removeprefix(HANDOFF_PREFIX)))
                else:
                    tools.append((message.name, item.name))
    if not handoff_tools:  # a group chat: the turn passes from one speaker to the next
        handoffs = [(a, b) for a, b in itertools.pairwise(speakers) if a != b]
    return Expectation(
        conversation=conversation, task=TASK, agents=list(dict.fromkeys(speakers)), handoffs=handoffs,
        tool_calls=tools, messages=1 + answers, source=source,
    )  # fmt: skip


def _record(run: str, settings: dict[str, Any], go: Callable[[str], Coroutine[Any, Any, Expectation]]) -> Path:
    # As Semantic Kernel's telemetry docs attach it: the handler on the root logger, Semantic Kernel's loggers only.
    with recording(SCRIPT, global_provider=True, logs=True, log_filter="semantic_kernel") as rec:
        expect = asyncio.run(go(rec.server.base_url))
    return write(FRAMEWORK, run, PACKAGES, {**settings, "env": SWITCHES}, expect, otlp_json(rec.exporter),
                 otlp_logs_json(rec.log_exporter))  # fmt: skip


async def _orchestrate(orchestration: Any) -> None:
    from semantic_kernel.agents.runtime import InProcessRuntime

    runtime = InProcessRuntime()
    runtime.start()
    try:
        result = await orchestration.invoke(task=TASK, runtime=runtime)
        await result.get(timeout=60)
    finally:
        await runtime.stop_when_idle()


def _user() -> Any:
    from semantic_kernel.contents import AuthorRole, ChatMessageContent

    return ChatMessageContent(role=AuthorRole.USER, content=TASK)


async def run_handoff(base_url: str) -> Expectation:
    from semantic_kernel.agents import HandoffOrchestration, OrchestrationHandoffs

    triage = _agent(base_url, "Triage", "ROLE_TRIAGE")
    billing = _agent(base_url, "Billing", "ROLE_BILLING", tools=True)
    reviewer = _agent(base_url, "Reviewer", "ROLE_REVIEWER")
    handoffs = (
        OrchestrationHandoffs()
        .add(triage, billing, "Transfer to Billing for charges and refunds.")
        .add(billing, reviewer, "Transfer to Reviewer to approve a refund.")
    )
    answers: list[Any] = [_user()]
    orchestration = HandoffOrchestration(members=[triage, billing, reviewer], handoffs=handoffs,
                                         agent_response_callback=answers.append)  # fmt: skip
    await _orchestrate(orchestration)
    return _expectation(answers, "HandoffOrchestration(agent_response_callback=...): every message the agents "
                        "produced (assistant: name, FunctionCallContent; Handoff-transfer_to_<agent> calls "
                        "are the handoffs)", True, handoff_tools=True)  # fmt: skip


def handoff() -> Path:
    return _record("handoff", {"orchestration": "HandoffOrchestration", "agents": 3, "runtime": "InProcessRuntime"},
                   run_handoff)  # fmt: skip


async def run_group_chat(base_url: str) -> Expectation:
    from semantic_kernel.agents import GroupChatOrchestration, RoundRobinGroupChatManager

    members = [
        _agent(base_url, "Researcher", "ROLE_RESEARCHER", tools=True),
        _agent(base_url, "Writer", "ROLE_WRITER"),
        _agent(base_url, "Reviewer", "ROLE_REVIEWER"),
    ]
    answers: list[Any] = [_user()]
    orchestration = GroupChatOrchestration(members=members, manager=RoundRobinGroupChatManager(max_rounds=3),
                                           agent_response_callback=answers.append)  # fmt: skip
    await _orchestrate(orchestration)
    return _expectation(answers, "GroupChatOrchestration(agent_response_callback=...): every message the "
                        "agents produced (assistant: name, FunctionCallContent); the turn passes on each change "
                        "of speaker", True, handoff_tools=False)  # fmt: skip


def group_chat() -> Path:
    return _record("group-chat", {"orchestration": "GroupChatOrchestration", "manager": "RoundRobinGroupChatManager",
                                  "max_rounds": 3, "runtime": "InProcessRuntime"}, run_group_chat)  # fmt: skip


async def run_agent_group_chat(base_url: str) -> Expectation:
    from semantic_kernel.agents import AgentGroupChat
    from semantic_kernel.agents.strategies import DefaultTerminationStrategy, SequentialSelectionStrategy
    from semantic_kernel.contents import AuthorRole, FunctionCallContent

    members = [
        _agent(base_url, "Researcher", "ROLE_RESEARCHER", tools=True),
        _agent(base_url, "Writer", "ROLE_WRITER"),
        _agent(base_url, "Reviewer", "ROLE_REVIEWER"),
    ]
    chat = AgentGroupChat(agents=members, selection_strategy=SequentialSelectionStrategy(),
                          termination_strategy=DefaultTerminationStrategy(maximum_iterations=3))  # fmt: skip
    await chat.add_chat_message(TASK)
    async for _ in chat.invoke():
        pass
    history = [m async for m in chat.get_chat_messages()]
    history.reverse()  # (newest first)
    # The chat history holds each turn's visible answer; the tool-call answers before it are in the thread of
    # the channel the agents share (a ChatHistoryChannel), which holds each visible answer twice.
    calls: dict[str, list[Any]] = {}
    for channel in chat.agent_channels.values():
        async for message in channel.thread.get_messages():
            if message.role == AuthorRole.ASSISTANT and any(isinstance(i, FunctionCallContent)
                                                            for i in message.items):  # fmt: skip
                calls.setdefault(message.name, []).append(message)
    messages: list[Any] = []
    for message in history:
        if message.role == AuthorRole.ASSISTANT:
            messages += calls.pop(message.name, [])
        messages.append(message)
    return _expectation(messages, "AgentGroupChat.get_chat_messages(): the chat history (each turn's answer, "
                        "by name), with the FunctionCallContent answers before it from the agents' "
                        "ChatHistoryChannel thread; the turn passes on each change of speaker", True,
                        handoff_tools=False)  # fmt: skip


def agent_group_chat() -> Path:
    settings = {"chat": "AgentGroupChat", "selection": "SequentialSelectionStrategy",
                "termination": "DefaultTerminationStrategy(maximum_iterations=3)"}  # fmt: skip
    return _record("agent-group-chat", settings, run_agent_group_chat)


def solo() -> Path:
    async def go(base_url: str) -> Expectation:
        clerk = _agent(base_url, "Clerk", "ROLE_CLERK", tools=True)
        response = await clerk.get_response(messages=TASK)
        history = [m async for m in response.thread.get_messages()]
        source = "ChatCompletionAgent.get_response(...).thread.get_messages(): the thread's chat history"
        return _expectation(history, f"{source} (assistant: name, FunctionCallContent)", False, handoff_tools=False)

    return _record("solo", {"agents": 1, "agent": "ChatCompletionAgent"}, go)


RUNS = {"handoff": handoff, "group-chat": group_chat, "agent-group-chat": agent_group_chat, "solo": solo}

if __name__ == "__main__":
    os.environ.update(SWITCHES)  # read by Semantic Kernel when its telemetry modules are imported
    sys.exit(main(RUNS, sys.argv[1:]))
