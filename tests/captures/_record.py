"""What every capture recorder shares: the scripted model server, an in-memory tracer provider, and the file.

A capture (``tests/data/captures/<framework>/<run>.json``) is one real run, offline, as its instrumentation
exported it (``"otlp"``: OTLP JSON), with the conversation the framework itself recorded (``"expect"``: its
agents, handoffs, tool calls, task and message count, read from the framework's own result objects, events or
message lists, never from any span attribute) and what was run (``"framework"``: package versions, settings).
A framework that writes its text to log records (Semantic Kernel, through Python's ``logging``) is recorded with
``recording(script, logs=True)``: the records go through the OTel SDK's ``LoggingHandler`` (on the root logger,
as Semantic Kernel's telemetry docs attach it) to an in-memory exporter, and the capture gets ``"otlp_logs"``
(an ExportLogsServiceRequest as OTLP JSON, ids in hex like the spans').
``tests/adapters/test_captures.py`` reads every capture in the main environment.
"""

from __future__ import annotations

import base64
import json
import logging
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from examples.scripted_openai import ScriptedOpenAI

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"
# Runs of pairs the adapters were not written for, scored as read at first sight (tests/adapters/test_first_sight.py)
FIRST_SIGHT = CAPTURES.parent / "first_sight"

# The refund desk's members, as every recorder scripts the model for them (a rule matches the ROLE_ marker in an
# agent's instructions): the researcher looks the order up and reports, the writer writes to the customer, and the
# clerk, each framework's solo control, looks it up and answers. A recorder puts its lead's rules in front.
RESEARCHER = {"match": "ROLE_RESEARCHER", "replies": [
    {"tool": "lookup_order", "args": {"order_id": "A17"}},
    "Order A17 was charged 49.00 EUR twice on 2026-11-02.",
]}  # fmt: skip
WRITER = {"match": "ROLE_WRITER", "replies": ["Dear customer, the duplicate charge on order A17 is refunded."]}
CLERK = {"match": "ROLE_CLERK", "replies": [
    {"tool": "lookup_order", "args": {"order_id": "A17"}},
    "Order A17 was charged twice; I have flagged the duplicate.",
]}  # fmt: skip
NO_RULE = "I cannot help with that."  # what the model says to a request no rule matches


@dataclass
class Expectation:
    """The conversation as the framework recorded it; ``conversation`` False for a solo-agent control run."""

    conversation: bool
    task: str
    agents: list[str] = field(default_factory=list)
    handoffs: list[tuple[str, str]] = field(default_factory=list)
    tool_calls: list[tuple[str, str]] = field(default_factory=list)  # (agent, tool)
    messages: int = 0  # the user's request plus each model answer the framework recorded
    source: str = ""  # where in the framework's record this was read
    hidden: list[str] = field(default_factory=list)  # the content switches set for the run (none: content on)
    # the framework the conversation is of, where the directory's name does not say it (<framework>_<instrumentation>)
    framework: str | None = None

    def as_json(self) -> dict[str, Any]:
        data = {
            "conversation": self.conversation, "task": self.task, "agents": self.agents,
            "handoffs": [list(h) for h in self.handoffs], "tool_calls": [list(t) for t in self.tool_calls],
            "messages": self.messages, "source": self.source, "hidden": self.hidden,
        }  # fmt: skip
        if self.framework is not None:
            data["framework"] = self.framework
        return data


@dataclass
class Recording:
    provider: TracerProvider
    server: ScriptedOpenAI
    exporter: InMemorySpanExporter
    log_exporter: Any = None  # an InMemoryLogRecordExporter when recorded with logs=True


class _ToCurrent(SpanProcessor):
    """The process-wide provider's processor: each span goes to the recording under way (the global tracer
    provider can be set once per process, and a framework's module-level tracers keep the first one they get)."""

    current: SpanProcessor | None = None

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        if self.current is not None:
            self.current.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if self.current is not None:
            self.current.on_end(span)


_GLOBAL: tuple[TracerProvider, _ToCurrent] | None = None


