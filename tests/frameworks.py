"""What every framework tier shares: the tiers that run in environments of their own (noxfile.py: CrewAI,
LangGraph, autogen-agentchat, MetaGPT, the OpenAI Agents SDK, AG2 1.x).

A tier's modules skip with a reason where its framework is not installed (the main environment), and fail in the
framework's own nox session, which names it in ``MAST_OTEL_REQUIRE_FRAMEWORK``: a broken install must not pass as
"skipped". Each test instruments with its own provider (the root conftest's ``tracer_provider``) and undoes it.
Some tests run a process from the main environment (the collector, ``mast-otel judge``, llama.cpp), which this
environment cannot import: ``MAST_OTEL_MAIN_PYTHON`` names its interpreter.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, TypeVar

import pytest
from opentelemetry.sdk.trace import TracerProvider

REPO = Path(__file__).resolve().parents[1]
REQUIRE_FRAMEWORK_ENV = "MAST_OTEL_REQUIRE_FRAMEWORK"
MAIN_PYTHON_ENV = "MAST_OTEL_MAIN_PYTHON"

__all__ = [
    "MAIN_PYTHON_ENV",
    "REPO",
    "Instrumentor",
    "installed",
    "instrumented",
    "main_python_that_imports",
    "require_in_own_session",
    "skip_reason",
]


def skip_reason(framework: str, session: str) -> str:
    """Why a tier's modules skip here: ``framework`` (as a reader names it) has its own nox ``session``."""
    return f"{framework} is not installed in this environment; it has its own: nox -s {session}"


def require_in_own_session(session: str, *modules: str) -> None:
    """In the framework's own session import ``modules`` now, so that a broken install fails the run instead of
    every module skipping; anywhere else do nothing (the modules skip themselves with :func:`skip_reason`)."""
    if os.environ.get(REQUIRE_FRAMEWORK_ENV) == session:
        for module in modules:
            importlib.import_module(module)


def installed(*packages: str) -> bool:
    """Whether every one of ``packages`` can be imported here (found, not imported: no import-time side effects)."""
    return all(importlib.util.find_spec(package) is not None for package in packages)


class Instrumentor(Protocol):
    """What OpenTelemetry's ``BaseInstrumentor`` offers a test: switched on for a provider, and off."""

    def instrument(self, **kwargs: object) -> None: ...

    def uninstrument(self, **kwargs: object) -> None: ...


InstrumentorT = TypeVar("InstrumentorT", bound=Instrumentor)


def instrumented(instrumentor: InstrumentorT, tracer_provider: TracerProvider) -> Iterator[InstrumentorT]:
    """The body of a tier's ``instrumentor`` fixture (``yield from``): on for the test's provider, off after it."""
    instrumentor.instrument(tracer_provider=tracer_provider)
    yield instrumentor
    instrumentor.uninstrument()


def _main_python() -> str:
    """The main environment's interpreter: ``MAST_OTEL_MAIN_PYTHON``, else the repository's ``.venv``."""
    return os.environ.get(MAIN_PYTHON_ENV) or str(REPO / ".venv" / "bin" / "python")


def _main_python_problem(python: str, module: str) -> str | None:
    """Why ``python`` cannot import ``module`` (None when it can)."""
    if not Path(python).exists():
        return f"{python} does not exist"
    probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True, text=True)
    return f"{python} cannot import {module}: {probe.stderr.strip()[-300:]}" if probe.returncode else None


def main_python_that_imports(module: str, purpose: str) -> str:
    """The main environment's interpreter, able to import ``module``. When it cannot, the test fails if the session
    named the interpreter (``MAST_OTEL_MAIN_PYTHON``: a promise the run must keep), else it skips, saying what
    ``purpose`` needed it for."""
    python = _main_python()
    problem = _main_python_problem(python, module)
    if problem:
        if os.environ.get(MAIN_PYTHON_ENV):
            pytest.fail(f"{MAIN_PYTHON_ENV}={python}: {problem}")
        pytest.skip(f"{purpose} runs from the main venv: {problem}; run scripts/setup-env.sh or set {MAIN_PYTHON_ENV}")
    return python
