"""Record Google ADK captures traced by ``openinference-instrumentation-google-adk`` (not ADK's own GenAI spans).

``nox -s "captures(framework='google_adk_openinference')"`` (or ``python -m
tests.captures.record_google_adk_openinference [RUN ...]`` in that environment) writes
``tests/data/captures/google_adk_openinference/<run>.json``. The runs are the refund desk of
``examples/google_adk_desk.py`` (LiteLLM pointed at the scripted server); only the tracing differs from
``google_adk/``: OpenInference's ``GoogleADKInstrumentor`` on the process-wide provider, as ``phoenix.otel.register()``
sets it (the instrumentor writes its model-call attributes onto the spans ADK's own tracer starts there; on a
provider of its own, with ADK's tracer on the default no-op one, no model call is recorded at all). The expectation
is the example's record of the run: the ``Runner.run_async`` events (each event's author and content parts,
``actions.transfer_to_agent``), never a span.

- ``desk`` (ADK's legacy schema, ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1``): triage transfers to billing
  (``transfer_to_agent``), which calls ``lookup_order`` and transfers a proposal to its sub-agent reviewer, who
  approves.
- ``solo`` (the same schema): one agent (``clerk``) with ``lookup_order``: the control run.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from examples import google_adk_desk as desk_example
from tests.captures._record import Expectation, main, otlp_json, recording, write

FRAMEWORK = "google_adk_openinference"
PACKAGES = ["google-adk", "google-genai", "litellm", "openinference-instrumentation-google-adk"]
SOURCE = ("examples/google_adk_desk.py: Runner.run_async(...) events: each event's author and content parts "
          "(text, function_call), actions.transfer_to_agent (the handoffs)")  # fmt: skip


def _instrumented(provider: Any) -> Any:
    from openinference.instrumentation.google_adk import GoogleADKInstrumentor

    instrumentor = GoogleADKInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    return instrumentor


def expectation(run: dict[str, Any], *, conversation: bool, source: str) -> Expectation:
    """The example's record of the run (``examples/_genai.py``'s ``Record`` as JSON), as record_genai.py reads it
    (not imported from there: its fixture recorder needs the collector, not installed here)."""
    messages = run["messages"]
    assert messages and messages[0][0] == "user", messages[:1]
    return Expectation(
        conversation=conversation, task=messages[0][1], agents=list(dict.fromkeys(run["agents"])),
        handoffs=[tuple(h) for h in run["handoffs"]], tool_calls=[tuple(t) for t in run["tools"]],
        messages=len(messages), source=source,
    )  # fmt: skip


def _record(run: str, *, solo: bool, env: dict[str, str] | None = None) -> Path:
    env = env or {}
    os.environ.update(env)
    with recording(desk_example.SCRIPT, global_provider=True) as rec:
        instrumentor = _instrumented(rec.provider)
        chosen = desk_example.solo if solo else desk_example.run
        record = asyncio.run(chosen(rec.server.base_url, "gpt-4o-mini", "unused"))
        instrumentor.uninstrument()
    for name in env:
        del os.environ[name]
    expect = expectation(record.as_json(), conversation=not solo, source=SOURCE)
    expect.framework = "google-adk"
    settings = {"example": "examples/google_adk_desk.py" + (" --solo" if solo else ""),
                "model": "LiteLlm(openai/gpt-4o-mini, api_base=scripted server)",
                "instrumentation": "openinference-instrumentation-google-adk (GoogleADKInstrumentor)",
                "global_provider": True, "env": env}  # fmt: skip
    return write(FRAMEWORK, run, PACKAGES, settings, expect, otlp_json(rec.exporter))


# ADK's legacy telemetry schema, with a ``call_llm`` span per model call, which the instrumentor makes its LLM span.
# Under ADK's default (schema v2: no ``call_llm`` span) the instrumentor writes every model call of an agent's turn
# onto that agent's one ``invoke_agent`` span, each call's answer over the last (docs/adapters.md, Captures): not in
# the corpus; ``_record("desk-schema-v2", solo=False)`` records it.
V1 = {"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"}
RUNS = {"desk": lambda: _record("desk", solo=False, env=V1), "solo": lambda: _record("solo", solo=True, env=V1)}

if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline: LiteLLM's own price list
    sys.exit(main(RUNS, sys.argv[1:]))
