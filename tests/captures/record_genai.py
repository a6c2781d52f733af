"""Record the captures of the frameworks that trace themselves with the OpenTelemetry GenAI conventions: Google ADK,
Strands Agents, Pydantic AI and Microsoft Agent Framework.

``nox -s "captures(framework='strands')"`` (or ``python -m tests.captures.record_genai FRAMEWORK [RUN ...]`` in
that framework's environment) writes ``tests/data/captures/<framework>/<run>.json``. Nothing here runs a
framework: each run is the refund desk's example (``examples/<framework>_desk.py``) under one of its tracing
variants (``tests/genai/runs.py``), recorded by the same code as the GenAI fixtures (``tests.genai.record``: the
example as its own process, exporting OTLP/gRPC to a local receiver). The expectation is the example's record of
the run (``examples/_genai.py``'s ``Record``), read from the framework's own result objects, events and message
lists (``SOURCES`` says which), never from a span.

- ``desk``: triage hands the customer to billing, which calls ``lookup_order`` and hands a proposal to the
  reviewer (a transfer, a Swarm handoff, a delegation through a tool, a handoff workflow), with content captured;
- ``desk-<variant>``: the same under another tracing variant that still captures content, where the framework
  puts it elsewhere (Strands' latest conventions: the ``gen_ai.client.inference.operation.details`` event);
- ``desk-event-only`` (ADK, ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=EVENT_ONLY``) and
  ``desk-baseline-logs`` (Agent Framework's v1.36 baseline with ``ENABLE_SENSITIVE_DATA=true``): the text only in
  log records, exported with the spans (``"otlp_logs"``), joined to them as the collector does;
- ``solo``: one agent (``clerk``) with one tool: the control run, not a multi-agent conversation.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tests.captures._record import Expectation, write
from tests.genai.record import record
from tests.genai.runs import FRAMEWORKS, Variant

# The packages each capture names with their versions (the framework as its nox session installs it).
PACKAGES = {
    "google_adk": ["google-adk", "google-genai", "litellm"],
    "strands": ["strands-agents", "openai"],
    "pydantic_ai": ["pydantic-ai-slim", "openai"],
    "agent_framework": ["agent-framework-core", "agent-framework-openai", "agent-framework-orchestrations"],
}
# Where each example reads its record of the run (the multi-agent run; the solo run reads the same for one agent).
SOURCES = {
    "google_adk": "Runner.run_async(...) events: each event's author and content parts (text, function_call), "
    "actions.transfer_to_agent (the handoffs)",
    "strands": "Swarm.invoke_async(...) -> MultiAgentResult.node_history (the handoffs: the order of the agents), "
    "each Agent.messages (assistant text and toolUse blocks)",
    "pydantic_ai": "each Agent.run(...) -> AgentRunResult.new_messages(): the ModelResponses (text and tool-call "
    "parts) merged by timestamp; a change of agent between them is a handoff (the delegation through a tool, "
    "and its return)",
    "agent_framework": "Workflow.run(...) events: handoff_sent (source, target), output (each response's assistant "
    "messages: author_name, text, function_call contents)",
}
SOLO_SOURCES = {
    "google_adk": "Runner.run_async(...) events (author, content parts)",
    "strands": "Agent.invoke_async(...), then Agent.messages",
    "pydantic_ai": "Agent.run(...) -> AgentRunResult.new_messages()",
    "agent_framework": "Agent.run(...) -> AgentResponse.messages",
}
# Settings that put the text in log records only (exported with OTEL_LOGS_EXPORTER=otlp, examples/_genai.py): not
# variants of runs.py, whose end-to-end tests send the collector spans only.
LOGS = {"OTEL_LOGS_EXPORTER": "otlp"}
ADK_EVENT_ONLY = Variant(env={"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY", **LOGS},
                         content_captured=True)  # fmt: skip
AF_BASELINE_LOGS = Variant(content="on", env={"OTEL_SEMCONV_STABILITY_OPT_IN": "", **LOGS}, content_captured=True)
# The multi-agent runs: capture name -> the tracing variant (tests/genai/runs.py, or settings of its own), each
# capturing content.
DESK_RUNS: dict[str, dict[str, str | tuple[str, Variant]]] = {
    "google_adk": {"desk": "content", "desk-event-only": ("event-only", ADK_EVENT_ONLY)},
    "strands": {"desk": "default", "desk-latest-events": "latest-events"},
    "pydantic_ai": {"desk": "default"},
    "agent_framework": {"desk": "content", "desk-baseline-logs": ("baseline-logs", AF_BASELINE_LOGS)},
}


def expectation(run: dict[str, Any], *, conversation: bool, source: str) -> Expectation:
    """The example's record of the run (``examples/_genai.py``'s ``Record`` as JSON) as a capture's expectation."""
    messages = run["messages"]
    assert messages and messages[0][0] == "user", messages[:1]
    return Expectation(
        conversation=conversation, task=messages[0][1], agents=list(dict.fromkeys(run["agents"])),
        handoffs=[tuple(h) for h in run["handoffs"]], tool_calls=[tuple(t) for t in run["tools"]],
        messages=len(messages), source=source,
    )  # fmt: skip


def capture(name: str, run_name: str, chosen: str | tuple[str, Variant], *, solo: bool = False) -> Path:
    variant, settings = chosen if isinstance(chosen, tuple) else (chosen, FRAMEWORKS[name].variants[chosen])
    assert settings.content_captured, f"{name} {variant}: a capture with content hidden needs its switches named"
    fixture = record(name, variant, solo=solo, settings=settings)
    example = f"examples/{FRAMEWORKS[name].example}.py"
    source = f"{example}: {(SOLO_SOURCES if solo else SOURCES)[name]}"
    expect = expectation(fixture["record"], conversation=not solo, source=source)
    described = {"example": example + (" --solo" if solo else ""), "variant": variant, **asdict(settings)}
    return write(name, run_name, PACKAGES[name], described, expect, fixture["otlp"], fixture.get("otlp_logs"))


def runs(name: str) -> dict[str, Callable[[], Path]]:
    found: dict[str, Callable[[], Path]] = {
        run: functools.partial(capture, name, run, variant) for run, variant in DESK_RUNS[name].items()
    }
    found["solo"] = functools.partial(capture, name, "solo", DESK_RUNS[name]["desk"], solo=True)
    return found


def main(argv: list[str]) -> int:
    name, *wanted = argv
    chosen = runs(name)
    for run in wanted or list(chosen):
        chosen[run]()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
