"""One module per framework. Each maps the framework's events onto ``mast_otel.recorder`` and nothing else."""

from __future__ import annotations

from typing import Any

from mast_otel._registry import STATE
from mast_otel._setup import ensure_tracer_provider
from mast_otel.config import CaptureConfig
from mast_otel.recorder import Recorder


def recorder_for(framework: str, kwargs: dict[str, Any]) -> Recorder:
    """The recorder an instrumentor's ``_instrument(**kwargs)`` uses: ``tracer_provider`` (else the global one,
    configured from ``OTEL_*`` when the program set none, as under ``opentelemetry-instrument``) and ``config``;
    registered so that redaction given to a later ``mast_otel.instrument()`` applies to it too."""
    tracer_provider = kwargs.get("tracer_provider")
    if tracer_provider is None:
        ensure_tracer_provider()
    config = kwargs.get("config")
    if config is not None and not isinstance(config, CaptureConfig):
        raise TypeError(f"config must be a mast_otel.CaptureConfig, not {type(config).__name__}")
    recorder = Recorder(tracer_provider=tracer_provider, config=config, framework=framework)
    STATE.recorders.add(recorder)  # so that redaction given to a later instrument() reaches it
    return recorder
