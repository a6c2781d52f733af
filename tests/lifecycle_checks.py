"""Checks of an instrumentor's contract that read the same whatever the framework (entry point, uninstrument, the
zero-code run, content capture off); each tier's test_lifecycle.py calls them with its own instrumentor, the
methods it patches and its own program."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import wrapt
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord
from tests.frameworks import REPO, Instrumentor
from tests.otlp_sink import otlp_sink
from tests.span_query import Spans, attr

__all__ = [
    "assert_content_left_out",
    "assert_entry_point_registered",
    "assert_uninstrument_restores",
    "example_console_output",
    "exported_by_zero_code_run",
    "never_sampled",
]


def assert_entry_point_registered(name: str, instrumentor_class: type) -> None:
    """``opentelemetry-instrument`` finds the instrumentor under ``name``."""
    (entry,) = [e for e in importlib.metadata.entry_points(group="opentelemetry_instrumentor") if e.name == name]
    assert entry.load() is instrumentor_class


def assert_uninstrument_restores(
    instrumentor: Instrumentor, tracer_provider: TracerProvider, patched: Callable[[], list[Any]]
) -> None:
    """Every method in ``patched()`` is the framework's own before ``instrument``, wrapped after it, and the
    framework's own again after ``uninstrument``."""
    assert not any(isinstance(m, wrapt.FunctionWrapper) for m in patched())
    instrumentor.instrument(tracer_provider=tracer_provider)
    assert all(isinstance(m, wrapt.FunctionWrapper) for m in patched())
    instrumentor.uninstrument()
    assert not any(isinstance(m, wrapt.FunctionWrapper) for m in patched())


def never_sampled() -> tuple[TracerProvider, InMemorySpanExporter]:
    """A provider that samples nothing (a program whose tracing is switched off) and the exporter behind it, which
    must stay empty: instrumented, the program still runs exactly as it would without us."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def example_console_output(example: str) -> str:
    """``python examples/<example> --console`` from the repository, offline (its own scripted server): what it
    printed, once it exited cleanly."""
    done = subprocess.run(
        [sys.executable, f"examples/{example}", "--console"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def exported_by_zero_code_run(program: str, service_name: str) -> list[SpanRecord]:
    """``opentelemetry-instrument python -c program`` (a program with no instrument() call in it), exporting
    OTLP/HTTP to a real receiver: the spans it received once the process exited (its provider flushed then)."""
    with otlp_sink() as sink:
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": sink.http_endpoint,
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
            "OTEL_SERVICE_NAME": service_name,
        }
        command = [str(Path(sys.executable).parent / "opentelemetry-instrument"), sys.executable, "-c", program]
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return sink.spans()


def assert_content_left_out(got: Spans) -> None:
    """With ``capture_content=False`` no message text, handoff detail, tool argument or task is recorded (the
    structure is: the caller checks which)."""
    assert got.messages and all(attr(m, sc.MESSAGE_CONTENT) is None for m in got.messages)
    assert all(attr(h, sc.HANDOFF_DETAIL) is None for h in got.handoffs)
    assert all(attr(t, sc.GEN_AI_TOOL_CALL_ARGUMENTS) is None for t in got.tools)
    assert attr(got.root, sc.CONVERSATION_TASK) is None
