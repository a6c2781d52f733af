"""autogen-agentchat tier. Runs in its own environment (``nox -s autogen_agentchat``, see noxfile.py); in any
environment without autogen-agentchat its modules are skipped with that reason.

Each test gets a fresh scripted OpenAI-compatible server (examples/scripted_openai.py, port 0): a rule's replies
are handed out in order, so a server serves one run's script.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from examples.scripted_openai import ScriptedOpenAI
from tests.frameworks import instrumented, require_in_own_session, skip_reason

SKIP_REASON = skip_reason("autogen-agentchat", "autogen_agentchat")
require_in_own_session("autogen_agentchat", "autogen_agentchat.teams")


@pytest.fixture
def instrumentor(tracer_provider: TracerProvider) -> Iterator[Any]:
    from mast_otel.integrations.autogen_agentchat import AutogenAgentChatInstrumentor

    yield from instrumented(AutogenAgentChatInstrumentor(), tracer_provider)


@pytest.fixture
def server() -> Iterator[ScriptedOpenAI]:
    from tests.autogen_agentchat.scenarios import SCRIPT

    with ScriptedOpenAI(SCRIPT) as s:
        yield s
