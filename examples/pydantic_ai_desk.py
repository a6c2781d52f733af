"""A Pydantic AI refund desk of three agents, traced by Pydantic AI's own OpenTelemetry GenAI spans (no mast-otel
integration): the mast-otel collector judges them through its GenAI adapter.

Runs in the ``pydantic_ai`` nox session's environment, offline against the scripted OpenAI-compatible server by
default, or against any OpenAI-compatible endpoint::

    .nox/pydantic_ai/bin/python examples/pydantic_ai_desk.py --console         # print the spans here
    .nox/pydantic_ai/bin/python examples/pydantic_ai_desk.py                   # OTLP to localhost:4317
    .nox/pydantic_ai/bin/python examples/pydantic_ai_desk.py --base-url http://127.0.0.1:8011/v1 --model m

Pydantic AI hands work over by delegation: ``triage``'s tool ``ask_billing`` runs the ``billing`` agent, whose tool
``ask_reviewer`` runs the ``reviewer`` (each nested ``invoke_agent`` span sits under the delegating
``execute_tool``); ``billing`` also calls ``lookup_order``. Tracing is ``Agent.instrument_all()``, whose
``InstrumentationSettings(include_content=True)`` default records prompts, answers and tool arguments;
``--content off`` passes ``include_content=False``.
"""

# No "from __future__ import annotations": Pydantic AI reads the tools' annotations, and RunContext is imported
# inside run(), where a string annotation could not be resolved.
import sys
from collections.abc import Sequence
from typing import Any

try:
    from examples import _genai as desk
except ImportError:  # run as a script (python examples/pydantic_ai_desk.py): examples/ itself is on sys.path
    import _genai as desk  # type: ignore[no-redef]

SCRIPT = desk.desk_script(
    triage=[{"tool": "ask_billing", "args": {"request": desk.TASK}}, "Your duplicate charge on A17 will be refunded."],
    billing=[
        {"tool": "lookup_order", "args": {"order_id": "A17"}},
        {"tool": "ask_reviewer", "args": {"proposal": desk.PROPOSAL}},
        "The reviewer approved the refund of 49.00 EUR.",
    ],
    reviewer=[desk.APPROVAL],  # no lookup_order before approving: the 3.2 failure
)
CONTENT_HELP = "default and on: include_content=True (Pydantic AI's default); off: include_content=False"


async def run(base_url: str, model_name: str, api_key: str) -> desk.Record:
    """The desk's run; the record is each agent's own message list (:func:`_record`)."""
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(model_name, provider=OpenAIProvider(base_url=base_url, api_key=api_key))
    triage = Agent(model, name="triage", instructions=desk.TRIAGE_INSTRUCTIONS)
    billing = Agent(model, name="billing", instructions=desk.BILLING_INSTRUCTIONS)
    reviewer = Agent(model, name="reviewer", instructions=desk.REVIEWER_INSTRUCTIONS)
    runs: list[tuple[str, Any]] = []  # (agent, its run's result), for the record

    @triage.tool
    async def ask_billing(ctx: RunContext[None], request: str) -> str:
        """Hand the customer's request to billing (charges, refunds)."""
        result = await billing.run(request, usage=ctx.usage)
        runs.append(("billing", result))
        return str(result.output)

    @billing.tool_plain
    def lookup_order(order_id: str) -> str:
        """Look an order up: its status and payments."""
        return desk.lookup_order(order_id)

    @billing.tool
    async def ask_reviewer(ctx: RunContext[None], proposal: str) -> str:
        """Send a refund proposal to the reviewer for approval."""
        result = await reviewer.run(proposal, usage=ctx.usage)
        runs.append(("reviewer", result))
        return str(result.output)

    result = await triage.run(desk.TASK)
    runs.append(("triage", result))
    return _record(runs, str(result.output), {"ask_billing": "billing", "ask_reviewer": "reviewer"})


async def solo(base_url: str, model_name: str, api_key: str) -> desk.Record:
    """``--solo``: the clerk alone, with ``lookup_order``; the record is its message list."""
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(model_name, provider=OpenAIProvider(base_url=base_url, api_key=api_key))
    clerk = Agent(model, name="clerk", instructions=desk.CLERK_INSTRUCTIONS)

    @clerk.tool_plain
    def lookup_order(order_id: str) -> str:
        """Look an order up: its status and payments."""
        return desk.lookup_order(order_id)

    result = await clerk.run(desk.TASK)
    return _record([("clerk", result)], str(result.output), {})


def _record(runs: list[tuple[str, Any]], final_output: str, delegates: dict[str, str]) -> desk.Record:
    """Each agent's own message list (``new_messages()``), merged by time: who answered, in order; a delegate
    tool's call hands the turn to the agent it runs, and that agent's last answer hands it back."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

    record = desk.Record("pydantic-ai", messages=[("user", desk.TASK)], final_output=final_output)
    turns = sorted(
        ((m.timestamp, agent, m) for agent, r in runs for m in r.new_messages() if isinstance(m, ModelResponse)),
        key=lambda t: t[0],
    )
    speaker = ""
    for _, agent, response in turns:
        if speaker and agent != speaker:
            record.handoffs.append((speaker, agent))  # a delegate's answers came in between, or it answers now
        speaker = agent
        calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
        text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
        record.messages.append((agent, text or ", ".join(c.tool_name for c in calls)))
        record.tools += [(agent, c.tool_name) for c in calls if c.tool_name not in delegates]
    return record


def main(argv: Sequence[str] | None = None) -> int:
    args = desk.parse(__doc__.split("\n\n")[0], argv, CONTENT_HELP)
    provider = desk.tracing(args, "pydantic-ai-desk")
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings

    # Pydantic AI's own switch; its default records content (include_content=True).
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider, include_content=args.content != "off"))
    return desk.finish(args, desk.run_desk(args, SCRIPT, run, solo), provider)


if __name__ == "__main__":
    sys.exit(main())
