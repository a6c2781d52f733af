"""Record Agno team captures, traced by ``openinference-instrumentation-agno``.

``nox -s "captures(framework='agno')"`` (or ``python -m tests.captures.record_agno [RUN ...]`` in that
environment) writes ``tests/data/captures/agno/<run>.json``. The expectation is read from Agno's own record of
the run: the team's ``TeamRunOutput`` (the leader's ``messages``, whose ``delegate_task_to_member`` tool calls name
the member by its id, and ``member_responses``, each member's ``RunOutput`` with its ``messages`` and ``tools``).

- ``team``: a coordinating leader delegates to a researcher (who calls ``lookup_order``) and then to a writer,
  and answers; then, in the same thread, a single agent runs on its own (a second run, not a fourth agent).
- ``team-hidden``: the same team with ``OPENINFERENCE_HIDE_INPUTS`` and ``OPENINFERENCE_HIDE_OUTPUTS`` set: the
  structure is read, the content is not, and the reason names the switches.
- ``solo``: one agent with one tool: the control run, not a multi-agent conversation.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.captures._record import CLERK, NO_RULE, RESEARCHER, WRITER, Expectation, main, otlp_json, recording, write

FRAMEWORK = "agno"
PACKAGES = ["agno", "openai", "openinference-instrumentation-agno"]
TASK = "I was charged twice for order A17. Please refund the duplicate charge."
DELEGATE = ("delegate_task_to_member", "delegate_task_to_members")

SCRIPT = {
    "rules": [
        {"match": "ROLE_LEAD", "replies": [
            {"tool": "delegate_task_to_member", "args": {"member_id": "researcher",
                                                         "task": "Find the charges on order A17."}},
            {"tool": "delegate_task_to_member", "args": {"member_id": "writer",
                                                         "task": "Write the refund note for order A17."}},
            "The duplicate 49.00 EUR charge on A17 is refunded; the customer has been told.",
        ]},
        RESEARCHER,
        WRITER,
        CLERK,
    ],
    "default": NO_RULE,
}  # fmt: skip


def lookup_order(order_id: str) -> str:
    """Look up an order's charges.

    Args:
        order_id: the order's id
    """
    return f"Order {order_id}: charged 49.00 EUR twice on 2026-11-02."


def _model(base_url: str) -> Any:
    from agno.models.openai import OpenAIChat

    return OpenAIChat(id="gpt-4o", base_url=base_url, api_key="unused", max_retries=0)


def _instrumented(provider: Any) -> Any:
    from openinference.instrumentation.agno import AgnoInstrumentor

    instrumentor = AgnoInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    return instrumentor


def _answers(messages: Any) -> list[Any]:
    return [m for m in messages or () if m.role == "assistant"]


def _team_expectation(team: Any, output: Any) -> Expectation:
    """From Agno's TeamRunOutput: the leader's answers in order, each delegation handing the turn to the member
    its ``member_id`` names (the member's RunOutput says what it did) and the leader's next answer taking it back."""
    from agno.utils.team import get_member_id

    by_id = {get_member_id(m): m.name for m in team.members}
    members = {r.agent_name: r for r in output.member_responses}
    speakers: list[str] = []
    tools: list[tuple[str, str]] = []
    answers = 0
    for message in _answers(output.messages):
        answers += 1
        speakers.append(team.name)
        for call in message.tool_calls or ():
            name = call["function"]["name"]
            if name in DELEGATE:
                member = by_id[json.loads(call["function"]["arguments"])["member_id"]]
                speakers.append(member)
                run = members[member]
                answers += len(_answers(run.messages))
                tools += [(member, t.tool_name) for t in run.tools or ()]
            else:
                tools.append((team.name, name))
    handoffs = [(a, b) for a, b in itertools.pairwise(speakers) if a != b]
    return Expectation(
        conversation=True, task=TASK, agents=list(dict.fromkeys(speakers)), handoffs=handoffs, tool_calls=tools,
        messages=1 + answers, source="Team.run(...) -> TeamRunOutput: the leader's messages (assistant answers, "
        "delegate_task_to_member tool calls by member id), member_responses (RunOutput.messages, .tools)",
    )  # fmt: skip


def _team(base_url: str) -> Any:
    from agno.agent import Agent
    from agno.team import Team

    researcher = Agent(name="Researcher", role="Finds the facts of an order.", model=_model(base_url),
                       instructions="ROLE_RESEARCHER. Look the order up.", tools=[lookup_order])  # fmt: skip
    writer = Agent(name="Writer", role="Writes to the customer.", model=_model(base_url),
                   instructions="ROLE_WRITER. Write the note.")  # fmt: skip
    return Team(name="Support Team", members=[researcher, writer], model=_model(base_url),
                instructions="ROLE_LEAD. Coordinate the team.")  # fmt: skip


def _record_team(run: str, hidden: tuple[str, ...]) -> Path:
    from agno.agent import Agent

    for switch in hidden:
        os.environ[switch] = "true"
    try:
        with recording(SCRIPT) as rec:
            instrumentor = _instrumented(rec.provider)
            team = _team(rec.server.base_url)
            output = team.run(TASK)
            expect = _team_expectation(team, output)
            # The same thread runs a single agent afterwards: its own run, not a member of the team's.
            Agent(name="Clerk", model=_model(rec.server.base_url), instructions="ROLE_CLERK. Answer.",
                  tools=[lookup_order]).run("Was order A17 charged twice?")  # fmt: skip
            instrumentor.uninstrument()
    finally:
        for switch in hidden:
            del os.environ[switch]
    settings = {"team": "coordinate (default)", "then": "a single agent in the same thread",
                "hidden": list(hidden)}  # fmt: skip
    expect.hidden = list(hidden)
    return write(FRAMEWORK, run, PACKAGES, settings, expect, otlp_json(rec.exporter))


def team() -> Path:
    return _record_team("team", ())


def team_hidden() -> Path:
    return _record_team("team-hidden", ("OPENINFERENCE_HIDE_INPUTS", "OPENINFERENCE_HIDE_OUTPUTS"))


def solo() -> Path:
    from agno.agent import Agent

    with recording(SCRIPT) as rec:
        instrumentor = _instrumented(rec.provider)
        clerk = Agent(name="Clerk", model=_model(rec.server.base_url), instructions="ROLE_CLERK. Answer.",
                      tools=[lookup_order])  # fmt: skip
        output = clerk.run(TASK)
        instrumentor.uninstrument()
    expect = Expectation(
        conversation=False, task=TASK, agents=[str(output.agent_name)],
        tool_calls=[(str(output.agent_name), t.tool_name) for t in output.tools or ()],
        messages=1 + len(_answers(output.messages)), source="Agent.run(...) -> RunOutput (messages, tools)",
    )  # fmt: skip
    return write(FRAMEWORK, "solo", PACKAGES, {"agents": 1}, expect, otlp_json(rec.exporter))


RUNS = {"team": team, "team-hidden": team_hidden, "solo": solo}

if __name__ == "__main__":
    os.environ.setdefault("OPENAI_API_KEY", "unused")
    os.environ.setdefault("AGNO_TELEMETRY", "false")
    sys.exit(main(RUNS, sys.argv[1:]))
