"""LangGraph tier. Runs in the LangGraph environment (``nox -s langgraph``, see noxfile.py); in any environment
without LangGraph its modules are skipped with that reason."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.span_query import Spans

HAS_LANGGRAPH = all(importlib.util.find_spec(m) is not None for m in ("langgraph", "langgraph_supervisor"))
SKIP_REASON = "LangGraph is not installed in this environment; it has its own: nox -s langgraph"

if os.environ.get("MAST_OTEL_REQUIRE_FRAMEWORK") == "langgraph":
    import langgraph.pregel  # noqa: F401  (nox -s langgraph: a broken install must fail, not skip)
    import langgraph_supervisor  # noqa: F401
    import langgraph_swarm  # noqa: F401


@pytest.fixture
def instrumentor(tracer_provider: TracerProvider) -> Iterator[Any]:
    from mast_otel.integrations.langgraph import LangGraphInstrumentor

    inst = LangGraphInstrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    yield inst
    inst.uninstrument()


@pytest.fixture
def spans(span_exporter: InMemorySpanExporter) -> Any:
    return lambda: Spans(span_exporter)
