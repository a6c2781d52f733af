"""AG2 1.x tier. Runs in the AG2 1.x environment (``nox -s ag2_1x``, see noxfile.py); in any environment without
AG2 1.x (the main one has AG2 Classic, the same PyPI name) its modules are skipped with that reason.

The collector process and ``mast-otel judge`` run from the MAIN virtual environment's interpreter
(``MAST_OTEL_MAIN_PYTHON``, default ``.venv/bin/python`` in the repository), which has the judge's extras.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.span_query import Spans

FRAMEWORK = "ag2_1x"
SKIP_REASON = "AG2 1.x (the `ag2` module) is not installed in this environment; it has its own: nox -s ag2_1x"

if os.environ.get("MAST_OTEL_REQUIRE_FRAMEWORK") == FRAMEWORK:
    import ag2.network  # noqa: F401  (nox -s ag2_1x: a broken install must fail, not skip)


@pytest.fixture
def instrumentor(tracer_provider: TracerProvider) -> Iterator[Any]:
    from mast_otel._safety import reset_recording_failures
    from mast_otel.integrations.ag2_1x import AG2V1Instrumentor

    reset_recording_failures()  # each test reads mast_otel.recording_failures() from zero
    inst = AG2V1Instrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    yield inst
    inst.uninstrument()
    reset_recording_failures()


@pytest.fixture
def spans(span_exporter: InMemorySpanExporter) -> Any:
    return lambda: Spans(span_exporter)
