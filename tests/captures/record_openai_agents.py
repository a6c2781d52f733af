"""Record OpenAI Agents SDK captures, traced by ``openinference-instrumentation-openai-agents``.

``nox -s "captures(framework='openai_agents')"`` (or ``python -m tests.captures.record_openai_agents [RUN ...]`` in
that environment) writes ``tests/data/captures/openai_agents/<run>.json``. The expectation is read from the SDK's
own record of the run, the ``RunResult``: ``raw_responses`` (each model answer), ``new_items`` (each item names
the agent it belongs to: ``ToolCallItem`` a tool call, ``HandoffOutputItem`` a handoff with its
``source_agent`` and ``target_agent``) and ``input`` (the user's request).

- ``desk``: triage hands off to billing (``transfer_to_billing``), billing calls ``lookup_order`` and hands off
  to reviewer (``transfer_to_reviewer``), reviewer answers.
- ``solo``: one agent with one tool: the control run, not a multi-agent conversation.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from tests.captures._record import CLERK, NO_RULE, Expectation, main, otlp_json, recording, write

FRAMEWORK = "openai_agents"
PACKAGES = ["openai-agents", "openai", "openinference-instrumentation-openai-agents"]
TASK = "I was charged twice for order A17. Please refund the duplicate charge."

SCRIPT = {
    "rules": [
        {"match": "ROLE_TRIAGE", "replies": [{"tool": "transfer_to_billing", "args": {}}]},
        {"match": "ROLE_BILLING", "replies": [
            {"tool": "lookup_order", "args": {"order_id": "A17"}},
            {"tool": "transfer_to_reviewer", "args": {}},
        ]},
        {"match": "ROLE_REVIEWER", "replies": ["Approved: the duplicate 49.00 EUR charge on A17 is refunded."]},
        CLERK,
    ],
    "default": NO_RULE,
}  # fmt: skip


def _tool() -> Any:
    from agents import function_tool

    @function_tool
    def lookup_order(order_id: str) -> str:
        """Look up an order's charges."""
        return f"Order {order_id}: charged 49.00 EUR twice on 2026-11-02."

    return lookup_order


def _model(base_url: str) -> Any:
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)
    return OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client)


def _instrumented(provider: Any) -> Any:
    from agents import set_trace_processors
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    set_trace_processors([])  # no export to OpenAI (offline); the instrumentor adds its own processor
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    return instrumentor


def _expectation(result: Any, multi: bool) -> Expectation:
    """From the RunResult: the agents in the order their items came, each handoff item's source and target, each
    tool call item by its agent; one message per model answer (``raw_responses``), after the user's request."""
    agents: list[str] = []
    handoffs: list[tuple[str, str]] = []
    tools: list[tuple[str, str]] = []
    for item in result.new_items:
        kind = type(item).__name__
        if kind == "HandoffOutputItem":
            handoffs.append((item.source_agent.name, item.target_agent.name))
            for name in (item.source_agent.name, item.target_agent.name):
                if name not in agents:
                    agents.append(name)
            continue
        if item.agent.name not in agents:
            agents.append(item.agent.name)
        if kind == "ToolCallItem":
            tools.append((item.agent.name, str(item.raw_item.name)))
    return Expectation(
        conversation=multi, task=str(result.input), agents=agents, handoffs=handoffs, tool_calls=tools,
        messages=1 + len(result.raw_responses), source="Runner.run(...) -> RunResult: input, raw_responses (each "
        "model answer), new_items (ToolCallItem.agent / raw_item.name, HandoffOutputItem.source_agent / "
        "target_agent)",
    )  # fmt: skip


def desk() -> Path:
    from agents import Agent, Runner

    with recording(SCRIPT) as rec:
        instrumentor = _instrumented(rec.provider)
        model = _model(rec.server.base_url)
        reviewer = Agent(name="reviewer", instructions="ROLE_REVIEWER. Approve or refuse refunds.", model=model)
        billing = Agent(name="billing", instructions="ROLE_BILLING. Check the order, then hand it to the reviewer.",
                        tools=[_tool()], handoffs=[reviewer], model=model)  # fmt: skip
        triage = Agent(name="triage", instructions="ROLE_TRIAGE. Route the request.", handoffs=[billing],
                       model=model)  # fmt: skip
        result = asyncio.run(Runner.run(triage, TASK, max_turns=8))
        instrumentor.uninstrument()
    expect = _expectation(result, multi=True)
    return write(FRAMEWORK, "desk", PACKAGES, {"agents": 3, "model": "chat completions"}, expect,
                 otlp_json(rec.exporter))  # fmt: skip


def solo() -> Path:
    from agents import Agent, Runner

    with recording(SCRIPT) as rec:
        instrumentor = _instrumented(rec.provider)
        clerk = Agent(name="clerk", instructions="ROLE_CLERK. Answer.", tools=[_tool()],
                      model=_model(rec.server.base_url))  # fmt: skip
        result = asyncio.run(Runner.run(clerk, TASK, max_turns=4))
        instrumentor.uninstrument()
    expect = _expectation(result, multi=False)
    return write(FRAMEWORK, "solo", PACKAGES, {"agents": 1, "model": "chat completions"}, expect,
                 otlp_json(rec.exporter))  # fmt: skip


RUNS = {"desk": desk, "solo": solo}

if __name__ == "__main__":
    os.environ.setdefault("OPENAI_API_KEY", "unused")
    sys.exit(main(RUNS, sys.argv[1:]))
