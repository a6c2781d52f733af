"""An autogen-agentchat Swarm (customer support: triage hands off to refunds), traced by one line.

Runs in the autogen-agentchat virtual environment (``nox -s autogen_agentchat`` creates ``.nox/autogen_agentchat``),
offline against the project's scripted OpenAI-compatible server (the default) or against any OpenAI-compatible
endpoint::

    .nox/autogen_agentchat/bin/python examples/autogen_swarm.py --console   # print the spans here
    .nox/autogen_agentchat/bin/python examples/autogen_swarm.py             # OTLP to localhost:4317
    .nox/autogen_agentchat/bin/python examples/autogen_swarm.py --base-url http://127.0.0.1:8011/v1 --model gpt-4o-mini

In a Swarm an agent passes control by calling a handoff tool (``transfer_to_refunds``); the team reads the
resulting ``HandoffMessage``. The spans say so:

===============================  ====================================================================
handoff                          ``mast.handoff.reason``
===============================  ====================================================================
``user -> triage``               ``initial_agent``: the Swarm's first participant
``triage -> triage``             ``same_speaker``: no handoff yet, triage keeps the turn after its tool
``triage -> refunds``            ``tool_call``: triage called ``transfer_to_refunds`` (the detail holds
                                 the HandoffMessage)
``refunds -> refunds``            ``same_speaker``: refunds keeps the turn after issuing the refund
===============================  ====================================================================

Each tool run (``lookup_order``, ``transfer_to_refunds``, ``issue_refund``) is an ``execute_tool`` span with its
arguments and result; the tool-call requests ride on the message that followed them. The run stops on the text
``TERMINATE`` (``termination_message``, condition ``TextMentionTermination``).

What the scripted run gets wrong, for the LLM judge to find: the order lookup says the order is 45 days old and
the policy allows refunds within 30 days, yet refunds issues the refund without a word about it.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from typing import Any

try:
    from examples._autogen_agentchat import SCRIPTED_MODEL_INFO
    from examples._cli import console_tracing, endpoint, flush, parse_args
except ImportError:  # run as a script (python examples/autogen_swarm.py): examples/ itself is on sys.path
    from _autogen_agentchat import SCRIPTED_MODEL_INFO  # type: ignore[no-redef]
    from _cli import console_tracing, endpoint, flush, parse_args  # type: ignore[no-redef]

import mast_otel

TASK = "Order 1042 arrived broken. I want my money back."
SCRIPT: dict[str, Any] = {
    "rules": [
        {"match": "ROLE_TRIAGE", "replies": [
            {"tool": "lookup_order", "args": {"order_id": "1042"}},
            {"tool": "transfer_to_refunds", "args": {}},
        ]},
        {"match": "ROLE_REFUNDS", "replies": [
            {"tool": "issue_refund", "args": {"order_id": "1042", "amount": 89.0}},
            "Refund of 89.00 issued for order 1042. TERMINATE",
        ]},
    ],
    "default": "OK",
}  # fmt: skip


def lookup_order(order_id: str) -> str:
    """Look up an order: its age and the refund policy that applies."""
    return f"order {order_id}: delivered 45 days ago, 89.00; policy: refunds within 30 days of delivery"


def issue_refund(order_id: str, amount: float) -> str:
    """Issue a refund for an order."""
    return f"refund of {amount:.2f} issued for order {order_id}"


def build(base_url: str, model: str = "scripted", api_key: str | None = None) -> Any:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
    from autogen_agentchat.teams import Swarm
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    def client() -> OpenAIChatCompletionClient:
        info = SCRIPTED_MODEL_INFO if model == "scripted" else None
        return OpenAIChatCompletionClient(model=model, base_url=base_url, api_key=api_key or "unused", model_info=info)

    triage = AssistantAgent(
        "triage",
        client(),
        tools=[lookup_order],
        handoffs=["refunds"],
        system_message="ROLE_TRIAGE. Look the order up, then hand refunds over to refunds.",
    )
    refunds = AssistantAgent(
        "refunds",
        client(),
        tools=[issue_refund],
        reflect_on_tool_use=False,
        system_message="ROLE_REFUNDS. Apply the refund policy. Say TERMINATE when done.",
    )
    stop = TextMentionTermination("TERMINATE") | MaxMessageTermination(12)
    return Swarm([triage, refunds], termination_condition=stop)  # fmt: skip


async def run(base_url: str | None = None, model: str | None = None, api_key: str | None = None) -> Any:
    """Run the team; offline (scripted server on a free 127.0.0.1 port) unless ``base_url`` is given."""
    with endpoint(base_url, SCRIPT) as url:
        return await build(url, model or "scripted", api_key).run(task=TASK)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0] if __doc__ else "", argv)
    os.environ.setdefault("AUTOGEN_DISABLE_RUNTIME_TRACING", "true")  # see examples/autogen_magentic_one.py
    if args.console:
        console_tracing()
    mast_otel.instrument()  # the one line: every team run, message, turn, tool call, handoff and stop is a span
    result = asyncio.run(run(args.base_url, args.model, args.api_key))
    flush()
    print(f"{len(result.messages)} messages; stop reason: {result.stop_reason}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
