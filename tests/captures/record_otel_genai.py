"""Record first-sight runs of frameworks already in the corpus, traced by the official OpenTelemetry GenAI
instrumentations (``opentelemetry-instrumentation-genai-*``, built on ``opentelemetry-util-genai``) instead.

``nox -s "captures(framework='<pair>')"`` (or ``python -m tests.captures.record_otel_genai <pair> [RUN ...]`` in
that environment) writes ``tests/data/first_sight/<pair>/<run>.json``: not the corpus (``tests/data/captures``,
whose test wants every file read right), but the runs issue 46 scores as the adapters read them at first sight
(``tests/adapters/test_first_sight.py``). The runs, the scripted model and the expectation are the framework's own
recorder's (``record_<framework>.py``: the expectation read from the framework's own record, never from a span);
only the tracing differs: each instrumentor as its README sets it up, given the recording's provider.

Content is captured as the READMEs document it, ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``
(util-genai 1.3b0 reads ``NO_CONTENT``, ``SPAN_ONLY``, ``EVENT_ONLY`` or ``SPAN_AND_EVENT``; any other value, ``true``
included, is ``NO_CONTENT`` with a warning; no ``OTEL_SEMCONV_STABILITY_OPT_IN`` is needed). Each pair records:

- its multi-agent run with content (the framework recorder's: ``desk``, ``supervisor``, ``team``, ``manager``);
- the same run with the variable unset, the default (``<run>-content-off``: no content; the skip should name it);
- ``solo``: one agent, the control run, not a multi-agent conversation.

A ``<pair>_openai`` pair adds ``opentelemetry-instrumentation-genai-openai`` where the framework's instrumentation
leaves the model calls to the provider's (the READMEs of the OpenAI Agents SDK's, LlamaIndex's and smolagents'
instrumentations say so: smolagents' wraps only in-process models; Agno's writes no model-call span either).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any

from tests.captures import _record

CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
OPENAI = ("opentelemetry.instrumentation.genai.openai", "OpenAIInstrumentor",
          "opentelemetry-instrumentation-genai-openai")  # fmt: skip


@dataclass(frozen=True)
class Pair:
    """A framework's recorder and the official instrumentors that trace it (module, class, package each)."""

    recorder: str
    framework: str  # as mast-otel names it (the capture's expect.framework)
    instrumentors: tuple[tuple[str, str, str], ...]
    multi: str  # the recorder's multi-agent run
    options: dict[str, Any] = field(default_factory=dict)  # the framework instrumentor's instrument() options

    def packages(self, recorder_packages: list[str]) -> list[str]:
        framework = [p for p in recorder_packages if not p.startswith("openinference-")]
        return [*framework, *(package for _, _, package in self.instrumentors), "opentelemetry-util-genai"]


def _pair(recorder: str, framework: str, module: str, name: str, package: str, multi: str, *,
          openai: bool = False, options: dict[str, Any] | None = None) -> Pair:  # fmt: skip
    instrumentors = ((module, name, package), *((OPENAI,) if openai else ()))
    return Pair(f"tests.captures.record_{recorder}", framework, instrumentors, multi, options or {})


_AGENTS = ("openai_agents", "openai-agents", "opentelemetry.instrumentation.genai.openai_agents",
           "OpenAIAgentsInstrumentor", "opentelemetry-instrumentation-genai-openai-agents", "desk")  # fmt: skip
_AGNO = ("agno", "agno", "opentelemetry.instrumentation.genai.agno", "AgnoInstrumentor",
         "opentelemetry-instrumentation-genai-agno", "team")  # fmt: skip
_LLAMA = ("llama_index", "llama-index", "opentelemetry.instrumentation.genai.llama_index", "LlamaIndexInstrumentor",
          "opentelemetry-instrumentation-genai-llama-index", "desk")  # fmt: skip
_SMOL = ("smolagents", "smolagents", "opentelemetry.instrumentation.genai.smolagents", "SmolagentsInstrumentor",
         "opentelemetry-instrumentation-genai-smolagents", "manager")  # fmt: skip
