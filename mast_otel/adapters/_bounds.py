"""Bounds on the attribute values a conversation is read from: a value nested too deep or too large is ignored.

A trace is its sender's data. One attribute holding JSON nested 100,000 deep made ``json.loads`` raise
``RecursionError`` and gave the whole conversation the verdict ``error``; one holding 50 MB of text made every
reader of it (the adapters, the signals, compaction, token counts) take seconds. So the conversation is read
through :func:`screen` first, which leaves out every attribute value, on a span or on one of its events, that is

- **too deep** (:data:`TOO_DEEP`): JSON text (a string whose first non-blank character is ``[`` or ``{``) nested
  more than :data:`MAX_VALUE_DEPTH` levels, or a list or map (an OTLP array or kvlist value) nested that deep;
- **too large** (:data:`TOO_LARGE`): more than :data:`MAX_VALUE_CHARS` characters (a list or map: its items and the
  characters of its strings together);

and reports each value it left out (:class:`Ignored`: span, key, reason; never the value). The rest is read as if
that value had never been recorded, so a conversation's verdict is the one it gets without it.

:func:`json_of` is the adapters' one JSON reader, bounded the same way: text that is too deep or too large is read
as no JSON, never as an exception. It matters for the values inside a value, which :func:`screen` does not see (a
tool call's arguments, JSON text inside a message's JSON).

A few ``str.count`` calls decide most values; only JSON text with more than :data:`MAX_VALUE_DEPTH` brackets is scanned
for its depth, by regular expressions (string literals first, so a bracket inside a string does not count).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mast_otel.spans import SpanEvent, SpanRecord

__all__ = [
    "IGNORE_REASONS", "MAX_VALUE_CHARS", "MAX_VALUE_DEPTH", "NOT_JSON", "TOO_DEEP", "TOO_LARGE", "Ignored", "Screened",
    "json_of", "screen", "why_ignored",
]  # fmt: skip

# Levels of nesting read at most: far more than any message, tool call or serialized state nests (GenAI messages
# nest 4-6 levels), and the depth OTLP's own protobuf decoders stop at; JSON this deep parses well inside Python's
# recursion limit, wherever the reader is called from.
MAX_VALUE_DEPTH = 100
# Characters read at most from one value: 4 Mi, a million-token model context as text. A conversation's readers
# take about 0.3 s per MB of text (the judge's compaction and token counts, measured); the collector's default
# request limit (16 MiB) holds four such values.
MAX_VALUE_CHARS = 4 * 1024 * 1024

TOO_DEEP = "too_deep"
TOO_LARGE = "too_large"
IGNORE_REASONS = (TOO_DEEP, TOO_LARGE)

# What json_of gives text that is no JSON when asked to tell it from JSON's own null.
NOT_JSON: Any = object()

_JSON_OPENS = frozenset("[{")
# A JSON string literal (escapes included; one never closed runs to the end, where the parser stops too), then
# everything that is not a bracket: what is left is the nesting. (With the closing quote required, text full of
# escaped quotes and never closed took quadratic time: a match tried from every quote.)
_STRING_LITERAL = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


@dataclass(frozen=True, slots=True)
class Ignored:
    """One attribute value left out: where it was (its span, its event's name when on an event, its key) and why."""

    span_id: str
    key: str
    reason: str
    event: str | None = None


@dataclass(frozen=True, slots=True)
class Screened:
    """Spans with the values past the bounds left out (the spans with none are the same objects), and those."""

    spans: list[SpanRecord]
    ignored: tuple[Ignored, ...]


def why_ignored(value: Any) -> str | None:
    """Why ``value`` is not read (:data:`TOO_DEEP`, :data:`TOO_LARGE`), or None: it is within the bounds."""
    if isinstance(value, str):
        return _text_reason(value)
    if isinstance(value, (tuple, list, Mapping)):
        return _nested_reason(value)
    return None


def json_of(value: Any, default: Any = None) -> Any:
    """A JSON text's value; ``default`` when ``value`` is not a string, not JSON, or past the bounds."""
    if not isinstance(value, str) or _text_reason(value) is not None:
        return default
    try:
        return json.loads(value)
    except ValueError:
        return default


def screen(spans: Sequence[SpanRecord]) -> Screened:
    """``spans`` with every attribute value past the bounds left out, on the spans and on their events."""
    out: list[SpanRecord] = []
    ignored: list[Ignored] = []
    for span in spans:
        attributes = _within(span.attributes, span.span_id, None, ignored)
        events = span.events
        if events:
            kept = tuple(_event_within(e, span.span_id, ignored) for e in events)
            events = events if all(a is b for a, b in zip(kept, events, strict=True)) else kept
        if attributes is span.attributes and events is span.events:
            out.append(span)
        else:
            out.append(dataclasses.replace(span, attributes=attributes, events=events))
    return Screened(out, tuple(ignored))


def _event_within(event: SpanEvent, span_id: str, ignored: list[Ignored]) -> SpanEvent:
    attributes = _within(event.attributes, span_id, event.name, ignored)
    return event if attributes is event.attributes else SpanEvent(event.name, attributes)


def _within(attributes: Mapping[str, Any], span_id: str, event: str | None,
            ignored: list[Ignored]) -> Mapping[str, Any]:  # fmt: skip
    """``attributes`` itself when every value is within the bounds, else a copy without the others."""
    gone: dict[str, str] = {}
    for key, value in attributes.items():
        reason = why_ignored(value)
        if reason is not None:
            gone[key] = reason
    if not gone:
        return attributes
    ignored.extend(Ignored(span_id, key, reason, event) for key, reason in gone.items())
    return {key: value for key, value in attributes.items() if key not in gone}


def _text_reason(text: str) -> str | None:
    if len(text) > MAX_VALUE_CHARS:
        return TOO_LARGE
    if len(text) <= MAX_VALUE_DEPTH:
        return None  # (too short to open more than MAX_VALUE_DEPTH levels)
    if text[:1] not in _JSON_OPENS and text.lstrip()[:1] not in _JSON_OPENS:
        return None  # a JSON scalar, or no JSON: read flat whatever its brackets
    if text.count("[") + text.count("{") <= MAX_VALUE_DEPTH:
        return None
    brackets = _NOT_A_BRACKET.sub("", _STRING_LITERAL.sub("", text))
    deepest = max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0)
    return TOO_DEEP if deepest > MAX_VALUE_DEPTH else None


def _nested_reason(value: tuple[Any, ...] | list[Any] | Mapping[str, Any]) -> str | None:
    """A list or map, walked without recursion: its depth, its size (items plus characters), its strings' own."""
    size = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            size += len(item)
            reason = _text_reason(item)
            if reason is not None:
                return reason
        elif isinstance(item, (tuple, list, Mapping)):
            if depth > MAX_VALUE_DEPTH:
                return TOO_DEEP
            size += len(item)
            if size > MAX_VALUE_CHARS:
                return TOO_LARGE
            children = itertools.chain.from_iterable(item.items()) if isinstance(item, Mapping) else item
            stack.extend((child, depth + 1) for child in children)
        if size > MAX_VALUE_CHARS:
            return TOO_LARGE
    return None
