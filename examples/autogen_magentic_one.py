"""Magentic-One (autogen-agentchat 0.7) with a researcher, an analyst and a lookup tool, traced by one line.

Runs in the autogen-agentchat virtual environment (``nox -s autogen_agentchat`` creates ``.nox/autogen_agentchat``),
offline against the project's scripted OpenAI-compatible server (the default) or against any OpenAI-compatible
endpoint::

    .nox/autogen_agentchat/bin/python examples/autogen_magentic_one.py --console   # print the spans here
    .nox/autogen_agentchat/bin/python examples/autogen_magentic_one.py             # OTLP to localhost:4317
    .nox/autogen_agentchat/bin/python examples/autogen_magentic_one.py --base-url http://127.0.0.1:8011/v1 \\
        --model gemma3-270m

The orchestrator states, in its progress ledger, why it hands each step to whom; every ``handoff`` span carries
that sentence (``mast.handoff.stated_reason``, reason ``progress_ledger``). Its stalls, its re-plan and each plan
it starts from are events on the conversation root, and the root says why the run stopped.

The scripted run fails the way MAST says Magentic-One fails:

- **1.3 step repetition**: asked for Lisbon's population, then twice for its *area*, the researcher runs the same
  population lookup every time: three identical ``ToolCallSummaryMessage`` messages.
- **1.5 unaware of termination / 3.1 premature termination**: the orchestrator notices (two stalls), re-plans, and
  runs out of rounds (``max_turns=3``): the root says ``mast.termination.reason = max_rounds`` ("Max rounds
  reached.") and the final answer admits the density is unknown.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

try:
    from examples._autogen_agentchat import SCRIPTED_MODEL_INFO
    from examples._cli import console_tracing, endpoint, flush, parse_args
except ImportError:  # run as a script (python examples/autogen_magentic_one.py): examples/ itself is on sys.path
    from _autogen_agentchat import SCRIPTED_MODEL_INFO  # type: ignore[no-redef]
    from _cli import console_tracing, endpoint, flush, parse_args  # type: ignore[no-redef]

import mast_otel

TASK = "What is the population density of Lisbon, in people per square kilometre? Use the lookup tool."
MAX_TURNS = 3
MAX_STALLS = 2


def _ledger(speaker: str, instruction: str, why: str, *, progress: bool, loop: bool = False) -> str:
    return json.dumps({
        "is_request_satisfied": {"reason": "The area is still unknown, so no density yet.", "answer": False},
        "is_in_loop": {"reason": "The same lookup keeps coming back." if loop else "No loop yet.", "answer": loop},
        "is_progress_being_made": {"reason": "New facts arrived." if progress else "Nothing new.", "answer": progress},
        "next_speaker": {"reason": why, "answer": speaker},
        "instruction_or_question": {"reason": "The next missing fact.", "answer": instruction},
    })  # fmt: skip


# Rules match a marker in the agent's system prompt, else in the orchestrator's own prompt (its last message).
SCRIPT: dict[str, Any] = {
    "rules": [
        # The researcher always runs the population lookup, whatever it is asked.
        {"match": "ROLE_RESEARCHER", "replies": [{"tool": "lookup", "args": {"city": "Lisbon", "fact": "population"}}]},
        {"match": "ROLE_ANALYST", "replies": ["Density is population divided by area."]},
        {
            "match": "GIVEN OR VERIFIED FACTS",
            "replies": ["Known: Lisbon is the capital of Portugal. To look up: its population and its area."],
        },
        {
            "match": "To address this request we have assembled",
            "replies": ["- researcher: look up the population, then the area\n- analyst: divide"],
        },
        {"match": "As a reminder, we are working to solve", "replies": ["Known: population 545,000. Missing: area."]},
        {
            "match": "what went wrong on this last run",
            "replies": ["The researcher repeated the population lookup. New plan: ask for fact='area' explicitly."],
        },
        {
            "match": "Recall we are working on the following request",
            "replies": [
                _ledger(
                    "researcher",
                    "Look up the population of Lisbon.",
                    "The researcher has the lookup tool.",
                    progress=True,
                ),
                _ledger(
                    "researcher",
                    "Now look up the AREA of Lisbon in square kilometres.",
                    "The area is missing and only the researcher can look it up.",
                    progress=False,
                ),
                _ledger(
                    "researcher",
                    "Look up the area again, with fact='area'.",
                    "The researcher returned the population instead of the area.",
                    progress=False,
                    loop=True,
                ),
                _ledger(
                    "researcher",
                    "Call lookup with city='Lisbon' and fact='area'.",
                    "After re-planning, the area is still the missing fact.",
                    progress=False,
                    loop=True,
                ),
            ],
        },
        {
            "match": "We have completed the task.",
            "replies": [
                "Lisbon has about 545,000 inhabitants, but I could not find its area, so its density is unknown."
            ],
        },
    ],
    "default": "OK",
}


def lookup(city: str, fact: str) -> str:
    """Look up a fact (population or area) about a city."""
    facts = {("lisbon", "population"): "545,000 (2021 census)", ("lisbon", "area"): "100.05 km2"}
    return f"{city} {fact}: {facts.get((city.lower(), fact.lower()), 'unknown')}"


def build(base_url: str, model: str = "scripted", api_key: str | None = None) -> Any:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.teams import MagenticOneGroupChat
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    def client() -> OpenAIChatCompletionClient:
        # The scripted model claims no JSON output: the orchestrator then asks for its ledger as plain JSON text.
        info = SCRIPTED_MODEL_INFO if model == "scripted" else None
        return OpenAIChatCompletionClient(model=model, base_url=base_url, api_key=api_key or "unused", model_info=info)

    researcher = AssistantAgent(
        "researcher",
        client(),
        tools=[lookup],
        description="looks facts up with a tool",
        system_message="ROLE_RESEARCHER. Answer with facts from the lookup tool.",
    )
    analyst = AssistantAgent(
        "analyst",
        client(),
        description="does arithmetic on facts",
        system_message="ROLE_ANALYST. Compute from the facts you are given.",
    )
    return MagenticOneGroupChat([researcher, analyst], model_client=client(), max_turns=MAX_TURNS,
                                max_stalls=MAX_STALLS)  # fmt: skip


async def run(base_url: str | None = None, model: str | None = None, api_key: str | None = None) -> Any:
    """Run the team; offline (scripted server on a free 127.0.0.1 port) unless ``base_url`` is given."""
    with endpoint(base_url, SCRIPT) as url:
        return await build(url, model or "scripted", api_key).run(task=TASK)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0] if __doc__ else "", argv)
    # autogen-core traces its runtime's every send/publish/process to the global provider: noise next to the
    # conversation's spans (docs/autogen-agentchat.md). Off unless the caller says otherwise.
    os.environ.setdefault("AUTOGEN_DISABLE_RUNTIME_TRACING", "true")
    if args.console:
        console_tracing()
    mast_otel.instrument()  # the one line: every team run, message, turn, tool call, handoff and stop is a span
    result = asyncio.run(run(args.base_url, args.model, args.api_key))
    flush()
    print(f"{len(result.messages)} messages; stop reason: {result.stop_reason}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
