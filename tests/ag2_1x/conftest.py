"""AG2 1.x tier. Runs in the AG2 1.x environment (``nox -s ag2_1x``, see noxfile.py); in any environment without
AG2 1.x (the main one has AG2 Classic, the same PyPI name) its modules are skipped with that reason.

The collector process and ``mast-otel judge`` run from the MAIN virtual environment's interpreter
(``MAST_OTEL_MAIN_PYTHON``, default ``.venv/bin/python`` in the repository), which has the judge's extras.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.frameworks import instrumented, require_in_own_session, skip_reason

SKIP_REASON = skip_reason("AG2 1.x (the `ag2` module)", "ag2_1x")
require_in_own_session("ag2_1x", "ag2.network")


@pytest.fixture
def instrumentor(tracer_provider: TracerProvider) -> Iterator[Any]:
    from mast_otel._safety import reset_recording_failures
    from mast_otel.integrations.ag2_1x import AG2V1Instrumentor

    reset_recording_failures()  # each test reads mast_otel.recording_failures() from zero
    yield from instrumented(AG2V1Instrumentor(), tracer_provider)
    reset_recording_failures()
