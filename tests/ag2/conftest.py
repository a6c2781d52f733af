from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

import mast_otel


@pytest.fixture
def instrument(tracer_provider: TracerProvider) -> Iterator[Any]:
    """Instrument with the test's provider; yields a function to re-instrument with other options."""

    def again(**kwargs: Any) -> None:
        mast_otel.uninstrument()
        mast_otel.instrument(tracer_provider=tracer_provider, **kwargs)

    mast_otel.instrument(tracer_provider=tracer_provider)
    yield again
    mast_otel.uninstrument()
