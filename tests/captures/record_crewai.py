"""Record CrewAI captures, traced by ``openinference-instrumentation-crewai``.

``nox -s "captures(framework='crewai')"`` (or ``python -m tests.captures.record_crewai [RUN ...]`` in that
environment) writes ``tests/data/captures/crewai/<run>.json``. The expectation is read from CrewAI's own event bus
(``crewai_event_bus``, in emission order): each ``LLMCallCompletedEvent`` is a model answer by its ``agent_role``
(the order of these is the order of turns: a delegation hands the turn to the coworker, whose answer returns it
to the manager); each ``ToolUsageFinishedEvent`` a tool call by its ``agent_role``, unless it is CrewAI's
delegation tool (``Delegate work to coworker``, ``Ask question to coworker``; ``delegate_work_to_coworker`` with
native tool calls), a handoff. The task is the crew's
task description (CrewAI has no user message: each agent is given its task).

- ``hierarchical``: a manager agent (``Process.hierarchical``) delegates to the researcher (who calls
  ``lookup_order``), then to the writer, then answers.
- ``solo``: one agent with one tool in a one-task crew: the control run, not a multi-agent conversation.
"""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path
from typing import Any

from tests.captures._record import CLERK, NO_RULE, RESEARCHER, WRITER, Expectation, main, otlp_json, recording, write

FRAMEWORK = "crewai"
PACKAGES = ["crewai", "openai", "openinference-instrumentation-crewai"]
TASK = "I was charged twice for order A17. Please refund the duplicate charge."
# CrewAI's delegation tools, by their names and the names native tool calling gives them
DELEGATION = (
    "Delegate work to coworker",
    "Ask question to coworker",
    "delegate_work_to_coworker",
    "ask_question_to_coworker",
)

SCRIPT = {
    "rules": [
        {"match": "ROLE_MANAGER", "replies": [
            {"tool": "delegate_work_to_coworker", "args": {
                "task": "Find the charges on order A17.", "context": "The customer says A17 was charged twice.",
                "coworker": "Researcher"}},
            {"tool": "delegate_work_to_coworker", "args": {
                "task": "Write the refund note for order A17.", "context": "A17 was charged 49.00 EUR twice.",
                "coworker": "Writer"}},
            "The duplicate 49.00 EUR charge on A17 is refunded; the customer has been told.",
        ]},
        RESEARCHER,
        WRITER,
        CLERK,
    ],
    "default": NO_RULE,
}  # fmt: skip


def _tool() -> Any:
    from crewai.tools import tool

    @tool("lookup_order")
    def lookup_order(order_id: str) -> str:
        """Look up an order's charges."""
        return f"Order {order_id}: charged 49.00 EUR twice on 2026-11-02."

    return lookup_order


def _llm(base_url: str) -> Any:
    from crewai import LLM

    return LLM(model="openai/gpt-4o", base_url=base_url, api_key="unused", max_retries=0)


def _instrumented(provider: Any, listener: bool = False) -> Any:
    from openinference.instrumentation.crewai import CrewAIInstrumentor

    instrumentor = CrewAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider, use_event_listener=listener)
    return instrumentor


def _kickoff(crew: Any) -> tuple[Any, list[Any]]:
    """Run the crew, with the events CrewAI emits meanwhile, in emission order."""
    from crewai.events import crewai_event_bus
    from crewai.events.types.llm_events import LLMCallCompletedEvent
    from crewai.events.types.tool_usage_events import ToolUsageFinishedEvent

    events: list[Any] = []

    def collect(_source: Any, event: Any) -> None:
        events.append(event)

    # (registered and removed one by one: scoped_handlers() would drop the instrumentor's own listener meanwhile)
    for kind in (LLMCallCompletedEvent, ToolUsageFinishedEvent):
        crewai_event_bus.on(kind)(collect)
    try:
        out = crew.kickoff()
        crewai_event_bus.flush()
    finally:
        for kind in (LLMCallCompletedEvent, ToolUsageFinishedEvent):
            crewai_event_bus.off(kind, collect)
    return out, sorted(events, key=lambda e: e.emission_sequence or 0)


