"""One Swarm run with autogen-core's own tracing and (optionally) OpenInference's instrumentation next to ours.

Run as a separate process (``python -m tests.autogen_agentchat._coexist [--openinference]``): autogen-core traces
to the *global* tracer provider, which a process sets once. Prints one JSON object: the framework's record and what
each instrumentation scope exported. ``AUTOGEN_DISABLE_RUNTIME_TRACING=true`` turns the runtime's spans off.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from examples.scripted_openai import ScriptedOpenAI
from mast_otel import semconv as sc
from mast_otel.integrations.autogen_agentchat import AutogenAgentChatInstrumentor
from tests.autogen_agentchat import scenarios as s
from tests.autogen_agentchat.record import chat_messages
from tests.span_query import Spans, attr, parent_id


def main(argv: list[str]) -> dict[str, Any]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    if "--openinference" in argv:
        from openinference.instrumentation.autogen_agentchat import AutogenAgentChatInstrumentor as OI

        OI().instrument()
    AutogenAgentChatInstrumentor().instrument()
    with ScriptedOpenAI(s.SCRIPT) as server:
        result = asyncio.run(s.swarm(server.base_url).run(task="I want a refund"))
    got = Spans(exporter)
    root = got.root
    descends = []
    for span in got.messages + got.handoffs + got.turns + got.tools:
        node: Any = span
        while node is not None and node is not root:
            node = got.by_id(parent_id(node))
        descends.append(node is root)
    return {
        "framework": [[m.source, type(m).__name__, m.to_text()] for m in chat_messages(result)],
        "stop_reason": result.stop_reason,
        "messages": [
            [attr(m, sc.MESSAGE_SENDER), attr(m, sc.MESSAGE_TYPE), attr(m, sc.MESSAGE_CONTENT)] for m in got.messages
        ],
        "handoffs": [attr(h, sc.HANDOFF_TO) for h in got.handoffs],
        "tools": [attr(t, sc.GEN_AI_TOOL_NAME) for t in got.tools],
        "termination_detail": attr(root, sc.TERMINATION_DETAIL),
        "all_descend_from_root": all(descends),
        "scopes": Counter(sp.instrumentation_scope.name for sp in got.all if sp.instrumentation_scope),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
