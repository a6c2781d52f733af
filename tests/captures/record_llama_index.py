"""Record LlamaIndex AgentWorkflow captures, traced by ``openinference-instrumentation-llama-index``.

``nox -s "captures(framework='llama_index')"`` (or ``python -m tests.captures.record_llama_index [RUN ...]`` in that
environment) writes ``tests/data/captures/llama_index/<run>.json``. The expectation is read from the workflow's own
event stream (``handler.stream_events()``): ``AgentOutput`` (each model answer, by ``current_agent_name``),
``ToolCallResult`` (each tool call; the ``handoff`` tool's ``to_agent`` is the handoff) and the ``user_msg`` the
run was started with.

- ``desk``: triage hands off to billing (``handoff``, ``to_agent``/``reason``), billing calls ``lookup_order``
  and hands off to reviewer, reviewer answers.
- ``solo``: one agent with one tool: the control run, not a multi-agent conversation.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from tests.captures._record import CLERK, NO_RULE, Expectation, main, otlp_json, recording, write

FRAMEWORK = "llama_index"
PACKAGES = ["llama-index-core", "llama-index-llms-openai", "openinference-instrumentation-llama-index"]
TASK = "I was charged twice for order A17. Please refund the duplicate charge."

DESK_SCRIPT = {
    "rules": [
        {"match": "ROLE_TRIAGE", "replies": [
            {"tool": "handoff", "args": {"to_agent": "billing", "reason": "A duplicate charge is a billing matter."}},
        ]},
        {"match": "ROLE_BILLING", "replies": [
            {"tool": "lookup_order", "args": {"order_id": "A17"}},
            {"tool": "handoff", "args": {"to_agent": "reviewer", "reason": "Refunds over 40 EUR need a review."}},
        ]},
        {"match": "ROLE_REVIEWER", "replies": ["Approved: the duplicate 49.00 EUR charge on A17 is refunded."]},
    ],
    "default": NO_RULE,
}  # fmt: skip
SOLO_SCRIPT = {
    "rules": [
        CLERK,
    ],
    "default": NO_RULE,
}  # fmt: skip


def lookup_order(order_id: str) -> str:
    """Look up an order's charges."""
    return f"Order {order_id}: charged 49.00 EUR twice on 2026-11-02."


async def _run(workflow: Any, task: str) -> Expectation:
    from llama_index.core.agent.workflow import AgentOutput, ToolCallResult

    handler = workflow.run(user_msg=task)
    agents: list[str] = []
    handoffs: list[tuple[str, str]] = []
    tools: list[tuple[str, str]] = []
    answers = 0
    current = workflow.root_agent
    async for event in handler.stream_events():
        if isinstance(event, AgentOutput):
            answers += 1
            current = event.current_agent_name
            if current not in agents:
                agents.append(current)
        elif isinstance(event, ToolCallResult):
            if event.tool_name == "handoff":
                handoffs.append((current, str(event.tool_kwargs["to_agent"])))
            else:
                tools.append((current, event.tool_name))
    await handler
    return Expectation(
        conversation=len(agents) > 1, task=task, agents=agents, handoffs=handoffs, tool_calls=tools,
        messages=1 + answers, source="AgentWorkflow.run(user_msg=...).stream_events(): AgentOutput "
        "(current_agent_name), ToolCallResult (tool_name; handoff's tool_kwargs['to_agent'])",
    )  # fmt: skip


def _llm(base_url: str) -> Any:
    from llama_index.llms.openai import OpenAI

    return OpenAI(model="gpt-4o", api_base=base_url, api_key="unused", max_retries=0)


def _instrumented(provider: Any) -> Any:
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    instrumentor = LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    return instrumentor


def desk() -> Path:
    from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent

    with recording(DESK_SCRIPT) as rec:
        instrumentor = _instrumented(rec.provider)
        llm = _llm(rec.server.base_url)
        triage = FunctionAgent(name="triage", description="Routes customer requests.", llm=llm,
                               system_prompt="ROLE_TRIAGE. Route the request.", can_handoff_to=["billing"])  # fmt: skip
        billing = FunctionAgent(name="billing", description="Handles charges and refunds.", llm=llm,
                                system_prompt="ROLE_BILLING. Check the order.", tools=[lookup_order],
                                can_handoff_to=["reviewer"])  # fmt: skip
        reviewer = FunctionAgent(name="reviewer", description="Approves refunds.", llm=llm,
                                 system_prompt="ROLE_REVIEWER. Approve or refuse.")  # fmt: skip
        workflow = AgentWorkflow(agents=[triage, billing, reviewer], root_agent="triage")
        expect = asyncio.run(_run(workflow, TASK))
        instrumentor.uninstrument()
    return write(FRAMEWORK, "desk", PACKAGES, {"agents": 3, "content": "default (captured)"}, expect,
                 otlp_json(rec.exporter))  # fmt: skip


def solo() -> Path:
    from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent

    with recording(SOLO_SCRIPT) as rec:
        instrumentor = _instrumented(rec.provider)
        clerk = FunctionAgent(name="clerk", description="Answers order questions.", llm=_llm(rec.server.base_url),
                              system_prompt="ROLE_CLERK. Answer.", tools=[lookup_order])  # fmt: skip
        expect = asyncio.run(_run(AgentWorkflow(agents=[clerk]), TASK))
        instrumentor.uninstrument()
    return write(FRAMEWORK, "solo", PACKAGES, {"agents": 1, "content": "default (captured)"}, expect,
                 otlp_json(rec.exporter))  # fmt: skip


RUNS = {"desk": desk, "solo": solo}

if __name__ == "__main__":
    os.environ.setdefault("OPENAI_API_KEY", "unused")
    sys.exit(main(RUNS, sys.argv[1:]))
