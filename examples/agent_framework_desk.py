"""A Microsoft Agent Framework refund desk: a handoff workflow of three agents, traced by Agent Framework's own
OpenTelemetry GenAI spans (no mast-otel integration): the mast-otel collector judges them through its GenAI adapter.

Runs in the ``agent_framework`` nox session's environment, offline against the scripted OpenAI-compatible server by
default, or against any OpenAI-compatible endpoint::

    .nox/agent_framework/bin/python examples/agent_framework_desk.py --console     # print the spans here
    .nox/agent_framework/bin/python examples/agent_framework_desk.py               # OTLP to localhost:4317
    .nox/agent_framework/bin/python examples/agent_framework_desk.py --base-url http://127.0.0.1:8011/v1 --model m

``HandoffBuilder`` (agent-framework-orchestrations) starts at ``triage``, which hands off to ``billing`` with the
tool ``handoff_to_billing`` that the workflow gives it; billing calls ``lookup_order`` and hands off to
``reviewer``; the workflow ends once the reviewer has answered. Agent Framework traces by default to the global
tracer provider and leaves message text out; its switch is ``ENABLE_SENSITIVE_DATA=true`` (``--content on`` sets
it, ``--content off`` sets it false, ``--content default`` leaves the environment as it is).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

try:
    from examples import _genai as desk
except ImportError:  # run as a script (python examples/agent_framework_desk.py): examples/ itself is on sys.path
    import _genai as desk  # type: ignore[no-redef]

SCRIPT = desk.desk_script(
    triage=[{"tool": "handoff_to_billing", "args": {}}],
    billing=[
        {"tool": "lookup_order", "args": {"order_id": "A17"}},
        {"text": desk.PROPOSAL, "tool": "handoff_to_reviewer", "args": {}},
    ],
    reviewer=[desk.APPROVAL],  # no lookup_order before approving: the 3.2 failure
)
CONTENT_HELP = "default: Agent Framework's own (no content); on: ENABLE_SENSITIVE_DATA=true; off: =false"
SWITCH = {"on": "true", "off": "false"}


async def run(base_url: str, model_name: str, api_key: str) -> desk.Record:
    """The workflow's run; the record is its output events (each agent's response, in order), its
    ``handoff_sent`` events and the function calls in those responses."""
    from agent_framework import Agent, tool
    from agent_framework.openai import OpenAIChatCompletionClient
    from agent_framework.orchestrations import HandoffBuilder

    @tool
    def lookup_order(order_id: str) -> str:
        """Look an order up: its status and payments."""
        return desk.lookup_order(order_id)

    def agent(name: str, instructions: str, tools: list[Any]) -> Any:
        client = OpenAIChatCompletionClient(model=model_name, base_url=base_url, api_key=api_key)
        return Agent(client=client, name=name, instructions=instructions, tools=tools,
                     require_per_service_call_history_persistence=True)  # fmt: skip

    triage = agent("triage", desk.TRIAGE_INSTRUCTIONS, [])
    billing = agent("billing", desk.BILLING_INSTRUCTIONS, [lookup_order])
    reviewer = agent("reviewer", desk.REVIEWER_INSTRUCTIONS, [])

    def reviewer_answered(conversation: list[Any]) -> bool:
        return any(m.author_name == "reviewer" and m.role == "assistant" and m.text for m in conversation)

    workflow = (
        HandoffBuilder(name="refund_desk", participants=[triage, billing, reviewer])
        .with_start_agent(triage)
        .add_handoff(triage, [billing])
        .add_handoff(billing, [reviewer])
        .with_autonomous_mode()
        .with_termination_condition(reviewer_answered)
        .build()
    )
    events = await workflow.run(desk.TASK)
    record = desk.Record("agent-framework", messages=[("user", desk.TASK)])
    for event in events:
        if event.type == "handoff_sent":
            record.handoffs.append((event.data.source, event.data.target))
        elif event.type == "output":
            _answers(record, event.data.messages)
    return record


async def solo(base_url: str, model_name: str, api_key: str) -> desk.Record:
    """``--solo``: the clerk alone, with ``lookup_order``; the record is its response's messages."""
    from agent_framework import Agent, tool
    from agent_framework.openai import OpenAIChatCompletionClient

    @tool
    def lookup_order(order_id: str) -> str:
        """Look an order up: its status and payments."""
        return desk.lookup_order(order_id)

    client = OpenAIChatCompletionClient(model=model_name, base_url=base_url, api_key=api_key)
    clerk = Agent(client=client, name="clerk", instructions=desk.CLERK_INSTRUCTIONS, tools=[lookup_order])
    response = await clerk.run(desk.TASK)
    record = desk.Record("agent-framework", messages=[("user", desk.TASK)])
    _answers(record, response.messages, author="clerk")
    return record


def _answers(record: desk.Record, messages: list[Any], author: str | None = None) -> None:
    """The assistant messages (text, else the functions called) and the function calls other than handoffs, by
    their author (``author`` where the messages name none)."""
    for message in messages:
        if message.role != "assistant":
            continue
        name = str(message.author_name or author)
        calls = [c.name for c in message.contents if c.type == "function_call"]
        record.messages.append((name, message.text or ", ".join(calls)))
        record.tools += [(name, c) for c in calls if not c.startswith("handoff_to_")]
        if message.text:
            record.final_output = message.text


def main(argv: Sequence[str] | None = None) -> int:
    args = desk.parse(__doc__.split("\n\n")[0], argv, CONTENT_HELP)
    if args.content in SWITCH:  # read when agent_framework is imported
        os.environ["ENABLE_SENSITIVE_DATA"] = SWITCH[args.content]
    provider = desk.tracing(args, "agent-framework-desk")
    return desk.finish(args, desk.run_desk(args, SCRIPT, run, solo), provider)


if __name__ == "__main__":
    sys.exit(main())
