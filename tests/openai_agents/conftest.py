"""OpenAI Agents SDK tier. Runs in its own environment (``nox -s openai_agents``, see noxfile.py); in any
environment without the SDK its modules are skipped with that reason.

The program's trace processors are set once for the session, the way a user configures the SDK: a capturing
processor instead of the default exporter to OpenAI (these tests have no network and no key). mast-otel then adds
its own processor; every test gets a fresh OpenTelemetry provider and in-memory exporter.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from examples.scripted_openai import ScriptedOpenAI
from tests.frameworks import installed, instrumented, require_in_own_session, skip_reason

HAS_SDK = installed("agents")
SKIP_REASON = skip_reason("the OpenAI Agents SDK", "openai_agents")
require_in_own_session("openai_agents", "agents")


class CapturingProcessor:
    """The user's own trace processor: keeps every trace and span it is handed, as exported dicts."""

    def __init__(self) -> None:
        self.started: list[Any] = []
        self.ended: list[Any] = []
        self.exports: list[dict[str, Any] | None] = []

    def on_trace_start(self, trace: Any) -> None:
        self.started.append(trace)

    def on_trace_end(self, trace: Any) -> None:
        self.ended.append(trace)

    def on_span_start(self, span: Any) -> None:
        self.started.append(span)

    def on_span_end(self, span: Any) -> None:
        self.ended.append(span)
        self.exports.append(span.export())

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass

    def clear(self) -> None:
        self.started.clear()
        self.ended.clear()
        self.exports.clear()


@pytest.fixture(scope="session")
def user_processor() -> CapturingProcessor:
    if not HAS_SDK:
        pytest.skip(SKIP_REASON)
    from agents import set_trace_processors

    processor = CapturingProcessor()
    set_trace_processors([processor])  # type: ignore[list-item]
    return processor


@pytest.fixture
def instrumentor(tracer_provider: TracerProvider, user_processor: CapturingProcessor) -> Iterator[Any]:
    from mast_otel.integrations.openai_agents import OpenAIAgentsInstrumentor

    user_processor.clear()
    yield from instrumented(OpenAIAgentsInstrumentor(), tracer_provider)


@pytest.fixture
def scripted() -> Iterator[Any]:
    """``scripted(script)`` starts a scripted server for this test; all stop at its end."""
    servers: list[ScriptedOpenAI] = []

    def start(script: dict[str, Any]) -> ScriptedOpenAI:
        server = ScriptedOpenAI(script).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
