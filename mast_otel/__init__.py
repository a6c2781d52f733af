"""mast-otel: OpenTelemetry spans for multi-agent LLM systems, labelled live with MAST failure modes.

One line instruments every supported framework that is installed, imported before or after the call::

    import mast_otel
    mast_otel.instrument()

Keyword arguments (each wins over its environment variable, see ``mast_otel.config``):

- ``tracer_provider``: where spans go. Without one, and if the program set no global provider, mast-otel
  installs an SDK provider exporting OTLP per the standard ``OTEL_EXPORTER_OTLP_*`` variables.
- ``capture_content`` (default True: the judge needs message text), ``max_content_length``,
  ``redact_patterns`` (extra regexes), ``redact`` (a ``str -> str`` callback), or ``config`` (a
  ``CaptureConfig``).
- ``frameworks``: names to instrument (default: all of ``mast_otel.integrations``).

``uninstrument()`` restores every patched method. Neither call, nor the instrumentation of a framework imported
later, raises into the program: a framework whose hooked methods are not all there (a release that renamed one) is
left unpatched, and that is logged once and counted as ``{framework}.hook``; a bad value in the environment is
counted as ``config.<VARIABLE>`` and replaced by its default, and a bad ``MAST_OTEL_REDACT_PATTERNS`` turns content
capture off (docs/robustness.md). A later ``instrument()`` adds its redaction to everything already instrumented
(by an earlier call, ``opentelemetry-instrument`` or a library); its other options apply after ``uninstrument()``.
Recording never changes the program: a failure while recording is swallowed, logged once per kind and counted
(``recording_failures()``, and the OpenTelemetry counter ``mast_otel.recording.failures``). A framework without an
integration uses :class:`Recorder`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from opentelemetry.trace import TracerProvider

from . import _registry
from ._safety import recording_failures
from ._setup import ensure_tracer_provider
from .config import CaptureConfig
from .recorder import AgentTurn, Conversation, Handoff, Recorder, ToolCall
from .version import __version__

_log = logging.getLogger(__name__)

__all__ = [
    "AgentTurn",
    "CaptureConfig",
    "Conversation",
    "Handoff",
    "Recorder",
    "ToolCall",
    "__version__",
    "instrument",
    "recording_failures",
    "uninstrument",
]


def instrument(
    *,
    tracer_provider: TracerProvider | None = None,
    capture_content: bool | None = None,
    max_content_length: int | None = None,
    redact_patterns: Sequence[str] | None = None,
    redact: Callable[[str], str] | None = None,
    config: CaptureConfig | None = None,
    frameworks: Iterable[str] | None = None,
    openinference: bool | None = None,
) -> None:
    """Instrument every supported framework, now if imported, else the moment it is imported. Idempotent."""
    if config is None:
        config = CaptureConfig.from_env(
            capture_content=capture_content,
            max_content_length=max_content_length,
            redact_patterns=redact_patterns,
            redact=redact,
            openinference=openinference,
        )
    if tracer_provider is None:
        ensure_tracer_provider()
    kwargs: dict[str, Any] = {"config": config}
    if tracer_provider is not None:
        kwargs["tracer_provider"] = tracer_provider
    # Whoever instrumented first (an earlier call, opentelemetry-instrument, a library), this call's redaction
    # applies from now on to everything already instrumented: redaction is never dropped, only added to.
    if _registry.tighten_redaction(config.redactor):
        _log.info(
            "mast-otel: the redaction given to this instrument() call now applies to every framework instrumented"
        )
    if _registry.STATE.active:
        if kwargs != _registry.STATE.kwargs:
            _log.warning(
                "mast_otel.instrument() is already active: its redaction was added, its other options are not "
                "applied; call uninstrument() first to change them"
            )
        return
    _registry.activate(set(frameworks) if frameworks is not None else None, kwargs)


def uninstrument() -> None:
    """Undo :func:`instrument`: every patched framework method is restored."""
    _registry.deactivate()
