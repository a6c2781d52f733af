"""MetaGPT tier. Runs in the MetaGPT environment (``nox -s metagpt``, see noxfile.py); in any environment
without MetaGPT its modules are skipped with that reason.

MetaGPT reads a config file at import time, so this conftest writes a throwaway one (``offline_config``) before any
test module imports it.

The llama.cpp server runs from the MAIN virtual environment (llama-cpp-python is not installed in this one):
``MAST_OTEL_MAIN_PYTHON`` names its interpreter, default ``.venv/bin/python`` in the repository.
"""

from __future__ import annotations

from collections.abc import Iterator
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
from tests.metagpt.offline_config import configure_metagpt
from tests.servers import LlamaServer, llama_server

ARTIFACTS = REPO / "test-artifacts"
SKIP_REASON = skip_reason("MetaGPT", "metagpt")


if installed("metagpt"):
    configure_metagpt()
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
