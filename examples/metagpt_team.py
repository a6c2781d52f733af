"""A MetaGPT software team (coder, tester, reviewer) traced by one line: ``mast_otel.instrument()``.

Runs in the MetaGPT virtual environment (``nox -s metagpt`` creates it in ``.nox/metagpt``, see docs/metagpt.md),
offline with scripted replies (the default) or against any OpenAI-compatible server::

    .nox/metagpt/bin/python examples/metagpt_team.py --console      # print the spans here
    .nox/metagpt/bin/python examples/metagpt_team.py                 # OTLP to localhost:4317 (mast-otel collector)
    .nox/metagpt/bin/python examples/metagpt_team.py --base-url http://127.0.0.1:8011/v1 --model gemma3-270m

MetaGPT routes implicitly: the Coder watches the idea (``UserRequirement``) and the Reviewer's verdicts, the Tester
watches ``WriteCode``, the Reviewer watches ``WriteTest``. Each ``handoff`` span says who took a message and why
(reason ``routing``: a watch list or ``send_to``). The scripted run fails the way MAST says teams fail:

- **2.5 ignored input / 1.3 step repetition**: the Reviewer rejects the code (0 and 1 count as primes) twice; the
  Coder sends the same code both times (identical ``mast.message.content`` on two ``message Alice -> <all>`` spans).
- **3.2 incomplete verification**: the Tester's test only checks that the function returns an int.
- **1.5 / 3.1**: nobody approves; the run stops because ``n_round`` ran out while the Coder still had the review
  to answer: the root says ``mast.termination.reason = max_rounds``.

MetaGPT reads ``config2.yaml`` when it is imported; this script writes a throwaway one unless
``METAGPT_PROJECT_ROOT`` is set, and passes the LLM settings to the team itself.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from typing import Any

from mast_otel.evaluation.suite_metagpt import ensure_metagpt_config

BASE_URL_ENV = "MAST_OTEL_EXAMPLE_BASE_URL"  # the same switch as the AG2 examples
IDEA = "Write is_prime(n) and report how many primes there are below 20."
N_ROUND = 6
REPLIES: dict[str, list[str]] = {
    "Alice": [  # the same code every time, whatever the review says
        "def is_prime(n):\n    return all(n % k for k in range(2, n))\n\nprint(sum(map(is_prime, range(20))))"
    ],
    "Bob": ["def test_is_prime():\n    assert isinstance(is_prime(7), bool)"],
    "Carol": ["Rejected: is_prime(0) and is_prime(1) return True, so it prints 10, not 8. Handle n < 2 and rerun."],
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument(
        "--base-url",
        default=os.environ.get(BASE_URL_ENV) or None,
        metavar="URL",
        help=f"an OpenAI-compatible server (default: ${BASE_URL_ENV}, else offline, scripted)",
    )
    parser.add_argument("--model", default="gemma3-270m", help="model name on that server")
    parser.add_argument("--api-key", default=None, help="API key for that server (default: $OPENAI_API_KEY)")
    parser.add_argument(
        "--console", action="store_true", help="print spans here instead of exporting OTLP to localhost:4317"
    )
    return parser.parse_args(argv)


def console_tracing() -> None:
    """A global provider printing one line per span; ``mast_otel.instrument()`` then uses it."""
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    from mast_otel import semconv as sc

    shown = (sc.MESSAGE_CONTENT, sc.HANDOFF_REASON, sc.TERMINATION_REASON, sc.TERMINATION_DETAIL)

    def one_line(span: ReadableSpan) -> str:
        attrs = span.attributes or {}
        parts = [span.name] + [
            f"{k.rsplit('.', 1)[-1]}={str(attrs[k]).replace(chr(10), ' ')[:60]}" for k in shown if k in attrs
        ]
        return "  ".join(parts) + "\n"

    provider = TracerProvider(resource=Resource.create({"service.name": "mast-otel-example"}))
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(formatter=one_line)))
    trace.set_tracer_provider(provider)


def build(base_url: str | None = None, model: str = "gemma3-270m", api_key: str | None = None) -> Any:
    """The team, hired and ready: a MetaGPT ``Team`` with the Coder, the Tester and the Reviewer."""
    from metagpt.actions import Action, UserRequirement
    from metagpt.config2 import Config
    from metagpt.context import Context
    from metagpt.roles import Role
    from metagpt.team import Team

    class WriteCode(Action):
        name: str = "WriteCode"

        async def run(self, history: list[Any]) -> str:
            return await self._aask(f"Write Python code for:\n{history[-1].content}\nCode:")

    class WriteTest(Action):
        name: str = "WriteTest"

        async def run(self, history: list[Any]) -> str:
            return await self._aask(f"Write a pytest test for this code:\n{history[-1].content}\nTest:")

    class ReviewCode(Action):
        name: str = "ReviewCode"

        async def run(self, history: list[Any]) -> str:
            return await self._aask(f"Review the code and its test:\n{history[-1].content}\nReview:")

    if base_url:
        llm = {"api_type": "openai", "base_url": base_url, "model": model, "max_token": 96, "stream": False,
               "api_key": api_key or os.environ.get("OPENAI_API_KEY") or "local", "calc_usage": False}  # fmt: skip
    else:
        llm = _register_scripted_provider()
    context = Context(config=Config.from_llm_config(llm))
    specs = [
        ("Alice", "Coder", WriteCode, [UserRequirement, ReviewCode]),
        ("Bob", "Tester", WriteTest, [WriteCode]),
        ("Carol", "Reviewer", ReviewCode, [WriteTest]),
    ]
    team = Team(context=context)
    for name, profile, action, watch in specs:
        role = Role(name=name, profile=profile, goal=f"do the {profile.lower()}'s job", watch=watch, context=context)
        role.set_actions([action])
        team.hire([role])
    return team


def _register_scripted_provider() -> dict[str, Any]:
    """An offline provider through MetaGPT's own registry (it borrows the ``metagpt`` API type); returns its config."""
    import itertools
    import re

    from metagpt.configs.llm_config import LLMType
    from metagpt.provider.base_llm import BaseLLM
    from metagpt.provider.llm_provider_registry import register_provider

    cycles = {name: itertools.cycle(replies) for name, replies in REPLIES.items()}
    named = re.compile(r"named (.+?), your goal")

    @register_provider(LLMType.METAGPT)
    class ScriptedLLM(BaseLLM):
        def __init__(self, config: Any) -> None:
            self.config = config

        async def _answer(self, messages: list[dict[str, Any]]) -> str:
            await asyncio.sleep(0.01)  # yield like a network call, so each round is one step of the pipeline
            found = named.search(str(messages[0].get("content", ""))) if messages else None
            return next(cycles[found.group(1)]) if found and found.group(1) in cycles else "ok"

        async def _achat_completion(self, messages: list[dict[str, Any]], timeout: int = 0) -> Any:
            return {"choices": [{"message": {"content": await self._answer(messages)}}]}

        async def acompletion(self, messages: list[dict[str, Any]], timeout: int = 0) -> Any:
            return await self._achat_completion(messages)

        async def _achat_completion_stream(self, messages: list[dict[str, Any]], timeout: int = 0) -> str:
            return await self._answer(messages)

    return {"api_type": "metagpt", "model": "scripted", "api_key": "scripted", "stream": False}


async def run(base_url: str | None = None, model: str = "gemma3-270m", api_key: str | None = None) -> Any:
    """Run the team (offline unless ``base_url``); returns the team, its history in ``team.env.history``."""
    team = build(base_url, model, api_key)
    await team.run(n_round=N_ROUND, idea=IDEA)
    return team


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    ensure_metagpt_config()
    if args.console:
        console_tracing()
    import mast_otel

    mast_otel.instrument()  # the one line: every role action, message, routing handoff and termination is a span
    team = asyncio.run(run(args.base_url, args.model, args.api_key))

    from opentelemetry import trace

    flush = getattr(trace.get_tracer_provider(), "force_flush", None)
    if callable(flush):
        flush()
    published = {m.id for role in team.env.roles.values() for m in role.rc.memory.get()}
    print(f"{len(published)} messages in the roles' memories (n_round={N_ROUND})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
