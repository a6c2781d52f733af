"""Through the real collector: SDK runs exported over OTLP to a ``mast-otel collector`` process come out judged,
and the transcript the judge reads (``mast-otel judge --dry-run --show-prompt``) is in the SDK's order."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.openai_agents.conftest import SKIP_REASON

pytest.importorskip("agents", reason=SKIP_REASON)
pytest.importorskip("grpc", reason="the collector extra is not installed")

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import semconv as sc
from mast_otel.collector.report.otlp import request_to_otlp_json
from mast_otel.integrations.openai_agents import OpenAIAgentsInstrumentor
from tests.collector.sink import OtlpSink
from tests.collector.test_durability import collector_process
from tests.openai_agents import scenarios as sn

pytestmark = pytest.mark.integration

_LINE = re.compile(r"^\[(R|[MHTE]\d+)\] (.*)$")


def _transcript(path: Path) -> list[list[str]]:
    """Each conversation's transcript heads, as the judge's prompt shows them (dry run: no model called)."""
    out = subprocess.run(
        [sys.executable, "-m", "mast_otel.cli", "judge", str(path), "--dry-run", "--show-prompt"],
        capture_output=True,
        text=True,
        check=True,
    )
    transcripts = []
    for row in map(json.loads, out.stdout.splitlines()):
        text = "\n".join(str(m["content"]) for chunk in row["prompt"] for m in chunk)
        transcripts.append([m.group(1) + " " + m.group(2) for line in text.splitlines() if (m := _LINE.match(line))])
    return transcripts


@pytest.mark.parametrize("api", sn.APIS)
async def test_runs_through_the_collector_come_out_judged_in_order(
    tmp_path: Path, user_processor: Any, scripted: Any, api: str
) -> None:
    sink = OtlpSink().start()
    try:
        with collector_process(tmp_path, sink) as collector:
            memory = InMemorySpanExporter()
            otlp = OTLPSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True, timeout=30)
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(memory))
            provider.add_span_processor(SimpleSpanProcessor(otlp))
            inst = OpenAIAgentsInstrumentor()
            inst.instrument(tracer_provider=provider)
            try:
                server = scripted(sn.triage_script())
                result = await sn.run(sn.triage_agents(sn.model_for(api, server.base_url)), "Refund order A17")
            finally:
                inst.uninstrument()
                provider.shutdown()
            sent = memory.get_finished_spans()
            want = {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in sent}

            def judged(got: list[Any]) -> bool:
                keys = {x.key for x in got}
                return want <= keys and any(sc.JUDGE_STATUS in x.attributes for x in got)

            got = sink.wait_for(judged, timeout=60)
    finally:
        sink.stop()
    (root,) = [x for x in got if x.attributes.get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_CONVERSATION]
    assert root.attributes[sc.JUDGE_STATUS] == sc.JUDGE_SKIPPED  # no model: signals, no labels (issue 15)
    assert root.attributes[sc.TERMINATION_REASON] == sc.TERMINATION_COMPLETED

    path = tmp_path / "exported.json"
    path.write_text(json.dumps(request_to_otlp_json(encode_spans(sent))))
    (heads,) = _transcript(path)
    assert heads[0].startswith("R conversation Agent workflow (framework openai-agents")
    # The SDK's own order: new_items is [handoff call, handoff output, tool call, tool output, message].
    assert [type(i).__name__ for i in result.new_items] == [
        "HandoffCallItem",
        "HandoffOutputItem",
        "ToolCallItem",
        "ToolCallOutputItem",
        "MessageOutputItem",
    ]
    assert [h.split(":")[0] for h in heads[1:]] == [
        "M1 user -> triage_agent",
        "M2 triage_agent -> <runtime> (tool_call)",
        "H1 handoff triage_agent -> billing_agent (reason",
        "M3 triage_agent -> billing_agent",
        "M4 billing_agent -> <runtime> (tool_call)",
        "T1 tool refund (ok)",
        "M5 billing_agent -> user",
        "R termination",
    ]
    assert "transfer_to_billing_agent" in heads[2]
    assert heads[-2].endswith("Refund for A17 issued.")
    assert "by billing_agent" in heads[-1]
