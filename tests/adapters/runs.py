"""Real offline AG2 runs traced by another instrumentation (and, for the mixed case, by mast-otel as well).

Each run takes the tracer provider to trace with and returns the framework's own record of the conversation
(the oracle): the group chat's message list as ``(sender, content)`` pairs, in order. The fixture recorder
(``python -m tests.adapters.record``) and the real-collector tests both use these runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace import TracerProvider

import mast_otel
from examples.ag2_group_chat import TASK, build

Oracle = list[tuple[str, str]]


def _messages(groupchat: Any) -> Oracle:
    return [(str(m.get("name")), str(m.get("content") or "")) for m in groupchat.messages]


def _group_chat() -> tuple[Any, Any, Any]:
    user, manager, groupchat = build()
    return user, manager, groupchat


def ag2_builtin(provider: TracerProvider) -> Oracle:
    """AG2's own ``autogen.opentelemetry``: every agent instrumented, as AG2's docs show."""
    from autogen.opentelemetry import instrument_agent

    user, manager, groupchat = _group_chat()
    for agent in (user, manager, *groupchat.agents):
        instrument_agent(agent, tracer_provider=provider)
    user.initiate_chat(manager, message=TASK, silent=True)
    return _messages(groupchat)


def openinference_ag2(provider: TracerProvider) -> Oracle:
    """``openinference-instrumentation-ag2`` (global patches, removed again after the run)."""
    from openinference.instrumentation.ag2 import AG2Instrumentor

    instrumentor = AG2Instrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        user, manager, groupchat = _group_chat()
        user.initiate_chat(manager, message=TASK, silent=True)
    finally:
        instrumentor.uninstrument()
    return _messages(groupchat)


def mixed(provider: TracerProvider) -> Oracle:
    """The same run traced twice: mast-otel's AG2 integration and OpenInference together."""
    from openinference.instrumentation.ag2 import AG2Instrumentor

    instrumentor = AG2Instrumentor()
    instrumentor.instrument(tracer_provider=provider)
    mast_otel.instrument(tracer_provider=provider)
    try:
        user, manager, groupchat = _group_chat()
        user.initiate_chat(manager, message=TASK, silent=True)
    finally:
        mast_otel.uninstrument()
        instrumentor.uninstrument()
    return _messages(groupchat)


def openinference_single_agent(provider: TracerProvider) -> Oracle:
    """Not a multi-agent conversation: one agent answers one message (one LLM call), traced by OpenInference."""
    from openinference.instrumentation.ag2 import AG2Instrumentor

    instrumentor = AG2Instrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        _, _, groupchat = _group_chat()
        planner = groupchat.agents[0]
        reply = planner.generate_reply(messages=[{"role": "user", "content": TASK, "name": "user"}])
    finally:
        instrumentor.uninstrument()
    return [("user", TASK), (planner.name, str(reply))]


RUNS: dict[str, Callable[[TracerProvider], Oracle]] = {
    "ag2_builtin": ag2_builtin,
    "openinference_ag2": openinference_ag2,
    "mixed_ag2": mixed,
    "openinference_single_agent": openinference_single_agent,
}
