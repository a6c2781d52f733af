"""MetaGPT tier. Runs in the MetaGPT virtual environment (``bash scripts/test-metagpt.sh``); in any environment
without MetaGPT its modules are skipped with that reason.

MetaGPT reads a config file at import time, so this conftest writes a throwaway one (in a temporary
``METAGPT_PROJECT_ROOT``, where MetaGPT also puts its logs and workspace) before any test module imports it.

The llama.cpp server runs from the MAIN virtual environment (llama-cpp-python is not installed in this one):
``MAST_OTEL_MAIN_PYTHON`` names its interpreter, default ``.venv/bin/python`` in the repository.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import semconv as sc
from tests.servers import LlamaServer, llama_server

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
HAS_METAGPT = importlib.util.find_spec("metagpt") is not None
SKIP_REASON = "MetaGPT is not installed in this environment; it has its own: bash scripts/test-metagpt.sh"
MAIN_PYTHON_ENV = "MAST_OTEL_MAIN_PYTHON"


def _configure_metagpt() -> None:
    root = Path(tempfile.mkdtemp(prefix="mast-otel-metagpt-"))
    (root / "config").mkdir()
    # Never called: every test builds its own Context (scripted provider or the llama.cpp server).
    (root / "config" / "config2.yaml").write_text(
        'llm: {api_type: "openai", base_url: "http://127.0.0.1:9/v1", api_key: "unused", model: "gpt-4"}\n'
    )
    os.environ["METAGPT_PROJECT_ROOT"] = str(root)


if HAS_METAGPT:
    _configure_metagpt()
if os.environ.get("MAST_OTEL_REQUIRE_METAGPT") == "1":
    import metagpt.team  # noqa: F401  (scripts/test-metagpt.sh: a broken install must fail, not skip)


def main_python() -> str:
    return os.environ.get(MAIN_PYTHON_ENV) or str(REPO / ".venv" / "bin" / "python")


def main_python_problem(python: str, module: str) -> str | None:
    """Why ``python`` cannot import ``module`` (None when it can)."""
    if not Path(python).exists():
        return f"{python} does not exist"
    probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True, text=True)
    return f"{python} cannot import {module}: {probe.stderr.strip()[-300:]}" if probe.returncode else None


# -- instrumentation -----------------------------------------------------------------------
@pytest.fixture
def instrumentor(tracer_provider: TracerProvider) -> Iterator[Any]:
    from mast_otel.integrations.metagpt import MetaGPTInstrumentor

    inst = MetaGPTInstrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    yield inst
    inst.uninstrument()


@pytest.fixture
def script() -> Iterator[Any]:
    from tests.metagpt.scenarios import scripted_provider

    with scripted_provider() as s:
        yield s


class Spans:
    """Query helpers over the exported spans of one test."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        self.all: list[ReadableSpan] = sorted(exporter.get_finished_spans(), key=lambda s: s.start_time or 0)

    def of_type(self, span_type: str) -> list[ReadableSpan]:
        return [s for s in self.all if attr(s, sc.MAST_SPAN_TYPE) == span_type]

    @property
    def root(self) -> ReadableSpan:
        (root,) = self.of_type(sc.SPAN_TYPE_CONVERSATION)
        return root

    @property
    def messages(self) -> list[ReadableSpan]:
        return sorted(self.of_type(sc.SPAN_TYPE_MESSAGE), key=lambda s: attr(s, sc.MESSAGE_INDEX))

    @property
    def handoffs(self) -> list[ReadableSpan]:
        return sorted(self.of_type(sc.SPAN_TYPE_HANDOFF), key=lambda s: attr(s, sc.HANDOFF_INDEX))

    @property
    def turns(self) -> list[ReadableSpan]:
        return self.of_type(sc.SPAN_TYPE_AGENT_TURN)

    def by_id(self, span_id: int | None) -> ReadableSpan | None:
        return next((s for s in self.all if s.get_span_context().span_id == span_id), None)


def attr(span: ReadableSpan, key: str) -> Any:
    return (span.attributes or {}).get(key)


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    return span.get_span_context().span_id


@pytest.fixture
def spans(span_exporter: InMemorySpanExporter) -> Any:
    return lambda: Spans(span_exporter)


@pytest.fixture(scope="session")
def llama() -> Iterator[LlamaServer]:
    """A real OpenAI-compatible server (llama.cpp + Gemma 3 270M) for this session, run by the main venv's python."""
    python = main_python()
    problem = main_python_problem(python, "llama_cpp.server")
    if problem:
        if os.environ.get(MAIN_PYTHON_ENV):
            pytest.fail(f"{MAIN_PYTHON_ENV}={python}: {problem}")
        pytest.skip(f"{problem}; run scripts/setup-env.sh or set {MAIN_PYTHON_ENV}")
    ARTIFACTS.mkdir(exist_ok=True)
    with llama_server(log_path=ARTIFACTS / "llama-server-metagpt.log", python=python) as server:
        yield server
