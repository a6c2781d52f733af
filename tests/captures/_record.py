"""What every capture recorder shares: the scripted model server, an in-memory tracer provider, and the file.

A capture (``tests/data/captures/<framework>/<run>.json``) is one real run, offline, as its instrumentation
exported it (``"otlp"``: OTLP JSON), with the conversation the framework itself recorded (``"expect"``: its
agents, handoffs, tool calls, task and message count, read from the framework's own result objects, events or
message lists, never from any span attribute) and what was run (``"framework"``: package versions, settings).
``tests/adapters/test_captures.py`` reads every capture in the main environment.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from examples.scripted_openai import ScriptedOpenAI

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"


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

    def as_json(self) -> dict[str, Any]:
        return {
            "conversation": self.conversation, "task": self.task, "agents": self.agents,
            "handoffs": [list(h) for h in self.handoffs], "tool_calls": [list(t) for t in self.tool_calls],
            "messages": self.messages, "source": self.source, "hidden": self.hidden,
        }  # fmt: skip


@dataclass
class Recording:
    provider: TracerProvider
    server: ScriptedOpenAI
    exporter: InMemorySpanExporter


@contextmanager
def recording(script: Mapping[str, Any]) -> Iterator[Recording]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with ScriptedOpenAI(script) as server:
        yield Recording(provider, server, exporter)
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


def write(framework: str, run: str, packages: list[str], settings: dict[str, Any], expect: Expectation,
          otlp: dict[str, Any]) -> Path:  # fmt: skip
    path = CAPTURES / framework / f"{run}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "framework": {"packages": {p: version(p) for p in packages}, "settings": settings},
        "expect": expect.as_json(),
        "otlp": otlp,
    }
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)
    return path


def main(runs: Mapping[str, Callable[[], Path]], argv: list[str]) -> int:
    for name in argv or list(runs):
        runs[name]()
    return 0
