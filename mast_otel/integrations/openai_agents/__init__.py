"""OpenAI Agents SDK (``openai-agents``; built and tested against 0.24.0).

``OpenAIAgentsInstrumentor().instrument()`` (or ``mast_otel.instrument()``, or ``opentelemetry-instrument``)
registers one trace processor with the SDK's public ``add_trace_processor``: no method is patched, and the
program's own processors (the default exporter to OpenAI included) stay exactly as configured. The processor maps
the SDK's spans onto the recorder, with the SDK's own start and end times:

=========================================  ========================================================================
SDK span                                   recorder call
=========================================  ========================================================================
``task`` (one per ``Runner.run`` /         conversation root named after the workflow, parented under the
``run_sync`` / ``run_streamed``)           caller's current span; a run started inside a tool (an agent used as
                                           a tool) is a nested conversation. Termination: ``completed``,
                                           ``max_turns`` (``MaxTurnsExceeded``), ``guardrail`` (a tripwire),
                                           ``error``, with the last agent
``agent``                                  agent turn; in a nested run the calling agent's ``delegation``
                                           handoff to it
``generation`` / ``response``              messages: the run's input (``user`` -> first agent; it is also the
                                           task), what an agent that took control received (previous agent ->
                                           it), each model output (text to the user, or tool and transfer calls)
``function``                               tool call with arguments, result, success
``handoff``                                handoff ``from -> to``, reason ``tool_call``, candidates (the agent's
                                           handoffs), detail (the LLM's transfer call and its arguments)
``guardrail``                              tool call of type ``guardrail`` with its result; a tripwire ends the
                                           run with reason ``guardrail``
=========================================  ========================================================================

Content follows mast-otel's capture settings and the SDK's: a run with ``trace_include_sensitive_data=False``
(or ``OPENAI_AGENTS_TRACE_INCLUDE_SENSITIVE_DATA=false``) gives the processor no content, and mast-otel records
none. A run with tracing disabled (``RunConfig(tracing_disabled=True)``, ``OPENAI_AGENTS_DISABLE_TRACING``)
calls no processor, so mast-otel records nothing for it.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import logging
from collections.abc import Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from mast_otel.integrations import recorder_for
from mast_otel.recorder import Recorder

from ._processor import MastTraceProcessor

__all__ = ["SUPPORTED", "MastTraceProcessor", "OpenAIAgentsInstrumentor"]

_log = logging.getLogger(__name__)
FRAMEWORK = "openai-agents"
SUPPORTED = ">=0.24,<0.25"
_SUPPORTED_RANGE = ((0, 24), (0, 25))

# The SDK has no way to remove a processor, so one processor per process is registered once and switched off
# by uninstrument(); instrumenting again switches it back on with the new recorder.
_registered: MastTraceProcessor | None = None


def _version_problem() -> str | None:
    try:
        version = importlib.metadata.version("openai-agents")
    except importlib.metadata.PackageNotFoundError:
        return None
    parts = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    low, high = _SUPPORTED_RANGE
    if len(parts) == 2 and low <= parts < high:
        return None
    return (
        f"openai-agents {version} is outside the versions mast-otel supports ({SUPPORTED}); instrumenting anyway "
        "through the public trace-processor API, but spans may be incomplete"
    )


class OpenAIAgentsInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Conversations, turns, messages, tool calls, handoffs, guardrails and termination of OpenAI Agents SDK runs."""

    def instrumentation_dependencies(self) -> Collection[str]:
        # Any version: one outside SUPPORTED gets a warning from _instrument rather than a silent skip.
        return ("openai-agents",)

    @property
    def processor(self) -> MastTraceProcessor | None:
        """The registered processor (its recording failures are counted in ``mast_otel.recording_failures()``)."""
        return _registered

    def _instrument(self, **kwargs: Any) -> None:
        global _registered
        problem = _version_problem()
        if problem:
            _log.warning(problem)
        recorder = recorder_for(FRAMEWORK, kwargs)
        quiet = Recorder(
            tracer_provider=kwargs.get("tracer_provider"),
            config=dataclasses.replace(recorder.config, capture_content=False),
            framework=FRAMEWORK,
        )
        if _registered is not None:
            _registered.configure(recorder, quiet)
            return
        from agents.tracing import add_trace_processor

        processor = MastTraceProcessor(recorder, quiet)
        add_trace_processor(processor)  # type: ignore[arg-type]  # duck-typed TracingProcessor
        _registered = processor

    def _uninstrument(self, **kwargs: Any) -> None:
        if _registered is not None:
            _registered.enabled = False
