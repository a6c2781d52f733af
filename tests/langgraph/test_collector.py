"""A LangGraph supervisor run through a real ``mast-otel collector`` process: it comes out judged, and the
transcript the judge reads (``mast-otel judge --dry-run --show-prompt`` on the exported spans) is in the order of
LangGraph's final ``messages`` state.

The collector runs from the main environment's interpreter (``MAST_OTEL_MAIN_PYTHON``, set by the nox session),
as a user would run it next to their app; this test's process is the app.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.langgraph.conftest import SKIP_REASON

pytest.importorskip("langgraph_supervisor", reason=SKIP_REASON)

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from examples.scripted_openai import ScriptedOpenAI
from mast_otel import semconv as sc
from mast_otel.collector.report.otlp import request_to_otlp_json
from mast_otel.integrations.langgraph import LangGraphInstrumentor
from mast_otel.recorder import content_text
from tests.collector.test_durability import CollectorProcess
from tests.langgraph import scenarios
from tests.metagpt.conftest import MAIN_PYTHON_ENV, main_python, main_python_problem
from tests.otlp_sink import otlp_sink

pytestmark = pytest.mark.integration


def _collector_python() -> str:
    python = main_python()
    problem = main_python_problem(python, "mast_otel.collector")
    if problem:
        if os.environ.get(MAIN_PYTHON_ENV):
            pytest.fail(f"{MAIN_PYTHON_ENV}={python}: {problem}")
        pytest.skip(f"{problem}; run scripts/setup-env.sh or set {MAIN_PYTHON_ENV}")
    return python


def test_supervisor_run_comes_out_judged_with_the_transcript_in_state_order(tmp_path: Path) -> None:
    python = _collector_python()
    with otlp_sink() as sink:
        collector = CollectorProcess(tmp_path, sink, python=python)  # type: ignore[arg-type]
        collector.start()
        try:
            provider = TracerProvider(resource=Resource.create({"service.name": "langgraph-app"}))
            exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True)
            provider.add_span_processor(BatchSpanProcessor(exporter))
            inst = LangGraphInstrumentor()
            inst.instrument(tracer_provider=provider)
            try:
                with ScriptedOpenAI(scenarios.supervisor_example.SCRIPT) as server:
                    graph = scenarios.supervisor(server.base_url)
                    out = graph.invoke({"messages": [{"role": "user", "content": scenarios.supervisor_example.TASK}]})
            finally:
                inst.uninstrument()
                provider.shutdown()

            def judged() -> bool:
                return any(s.is_conversation_root and s.get(sc.JUDGE_STATUS) for s in sink.spans())

            _wait(judged)
        finally:
            collector.stop()
        merged = ExportTraceServiceRequest()
        for request in sink.requests():
            merged.resource_spans.extend(request.resource_spans)
    received = [s for s in sink.spans() if s.span_type != sc.SPAN_TYPE_VERDICT]
    (root,) = [s for s in received if s.is_conversation_root]
    assert root.get(sc.JUDGE_STATUS) == sc.JUDGE_OK
    assert root.service_name == "langgraph-app"
    messages = out["messages"]
    assert root.get(sc.CONVERSATION_ROUNDS) == len(messages)
    # The collector forwarded every message span, in the state's order.
    spans = sorted((s for s in received if s.span_type == sc.SPAN_TYPE_MESSAGE), key=lambda s: s.get(sc.MESSAGE_INDEX))
    assert [s.get(sc.MESSAGE_CONTENT) for s in spans] == [content_text(m.content) for m in messages]

    # The judge's transcript of the exported spans: every message of the state appears, in order.
    exported = tmp_path / "exported.otlp.json"
    exported.write_text(json.dumps(request_to_otlp_json(merged)))
    done = subprocess.run(
        [python, "-m", "mast_otel.cli", "judge", str(exported), "--dry-run", "--show-prompt"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "MAST_OTEL_JUDGE_BASE_URL": ""},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (row,) = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    prompt = "\n".join(p["content"] if isinstance(p, dict) else str(p) for chunk in row["prompt"] for p in chunk)
    position = 0
    for m in messages:
        text = content_text(m.content)
        if not text:
            continue  # a bare tool call: its line carries the call, not text
        found = prompt.find(text[:60], position)
        assert found >= 0, f"{text[:60]!r} missing or out of order in the transcript:\n{prompt[-3000:]}"
        position = found
    # A tool call's message comes before the tool's execution, the handoff it caused after both.
    call = prompt.find("supervisor -> transfer_to_researcher (tool_call)")
    execution = prompt.find("tool transfer_to_researcher (ok)")
    handoff = prompt.find("handoff supervisor -> researcher (reason: tool_call")
    assert 0 <= call < execution < handoff, prompt


def _wait(predicate: Any, timeout: float = 60.0) -> None:
    from tests.collector.conftest import wait_until

    wait_until(predicate, timeout=timeout, what="the judged conversation downstream")
