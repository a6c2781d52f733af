from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.servers import LlamaServer, llama_server
from tests.span_query import Spans

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture
def span_exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def tracer_provider(span_exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    return provider


@pytest.fixture
def spans(span_exporter: InMemorySpanExporter) -> Callable[[], Spans]:
    """``spans()`` reads what the test's exporter holds at that moment (call it after the run)."""
    return lambda: Spans(span_exporter)


@pytest.fixture(scope="session")
def llama() -> Iterator[LlamaServer]:
    """A real OpenAI-compatible server (llama.cpp + Gemma 3 270M), one per test session (per pytest-xdist worker)."""
    ARTIFACTS.mkdir(exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    with llama_server(log_path=ARTIFACTS / f"llama-server{'-' + worker if worker else ''}.log") as server:
        yield server
