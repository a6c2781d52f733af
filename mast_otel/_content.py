"""Content and exceptions as span text: rendered to a string, redacted and capped before any attribute is set.

The one path every piece of the program's text takes onto a span (messages, tasks, tool arguments and results,
exception messages and stack traces), so content capture, redaction and the length cap cannot be skipped by one
span kind.
"""

from __future__ import annotations

import json
import traceback
from typing import Any

from opentelemetry.trace import Span, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from . import semconv as sc
from ._safety import record_failure
from .config import CaptureConfig
from .redaction import Redactor

__all__ = ["clean", "content_text", "record_error", "safe_text", "set_input"]

_UNSERIALIZABLE = "<unserializable>"


def content_text(content: Any) -> str:
    """Render message content (a string, a list of multimodal parts, a dict, ...) as text for a span."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        texts = [str(p.get("text", "")) for p in content if p.get("type") == "text"]
        if len(texts) == len(content):
            return "\n".join(texts)
    try:
        return json.dumps(content, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        return _UNSERIALIZABLE


def clean(content: Any, redactor: Redactor) -> tuple[str, bool, bool]:
    """``content`` as span text, redacted and capped: (text, redacted, truncated)."""
    return redactor.redact(content_text(content))


def set_input(span: Span, key: str, value: Any, config: CaptureConfig) -> None:
    """Write ``value`` learnt after ``span`` started (a task, tool arguments) under ``key`` and as OpenInference's
    input, cleaned like any content; nothing when it is None or content capture is off."""
    if value is not None and config.capture_content:
        text = clean(value, config.redactor)[0]
        span.set_attribute(key, text)
        if config.openinference:
            span.set_attribute(sc.OI_INPUT_VALUE, text)


def record_error(span: Span, exc: BaseException, redactor: Redactor) -> None:
    """Mark the span failed with the program's exception; never raises, never touches ``exc``.

    The exception's text is redacted like content (errors quote keys and payloads). ``str(exc)`` is the
    program's code and may itself raise: the span then says so, and the program still gets its own exception.
    """
    try:
        message = safe_text(exc, redactor)
        try:
            stack = "".join(traceback.format_exception(exc))  # Python >= 3.10: the type is read from ``exc``
        except Exception:
            stack = "".join(traceback.format_tb(exc.__traceback__))
        stack = redactor.redact(stack)[0]
        attrs: dict[str, AttributeValue] = {
            "exception.type": type(exc).__qualname__,
            "exception.message": message,
            "exception.stacktrace": stack,
        }
        span.add_event("exception", attrs)
        span.set_attribute(sc.ERROR_TYPE, type(exc).__qualname__)
        span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {message}"))
    except Exception as failure:
        record_failure("recorder.record_error", failure)


def safe_text(exc: BaseException, redactor: Redactor) -> str:
    try:
        text = str(exc)
    except Exception:
        return f"<{type(exc).__qualname__}: str() raised>"
    return redactor.redact(text)[0]
