"""A hierarchical CrewAI crew (a manager delegating to a researcher and a writer), traced by one line:
``mast_otel.instrument()``.

Runs in the CrewAI environment (``nox -s crewai`` creates it in ``.nox/crewai``, see docs/crewai.md), offline
against the project's scripted OpenAI-compatible server (the default) or any OpenAI-compatible server::

    .nox/crewai/bin/python examples/crewai_hierarchical.py --console    # print the spans here
    .nox/crewai/bin/python examples/crewai_hierarchical.py              # OTLP to localhost:4317 (the collector)
    .nox/crewai/bin/python examples/crewai_hierarchical.py --base-url http://127.0.0.1:8011/v1 --model m

The manager calls CrewAI's "Delegate work to coworker" tool twice (``delegation`` handoffs with the tool's
arguments), each coworker's turn nests inside that call, and the answers come back (``tool_return``). Offline,
the scripted manager asks the writer for a report before the researcher's figure is checked, and the writer
states it as exact (MAST 3.3, incorrect verification, for the judge to find).

CrewAI's anonymous telemetry is the user's business: this example leaves it as configured (set
``CREWAI_DISABLE_TELEMETRY=true`` to turn it off; mast-otel neither needs nor changes it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # python examples/crewai_hierarchical.py: import `examples` from the repository
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from examples._cli import console_tracing, endpoint, flush, parse_args

TASK = "Find the GDP of Freedonia and write a one-line report."
DELEGATE = "delegate_work_to_coworker"
SCRIPT: dict[str, Any] = {
    "rules": [
        {
            "match": "ROLE_MANAGER",
            "replies": [
                {
                    "tool": DELEGATE,
                    "args": {
                        "task": "Find the GDP of Freedonia",
                        "context": "Use the latest figure",
                        "coworker": "Researcher",
                    },
                },
                {
                    "tool": DELEGATE,
                    "args": {
                        "task": "Write a one-line report on Freedonia's GDP",
                        "context": "The researcher says about 42 billion",
                        "coworker": "Writer",
                    },
                },
                "Report: Freedonia's GDP is exactly 42 billion.",
            ],
        },
        {"match": "ROLE_RESEARCHER", "replies": ["Freedonia's GDP is about 42 billion (2019 estimate)."]},
        {"match": "ROLE_WRITER", "replies": ["Report: Freedonia's GDP is exactly 42 billion."]},
    ],
    "default": "ok",
}


def build(base_url: str, model: str = "scripted", api_key: str = "unused") -> Any:
    """The crew: a manager agent over a researcher and a writer, one task, ``Process.hierarchical``."""
    from crewai import LLM, Agent, Crew, Process, Task

    def llm() -> Any:
        return LLM(model=f"openai/{model}", base_url=base_url, api_key=api_key)

    researcher = Agent(role="Researcher", goal="Find facts", backstory="ROLE_RESEARCHER: a careful analyst.",
                       llm=llm(), allow_delegation=False)  # fmt: skip
    writer = Agent(role="Writer", goal="Write short reports", backstory="ROLE_WRITER: a concise writer.",
                   llm=llm(), allow_delegation=False)  # fmt: skip
    manager = Agent(role="Manager", goal="Get the task done by your team", backstory="ROLE_MANAGER: you delegate.",
                    llm=llm(), allow_delegation=True)  # fmt: skip
    task = Task(description=TASK, expected_output="one line")
    return Crew(agents=[researcher, writer], tasks=[task], process=Process.hierarchical, manager_agent=manager)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0] if __doc__ else "", argv)
    if args.console:
        console_tracing()
    import mast_otel

    mast_otel.instrument()
    with endpoint(args.base_url, SCRIPT) as base_url:
        api_key = args.api_key or os.environ.get("OPENAI_API_KEY") or "unused"
        result = build(base_url, args.model or "scripted", api_key).kickoff()
    print(result.raw)
    flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
