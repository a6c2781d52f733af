"""The MetaGPT cases of ``mast-otel eval --suite``, run in MetaGPT's own environment.

MetaGPT 0.8's pins clash with the main environment's, so it lives in its own (``nox -s metagpt`` creates
``.nox/metagpt``). The suite runs this module there as a program: each case is a real MetaGPT ``Team`` traced by
mast-otel's MetaGPT integration, whose roles' actions return scripted text (MetaGPT ``Action`` subclasses: no model,
no network), and it prints one JSON line per case with the recorded spans::

    .nox/metagpt/bin/python -m mast_otel.evaluation.suite_metagpt

MetaGPT reads a config file when it is imported; without ``METAGPT_PROJECT_ROOT`` a throwaway one (never used:
no action calls the model) is written to a temporary directory first.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["METAGPT_CASES", "MetaGPTCase", "ensure_metagpt_config", "run_metagpt_case", "run_team"]


@dataclass(frozen=True)
class MetaGPTCase:
    """A MetaGPT team: (role name, profile, the action it runs, the actions it watches, its scripted outputs)."""

    name: str
    mode: str | None
    signal: str | None
    story: str
    idea: str
    roles: tuple[tuple[str, str, str, tuple[str, ...], tuple[str, ...]], ...]
    n_round: int


_CODE = "def is_prime(n):\n    return all(n % k for k in range(2, n))\n\nprint(sum(map(is_prime, range(20))))"
_FIXED = ("def is_prime(n):\n    if n < 2:\n        return False\n"
          "    return all(n % k for k in range(2, int(n ** 0.5) + 1))\n\nprint(sum(map(is_prime, range(20))))")
METAGPT_CASES: tuple[MetaGPTCase, ...] = (
    MetaGPTCase(
        "metagpt-step-repetition", "1.3", "repeated_message",
        "the coder re-sends the same code after each rejection", "Write is_prime(n); count the primes below 20.",
        (("Alice", "Coder", "WriteCode", ("UserRequirement", "ReviewCode"), (_CODE, _CODE, _CODE)),
         ("Carol", "Reviewer", "ReviewCode", ("WriteCode",),
          ("Rejected: is_prime(0) and is_prime(1) return True, so it prints 10 instead of 8. Handle n < 2.",
           "Rejected again: the same code, the same bug; 0 and 1 are not primes.",
           "Still the same code. Rejected."))),
        6,
    ),
    MetaGPTCase(
        "metagpt-clean", None, None, "code, an independent test run reported with its output, approval, stop",
        "Write is_prime(n); count the primes below 20.",
        (("Alice", "Coder", "WriteCode", ("UserRequirement",), (_FIXED,)),
         ("Bob", "Tester", "RunTests", ("WriteCode",),
          ("I ran the unit tests against it: the script prints 8, and is_prime(0), is_prime(1), is_prime(2) give "
           "False, False, True.",)),
         ("Carol", "Reviewer", "ReviewCode", ("RunTests",),
          ("The test run shows 8 primes below 20 and the edge cases handled; ship it.",))),
        3,
    ),
)  # fmt: skip


# Never called: no action asks the model; MetaGPT only insists that one is configured.
_INERT_LLM = {"api_type": "openai", "base_url": "http://127.0.0.1:9/v1", "api_key": "unused", "model": "gpt-4"}


def ensure_metagpt_config() -> None:
    """MetaGPT refuses to import without a config that has an ``llm`` section; give it an inert one in a throwaway
    project root (its logs go there too), unless the user set ``METAGPT_PROJECT_ROOT``."""
    if os.environ.get("METAGPT_PROJECT_ROOT"):
        return
    root = Path(tempfile.mkdtemp(prefix="mast-otel-metagpt-"))
    (root / "config").mkdir()
    (root / "config" / "config2.yaml").write_text(f"llm: {json.dumps(_INERT_LLM)}\n")  # JSON is valid YAML
    os.environ["METAGPT_PROJECT_ROOT"] = str(root)


def _team(case: MetaGPTCase) -> Any:
    from metagpt.actions import Action, UserRequirement
    from metagpt.config2 import Config
    from metagpt.context import Context
    from metagpt.roles import Role
    from metagpt.team import Team

    context = Context(config=Config.from_llm_config(_INERT_LLM))
    actions: dict[str, type[Any]] = {"UserRequirement": UserRequirement}
    for _, _, action, _, outputs in case.roles:
        script = iter(outputs)

        async def run(self: Any, history: Sequence[Any], _script: Any = script) -> str:
            return next(_script, "Nothing more from me.")

        actions[action] = type(action, (Action,), {"__annotations__": {"name": str}, "name": action, "run": run})
    team = Team(context=context)
    for name, profile, action, watch, _ in case.roles:
        role = Role(name=name, profile=profile, goal=f"do the {profile.lower()}'s job",
                    watch=[actions[w] for w in watch], context=context)  # fmt: skip
        role.set_actions([actions[action]])
        team.hire([role])
    return team


def run_metagpt_case(case: MetaGPTCase) -> list[dict[str, Any]]:
    """Run one case under mast-otel's MetaGPT integration; its spans as plain dicts (``SpanRecord`` fields)."""
    return [dataclasses.asdict(s) for s in run_team(case)[0]]


def run_team(case: MetaGPTCase) -> tuple[list[Any], Any]:
    """Run one case under mast-otel's MetaGPT integration: its spans (``SpanRecord``) and the MetaGPT team."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from mast_otel.config import CaptureConfig
    from mast_otel.integrations.metagpt import MetaGPTInstrumentor
    from mast_otel.spans import from_readable_span

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = MetaGPTInstrumentor()
    instrumentor.instrument(tracer_provider=provider, config=CaptureConfig(capture_content=True))
    team = _team(case)
    try:
        asyncio.run(team.run(n_round=case.n_round, idea=case.idea))
    finally:
        instrumentor.uninstrument()
    provider.shutdown()
    return [from_readable_span(s) for s in exporter.get_finished_spans()], team


def main() -> int:
    ensure_metagpt_config()
    for case in METAGPT_CASES:
        print(json.dumps({"case": case.name, "spans": run_metagpt_case(case)}, default=list), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
