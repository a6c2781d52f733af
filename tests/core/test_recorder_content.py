"""How the program's text reaches a span (``mast_otel._content``): every shape of message content rendered so the
judge reads what the agent said, and the program's exceptions recorded on the span (type, redacted message, stack)
without ever failing the program.

Oracles: the content itself (a string passes through, JSON parses back to the value), the exception the test
raised (its class, its message, the function it was raised in) and the span the in-memory exporter received.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Span

import mast_otel
from mast_otel import CaptureConfig
from mast_otel import semconv as sc
from mast_otel._content import content_text, record_error, safe_text, set_input
from mast_otel._safety import reset_recording_failures
from mast_otel.redaction import REDACTED, Redactor

SECRET = "sk-proj-" + "Zq4" * 10


@pytest.fixture(autouse=True)
def fresh_counts() -> Iterator[None]:
    reset_recording_failures()
    yield
    reset_recording_failures()


class Outer:
    class NestedError(Exception):
        """A nested class: ``__qualname__`` (``Outer.NestedError``) differs from ``__name__`` (``NestedError``)."""


def _raise_nested(message: str) -> None:
    raise Outer.NestedError(message)


def _caught(message: str) -> Outer.NestedError:
    try:
        _raise_nested(message)
    except Outer.NestedError as exc:
        return exc
    raise AssertionError("not raised")


def _finished(write: Callable[[Span], None]) -> ReadableSpan:
    """The one span exported after ``write(span)`` ran on it."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    span = provider.get_tracer("test").start_span("s")
    write(span)
    span.end()
    (finished,) = exporter.get_finished_spans()
    return finished


def _attrs(item: Any) -> dict[str, Any]:
    """A span's or an event's attributes (None when it has none)."""
    return dict(item.attributes or {})


# -- content as text -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["plain", "", "naïve café ✓", '{"not": "parsed"}'])
def test_a_string_is_the_text_itself(text: str) -> None:
    assert content_text(text) == text


def test_text_parts_are_joined_line_by_line_and_a_part_without_text_is_empty() -> None:
    parts = [{"type": "text", "text": "first"}, {"type": "text"}, {"type": "text", "text": "third"}]
    assert content_text(parts) == "first\n\nthird"
    assert content_text([{"type": "text", "text": "only"}]) == "only"


@pytest.mark.parametrize(
    "content",
    [
        [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "https://x/cat.png"}}],
        [{"type": "text", "text": "look"}, "a bare string part"],
        ["a", "b"],
        [{"text": "no type key"}],
        {"role": "assistant", "content": "done"},
        {"city": "Zürich", "temp": -3.5, "ok": True, "none": None},
        42,
        [1, [2, 3]],
    ],
)
def test_any_other_content_is_its_json_so_no_part_is_lost(content: Any) -> None:
    """A multimodal list with a non-text part, a list that is not all parts, a dict, a number: JSON the judge can read
    back to the very value (an image part is kept, not silently dropped as a text-only join would)."""
    text = content_text(content)
    assert json.loads(text) == content


def test_non_ascii_stays_readable() -> None:
    assert "Zürich ✓" in content_text({"city": "Zürich ✓"})


def test_values_json_cannot_encode_are_their_str() -> None:
    when = datetime(2025, 3, 4, 5, 6, 7)
    assert json.loads(content_text({"when": when, "items": {1, 2} - {2}})) == {"when": str(when), "items": "{1}"}


@pytest.mark.parametrize("kind", ["circular", "tuple keys"])
def test_content_json_cannot_render_is_a_placeholder_not_a_failure(kind: str) -> None:
    content: Any
    if kind == "circular":
        content = []
        content.append(content)  # ValueError: circular reference
    else:
        content = {("a", "b"): 1}  # TypeError: keys must be str, int, float, bool or None
    assert content_text(content) == "<unserializable>"
    assert mast_otel.recording_failures() == {}


def test_none_is_no_text() -> None:
    assert content_text(None) == ""


