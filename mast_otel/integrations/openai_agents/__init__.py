"""OpenAI Agents SDK (``openai-agents``; built and tested against 0.24.0).

``OpenAIAgentsInstrumentor().instrument()`` (or ``mast_otel.instrument()``, or ``opentelemetry-instrument``)
registers one trace processor with the SDK's trace provider; the program's own processors (the default exporter
to OpenAI included) stay exactly as configured. A program that sets its own list afterwards with
``set_trace_processors([...])`` (the SDK's documented way to send its traces elsewhere) keeps mast-otel's
processor after its own: the one patched method, ``DefaultTraceProvider.set_processors``, appends it when the
list lacks it (see ``_registration``). The processor maps the SDK's spans onto the recorder, with the SDK's own
start and end times:

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
none. A run with tracing disabled (``RunConfig(tracing_disabled=True)``, ``OPENAI_AGENTS_DISABLE_TRACING``,
``set_tracing_disabled(True)``) calls no processor, so mast-otel records nothing for it; the global switches are
logged once when mast-otel is on.

``uninstrument()`` switches the processor off and un-patches ``set_processors``; the processor stays registered
(the SDK cannot remove one), so runs in flight still reach their ends and leave nothing behind, and
``instrument()`` switches it on again, registering it anew if the program's list dropped it meanwhile.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import logging
from collections.abc import Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from mast_otel.integrations import recorder_for
from mast_otel.integrations.patching import Hook, Patches
from mast_otel.recorder import Recorder

from ._processor import MastTraceProcessor
from ._registration import holds, kept_in_processors, noticed_disabled, warn_if_disabled

__all__ = ["HOOKS", "SUPPORTED", "MastTraceProcessor", "OpenAIAgentsInstrumentor"]

_log = logging.getLogger(__name__)
FRAMEWORK = "openai-agents"
SUPPORTED = ">=0.24,<0.25"
_SUPPORTED_RANGE = ((0, 24), (0, 25))
_PROVIDER = "agents.tracing.provider"

HOOKS: tuple[Hook[MastTraceProcessor], ...] = (
    Hook(_PROVIDER, "DefaultTraceProvider.set_processors", kept_in_processors),
    Hook(_PROVIDER, "DefaultTraceProvider.set_disabled", noticed_disabled),
)

# The SDK has no way to remove a processor, so one processor per process is registered and switched off by
# uninstrument(); instrumenting again switches it back on with the new recorder.
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
        if _registered is None:
            _registered = MastTraceProcessor(recorder, quiet)
        processor = _registered
        processor.configure(recorder, quiet)
        self._patches = patches = Patches("openai_agents", "openai-agents")
        if not patches.apply(HOOKS, processor):
            processor.enabled = False
            return
        try:
            _register(processor)
        except Exception as exc:  # all or nothing, like a missing hook
            processor.enabled = False
            patches.undo()
            patches.missing("agents.tracing.get_trace_provider().register_processor", exc)

    def _uninstrument(self, **kwargs: Any) -> None:
        if _registered is not None:
            _registered.enabled = False
        patches: Patches | None = getattr(self, "_patches", None)
        if patches is not None:
            patches.undo()


def _register(processor: MastTraceProcessor) -> None:
    """Put ``processor`` in the SDK's current provider's list unless it is there already."""
    from agents.tracing import get_trace_provider

    provider = get_trace_provider()
    held = holds(provider, processor)
    if held is None:
        held = provider is processor.provider
    if not held:
        # Out of the list since the last instrument(): ends it was not handed will never come.
        processor.forget_open()
        provider.register_processor(processor)
    processor.provider = provider
    warn_if_disabled(provider)