def _global_provider() -> tuple[TracerProvider, _ToCurrent]:
    global _GLOBAL
    if _GLOBAL is None:
        router = _ToCurrent()
        provider = TracerProvider()
        provider.add_span_processor(router)
        trace.set_tracer_provider(provider)
        _GLOBAL = provider, router
    return _GLOBAL


@contextmanager
def recording(script: Mapping[str, Any], *, global_provider: bool = False, logs: bool = False,
              log_level: int = logging.INFO, log_filter: str | None = None) -> Iterator[Recording]:  # fmt: skip
    """A scripted server and an in-memory exporter for one run.

    ``global_provider``: the spans of the process-wide tracer provider (for a framework that traces through
    ``opentelemetry.trace.get_tracer``, not an instrumentor given a provider) go to this recording.
    ``logs``: Python ``logging`` records from ``log_level`` up go, through the OTel SDK's ``LoggingHandler`` on the
    root logger, to an in-memory log exporter (each record with the trace and span current when it was logged);
    ``log_filter`` keeps only the records of that logger and those below it (``logging.Filter``).
    """
    exporter = InMemorySpanExporter()
    processor = SimpleSpanProcessor(exporter)
    router: _ToCurrent | None = None
    if global_provider:
        provider, router = _global_provider()
        router.current = processor
    else:
        provider = TracerProvider()
        provider.add_span_processor(processor)
    log_exporter = handler = log_provider = None
    root = logging.getLogger()
    level = root.level
    if logs:
        from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
        from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

        log_exporter = InMemoryLogRecordExporter()
        log_provider = LoggerProvider()
        log_provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
        with warnings.catch_warnings():  # the SDK's handler, as frameworks' docs show it (moving to a contrib package)
            warnings.simplefilter("ignore", DeprecationWarning)
            handler = LoggingHandler(level=log_level, logger_provider=log_provider)
        if log_filter is not None:
            handler.addFilter(logging.Filter(log_filter))
        root.addHandler(handler)
        root.setLevel(min(level, log_level) if level else log_level)
    try:
        with ScriptedOpenAI(script) as server:
            yield Recording(provider, server, exporter, log_exporter)
    finally:
        if handler is not None:
            root.removeHandler(handler)
            root.setLevel(level)
        if log_provider is not None:
            log_provider.shutdown()
        if router is not None:
            router.current = None
        else:
            provider.shutdown()


def otlp_json(exporter: InMemorySpanExporter) -> dict[str, Any]:
    """The finished spans as OTLP JSON, ids in hex as the spec writes them (no collector extra needed here)."""
    request = encode_spans(exporter.get_finished_spans())
    data: dict[str, Any] = json_format.MessageToDict(request)
    for resource_spans in data.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64decode(span[key]).hex()
                for link in span.get("links", []):
                    for key in ("traceId", "spanId"):
                        if link.get(key):
                            link[key] = base64.b64decode(link[key]).hex()
    return data


def otlp_logs_json(log_exporter: Any) -> dict[str, Any]:
    """The exported log records as OTLP JSON (an ExportLogsServiceRequest), trace and span ids in hex."""
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

    data: dict[str, Any] = json_format.MessageToDict(encode_logs(log_exporter.get_finished_logs()))
    for resource_logs in data.get("resourceLogs", []):
        for scope_logs in resource_logs.get("scopeLogs", []):
            for record in scope_logs.get("logRecords", []):
                for key in ("traceId", "spanId"):
                    if record.get(key):
                        record[key] = base64.b64decode(record[key]).hex()
    return data


def write(framework: str, run: str, packages: list[str], settings: dict[str, Any], expect: Expectation,
          otlp: dict[str, Any], otlp_logs: dict[str, Any] | None = None, *, root: Path = CAPTURES) -> Path:  # fmt: skip
    """Write ``<root>/<framework>/<run>.json`` (``root``: the corpus, or ``FIRST_SIGHT``)."""
    path = root / framework / f"{run}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "framework": {"packages": {p: version(p) for p in packages}, "settings": settings},
        "expect": expect.as_json(),
        "otlp": otlp,
    }
    if otlp_logs is not None:
        data["otlp_logs"] = otlp_logs
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)
    return path


def main(runs: Mapping[str, Callable[[], Path]], argv: list[str]) -> int:
    for name in argv or list(runs):
        runs[name]()
    return 0
