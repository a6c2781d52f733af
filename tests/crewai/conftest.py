"""CrewAI tier. Runs in the CrewAI environment (``nox -s crewai``, see noxfile.py); in any environment without
CrewAI its modules are skipped with that reason.

CrewAI's anonymous telemetry would try to reach its servers (no network here, and a test must not phone home):
these tests turn it off with CrewAI's own switch. mast-otel itself never touches it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.frameworks import instrumented, require_in_own_session, skip_reason

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("OPENAI_API_KEY", "unused")

SKIP_REASON = skip_reason("CrewAI", "crewai")
require_in_own_session("crewai", "crewai")


@pytest.fixture
def instrumentor(tracer_provider: TracerProvider) -> Iterator[Any]:
    from mast_otel.integrations.crewai import CrewAIInstrumentor

    yield from instrumented(CrewAIInstrumentor(), tracer_provider)