def _expectation(events: list[Any], task: str, multi: bool) -> Expectation:
    speakers: list[str] = []
    tools: list[tuple[str, str]] = []
    for event in events:
        if type(event).__name__ == "LLMCallCompletedEvent":
            speakers.append(str(event.agent_role))
        elif event.tool_name not in DELEGATION:
            tools.append((str(event.agent_role), str(event.tool_name)))
    return Expectation(
        conversation=multi, task=task, agents=list(dict.fromkeys(speakers)),
        handoffs=[(a, b) for a, b in itertools.pairwise(speakers) if a != b], tool_calls=tools,
        messages=1 + len(speakers), source="crewai_event_bus during Crew.kickoff(), in emission order: "
        "LLMCallCompletedEvent.agent_role (a model answer; their order the turns), ToolUsageFinishedEvent "
        "agent_role / tool_name (the delegation tools: handoffs); the task: the crew's Task.description",
    )  # fmt: skip


def _hierarchical(run: str, listener: bool) -> Path:
    from crewai import Agent, Crew, Process, Task

    with recording(SCRIPT) as rec:
        instrumentor = _instrumented(rec.provider, listener)
        url = rec.server.base_url
        researcher = Agent(role="Researcher", goal="Find the facts of an order",
                           backstory="ROLE_RESEARCHER: a careful analyst.", llm=_llm(url), tools=[_tool()],
                           allow_delegation=False)  # fmt: skip
        writer = Agent(role="Writer", goal="Write to the customer", backstory="ROLE_WRITER: a concise writer.",
                       llm=_llm(url), allow_delegation=False)  # fmt: skip
        manager = Agent(role="Manager", goal="Get the request done by your team",
                        backstory="ROLE_MANAGER: you delegate.", llm=_llm(url), allow_delegation=True)  # fmt: skip
        task = Task(description=TASK, expected_output="the outcome, in one line")
        crew = Crew(agents=[researcher, writer], tasks=[task], process=Process.hierarchical, manager_agent=manager)
        _, events = _kickoff(crew)
        instrumentor.uninstrument()
    expect = _expectation(events, TASK, multi=True)
    settings = {"process": "hierarchical", "manager_agent": "Manager", "agents": ["Researcher", "Writer"],
                "instrument": {"use_event_listener": listener}}  # fmt: skip
    return write(FRAMEWORK, run, PACKAGES, settings, expect, otlp_json(rec.exporter))


def hierarchical() -> Path:
    return _hierarchical("hierarchical", listener=False)


def hierarchical_events() -> Path:
    return _hierarchical("hierarchical-events", listener=True)


def solo() -> Path:
    from crewai import Agent, Crew, Process, Task

    with recording(SCRIPT) as rec:
        instrumentor = _instrumented(rec.provider)
        clerk = Agent(role="Clerk", goal="Answer order questions", backstory="ROLE_CLERK: you answer.",
                      llm=_llm(rec.server.base_url), tools=[_tool()], allow_delegation=False)  # fmt: skip
        task = Task(description=TASK, expected_output="the outcome, in one line", agent=clerk)
        _, events = _kickoff(Crew(agents=[clerk], tasks=[task], process=Process.sequential))
        instrumentor.uninstrument()
    expect = _expectation(events, TASK, multi=False)
    return write(FRAMEWORK, "solo", PACKAGES, {"process": "sequential", "agents": 1}, expect,
                 otlp_json(rec.exporter))  # fmt: skip


RUNS = {"hierarchical": hierarchical, "hierarchical-events": hierarchical_events, "solo": solo}

if __name__ == "__main__":
    os.environ.setdefault("OPENAI_API_KEY", "unused")
    os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # CrewAI's own telemetry goes to its platform: off
    os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
    sys.exit(main(RUNS, sys.argv[1:]))
