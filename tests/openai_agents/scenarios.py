"""Agents, scripts and a run helper for the OpenAI Agents SDK tier: real SDK runs against the scripted server.

Each agent's instructions carry a marker the scripted server matches (``examples/scripted_openai.py``); a marker
suffix keeps two runs that share the server apart. A transfer tool call is how the scripted "LLM" hands off.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from agents import (
    Agent,
    GuardrailFunctionOutput,
    InputGuardrail,
    Model,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    RunContextWrapper,
    RunHooks,
    Runner,
    Tool,
    function_tool,
    handoff,
)
from openai import AsyncOpenAI
from pydantic import BaseModel

APIS = ("chat_completions", "responses")
MODES = ("run", "run_streamed")


def model_for(api: str, base_url: str) -> Model:
    client = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)
    if api == "responses":
        return OpenAIResponsesModel(model="gpt-4o", openai_client=client)
    return OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client)


@function_tool
def refund(order_id: str) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


@function_tool
def lookup_order(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: shipped"


class TransferReason(BaseModel):
    reason: str


async def _noted(_ctx: RunContextWrapper[Any], _data: TransferReason) -> None:
    """on_handoff for a handoff with an input_type: the SDK validates the LLM's arguments against it."""


def triage_script(m: str = "") -> dict[str, Any]:
    return {
        "rules": [
            {"match": f"ROLE_TRIAGE{m}.", "replies": [{"tool": "transfer_to_billing_agent", "args": {}}]},
            {
                "match": f"ROLE_BILLING{m}.",
                "replies": [{"tool": "refund", "args": {"order_id": "A17"}}, f"Refund for A17 issued{m}."],
            },
        ],
        "default": "unscripted",
    }


def triage_agents(model: Model, m: str = "") -> Agent[Any]:
    billing = Agent(name="billing_agent", instructions=f"ROLE_BILLING{m}. Handle refunds.", tools=[refund], model=model)
    faq = Agent(name="faq_agent", instructions=f"ROLE_FAQ{m}. Answer questions.", model=model)
    return Agent(
        name="triage_agent",
        instructions=f"ROLE_TRIAGE{m}. Route the user.",
        handoffs=[billing, faq],
        model=model,
    )


CHAIN_SCRIPT: dict[str, Any] = {
    "rules": [
        {"match": "ROLE_TRIAGE.", "replies": [{"tool": "transfer_to_orders_agent", "args": {}}]},
        {
            "match": "ROLE_ORDERS.",
            "replies": [
                {"tool": "lookup_order", "args": {"order_id": "B2"}},
                {"tool": "transfer_to_refund_specialist", "args": {"reason": "order B2 arrived damaged"}},
            ],
        },
        {"match": "ROLE_REFUNDS.", "replies": [{"tool": "refund", "args": {"order_id": "B2"}}, "B2 refunded."]},
    ]
}


def chain_agents(model: Model) -> Agent[Any]:
    specialist = Agent(name="refund_specialist", instructions="ROLE_REFUNDS. Refund.", tools=[refund], model=model)
    orders = Agent(
        name="orders_agent",
        instructions="ROLE_ORDERS. Check orders.",
        tools=[lookup_order],
        handoffs=[handoff(specialist, input_type=TransferReason, on_handoff=_noted)],
        model=model,
    )
    return Agent(name="triage_agent", instructions="ROLE_TRIAGE. Route.", handoffs=[orders], model=model)


LOOP_SCRIPT: dict[str, Any] = {
    "rules": [{"match": "ROLE_LOOP.", "replies": [{"tool": "lookup_order", "args": {"order_id": "C3"}}]}]
}


def loop_agent(model: Model) -> Agent[Any]:
    return Agent(name="looping_agent", instructions="ROLE_LOOP. Keep checking.", tools=[lookup_order], model=model)


async def no_homework(_ctx: RunContextWrapper[Any], _agent: Agent[Any], text: Any) -> GuardrailFunctionOutput:
    tripped = "homework" in str(text)
    return GuardrailFunctionOutput(output_info={"homework": tripped}, tripwire_triggered=tripped)


def guarded_agent(model: Model) -> Agent[Any]:
    return Agent(
        name="tutor_agent",
        instructions="ROLE_TUTOR. Help.",
        input_guardrails=[InputGuardrail(guardrail_function=no_homework, name="no_homework")],
        model=model,
    )


GUARD_SCRIPT: dict[str, Any] = {"rules": [{"match": "ROLE_TUTOR.", "replies": ["Here is some help."]}]}

AS_TOOL_SCRIPT: dict[str, Any] = {
    "rules": [
        {"match": "ROLE_TRANSLATOR.", "replies": ["hola"]},
        {
            "match": "ROLE_MANAGER.",
            "replies": [{"tool": "translate_to_spanish", "args": {"input": "hello"}}, "The translation is: hola"],
        },
    ]
}


def manager_agents(model: Model) -> Agent[Any]:
    translator = Agent(name="translator_agent", instructions="ROLE_TRANSLATOR. Translate.", model=model)
    tool: Tool = translator.as_tool(tool_name="translate_to_spanish", tool_description="Translate to Spanish")
    return Agent(name="manager_agent", instructions="ROLE_MANAGER. Delegate.", tools=[tool], model=model)


@dataclass
class RecordingHooks(RunHooks[Any]):
    """The SDK's own run-level callbacks: a second oracle besides ``RunResult.new_items``."""

    events: list[tuple[str, ...]] = field(default_factory=list)

    async def on_agent_start(self, context: Any, agent: Agent[Any]) -> None:
        self.events.append(("agent_start", agent.name))

    async def on_handoff(self, context: Any, from_agent: Agent[Any], to_agent: Agent[Any]) -> None:
        self.events.append(("handoff", from_agent.name, to_agent.name))

    async def on_tool_start(self, context: Any, agent: Any, tool: Tool) -> None:
        self.events.append(("tool_start", agent.name, tool.name))

    def of(self, kind: str) -> list[tuple[str, ...]]:
        return [e[1:] for e in self.events if e[0] == kind]


async def run(
    agent: Agent[Any],
    task: str,
    *,
    mode: str = "run",
    hooks: RunHooks[Any] | None = None,
    max_turns: int = 10,
    run_config: RunConfig | None = None,
) -> Any:
    """One SDK run (``Runner.run`` or ``Runner.run_streamed`` drained); returns the SDK's result."""
    if mode == "run_streamed":
        result = Runner.run_streamed(agent, task, hooks=hooks, max_turns=max_turns, run_config=run_config)
        async for _event in result.stream_events():
            pass
        return result
    return await Runner.run(agent, task, hooks=hooks, max_turns=max_turns, run_config=run_config)


async def run_both(first: Any, second: Any) -> tuple[Any, Any]:
    a, b = await asyncio.gather(first, second)
    return a, b
