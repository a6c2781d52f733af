"""In-process configuration: what content is captured and how it is cleaned.

Precedence: keyword arguments to ``mast_otel.instrument()`` (or a ``CaptureConfig`` passed as ``config=``) win
over environment variables, which win over the defaults below.

Environment variables:

``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
    ``true`` (default here, because the judge reads message text), ``false``; the newer values ``SPAN_ONLY``,
    ``SPAN_AND_EVENT``, ``EVENT_ONLY`` count as on and ``NO_CONTENT`` as off. Anything else logs a warning and
    falls back to *off*, the safe side.
``MAST_OTEL_MAX_CONTENT_LENGTH``
    Characters kept per message, tool argument or result (default 8192; 0 disables the cap).
``MAST_OTEL_REDACT_PATTERNS``
    Extra regexes, one per line (or a JSON list of strings), redacted on top of the built-in secret patterns.
    Each is compiled here: a bad one raises ``ValueError`` naming it, at configuration time.
``MAST_OTEL_PROPOSED_SEMCONV``
    ``true`` adds attributes that exist only in open semantic-convention proposals (``gen_ai.transfer.*`` on
    handoffs, PR #447) next to the stable ``mast.handoff.*`` ones; default ``false``.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .redaction import Redactor

_log = logging.getLogger(__name__)

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
MAX_CONTENT_LENGTH_ENV = "MAST_OTEL_MAX_CONTENT_LENGTH"
REDACT_PATTERNS_ENV = "MAST_OTEL_REDACT_PATTERNS"
PROPOSED_SEMCONV_ENV = "MAST_OTEL_PROPOSED_SEMCONV"
OPENINFERENCE_ENV = "MAST_OTEL_OPENINFERENCE"

DEFAULT_MAX_CONTENT_LENGTH = 8192
_ON = {"true", "1", "yes", "on", "span_only", "span_and_event", "event_only"}
_OFF = {"false", "0", "no", "off", "no_content"}


@dataclass(frozen=True)
class CaptureConfig:
    """How content is captured. Build with ``CaptureConfig.from_env(**overrides)``."""

    capture_content: bool = True
    redactor: Redactor = field(default_factory=Redactor)
    proposed_semconv: bool = False  # also write proposal-stage attributes (gen_ai.transfer.*)
    # also write the OpenInference attributes viewers key on (span kind, agent.name, graph.node.*, input/output)
    openinference: bool = True

    @classmethod
    def from_env(
        cls,
        *,
        capture_content: bool | None = None,
        max_content_length: int | None = None,
        redact_patterns: Sequence[str] | None = None,
        redact: Callable[[str], str] | None = None,
        environ: dict[str, str] | None = None,
        proposed_semconv: bool | None = None,
        openinference: bool | None = None,
    ) -> CaptureConfig:
        env = os.environ if environ is None else environ
        if capture_content is None:
            capture_content = _parse_capture(env.get(CAPTURE_CONTENT_ENV))
        if max_content_length is None:
            max_content_length = _parse_int(env.get(MAX_CONTENT_LENGTH_ENV), DEFAULT_MAX_CONTENT_LENGTH)
        patterns = list(_parse_patterns(env.get(REDACT_PATTERNS_ENV)))
        patterns.extend(redact_patterns or ())
        if proposed_semconv is None:
            proposed_semconv = env.get(PROPOSED_SEMCONV_ENV, "").strip().lower() in ("true", "1", "yes", "on")
        if openinference is None:
            openinference = env.get(OPENINFERENCE_ENV, "").strip().lower() not in ("false", "0", "no", "off")
        return cls(
            capture_content=capture_content,
            redactor=Redactor(patterns=tuple(patterns), callback=redact, max_length=max_content_length),
            proposed_semconv=proposed_semconv,
            openinference=openinference,
        )


def _parse_capture(raw: str | None) -> bool:
    if raw is None or raw.strip() == "":
        return True
    value = raw.strip().lower()
    if value in _ON:
        return True
    if value not in _OFF:
        _log.warning(
            "%s=%r is not one of true/false/SPAN_ONLY/SPAN_AND_EVENT/EVENT_ONLY/NO_CONTENT; content capture is off",
            CAPTURE_CONTENT_ENV,
            raw,
        )
    return False


def _parse_int(raw: str | None, default: int) -> int:
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        _log.warning("%s=%r is not an integer; using %d", MAX_CONTENT_LENGTH_ENV, raw, default)
        return default


def _parse_patterns(raw: str | None) -> Sequence[str]:
    if not raw or not raw.strip():
        return ()
    text = raw.strip()
    if text.startswith("["):
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError:
            _log.warning("%s looks like JSON but does not parse; reading it as one regex per line", REDACT_PATTERNS_ENV)
        else:
            if isinstance(loaded, list) and all(isinstance(p, str) for p in loaded):
                return tuple(loaded)
    return tuple(line for line in text.splitlines() if line.strip())
