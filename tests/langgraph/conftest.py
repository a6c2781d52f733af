"""LangGraph tier. Runs in the LangGraph environment (``nox -s langgraph``, see noxfile.py); in any environment
without LangGraph its modules are skipped with that reason."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.frameworks import instrumented, require_in_own_session, skip_reason

SKIP_REASON = skip_reason("LangGraph", "langgraph")
require_in_own_session("langgraph", "langgraph.pregel", "langgraph_supervisor", "langgraph_swarm")


@pytest.fixture
def instrumentor(tracer_provider: TracerProvider) -> Iterator[Any]:
    from mast_otel.integrations.langgraph import LangGraphInstrumentor

    yield from instrumented(LangGraphInstrumentor(), tracer_provider)
