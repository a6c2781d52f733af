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
    Each is compiled here. A bad one (a regex that does not compile, or one Python warns about while compiling it,
    such as ``[[a]``: "Possible nested set", whatever the warning filters, ``-W error`` included) fails closed: it
    is counted and logged once (kind ``config.MAST_OTEL_REDACT_PATTERNS``; the pattern itself is not logged),
    content capture is turned off, and every text that still reaches a span (an exception's message, a termination
    detail) is replaced whole by ``[REDACTED]``: what the pattern was meant to hide is never exported unredacted.
    ``instrument()`` does not raise. A bad pattern given as ``redact_patterns=`` (code, not deployment) raises
    ``ValueError`` naming it (and the warning).
``MAST_OTEL_PROPOSED_SEMCONV``
    ``true`` adds attributes that exist only in open semantic-convention proposals (``gen_ai.transfer.*`` on
    handoffs, PR #447) next to the stable ``mast.handoff.*`` ones; default ``false``.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ._safety import record_failure
from .redaction import REDACTED, Redactor, compile_user_pattern

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
        if not all(_compiles(p) for p in patterns):
            # Fail closed: without the pattern nothing can be redacted as asked, so nothing is captured, and text
            # that is written whatever the capture switch (exception messages) is withheld whole.
            _bad_value(REDACT_PATTERNS_ENV, "holds a regex that does not compile, or that Python warns about; "
                       "content capture is off and exception texts are withheld")  # fmt: skip
            patterns = [p for p in patterns if _compiles(p)]
            capture_content = False
            redact = _withhold
        patterns.extend(redact_patterns or ())
        if proposed_semconv is None:
            proposed_semconv = _parse_switch(env, PROPOSED_SEMCONV_ENV, default=False)
        if openinference is None:
            openinference = _parse_switch(env, OPENINFERENCE_ENV, default=True)
        return cls(
            capture_content=capture_content,
            redactor=Redactor(patterns=tuple(patterns), callback=redact, max_length=max_content_length),
            proposed_semconv=proposed_semconv,
            openinference=openinference,
        )


def _bad_value(name: str, problem: str) -> None:
    """Count and log once (kind ``config.NAME``) a variable that cannot be used; its value is not logged (a
    redaction pattern describes a secret)."""
    record_failure(f"config.{name}", ValueError(name), note=f"{name} {problem}")


def _compiles(pattern: str) -> bool:
    """Whether ``pattern`` can redact as written: it compiles, and Python warns nothing about it (see
    :func:`~mast_otel.redaction.compile_user_pattern`)."""
    try:
        compile_user_pattern(pattern)
    except ValueError:
        return False
    return True


def _withhold(_text: str) -> str:
    return REDACTED


def _parse_capture(raw: str | None) -> bool:
    if raw is None or raw.strip() == "":
        return True
    value = raw.strip().lower()
    if value in _ON:
        return True
    if value not in _OFF:
        _bad_value(CAPTURE_CONTENT_ENV, "is not one of true/false/SPAN_ONLY/SPAN_AND_EVENT/EVENT_ONLY/NO_CONTENT; "
                   "content capture is off")  # fmt: skip
    return False


def _parse_int(raw: str | None, default: int) -> int:
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        _bad_value(MAX_CONTENT_LENGTH_ENV, f"is not an integer; using {default}")
        return default


def _parse_switch(env: Mapping[str, str], name: str, *, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if raw in ("true", "1", "yes", "on"):
        return True
    if raw in ("false", "0", "no", "off"):
        return False
    if raw:
        _bad_value(name, f"is not true or false; using {str(default).lower()}")
    return default


def _parse_patterns(raw: str | None) -> Sequence[str]:
    if not raw or not raw.strip():
        return ()
    text = raw.strip()
    if text.startswith("["):
        try:
            loaded = json.loads(text)
        except (ValueError, RecursionError):  # JSONDecodeError is a ValueError; "[[[[..." nests too deep
            _log.warning("%s looks like JSON but does not parse; reading it as one regex per line", REDACT_PATTERNS_ENV)
        else:
            if isinstance(loaded, list) and all(isinstance(p, str) for p in loaded):
                return tuple(loaded)
    return tuple(line for line in text.splitlines() if line.strip())
