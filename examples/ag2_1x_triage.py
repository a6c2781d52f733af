"""AG2 1.x (the ``ag2`` module, ``pip install ag2``): a support workflow on a hub, traced by one line.

Run it offline (AG2's scripted model, ``ag2.testing``; no server, no key)::

    python examples/ag2_1x_triage.py      # OTLP to localhost:4317 (a mast-otel collector), per OTEL_EXPORTER_OTLP_*

A customer writes to ``triage``; triage calls ``route_to_refunds``, a tool returning
``Handoff("refunds", reason="refund request")``; refunds answers and hands over to ``reviewer`` the same way;
the reviewer signs off (the workflow graph sends control back to refunds); refunds calls ``finish``, a tool
returning ``Finish(summary, reason="resolved")``, and AG2 closes the channel. Spans: one conversation root
(termination ``finish``, detail ``resolved: ...``), a message per envelope, a ``tool_call`` handoff per
``Handoff`` with the stated reason as its detail, a ``routing`` handoff for each graph transition, a turn per
``ask`` and a tool call per tool.

The scripted run shows MAST failure **3.2, no or incomplete verification**: refunds never calls
``lookup_invoice`` and refunds 420 EUR on a 42 EUR invoice, and the reviewer approves it without checking
anything.

Import it to reuse the run (the tests do): ``from examples.ag2_1x_triage import run``.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from ag2 import Agent
from ag2.knowledge import MemoryKnowledgeStore
from ag2.network import WORKFLOW_TYPE, AgentTarget, Finish, FromSpeaker, Handoff, Hub, Transition, TransitionGraph
from opentelemetry import trace

try:
    from examples._ag2_1x import ScriptedConfig, call, wait_closed
except ImportError:  # run as a script (python examples/ag2_1x_triage.py): examples/ itself is on sys.path
    from _ag2_1x import ScriptedConfig, call, wait_closed  # type: ignore[no-redef]

import mast_otel

TASK = "Hi, I was charged twice for invoice INV-7 (42 EUR). Please refund the duplicate charge."
MAX_TURNS = 10


def lookup_invoice(invoice_id: str) -> str:
    """Look up an invoice's amount and payment state."""
    return f"invoice {invoice_id}: 42 EUR, charged twice"


def route_to_refunds(reason: str) -> Handoff:
    """Hand the customer to the refunds specialist."""
    return Handoff(target="refunds", reason=reason)


def route_to_reviewer(reason: str) -> Handoff:
    """Ask the reviewer to sign the refund off."""
    return Handoff(target="reviewer", reason=reason)


def finish(summary: str) -> Finish:
    """Close the case."""
    return Finish(summary=summary, reason="resolved")


SCRIPTS: dict[str, tuple[Any, ...]] = {
    "triage": (
        call("route_to_refunds", reason="refund request for a duplicate charge"),
        "Routing you to our refunds specialist.",
    ),
    "refunds": (
        # Never looks the invoice up: the amount is wrong by a factor of ten.
        call("route_to_reviewer", reason="refund needs sign-off"),
        "Refund of 420 EUR for invoice INV-7 prepared; sending it for sign-off.",
        call("finish", summary="refunded 420 EUR for INV-7"),
        "Your refund of 420 EUR for INV-7 is on its way.",
    ),
    "reviewer": ("Looks correct, approved.",),  # signs off without checking the invoice
}


async def run(customer_text: str = TASK, **hub_options: Any) -> tuple[Any, Any]:
    """Run the workflow to its close; returns (hub, channel metadata). The caller closes the hub.

    ``hub_options`` go to ``Hub.open`` (``tracer_provider=`` turns AG2's own envelope telemetry on).
    """
    hub = await Hub.open(MemoryKnowledgeStore(), expectation_sweep_interval=0, **hub_options)
    customer = await hub.register(Agent("customer", config=ScriptedConfig()), attach_plugin=False)
    customer.on_envelope(lambda envelope: asyncio.sleep(0))  # the customer only opens the case
    tools = {"triage": [route_to_refunds], "refunds": [lookup_invoice, route_to_reviewer, finish], "reviewer": []}
    clients = {
        name: await hub.register(Agent(name, f"You are {name}.", config=ScriptedConfig(*script), tools=tools[name]))
        for name, script in SCRIPTS.items()
    }
    graph = TransitionGraph(
        initial_speaker=customer.agent_id,
        transitions=[
            Transition(when=FromSpeaker(customer.agent_id), then=AgentTarget(clients["triage"].agent_id)),
            Transition(when=FromSpeaker(clients["reviewer"].agent_id), then=AgentTarget(clients["refunds"].agent_id)),
        ],
        max_turns=MAX_TURNS,
    )
    channel = await customer.open(type=WORKFLOW_TYPE, target=list(SCRIPTS), knobs={"graph": graph.to_dict()})
    await channel.send(customer_text)
    return hub, await wait_closed(hub, channel.channel_id)


async def main() -> int:
    hub, metadata = await run()
    for envelope in await hub.read_wal(metadata.channel_id):
        if envelope.event_type in ("ag2.msg.text", "ag2.packet"):
            data = envelope.event_data
            print(f"{hub.name_for(envelope.sender_id)}: {data.get('text') or data.get('body')}")
    print(f"channel {metadata.state.value}: {metadata.close_reason}")
    await hub.close()
    return 0


if __name__ == "__main__":
    mast_otel.instrument()  # the one line: every hub and agent from here on is traced
    code = asyncio.run(main())
    getattr(trace.get_tracer_provider(), "force_flush", lambda: None)()  # export before the process exits
    sys.exit(code)