# The OpenAI Agents SDK's own exporter to OpenAI's backend is turned off as its README shows (offline).
_NO_EXPORT = {"disable_openai_trace_export": True}
PAIRS: dict[str, Pair] = {
    "openai_agents_otel_genai": _pair(*_AGENTS, options=_NO_EXPORT),
    "openai_agents_otel_genai_openai": _pair(*_AGENTS, openai=True, options=_NO_EXPORT),
    "langgraph_otel_genai": _pair("langgraph", "langgraph", "opentelemetry.instrumentation.genai.langchain",
                                  "LangChainInstrumentor", "opentelemetry-instrumentation-genai-langchain",
                                  "supervisor"),
    "agno_otel_genai": _pair(*_AGNO),
    "agno_otel_genai_openai": _pair(*_AGNO, openai=True),
    "llama_index_otel_genai": _pair(*_LLAMA),
    "llama_index_otel_genai_openai": _pair(*_LLAMA, openai=True),
    "smolagents_otel_genai": _pair(*_SMOL),
    "smolagents_otel_genai_openai": _pair(*_SMOL, openai=True),
}  # fmt: skip


class _Instrumented:
    """The pair's instrumentors, each given the recording's provider (the framework's with its options)."""

    def __init__(self, pair: Pair, provider: Any) -> None:
        self.instrumentors = []
        for index, (module, name, _) in enumerate(pair.instrumentors):
            instrumentor = getattr(import_module(module), name)()
            instrumentor.instrument(tracer_provider=provider, **(pair.options if index == 0 else {}))
            self.instrumentors.append(instrumentor)

    def uninstrument(self) -> None:
        for instrumentor in reversed(self.instrumentors):
            instrumentor.uninstrument()


@contextmanager
def _content(value: str | None) -> Iterator[None]:
    """The content variable set (or unset: its default) for one run, as it was afterwards."""
    before = os.environ.pop(CONTENT, None)
    if value is not None:
        os.environ[CONTENT] = value
    try:
        yield
    finally:
        os.environ.pop(CONTENT, None)
        if before is not None:
            os.environ[CONTENT] = before


def runs(name: str) -> dict[str, Callable[[], Path]]:
    """The pair's runs, each its framework recorder's run traced by the pair's instrumentors, written under
    ``first_sight/<pair>/``."""
    pair = PAIRS[name]
    recorder = import_module(pair.recorder)
    packages = pair.packages(recorder.PACKAGES)
    instrumentation = ", ".join(package for _, _, package in pair.instrumentors)

    def record(run: str, source: str, content: str | None) -> Path:
        def write(_framework: str, _run: str, _packages: list[str], settings: dict[str, Any],
                  expect: _record.Expectation, otlp: dict[str, Any], otlp_logs: Any = None) -> Path:  # fmt: skip
            expect.framework = pair.framework
            expect.hidden = [] if content else [CONTENT]
            described = {**settings, "instrumentation": instrumentation, CONTENT: content or "(unset: NO_CONTENT)",
                         **({"instrument": pair.options} if pair.options else {})}  # fmt: skip
            described.pop("hidden", None)  # (the framework recorder's OpenInference switches)
            return _record.write(name, run, packages, described, expect, otlp, otlp_logs, root=_record.FIRST_SIGHT)

        # the framework recorder's runs look both up as module globals when they run
        setattr(recorder, "_instrumented", lambda provider, *_, **__: _Instrumented(pair, provider))  # noqa: B010
        setattr(recorder, "write", write)  # noqa: B010
        with _content(content):
            path: Path = recorder.RUNS[source]()
        return path

    return {
        pair.multi: lambda: record(pair.multi, pair.multi, "SPAN_ONLY"),
        f"{pair.multi}-content-off": lambda: record(f"{pair.multi}-content-off", pair.multi, None),
        "solo": lambda: record("solo", "solo", "SPAN_ONLY"),
    }


if __name__ == "__main__":
    os.environ.setdefault("OPENAI_API_KEY", "unused")
    os.environ.setdefault("AGNO_TELEMETRY", "false")
    sys.exit(_record.main(runs(sys.argv[1]), sys.argv[2:]))
