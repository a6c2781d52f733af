"""MetaGPT tier. Runs in the MetaGPT environment (``nox -s metagpt``, see noxfile.py); in any environment
without MetaGPT its modules are skipped with that reason.

MetaGPT reads a config file at import time, so this conftest writes a throwaway one (in a temporary
``METAGPT_PROJECT_ROOT``, where MetaGPT also puts its logs and workspace) before any test module imports it.

The llama.cpp server runs from the MAIN virtual environment (llama-cpp-python is not installed in this one):
``MAST_OTEL_MAIN_PYTHON`` names its interpreter, default ``.venv/bin/python`` in the repository.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.frameworks import (
    REPO,
    installed,
    instrumented,
    main_python_that_imports,
    require_in_own_session,
    skip_reason,
)
from tests.servers import LlamaServer, llama_server

ARTIFACTS = REPO / "test-artifacts"
SKIP_REASON = skip_reason("MetaGPT", "metagpt")


def _configure_metagpt() -> None:
    root = Path(tempfile.mkdtemp(prefix="mast-otel-metagpt-"))
    (root / "config").mkdir()
    # Never called: every test builds its own Context (scripted provider or the llama.cpp server).
    (root / "config" / "config2.yaml").write_text(
        'llm: {api_type: "openai", base_url: "http://127.0.0.1:9/v1", api_key: "unused", model: "gpt-4"}\n'
    )
    os.environ["METAGPT_PROJECT_ROOT"] = str(root)


if installed("metagpt"):
    _configure_metagpt()
require_in_own_session("metagpt", "metagpt.team")


# -- instrumentation -----------------------------------------------------------------------
@pytest.fixture
def instrumentor(tracer_provider: TracerProvider) -> Iterator[Any]:
    from mast_otel.integrations.metagpt import MetaGPTInstrumentor

    yield from instrumented(MetaGPTInstrumentor(), tracer_provider)


@pytest.fixture
def script() -> Iterator[Any]:
    from tests.metagpt.scenarios import scripted_provider

    with scripted_provider() as s:
        yield s


@pytest.fixture(scope="session")
def llama() -> Iterator[LlamaServer]:
    """A real OpenAI-compatible server (llama.cpp + Gemma 3 270M) for this session, run by the main venv's python."""
    python = main_python_that_imports("llama_cpp.server", "the llama.cpp server")
    ARTIFACTS.mkdir(exist_ok=True)
    with llama_server(log_path=ARTIFACTS / "llama-server-metagpt.log", python=python) as server:
        yield server
