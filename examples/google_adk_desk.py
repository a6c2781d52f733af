"""A Google ADK refund desk: a root agent with sub-agents, traced by ADK's own OpenTelemetry GenAI spans (no
mast-otel integration): the mast-otel collector judges them through its GenAI adapter.

Runs in the ``google_adk`` nox session's environment, offline against the scripted OpenAI-compatible server by
default (through LiteLLM: ``LiteLlm(model="openai/...", api_base=...)``), or against any OpenAI-compatible
endpoint::

    .nox/google_adk/bin/python examples/google_adk_desk.py --console         # print the spans here
    .nox/google_adk/bin/python examples/google_adk_desk.py                   # OTLP to localhost:4317
    .nox/google_adk/bin/python examples/google_adk_desk.py --base-url http://127.0.0.1:8011/v1 --model m

``triage`` (the root) transfers to its sub-agent ``billing`` with ADK's ``transfer_to_agent`` tool; billing calls
``lookup_order`` and transfers to its sub-agent ``reviewer``. ADK writes its spans to the global tracer provider,
with schema v2 (``invoke_workflow`` root, the GenAI conventions) by default and without message text; its switch
is ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``: ``--content on`` sets it to ``SPAN_ONLY`` (text as span
attributes), ``--content off`` to ``NO_CONTENT``; ``--content default`` leaves the environment as it is.
``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1`` selects ADK's legacy schema v1.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

try:
    from examples import _genai as desk
except ImportError:  # run as a script (python examples/google_adk_desk.py): examples/ itself is on sys.path
    import _genai as desk  # type: ignore[no-redef]

TRANSFER = "transfer_to_agent"
SCRIPT = desk.desk_script(
    triage=[{"tool": TRANSFER, "args": {"agent_name": "billing"}}],
    billing=[
        {"tool": "lookup_order", "args": {"order_id": "A17"}},
        {"text": desk.PROPOSAL, "tool": TRANSFER, "args": {"agent_name": "reviewer"}},
    ],
    reviewer=[desk.APPROVAL],  # no lookup_order before approving: the 3.2 failure
)
CONTENT_HELP = (
    "default: ADK's own (no content); on: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY; "
    "off: =NO_CONTENT"
)
SWITCH = {"on": "SPAN_ONLY", "off": "NO_CONTENT"}


async def run(base_url: str, model_name: str, api_key: str) -> desk.Record:
    """The desk's run; the record is the session's events (:func:`_events`)."""
    from google.adk.agents import LlmAgent
    from google.adk.models.lite_llm import LiteLlm

    model = LiteLlm(model=f"openai/{model_name}", api_base=base_url, api_key=api_key)
    reviewer = LlmAgent(
        name="reviewer",
        model=model,
        instruction=desk.REVIEWER_INSTRUCTIONS,
        description="Approves or rejects refund proposals.",
    )
    billing = LlmAgent(
        name="billing",
        model=model,
        instruction=desk.BILLING_INSTRUCTIONS,
        description="Charges and refunds.",
        tools=[desk.lookup_order],
        sub_agents=[reviewer],
    )
    triage = LlmAgent(name="triage", model=model, instruction=desk.TRIAGE_INSTRUCTIONS, sub_agents=[billing])
    return await _events(triage)


async def solo(base_url: str, model_name: str, api_key: str) -> desk.Record:
    """``--solo``: the clerk alone, with ``lookup_order``; the record is the session's events."""
    from google.adk.agents import LlmAgent
    from google.adk.models.lite_llm import LiteLlm

    model = LiteLlm(model=f"openai/{model_name}", api_base=base_url, api_key=api_key)
    return await _events(LlmAgent(name="clerk", model=model, instruction=desk.CLERK_INSTRUCTIONS,
                                  tools=[desk.lookup_order]))  # fmt: skip


async def _events(root: Any) -> desk.Record:
    """Run ``root`` on the task; the record is the session's events: each agent's turns,
    ``actions.transfer_to_agent`` (the handoffs) and the function calls."""
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    runner = InMemoryRunner(agent=root, app_name="refund_desk")
    session = await runner.session_service.create_session(app_name="refund_desk", user_id="customer")
    message = types.Content(role="user", parts=[types.Part(text=desk.TASK)])
    record = desk.Record("google-adk", messages=[("user", desk.TASK)])
    async for event in runner.run_async(user_id="customer", session_id=session.id, new_message=message):
        if event.actions and event.actions.transfer_to_agent:
            record.handoffs.append((event.author, event.actions.transfer_to_agent))
        if event.author == "user" or event.content is None or not event.content.parts:
            continue
        calls = [p.function_call.name for p in event.content.parts if p.function_call and p.function_call.name]
        text = "".join(p.text for p in event.content.parts if p.text and not p.thought)
        if not calls and not text:
            continue  # a function response: the tool's result, not an agent's turn
        record.messages.append((event.author, text or ", ".join(calls)))
        record.tools += [(event.author, call) for call in calls if call != TRANSFER]
        if text and event.is_final_response():
            record.final_output = text
    await runner.close()
    return record


def main(argv: Sequence[str] | None = None) -> int:
    args = desk.parse(__doc__.split("\n\n")[0], argv, CONTENT_HELP)
    if args.content in SWITCH:  # read when ADK records a span
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = SWITCH[args.content]
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline: LiteLLM's own price list
    provider = desk.tracing(args, "google-adk-desk")
    return desk.finish(args, desk.run_desk(args, SCRIPT, run, solo), provider)


if __name__ == "__main__":
    sys.exit(main())
