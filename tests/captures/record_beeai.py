"""Record BeeAI captures, traced by ``openinference-instrumentation-beeai``.

``nox -s "captures(framework='beeai')"`` (or ``python -m tests.captures.record_beeai [RUN ...]`` in that environment)
writes ``tests/data/captures/beeai/<run>.json``. The agents are ``RequirementAgent``s on ``OpenAIChatModel`` pointed
at the scripted server. The expectation is read from BeeAI's own events, never a span: every ``RequirementAgent``
iteration emits ``start``, which orders them, then ``success`` (``RequirementAgentSuccessEvent``: its
``response``, one model answer, with its tool calls, once those have run); the event's creator is the agent that
ran it (a ``HandoffTool`` runs a clone of its target, with its name).
A call to a ``HandoffTool`` is a delegation (its target agent takes the turn, and its answer is the tool's result,
back to the caller); every other call (``final_answer`` included: it is one of the agent's tools, the one its
answer is sent through) is a tool call.

- ``handoff``: triage hands the task to billing (``HandoffTool``), which calls ``lookup_order`` and answers with
  ``final_answer``; triage then answers with ``final_answer``.
- ``solo``: one RequirementAgent (``clerk``) with ``lookup_order``: the control run.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from pathlib import Path
from typing import Any

from tests.captures._record import NO_RULE, Expectation, main, otlp_json, recording, write

FRAMEWORK = "beeai"
PACKAGES = ["beeai-framework", "openai", "openinference-instrumentation-beeai"]
TASK = "I was charged twice for order A17. Please refund the duplicate charge."
SOURCE = ("BeeAI's events (Emitter.root()): each RequirementAgent iteration (one model answer), ordered by its "
          "'start' event; its 'success' event (RequirementAgentSuccessEvent): the creator's meta.name (the agent), "
          "response.get_tool_calls() (a HandoffTool's name: a delegation; any other, final_answer included: a tool "
          "call)")  # fmt: skip

SCRIPT = {
    "rules": [
        {"match": "ROLE_TRIAGE", "replies": [
            {"tool": "billing", "args": {"task": "Refund the duplicate charge on order A17."}},
            {"tool": "final_answer", "args": {"response": "Billing has refunded the duplicate 49.00 EUR on A17."}},
        ]},
        {"match": "ROLE_BILLING", "replies": [
            {"tool": "lookup_order", "args": {"order_id": "A17"}},
            {"tool": "final_answer", "args": {"response": "A17 was charged 49.00 EUR twice; I refunded one."}},
        ]},
        {"match": "ROLE_CLERK", "replies": [
            {"tool": "lookup_order", "args": {"order_id": "A17"}},
            {"tool": "final_answer", "args": {"response": "Order A17 was charged twice; I flagged the duplicate."}},
        ]},
    ],
    "default": NO_RULE,
}  # fmt: skip


def _lookup_order() -> Any:
    from beeai_framework.tools import tool

    @tool
    def lookup_order(order_id: str) -> str:
        """Look up an order's charges.

        Args:
            order_id: the order's id
        """
        return f"Order {order_id}: charged 49.00 EUR twice on 2026-11-02."

    return lookup_order


def _agent(name: str, role: str, base_url: str, tools: list[Any], description: str = "") -> Any:
    from beeai_framework.adapters.openai import OpenAIChatModel
    from beeai_framework.agents.requirement import RequirementAgent

    llm = OpenAIChatModel("gpt-4o-mini", api_key="unused", base_url=base_url)
    return RequirementAgent(name=name, description=description or name, llm=llm, tools=tools,
                            instructions=f"{role}. Help the customer.")  # fmt: skip


class _Answers:
    """Each RequirementAgent iteration, in the order it started (its ``start`` event; its ``success`` event comes
    after the tools it called have run, a handoff's whole delegated run included): (agent name, tool calls)."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, list[str]]] = []
        self._open: dict[int, int] = {}  # a run's state -> the index of its iteration under way

    def __call__(self, data: Any, meta: Any) -> None:
        from beeai_framework.agents.requirement.events import (
            RequirementAgentStartEvent,
            RequirementAgentSuccessEvent,
        )

        if meta.name == "start" and isinstance(data, RequirementAgentStartEvent):
            self._open[id(data.state)] = len(self.steps)
            self.steps.append((_agent_of(meta), []))
        elif meta.name == "success" and isinstance(data, RequirementAgentSuccessEvent):
            agent, calls = self.steps[self._open.pop(id(data.state))]
            assert agent == _agent_of(meta), (agent, meta.path)
            calls.extend(call.tool_name for call in data.response.get_tool_calls())


def _agent_of(meta: Any) -> str:
    """The agent whose run emitted the event: the run context's instance (the agent, or HandoffTool's clone)."""
    from beeai_framework.agents import BaseAgent

    creator = meta.creator
    for candidate in (creator, getattr(creator, "instance", None), getattr(creator, "_instance", None)):
        if isinstance(candidate, BaseAgent):
            return str(candidate.meta.name)
    raise AssertionError(f"no agent behind the success event {meta.path} ({type(creator).__name__})")


def _expectation(answers: _Answers, delegations: set[str], multi: bool) -> Expectation:
    speakers = [agent for agent, _ in answers.steps]
    tools = [(agent, call) for agent, calls in answers.steps for call in calls if call not in delegations]
    return Expectation(
        conversation=multi, task=TASK, agents=list(dict.fromkeys(speakers)),
        handoffs=[(a, b) for a, b in itertools.pairwise(speakers) if a != b], tool_calls=tools,
        messages=1 + len(answers.steps), source=SOURCE,
    )  # fmt: skip


def _record(run: str, build: Any, multi: bool, settings: dict[str, Any]) -> Path:
    from beeai_framework.emitter import Emitter
    from openinference.instrumentation.beeai import BeeAIInstrumentor

    answers = _Answers()
    with recording(SCRIPT) as rec:
        instrumentor = BeeAIInstrumentor()
        instrumentor.instrument(tracer_provider=rec.provider)
        cleanup = Emitter.root().on("*.*", answers)
        agent, delegations = build(rec.server.base_url)
        output = asyncio.run(_run(agent))
        cleanup()
        instrumentor.uninstrument()
    expect = _expectation(answers, delegations, multi)
    settings = {**settings, "model": "OpenAIChatModel(gpt-4o-mini, base_url=scripted server)",
                "answer": output.last_message.text}  # fmt: skip
    return write(FRAMEWORK, run, PACKAGES, settings, expect, otlp_json(rec.exporter))


async def _run(agent: Any) -> Any:
    return await agent.run(TASK)


def _handoff_agents(base_url: str) -> tuple[Any, set[str]]:
    from beeai_framework.tools.handoff import HandoffTool

    billing = _agent("billing", "ROLE_BILLING", base_url, [_lookup_order()], "Charges and refunds.")
    to_billing = HandoffTool(billing, name="billing", description="Hand the task to billing.")
    return _agent("triage", "ROLE_TRIAGE", base_url, [to_billing]), {to_billing.name}


def handoff() -> Path:
    settings = {"agents": {"triage": "RequirementAgent, tools: HandoffTool(billing)",
                           "billing": "RequirementAgent, tools: lookup_order"}}  # fmt: skip
    return _record("handoff", _handoff_agents, True, settings)


def solo() -> Path:
    return _record("solo", lambda url: (_agent("clerk", "ROLE_CLERK", url, [_lookup_order()]), set()), False,
                   {"agents": {"clerk": "RequirementAgent, tools: lookup_order"}})  # fmt: skip


RUNS = {"handoff": handoff, "solo": solo}

if __name__ == "__main__":
    os.environ.setdefault("BEEAI_TELEMETRY", "false")
    sys.exit(main(RUNS, sys.argv[1:]))
