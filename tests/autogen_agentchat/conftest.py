"""autogen-agentchat tier. Runs in its own environment (``nox -s autogen_agentchat``, see noxfile.py); in any
environment without autogen-agentchat its modules are skipped with that reason.

Each test gets a fresh scripted OpenAI-compatible server (examples/scripted_openai.py, port 0): a rule's replies
are handed out in order, so a server serves one run's script.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from examples.scripted_openai import ScriptedOpenAI
from tests.span_query import Spans

HAS_AUTOGEN_AGENTCHAT = importlib.util.find_spec("autogen_agentchat") is not None
SKIP_REASON = "autogen-agentchat is not installed in this environment; it has its own: nox -s autogen_agentchat"

if os.environ.get("MAST_OTEL_REQUIRE_FRAMEWORK") == "autogen_agentchat":
    import autogen_agentchat.teams  # noqa: F401  (nox -s autogen_agentchat: a broken install must fail, not skip)


@pytest.fixture
def instrumentor(tracer_provider: TracerProvider) -> Iterator[Any]:
    from mast_otel.integrations.autogen_agentchat import AutogenAgentChatInstrumentor

    inst = AutogenAgentChatInstrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    yield inst
    inst.uninstrument()


@pytest.fixture
def server() -> Iterator[ScriptedOpenAI]:
    from tests.autogen_agentchat.scenarios import SCRIPT

    with ScriptedOpenAI(SCRIPT) as s:
        yield s


@pytest.fixture
def spans(span_exporter: InMemorySpanExporter) -> Any:
    return lambda: Spans(span_exporter)
