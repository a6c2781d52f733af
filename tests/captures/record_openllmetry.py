"""Record captures of frameworks already in the corpus through OpenInference, traced by OpenLLMetry (Traceloop) instead.

``nox -s "captures(framework='<framework>_openllmetry')"`` (or ``python -m tests.captures.record_openllmetry
<framework> [RUN ...]`` in that environment) writes ``tests/data/captures/<framework>_openllmetry/<run>.json``.
The runs, the scripted model and the expectation are the framework's own recorder's (``record_<framework>.py``:
the expectation read from the framework's own record, never from a span); only the tracing differs: OpenLLMetry's
instrumentor for the framework and its instrumentor for the OpenAI client, both given the recording's provider, as
``Traceloop.init()`` enables every instrumentor installed (content on: ``TRACELOOP_TRACE_CONTENT`` unset).

- ``crewai``: ``hierarchical`` (the manager delegates to Researcher, who calls ``lookup_order``, then to Writer),
  ``solo`` (record_crewai.py; its ``hierarchical-events`` run is OpenInference's event-listener mode, not here).
- ``agno``: ``team`` (the leader delegates to Researcher, who calls ``lookup_order``, then to Writer; then a single
  agent in the same thread), ``solo`` (record_agno.py; its ``team-hidden`` run uses OpenInference's switches).
- ``langgraph``: ``supervisor`` (langgraph-supervisor: the supervisor transfers to Researcher, who calls
  ``lookup_order``, and to Writer, each transferred back), ``solo`` (record_langgraph.py).
"""

from __future__ import annotations

import os
import sys
from importlib import import_module
from pathlib import Path
from typing import Any

from tests.captures import _record

# framework -> (its recorder, OpenLLMetry's instrumentor module and class for it, its package, the runs recorded)
FRAMEWORKS: dict[str, tuple[str, str, str, str, tuple[str, ...]]] = {
    "crewai": ("tests.captures.record_crewai", "opentelemetry.instrumentation.crewai", "CrewAIInstrumentor",
               "opentelemetry-instrumentation-crewai", ("hierarchical", "solo")),
    "agno": ("tests.captures.record_agno", "opentelemetry.instrumentation.agno", "AgnoInstrumentor",
             "opentelemetry-instrumentation-agno", ("team", "solo")),
    "langgraph": ("tests.captures.record_langgraph", "opentelemetry.instrumentation.langchain",
                  "LangchainInstrumentor", "opentelemetry-instrumentation-langchain", ("supervisor", "solo")),
}  # fmt: skip


class _Instrumented:
    """OpenLLMetry's instrumentor for the framework and for the OpenAI client, on one provider."""

    def __init__(self, module: str, name: str, provider: Any) -> None:
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        self.instrumentors = [getattr(import_module(module), name)(), OpenAIInstrumentor()]
        for instrumentor in self.instrumentors:
            instrumentor.instrument(tracer_provider=provider)

    def uninstrument(self) -> None:
        for instrumentor in self.instrumentors:
            instrumentor.uninstrument()


def _recorder(framework: str) -> dict[str, Any]:
    """The framework's recorder, writing to ``<framework>_openllmetry/`` with OpenLLMetry's instrumentors."""
    recorder_name, module, name, package, runs = FRAMEWORKS[framework]
    recorder = import_module(recorder_name)
    packages = [p for p in recorder.PACKAGES if not p.startswith("openinference-")]
    packages += [package, "opentelemetry-instrumentation-openai"]

    def instrumented(provider: Any, *_: Any, **__: Any) -> _Instrumented:
        return _Instrumented(module, name, provider)

    def write(_framework: str, run: str, _packages: list[str], settings: dict[str, Any],
              expect: _record.Expectation, otlp: dict[str, Any], otlp_logs: Any = None) -> Path:  # fmt: skip
        expect.framework = framework.replace("_", "-")
        settings = {**settings, "instrumentation": f"OpenLLMetry: {package}, opentelemetry-instrumentation-openai"}
        settings.pop("instrument", None)  # (OpenInference's own options)
        return _record.write(f"{framework}_openllmetry", run, packages, settings, expect, otlp, otlp_logs)

    recorder._instrumented = instrumented
    recorder.write = write
    return {run: recorder.RUNS[run] for run in runs}


if __name__ == "__main__":
    os.environ.setdefault("OPENAI_API_KEY", "unused")
    os.environ.setdefault("AGNO_TELEMETRY", "false")
    os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
    os.environ.setdefault("TRACELOOP_TELEMETRY", "false")
    sys.exit(_record.main(_recorder(sys.argv[1]), sys.argv[2:]))
