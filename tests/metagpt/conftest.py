"""MetaGPT tier. Runs in the MetaGPT environment (``nox -s metagpt``, see noxfile.py); in any environment
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
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.servers import LlamaServer, llama_server
from tests.span_query import Spans

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
HAS_METAGPT = importlib.util.find_spec("metagpt") is not None
SKIP_REASON = "MetaGPT is not installed in this environment; it has its own: nox -s metagpt"
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
if os.environ.get("MAST_OTEL_REQUIRE_FRAMEWORK") == "metagpt":
    import metagpt.team  # noqa: F401  (nox -s metagpt: a broken install must fail, not skip)


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
