"""Record autogen-agentchat captures, traced by ``openinference-instrumentation-autogen-agentchat``.

``nox -s "captures(framework='autogen_agentchat')"`` (or ``python -m tests.captures.record_autogen_agentchat
[RUN ...]`` in that environment) writes ``tests/data/captures/autogen_agentchat/<run>.json``. The expectation is
read from autogen-agentchat's own record of the run, the ``TaskResult.messages`` list: each message's ``source``
(the user, or the agent that wrote it), the messages a model wrote (they carry ``models_usage``), each
``ToolCallExecutionEvent``'s results (a tool call each, less the handoff tool's, whose result is the
``HandoffMessage``'s content), each ``HandoffMessage``'s ``source`` and ``target``.

- ``swarm``: a Swarm: triage calls ``lookup_order``, then hands off to refunds (``transfer_to_refunds``), which
  calls ``issue_refund``, hands back to triage (``transfer_to_triage``), and triage closes the case.
- ``solo``: one AssistantAgent with one tool, run on its own: the control run, not a multi-agent conversation.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from tests.captures._record import CLERK, NO_RULE, Expectation, main, otlp_json, recording, write

FRAMEWORK = "autogen_agentchat"
PACKAGES = ["autogen-agentchat", "autogen-core", "autogen-ext", "openinference-instrumentation-autogen-agentchat"]
TASK = "I was charged twice for order A17. Please refund the duplicate charge."
MODEL_INFO = {"vision": False, "function_calling": True, "json_output": False, "family": "unknown",
              "structured_output": False}  # fmt: skip

SCRIPT = {
    "rules": [
        {"match": "ROLE_TRIAGE", "replies": [
            {"tool": "lookup_order", "args": {"order_id": "A17"}},
            {"tool": "transfer_to_refunds", "args": {}},
            "The duplicate charge on A17 is refunded; closing the case. TERMINATE",
        ]},
        {"match": "ROLE_REFUNDS", "replies": [
            {"tool": "issue_refund", "args": {"order_id": "A17", "amount": 49.0}},
            {"tool": "transfer_to_triage", "args": {}},
        ]},
        CLERK,
    ],
    "default": NO_RULE,
}  # fmt: skip


def lookup_order(order_id: str) -> str:
    """Look up an order's charges."""
    return f"Order {order_id}: charged 49.00 EUR twice on 2026-11-02."


def issue_refund(order_id: str, amount: float) -> str:
    """Refund an amount on an order."""
    return f"Refunded {amount:.2f} EUR on order {order_id}."


def _client(base_url: str) -> Any:
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    return OpenAIChatCompletionClient(model="gpt-4o", base_url=base_url, api_key="unused", model_info=MODEL_INFO,
                                      max_retries=0)  # fmt: skip


def _instrumented(provider: Any) -> Any:
    from openinference.instrumentation.autogen_agentchat import AutogenAgentChatInstrumentor

    instrumentor = AutogenAgentChatInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    return instrumentor


def _expectation(result: Any, multi: bool) -> Expectation:
    """From the TaskResult's messages: speakers in order, model-written messages (``models_usage``), tool results
    (less the handoff tools' calls that each HandoffMessage's context holds) and handoffs."""
    # The handoff tool's result is the HandoffMessage's content (the Handoff's message), from the same agent.
    handoff_results = {(m.source, m.content) for m in result.messages if type(m).__name__ == "HandoffMessage"}
    agents: list[str] = []
    handoffs: list[tuple[str, str]] = []
    tools: list[tuple[str, str]] = []
    answers = 0
    for m in result.messages:
        kind = type(m).__name__
        if m.source != "user" and m.source not in agents:
            agents.append(m.source)
        if m.models_usage is not None:
            answers += 1
        if kind == "HandoffMessage":
            handoffs.append((m.source, m.target))
        elif kind == "ToolCallExecutionEvent":
            tools += [(m.source, r.name) for r in m.content if (m.source, r.content) not in handoff_results]
    return Expectation(
        conversation=multi, task=TASK, agents=agents, handoffs=handoffs, tool_calls=tools, messages=1 + answers,
        source="run(task=...) -> TaskResult.messages: source, models_usage (a model's answer), "
        "ToolCallExecutionEvent results (less the handoff tools': their result is the HandoffMessage's content), "
        "HandoffMessage source / target",
    )  # fmt: skip


def swarm() -> Path:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
    from autogen_agentchat.teams import Swarm

    with recording(SCRIPT) as rec:
        instrumentor = _instrumented(rec.provider)
        url = rec.server.base_url
        triage = AssistantAgent("triage", _client(url), tools=[lookup_order], handoffs=["refunds"],
                                system_message="ROLE_TRIAGE. Look the order up; refunds go to refunds.")  # fmt: skip
        refunds = AssistantAgent("refunds", _client(url), tools=[issue_refund], handoffs=["triage"],
                                 system_message="ROLE_REFUNDS. Refund, then hand back to triage.")  # fmt: skip
        stop = TextMentionTermination("TERMINATE") | MaxMessageTermination(20)
        result = asyncio.run(Swarm([triage, refunds], termination_condition=stop).run(task=TASK))
        instrumentor.uninstrument()
    expect = _expectation(result, multi=True)
    settings = {"team": "Swarm", "stop_reason": result.stop_reason}
    return write(FRAMEWORK, "swarm", PACKAGES, settings, expect, otlp_json(rec.exporter))


def solo() -> Path:
    from autogen_agentchat.agents import AssistantAgent

    with recording(SCRIPT) as rec:
        instrumentor = _instrumented(rec.provider)
        clerk = AssistantAgent("clerk", _client(rec.server.base_url), tools=[lookup_order],
                               reflect_on_tool_use=True, system_message="ROLE_CLERK. Answer.")  # fmt: skip
        result = asyncio.run(clerk.run(task=TASK))
        instrumentor.uninstrument()
    expect = _expectation(result, multi=False)
    return write(FRAMEWORK, "solo", PACKAGES, {"agents": 1, "team": None}, expect, otlp_json(rec.exporter))


RUNS = {"swarm": swarm, "solo": solo}

if __name__ == "__main__":
    os.environ.setdefault("OPENAI_API_KEY", "unused")
    os.environ.setdefault("AUTOGEN_DISABLE_RUNTIME_TRACING", "true")  # autogen-core's own spans: not adaptable (docs)
    sys.exit(main(RUNS, sys.argv[1:]))
