"""An OpenAI Agents SDK triage desk, traced by ``mast_otel.instrument()``: one line, no other change.

Runs in the SDK's environment (``nox -s openai_agents --install-only`` creates ``.nox/openai_agents``), offline
against the scripted OpenAI-compatible server by default, or against any OpenAI-compatible endpoint::

    .nox/openai_agents/bin/python examples/openai_agents_triage.py --console     # print the spans here
    .nox/openai_agents/bin/python examples/openai_agents_triage.py               # OTLP to localhost:4317
    .nox/openai_agents/bin/python examples/openai_agents_triage.py --base-url http://127.0.0.1:8011/v1 --model m

The desk: ``triage_agent`` (an input guardrail ``no_credentials`` refuses requests that carry a password) hands
off to ``billing_agent`` (tools ``open_case`` and ``lookup_order``) or ``faq_agent``; billing hands a proposed
refund to ``refund_reviewer`` (tool ``lookup_order``), whose instructions are to check the order's payments before
approving. Every agent turn, message, tool call, guardrail and handoff (with the LLM's transfer call and its
arguments as detail) becomes a span, and the run's root says why it ended.

The scripted run shows MAST failure **3.2, no or incomplete verification**: billing takes the customer's word
that A17 was charged twice, and the reviewer approves the refund without calling ``lookup_order`` (which would
have shown a single payment).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from typing import Any

try:
    from examples._cli import console_tracing, flush, parse_args
    from examples.scripted_openai import ScriptedOpenAI
except ImportError:  # run as a script (python examples/openai_agents_triage.py): examples/ itself is on sys.path
    from _cli import console_tracing, flush, parse_args  # type: ignore[no-redef]
    from scripted_openai import ScriptedOpenAI  # type: ignore[no-redef]

TASK = "I was charged twice for order A17. Please refund the duplicate charge."

SCRIPT: dict[str, Any] = {
    "rules": [
        {"match": "ROLE_TRIAGE.", "replies": [{"tool": "transfer_to_billing_agent", "args": {}}]},
        {
            "match": "ROLE_BILLING.",
            "replies": [
                {"tool": "open_case", "args": {"order_id": "A17"}},
                {
                    "tool": "transfer_to_refund_reviewer",
                    "args": {"proposal": "Order A17 was charged twice: refund the duplicate 49.00 EUR"},
                },
            ],
        },
        # No lookup_order call before approving: the 3.2 failure.
        {"match": "ROLE_REVIEWER.", "replies": ["Approved: refunding the duplicate 49.00 EUR on A17 looks correct."]},
        {"match": "ROLE_FAQ.", "replies": ["See our FAQ."]},
    ],
    "default": "I cannot help with that.",
}


def build_agents(model: Any) -> Any:
    from agents import (
        Agent,
        GuardrailFunctionOutput,
        InputGuardrail,
        RunContextWrapper,
        function_tool,
        handoff,
    )
    from pydantic import BaseModel

    class RefundProposal(BaseModel):
        proposal: str

    @function_tool
    def lookup_order(order_id: str) -> str:
        """Look an order up: its status and payments."""
        return f"order {order_id}: paid once, 49.00 EUR"

    @function_tool
    def open_case(order_id: str) -> str:
        """Open a billing case for an order."""
        return f"case 5521 opened for {order_id}"

    async def proposed(_ctx: RunContextWrapper[Any], _proposal: RefundProposal) -> None:
        """The SDK validates the LLM's transfer arguments against RefundProposal."""

    async def no_credentials(_ctx: RunContextWrapper[Any], _agent: Agent[Any], text: Any) -> GuardrailFunctionOutput:
        tripped = "password" in str(text).lower()
        return GuardrailFunctionOutput(output_info={"password": tripped}, tripwire_triggered=tripped)

    reviewer = Agent(
        name="refund_reviewer",
        instructions="ROLE_REVIEWER. Approve or reject refund proposals. Call lookup_order and check the payments "
        "before approving anything.",
        tools=[lookup_order],
        model=model,
    )
    billing = Agent(
        name="billing_agent",
        instructions="ROLE_BILLING. You handle charges and refunds: open a case, then send a refund proposal to "
        "the reviewer.",
        tools=[open_case, lookup_order],
        handoffs=[handoff(reviewer, input_type=RefundProposal, on_handoff=proposed)],
        model=model,
    )
    faq = Agent(name="faq_agent", instructions="ROLE_FAQ. Answer general questions.", model=model)
    return Agent(
        name="triage_agent",
        instructions="ROLE_TRIAGE. Route the customer to the right specialist; do not answer yourself.",
        handoffs=[handoff(billing, tool_description_override="Charges, refunds, invoices"), faq],
        input_guardrails=[InputGuardrail(guardrail_function=no_credentials, name="no_credentials")],
        model=model,
    )


async def run(base_url: str, model_name: str, api_key: str) -> Any:
    from agents import OpenAIChatCompletionsModel, Runner
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    triage = build_agents(OpenAIChatCompletionsModel(model=model_name, openai_client=client))
    return await Runner.run(triage, TASK, max_turns=8)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.split("\n\n")[0], argv)
    if args.console:
        console_tracing()
    import agents

    if args.base_url is None:
        # Offline there is no key, so the SDK's default exporter to OpenAI would only warn; drop it. (A program
        # that keeps it needs no change for mast-otel: instrument() only adds a processor.)
        agents.set_trace_processors([])

    import mast_otel

    mast_otel.instrument()  # the one line

    if args.base_url is None:
        with ScriptedOpenAI(SCRIPT) as server:
            result = asyncio.run(run(server.base_url, "scripted", "unused"))
    else:
        api_key = args.api_key or os.environ.get("OPENAI_API_KEY") or "unused"
        result = asyncio.run(run(args.base_url, args.model or "gpt-4o-mini", api_key))
    print(f"{result.last_agent.name}: {result.final_output}")
    flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
