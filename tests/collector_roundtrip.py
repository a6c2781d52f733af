"""An instrumented framework run through a real ``mast-otel collector`` process, and the judge's transcript of what
comes out (``mast-otel judge --dry-run --show-prompt`` on the exported spans). Shared by the framework tiers that
run in their own environments (LangGraph, CrewAI): the collector runs from the main environment's interpreter
(``MAST_OTEL_MAIN_PYTHON``, set by the nox sessions), as a user would run it next to their app.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from mast_otel import semconv as sc
from mast_otel.collector.report.otlp import request_to_otlp_json
from mast_otel.spans import SpanRecord
from tests.collector.conftest import wait_until
from tests.collector.test_durability import CollectorProcess
from tests.frameworks import main_python_that_imports
from tests.otlp_sink import otlp_sink

__all__ = ["Judged", "collector_python", "judged_run"]


def collector_python() -> str:
    """The main environment's interpreter (skip when it cannot run the collector; fail when the session says so)."""
    return main_python_that_imports("mast_otel.collector", "the collector")


@dataclass
class Judged:
    spans: list[SpanRecord]  # what the collector forwarded, verdict spans left out
    transcript: str  # the judge's prompt text for the one conversation

    @property
    def root(self) -> SpanRecord:
        (root,) = [s for s in self.spans if s.is_conversation_root]
        return root

    def messages(self) -> list[SpanRecord]:
        found = [s for s in self.spans if s.span_type == sc.SPAN_TYPE_MESSAGE]
        return sorted(found, key=lambda s: s.get(sc.MESSAGE_INDEX))


@contextmanager
def _collector(tmp: Path, python: str) -> Iterator[tuple[Any, CollectorProcess]]:
    with otlp_sink() as sink:
        collector = CollectorProcess(tmp, sink, python=python)  # type: ignore[arg-type]
        collector.start()
        try:
            yield sink, collector
        finally:
            collector.stop()


def judged_run(tmp: Path, service: str, run: Callable[[TracerProvider], None]) -> Judged:
    """Start a collector (rules judge) and a downstream sink, call ``run`` with a provider exporting OTLP/gRPC to
    the collector, wait for the judged conversation downstream, and render its judge transcript."""
    python = collector_python()
    with _collector(tmp, python) as (sink, collector):
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True))
        )
        try:
            run(provider)
        finally:
            provider.shutdown()

        def judged() -> bool:
            return any(s.is_conversation_root and s.get(sc.JUDGE_STATUS) for s in sink.spans())

        wait_until(judged, timeout=60, what="the judged conversation downstream")
        merged = ExportTraceServiceRequest()
        for request in sink.requests():
            merged.resource_spans.extend(request.resource_spans)
        received = [s for s in sink.spans() if s.span_type != sc.SPAN_TYPE_VERDICT]
    exported = tmp / "exported.otlp.json"
    exported.write_text(json.dumps(request_to_otlp_json(merged)))
    done = subprocess.run(
        [python, "-m", "mast_otel.cli", "judge", str(exported), "--dry-run", "--show-prompt"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "MAST_OTEL_JUDGE_BASE_URL": ""},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (row,) = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    prompt = "\n".join(p["content"] if isinstance(p, dict) else str(p) for chunk in row["prompt"] for p in chunk)
    return Judged(received, prompt)


def assert_in_order(transcript: str, texts: list[str]) -> None:
    """Each text (its first 60 characters) appears in the transcript after the one before it."""
    position = 0
    for text in texts:
        if not text:
            continue
        found = transcript.find(text[:60], position)
        assert found >= 0, f"{text[:60]!r} missing or out of order in the transcript:\n{transcript[-3000:]}"
        position = found
