"""A LangGraph supervisor with two workers (researcher, writer), traced by one line: ``mast_otel.instrument()``.

Runs in the LangGraph environment (``nox -s langgraph`` creates it in ``.nox/langgraph``, see docs/langgraph.md),
offline against the project's scripted OpenAI-compatible server (the default) or any OpenAI-compatible server::

    .nox/langgraph/bin/python examples/langgraph_supervisor.py --console    # print the spans here
    .nox/langgraph/bin/python examples/langgraph_supervisor.py              # OTLP to localhost:4317 (the collector)
    .nox/langgraph/bin/python examples/langgraph_supervisor.py --base-url http://127.0.0.1:8011/v1 --model m

The supervisor (``langgraph-supervisor``) hands the task to the researcher with its ``transfer_to_researcher``
tool, the researcher calls ``search`` and answers, the library transfers control back (a synthetic tool call:
``mast.handoff.synthetic=true``), the supervisor hands over to the writer, and answers. Offline, the scripted
writer reports a number nobody checked (the researcher's search said "about 42"; the report says "exactly 42"):
MAST 3.2/3.3, no or incorrect verification, for the judge to find.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    # python examples/langgraph_supervisor.py: import `examples` from the repository root, and do not let this
    # file (examples/ is sys.path[0]) shadow the `langgraph_supervisor` package it uses.
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from examples._cli import console_tracing, endpoint, flush, parse_args

TASK = "What is the GDP of Freedonia? Write a one-line report."
SUPERVISOR = "ROLE_SUPERVISOR: you manage a researcher and a writer. Delegate; never answer from memory."
RESEARCHER = "ROLE_RESEARCHER: find facts with the search tool."
WRITER = "ROLE_WRITER: write a one-line report from the researcher's findings."
SCRIPT: dict[str, Any] = {
    "rules": [
        {
            "match": "ROLE_SUPERVISOR",
            "replies": [
                {"tool": "transfer_to_researcher", "args": {}},
                {"tool": "transfer_to_writer", "args": {}},
                "Done: the GDP of Freedonia is exactly 42 billion.",
            ],
        },
        {
            "match": "ROLE_RESEARCHER",
            "replies": [{"tool": "search", "args": {"query": "Freedonia GDP"}}, "The GDP of Freedonia is about 42."],
        },
        {"match": "ROLE_WRITER", "replies": ["Report: Freedonia's GDP is exactly 42 billion."]},
    ],
    "default": "ok",
}


def search(query: str) -> str:
    """Search the web."""
    return f"results for {query}: about 42 (estimate, 2019)"


def build(base_url: str, model: str = "scripted", api_key: str = "unused") -> Any:
    """The compiled supervisor graph: a ``create_supervisor`` over two ``create_react_agent`` workers."""
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent
    from langgraph_supervisor import create_supervisor

    def llm() -> ChatOpenAI:
        return ChatOpenAI(model=model, base_url=base_url, api_key=api_key, temperature=0)  # type: ignore[arg-type]

    researcher = create_react_agent(llm(), [search], prompt=RESEARCHER, name="researcher")
    writer = create_react_agent(llm(), [], prompt=WRITER, name="writer")
    return create_supervisor([researcher, writer], model=llm(), prompt=SUPERVISOR).compile()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0] if __doc__ else "", argv)
    if args.console:
        console_tracing()
    import mast_otel

    mast_otel.instrument()
    with endpoint(args.base_url, SCRIPT) as base_url:
        graph = build(base_url, args.model or "scripted", args.api_key or os.environ.get("OPENAI_API_KEY") or "unused")
        result = graph.invoke({"messages": [{"role": "user", "content": TASK}]})
    print(result["messages"][-1].content)
    flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
