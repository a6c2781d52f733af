"""A Strands Agents refund desk: a Swarm of three agents, traced by Strands' own OpenTelemetry GenAI spans (no
mast-otel integration): the mast-otel collector judges them through its GenAI adapter.

Runs in the ``strands`` nox session's environment, offline against the scripted OpenAI-compatible server by
default, or against any OpenAI-compatible endpoint::

    .nox/strands/bin/python examples/strands_desk.py --console         # print the spans here
    .nox/strands/bin/python examples/strands_desk.py                   # OTLP to localhost:4317
    .nox/strands/bin/python examples/strands_desk.py --base-url http://127.0.0.1:8011/v1 --model m

The swarm starts at ``triage``, which hands off to ``billing`` with Strands' ``handoff_to_agent`` tool; billing
calls ``lookup_order`` and hands a proposal to ``reviewer``. Strands writes its spans to the global tracer provider
and records message text by default, as span events. Its switch is ``OTEL_SEMCONV_STABILITY_OPT_IN``;
``--content on`` adds ``gen_ai_latest_experimental,gen_ai_span_attributes_only`` (the latest conventions, content
as span attributes), ``--content off`` adds those and ``gen_ai_unredacted_attributes=`` (every sensitive attribute
redacted); ``--content default`` leaves the variable as the environment has it.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Sequence
from typing import Any

try:
    from examples import _genai as desk
except ImportError:  # run as a script (python examples/strands_desk.py): examples/ itself is on sys.path
    import _genai as desk  # type: ignore[no-redef]

HANDOFF = "handoff_to_agent"
SCRIPT = desk.desk_script(
    # After a handoff tool call the agent's loop asks the model once more: that turn's text closes the agent's turn.
    triage=[{"tool": HANDOFF, "args": {"agent_name": "billing", "message": desk.TASK}}, "Passed to billing."],
    billing=[
        {"tool": "lookup_order", "args": {"order_id": "A17"}},
        {"tool": HANDOFF, "args": {"agent_name": "reviewer", "message": desk.PROPOSAL}},
        "Proposal sent to the reviewer.",
    ],
    reviewer=[desk.APPROVAL],  # no lookup_order before approving: the 3.2 failure
)
CONTENT_HELP = (
    "default: Strands' own (content as span events); on: OTEL_SEMCONV_STABILITY_OPT_IN="
    "gen_ai_latest_experimental,gen_ai_span_attributes_only; off: the same plus gen_ai_unredacted_attributes="
)
OPT_IN = {
    "on": "gen_ai_latest_experimental,gen_ai_span_attributes_only",
    "off": "gen_ai_latest_experimental,gen_ai_span_attributes_only,gen_ai_unredacted_attributes=",
}


async def run(base_url: str, model_name: str, api_key: str) -> desk.Record:
    """The swarm's run; the record is the swarm's ``node_history`` and each agent's own message list."""
    from strands import Agent, tool
    from strands.models.openai import OpenAIModel
    from strands.multiagent import Swarm

    @tool
    def lookup_order(order_id: str) -> str:
        """Look an order up: its status and payments."""
        return desk.lookup_order(order_id)

    def agent(name: str, instructions: str, tools: list[Any]) -> Any:
        model = OpenAIModel(client_args={"base_url": base_url, "api_key": api_key}, model_id=model_name)
        return Agent(name=name, system_prompt=instructions, model=model, tools=tools, callback_handler=None)

    agents = [
        agent("triage", desk.TRIAGE_INSTRUCTIONS, []),
        agent("billing", desk.BILLING_INSTRUCTIONS, [lookup_order]),
        agent("reviewer", desk.REVIEWER_INSTRUCTIONS, []),
    ]
    result = await Swarm(agents, entry_point=agents[0], max_handoffs=5).invoke_async(desk.TASK)
    order = [node.node_id for node in result.node_history]
    by_name = {a.name: a for a in agents}
    record = desk.Record("strands", messages=[("user", desk.TASK)])
    record.handoffs = list(itertools.pairwise(order))
    for name in order:  # each agent ran once: its message list is that run's
        _answers(record, name, by_name[name].messages)
    record.final_output = str(result.results[order[-1]].result)
    return record


async def solo(base_url: str, model_name: str, api_key: str) -> desk.Record:
    """``--solo``: the clerk alone, with ``lookup_order``; the record is its message list."""
    from strands import Agent, tool
    from strands.models.openai import OpenAIModel

    @tool
    def lookup_order(order_id: str) -> str:
        """Look an order up: its status and payments."""
        return desk.lookup_order(order_id)

    model = OpenAIModel(client_args={"base_url": base_url, "api_key": api_key}, model_id=model_name)
    clerk = Agent(name="clerk", system_prompt=desk.CLERK_INSTRUCTIONS, model=model, tools=[lookup_order],
                  callback_handler=None)  # fmt: skip
    result = await clerk.invoke_async(desk.TASK)
    record = desk.Record("strands", messages=[("user", desk.TASK)], final_output=str(result))
    _answers(record, "clerk", clerk.messages)
    return record


def _answers(record: desk.Record, name: str, messages: list[Any]) -> None:
    """An agent's assistant messages (text, else the tools it calls) and its tool calls, into ``record``."""
    for message in messages:
        if message["role"] != "assistant":
            continue
        blocks = message["content"]
        calls = [b["toolUse"]["name"] for b in blocks if "toolUse" in b]
        text = "".join(b["text"] for b in blocks if "text" in b)
        record.messages.append((name, text or ", ".join(calls)))
        record.tools += [(name, call) for call in calls if call != HANDOFF]


def main(argv: Sequence[str] | None = None) -> int:
    args = desk.parse(__doc__.split("\n\n")[0], argv, CONTENT_HELP)
    if args.content in OPT_IN:  # read when Strands builds its tracer: before the first agent
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = OPT_IN[args.content]
    provider = desk.tracing(args, "strands-desk")
    return desk.finish(args, desk.run_desk(args, SCRIPT, run, solo), provider)


if __name__ == "__main__":
    sys.exit(main())