# -- late-set input ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("openinference", [True, False])
def test_late_input_is_written_cleaned_and_as_openinference_input_only_when_asked(openinference: bool) -> None:
    config = CaptureConfig.from_env(environ={}, openinference=openinference)
    span = _finished(lambda s: set_input(s, sc.CONVERSATION_TASK, {"use": SECRET}, config))
    written = _attrs(span)[sc.CONVERSATION_TASK]
    assert SECRET not in written and REDACTED in written and json.loads(written) == {"use": REDACTED}
    assert _attrs(span).get(sc.OI_INPUT_VALUE) == (written if openinference else None)


@pytest.mark.parametrize("value", [None, "a task"])
def test_late_input_absent_or_uncaptured_writes_nothing(value: Any) -> None:
    config = CaptureConfig.from_env(environ={}, capture_content=value is None)
    span = _finished(lambda s: set_input(s, sc.CONVERSATION_TASK, value, config))
    assert sc.CONVERSATION_TASK not in _attrs(span) and sc.OI_INPUT_VALUE not in _attrs(span)


# -- exceptions ----------------------------------------------------------------------------------------------


def test_an_exception_marks_the_span_failed_with_type_message_and_stack() -> None:
    exc = _caught("disk full")
    span = _finished(lambda s: record_error(s, exc, Redactor()))
    assert span.status.status_code.name == "ERROR"
    assert span.status.description == "NestedError: disk full"
    assert _attrs(span)[sc.ERROR_TYPE] == "Outer.NestedError"
    (event,) = span.events
    assert event.name == "exception"
    assert _attrs(event)["exception.type"] == "Outer.NestedError"
    assert _attrs(event)["exception.message"] == "disk full"
    stack = _attrs(event)["exception.stacktrace"]
    assert stack == "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    assert "_raise_nested" in stack and stack.rstrip().endswith("NestedError: disk full")


def test_exception_message_and_stack_are_redacted() -> None:
    exc = _caught(f"auth failed with {SECRET}")
    span = _finished(lambda s: record_error(s, exc, Redactor()))
    (event,) = span.events
    texts = [span.status.description, _attrs(event)["exception.message"], _attrs(event)["exception.stacktrace"]]
    for text in texts:
        assert SECRET not in text and REDACTED in text
    assert _attrs(event)["exception.message"] == f"auth failed with {REDACTED}"


def test_the_stack_falls_back_to_the_frames_when_formatting_the_exception_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    exc = _caught("x")

    def broken(*_: Any, **__: Any) -> list[str]:
        raise RuntimeError("formatting failed")

    monkeypatch.setattr(traceback, "format_exception", broken)
    span = _finished(lambda s: record_error(s, exc, Redactor()))
    (event,) = span.events
    assert _attrs(event)["exception.stacktrace"] == "".join(traceback.format_tb(exc.__traceback__))
    assert "_raise_nested" in _attrs(event)["exception.stacktrace"]
    assert span.status.status_code.name == "ERROR"
    assert mast_otel.recording_failures() == {}


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


def test_an_exception_whose_text_raises_is_named_not_raised() -> None:
    assert safe_text(Unprintable(), Redactor()) == "<Unprintable: str() raised>"
    assert safe_text(Outer.NestedError(f"key {SECRET}"), Redactor()) == f"key {REDACTED}"
    span = _finished(lambda s: record_error(s, Unprintable(), Redactor()))
    assert span.status.description == "Unprintable: <Unprintable: str() raised>"
    assert mast_otel.recording_failures() == {}


def test_a_span_that_cannot_take_the_error_is_counted_once_never_raised(caplog: pytest.LogCaptureFixture) -> None:
    class BrokenSpan:
        def add_event(self, *_: Any, **__: Any) -> None:
            raise RuntimeError("exporter gone")

    exc = _caught("the program's")
    for _ in range(2):
        record_error(BrokenSpan(), exc, Redactor())  # type: ignore[arg-type]
    assert mast_otel.recording_failures() == {"recorder.record_error": 2}
    assert len([r for r in caplog.records if "recorder.record_error" in r.getMessage()]) == 1
    assert exc.args == ("the program's",) and exc.__context__ is None
