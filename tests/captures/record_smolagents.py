"""Record smolagents captures, traced by ``openinference-instrumentation-smolagents``.

``nox -s "captures(framework='smolagents')"`` (or ``python -m tests.captures.record_smolagents [RUN ...]`` in that
environment) writes ``tests/data/captures/smolagents/<run>.json``. The expectation is read from each agent's own
memory (``agent.memory.steps``): the ``TaskStep``'s task; each ``ActionStep`` (one model answer,
``model_output_message``) with its ``tool_calls`` and its ``timing.start_time``, which orders the agents' steps
into one run. A call whose name is a managed agent's is a delegation (the manager hands the turn to it, and the
managed agent's answer returns it); every other call (``final_answer`` included: it is one of the agent's tools)
is a tool call.

- ``manager``: a manager ToolCallingAgent delegates to its managed ``researcher`` (which calls ``lookup_order``
  and answers with ``final_answer``), then answers with ``final_answer``.
- ``solo``: one ToolCallingAgent with one tool: the control run, not a multi-agent conversation.
"""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path
from typing import Any

from tests.captures._record import NO_RULE, Expectation, main, otlp_json, recording, write

FRAMEWORK = "smolagents"
PACKAGES = ["smolagents", "openai", "openinference-instrumentation-smolagents"]
TASK = "I was charged twice for order A17. Please refund the duplicate charge."

SCRIPT = {
    "rules": [
        {"match": "ROLE_RESEARCHER", "replies": [
            {"tool": "lookup_order", "args": {"order_id": "A17"}},
            {"tool": "final_answer", "args": {"answer": "Order A17 was charged 49.00 EUR twice on 2026-11-02."}},
        ]},
        {"match": "ROLE_MANAGER", "replies": [
            {"tool": "researcher", "args": {"task": "Find the charges on order A17."}},
            {"tool": "final_answer", "args": {"answer": "The duplicate 49.00 EUR charge on A17 is refunded."}},
        ]},
        {"match": "ROLE_CLERK", "replies": [
            {"tool": "lookup_order", "args": {"order_id": "A17"}},
            {"tool": "final_answer", "args": {"answer": "Order A17 was charged twice; I have flagged the duplicate."}},
        ]},
    ],
    "default": NO_RULE,
}  # fmt: skip


def _tool() -> Any:
    from smolagents import tool

    @tool
    def lookup_order(order_id: str) -> str:
        """Look up an order's charges.

        Args:
            order_id: the order's id
        """
        return f"Order {order_id}: charged 49.00 EUR twice on 2026-11-02."

    return lookup_order


def _model(base_url: str) -> Any:
    from smolagents import OpenAIServerModel

    return OpenAIServerModel(model_id="gpt-4o", api_base=base_url, api_key="unused")


def _instrumented(provider: Any) -> Any:
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor

    instrumentor = SmolagentsInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    return instrumentor


def _expectation(agents: list[Any], multi: bool) -> Expectation:
    """From the agents' memories: every action step in start order (one model answer each), the agent that took
    it, its calls: a managed agent's name delegates, any other name is a tool call."""
    managed = {name for a in agents for name in (a.managed_agents or {})}
    steps: list[tuple[float, str, list[str]]] = []
    task = ""
    for agent in agents:
        for step in agent.memory.steps:
            kind = type(step).__name__
            if kind == "TaskStep" and not task:
                task = str(step.task)
            elif kind == "ActionStep" and step.model_output_message is not None:
                steps.append((step.timing.start_time, str(agent.name), [c.name for c in step.tool_calls or ()]))
    steps.sort(key=lambda s: s[0])
    speakers = [name for _, name, _ in steps]
    tools = [(name, call) for _, name, calls in steps for call in calls if call not in managed]
    return Expectation(
        conversation=multi, task=task, agents=list(dict.fromkeys(speakers)),
        handoffs=[(a, b) for a, b in itertools.pairwise(speakers) if a != b], tool_calls=tools,
        messages=1 + len(steps), source="agent.memory.steps of the manager and each managed agent: TaskStep.task; "
        "ActionStep.model_output_message (a model answer), .tool_calls (a managed agent's name: a delegation), "
        ".timing.start_time (the order of turns)",
    )  # fmt: skip


def manager() -> Path:
    from smolagents import ToolCallingAgent

    with recording(SCRIPT) as rec:
        instrumentor = _instrumented(rec.provider)
        url = rec.server.base_url
        researcher = ToolCallingAgent(tools=[_tool()], model=_model(url), name="researcher",
                                      description="Finds the facts of an order.", instructions="ROLE_RESEARCHER",
                                      max_steps=4, verbosity_level=0)  # fmt: skip
        lead = ToolCallingAgent(tools=[], model=_model(url), managed_agents=[researcher], name="manager",
                                instructions="ROLE_MANAGER", max_steps=4, verbosity_level=0)  # fmt: skip
        lead.run(TASK)
        instrumentor.uninstrument()
    expect = _expectation([lead, researcher], multi=True)
    settings = {"manager": "ToolCallingAgent", "managed_agents": ["researcher (ToolCallingAgent)"]}
    return write(FRAMEWORK, "manager", PACKAGES, settings, expect, otlp_json(rec.exporter))


def solo() -> Path:
    from smolagents import ToolCallingAgent

    with recording(SCRIPT) as rec:
        instrumentor = _instrumented(rec.provider)
        clerk = ToolCallingAgent(tools=[_tool()], model=_model(rec.server.base_url), name="clerk",
                                 instructions="ROLE_CLERK", max_steps=4, verbosity_level=0)  # fmt: skip
        clerk.run(TASK)
        instrumentor.uninstrument()
    expect = _expectation([clerk], multi=False)
    return write(FRAMEWORK, "solo", PACKAGES, {"agents": 1}, expect, otlp_json(rec.exporter))


RUNS = {"manager": manager, "solo": solo}

if __name__ == "__main__":
    os.environ.setdefault("OPENAI_API_KEY", "unused")
    sys.exit(main(RUNS, sys.argv[1:]))
