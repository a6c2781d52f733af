"""CrewAI tier. Runs in the CrewAI environment (``nox -s crewai``, see noxfile.py); in any environment without
CrewAI its modules are skipped with that reason.

CrewAI's anonymous telemetry would try to reach its servers (no network here, and a test must not phone home):
these tests turn it off with CrewAI's own switch. mast-otel itself never touches it.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.span_query import Spans

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("OPENAI_API_KEY", "unused")

HAS_CREWAI = importlib.util.find_spec("crewai") is not None
SKIP_REASON = "CrewAI is not installed in this environment; it has its own: nox -s crewai"

if os.environ.get("MAST_OTEL_REQUIRE_FRAMEWORK") == "crewai":
    import crewai  # noqa: F401  (nox -s crewai: a broken install must fail, not skip)


@pytest.fixture
def instrumentor(tracer_provider: TracerProvider) -> Iterator[Any]:
    from mast_otel.integrations.crewai import CrewAIInstrumentor

    inst = CrewAIInstrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    yield inst
    inst.uninstrument()


@pytest.fixture
def spans(span_exporter: InMemorySpanExporter) -> Any:
    return lambda: Spans(span_exporter)
