"""pytest plugin: ``mast_otel.instrument()`` before a framework's own test suite is even collected.

Loaded with ``-p mast_otel_first`` (scripts/transparency/run.py puts it on ``PYTHONPATH``), so every framework
module the suite imports is instrumented exactly as in a program that calls ``instrument()`` at its top. The call
is the bare one: mast-otel installs its own provider, exporting OTLP to wherever ``OTEL_EXPORTER_OTLP_*`` points
(the runner points it at a sink of its own). A span processor counts the spans that reach the provider, per
instrumentation scope, into ``$MAST_TRANSPARENCY_SPANS`` (JSON) at the end, so a run in which mast-otel recorded
nothing cannot pass for a transparent one.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

import mast_otel

mast_otel.instrument()


class _Counting(SpanProcessor):
    """Spans ended per instrumentation scope: mast-otel's own, and any the framework makes on the same provider."""

    def __init__(self) -> None:
        self.ended: Counter[str] = Counter()

    def on_end(self, span: ReadableSpan) -> None:
        scope = span.instrumentation_scope.name if span.instrumentation_scope else ""
        self.ended[scope] += 1  # a lost increment under a race only undercounts


_COUNT = _Counting()
_provider: Any = trace.get_tracer_provider()
if hasattr(_provider, "add_span_processor"):
    _provider.add_span_processor(_COUNT)


def pytest_unconfigure(config: Any) -> None:
    where = os.environ.get("MAST_TRANSPARENCY_SPANS")
    if where:
        Path(where).write_text(json.dumps(dict(_COUNT.ended)))
