"""Log records as content: each kept record that names a span becomes an event on that span for the judge.

The GenAI conventions are moving their events from span events to log records (OTEP 4430), and some frameworks
(Semantic Kernel, Agent Framework's v1.36 baseline) write message text only to logs. Read as span events, such a
record is what the adapters already understand (:mod:`mast_otel.adapters._genai_content`: ``gen_ai.user.message``,
``gen_ai.choice``, ``gen_ai.client.inference.operation.details``...), with no adapter code of its own:

- the event's **name** is the record's ``event_name``, else its ``event.name`` attribute (the older convention),
  else ``log``;
- its **attributes** are the record's, then the **body**'s: a map body adds its keys (the GenAI event bodies:
  ``{"content"}``, ``{"message": {...}}``), and so does a string body holding a JSON object (Semantic Kernel logs
  ``json.dumps(message.to_dict())`` through Python's logging, with the name in ``event.name``); another string
  body is ``content`` (and ``message`` for ``gen_ai.choice``); any other body is ``body``. Map and list values that
  are not flat are written as JSON text, the form the adapters read from span events;
- events are added to the span in the records' time order, after its own events; a record delivered again (a
  client's retry after a lost acknowledgement: the same bytes for the same span) counts once.

Only the judge's copy of the spans changes: the stored spans and the forwarded records stay as they came.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from mast_otel.adapters import json_of
from mast_otel.collector.store.api import LogRow
from mast_otel.spans import SpanEvent, SpanRecord, any_value

__all__ = ["with_log_events"]

_EVENT_NAME_KEY = "event.name"
_CHOICE = "gen_ai.choice"
_NO_NAME = "log"


def with_log_events(records: list[SpanRecord], logs: Sequence[LogRow]) -> list[SpanRecord]:
    """``records`` with the ``logs`` that name one of them added as events (records of other spans are ignored, a
    record delivered twice counts once)."""
    if not logs:
        return records
    # span id -> (its record's index, its trace id as bytes): a record names its span by both
    ids = {bytes.fromhex(r.span_id): (i, bytes.fromhex(r.trace_id)) for i, r in enumerate(records)}
    found: dict[int, list[tuple[int, SpanEvent]]] = {}
    seen: set[tuple[bytes, bytes]] = set()
    for row in logs:
        at = ids.get(row.span_id)
        if at is None or at[1] != row.trace_id or (row.span_id, row.data) in seen:
            continue
        index = at[0]
        seen.add((row.span_id, row.data))
        record = LogRecord.FromString(row.data)
        found.setdefault(index, []).append((record.time_unix_nano or record.observed_time_unix_nano, event_of(record)))
    if not found:
        return records
    out = list(records)
    for index, events in found.items():
        events.sort(key=lambda e: e[0])  # stable: records of one instant keep their arrival order
        out[index] = _with_events(out[index], tuple(e for _, e in events))
    return out


_FIELDS = tuple(f.name for f in dataclasses.fields(SpanRecord))
_EVENTS_AT = _FIELDS.index("events")


def _with_events(span: SpanRecord, events: tuple[SpanEvent, ...]) -> SpanRecord:
    """``span`` with ``events`` after its own: ``dataclasses.replace`` without its per-call field walk (a fifth of
    the join's time)."""
    values = [getattr(span, name) for name in _FIELDS]
    values[_EVENTS_AT] = span.events + events
    return SpanRecord(*values)


def event_of(record: LogRecord) -> SpanEvent:
    """One log record as the span event a GenAI instrumentation would have written."""
    attributes = {}
    for kv in record.attributes:
        value = any_value(kv.value)
        attributes[kv.key] = value if value.__class__ is str else _flat(value)  # (strings, the usual, as they are)
    name = record.event_name or str(attributes.pop(_EVENT_NAME_KEY, "") or "") or _NO_NAME
    attributes.pop(_EVENT_NAME_KEY, None)
    if record.HasField("body"):
        body = any_value(record.body)
        if isinstance(body, str) and body.startswith("{"):
            body = _json_object(body) or body
        if isinstance(body, dict):
            for key, value in body.items():
                attributes.setdefault(key, _flat(value))
        elif isinstance(body, str):
            attributes.setdefault("content", body)
            if name == _CHOICE:
                attributes.setdefault("message", body)
        elif body is not None:
            attributes.setdefault("body", _flat(body))
    return SpanEvent(name, attributes)


def _json_object(text: str) -> dict[str, Any] | None:
    """The JSON object a body holds; None when it holds none, or one past the adapters' bounds (nested too deep, too
    large): the text stays text, and the judge's copy leaves it out (:func:`~mast_otel.adapters.screen`)."""
    value = json_of(text)
    return value if isinstance(value, dict) else None


def _flat(value: Any) -> Any:
    """A value as a span attribute can hold it: scalars and flat lists as they are, the rest as JSON text."""
    if isinstance(value, dict) or (isinstance(value, tuple) and any(isinstance(v, (dict, tuple)) for v in value)):
        return json.dumps(value, default=str)
    return value
