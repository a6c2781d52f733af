"""A LangGraph supervisor run through a real ``mast-otel collector`` process: it comes out judged, and the judge's
transcript of the exported spans is in the order of LangGraph's final ``messages`` state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.langgraph.conftest import SKIP_REASON

pytest.importorskip("langgraph_supervisor", reason=SKIP_REASON)

from opentelemetry.sdk.trace import TracerProvider

from examples.scripted_openai import ScriptedOpenAI
from mast_otel import semconv as sc
from mast_otel.integrations.langgraph import LangGraphInstrumentor
from mast_otel.recorder import content_text
from tests.collector_roundtrip import assert_in_order, judged_run
from tests.langgraph import scenarios

pytestmark = pytest.mark.integration


def test_supervisor_run_comes_out_judged_with_the_transcript_in_state_order(tmp_path: Path) -> None:
    result: dict[str, Any] = {}

    def run(provider: TracerProvider) -> None:
        inst = LangGraphInstrumentor()
        inst.instrument(tracer_provider=provider)
        try:
            with ScriptedOpenAI(scenarios.supervisor_example.SCRIPT) as server:
                graph = scenarios.supervisor(server.base_url)
                result.update(
                    graph.invoke({"messages": [{"role": "user", "content": scenarios.supervisor_example.TASK}]})
                )
        finally:
            inst.uninstrument()

    judged = judged_run(tmp_path, "langgraph-app", run)
    root = judged.root
    assert root.get(sc.JUDGE_STATUS) == sc.JUDGE_SKIPPED  # no model: signals, no labels
    assert root.service_name == "langgraph-app"
    messages = result["messages"]
    assert root.get(sc.CONVERSATION_ROUNDS) == len(messages)
    # The collector forwarded every message span, in the state's order; the judge reads them in that order.
    texts = [content_text(m.content) for m in messages]
    assert [s.get(sc.MESSAGE_CONTENT) for s in judged.messages()] == texts
    assert_in_order(judged.transcript, texts)
    # A tool call's message comes before the tool's execution, the handoff it caused after both.
    call = judged.transcript.find("supervisor -> transfer_to_researcher (tool_call)")
    execution = judged.transcript.find("tool transfer_to_researcher (ok)")
    handoff = judged.transcript.find("handoff supervisor -> researcher (reason: tool_call")
    assert 0 <= call < execution < handoff, judged.transcript
