"""Spans read from OTLP JSON, the report's file input.

The report needs span links and resource ``service.name``, which :class:`mast_otel.spans.SpanRecord` does not carry,
so it parses OTLP JSON itself into the small :class:`Span` below. Ids are normalised to hex because the OTLP JSON
spec writes hex while protobuf's generic JSON mapping writes base64, and files of both kinds exist.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Span", "load_otlp_json", "request_to_otlp_json", "spans_from_otlp_json"]


@dataclass(frozen=True, slots=True)
class Span:
    """The part of an OTLP span the report needs (links included, which :class:`mast_otel.spans.SpanRecord` lacks)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    attributes: Mapping[str, Any]
    service: str | None = None
    links: tuple[tuple[str, Mapping[str, Any]], ...] = ()  # (span id, link attributes), same trace
    start_ns: int = 0  # startTimeUnixNano: orders a conversation's events for its picture
    end_ns: int = 0  # endTimeUnixNano: the adapters order a foreign trace's events by it
    events: tuple[tuple[str, Mapping[str, Any]], ...] = ()  # (name, attributes): GenAI content may live only here
    scope: str | None = None  # the instrumentation scope's name: some roots are known by it and their name


def _hex_id(value: str | None) -> str:
    """OTLP JSON ids are hex; protobuf's own JSON mapping writes base64. Accept both, return hex."""
    if not value:
        return ""
    text = value.strip()
    if len(text) in (16, 32) and all(c in "0123456789abcdefABCDEF" for c in text):
        return text.lower()
    try:
        return base64.b64decode(text, validate=True).hex()
    except ValueError:
        return text


def _any(value: Mapping[str, Any] | None) -> Any:
    """An OTLP JSON ``AnyValue`` as a plain value (arrays as tuples)."""
    if not value:
        return None
    for key, raw in value.items():
        if key == "stringValue":
            return raw
        if key == "boolValue":
            return bool(raw)
        if key == "intValue":
            return int(raw)
        if key == "doubleValue":
            return float(raw)
        if key == "arrayValue":
            return tuple(_any(v) for v in (raw or {}).get("values", ()))
        if key == "kvlistValue":
            return {kv["key"]: _any(kv.get("value")) for kv in (raw or {}).get("values", ())}
        if key == "bytesValue":
            return _hex_id(raw)
    return None


def _attrs(items: Iterable[Mapping[str, Any]] | None) -> dict[str, Any]:
    return {kv["key"]: _any(kv.get("value")) for kv in items or ()}


def spans_from_otlp_json(doc: Mapping[str, Any]) -> Iterator[Span]:
    """Every span of one OTLP JSON document (``{"resourceSpans": [...]}``)."""
    for rs in doc.get("resourceSpans", ()) or ():
        service = _attrs((rs.get("resource") or {}).get("attributes")).get("service.name")
        for ss in rs.get("scopeSpans", ()) or ():
            scope = (ss.get("scope") or {}).get("name") or None
            for s in ss.get("spans", ()) or ():
                yield Span(
                    trace_id=_hex_id(s.get("traceId")),
                    span_id=_hex_id(s.get("spanId")),
                    parent_span_id=_hex_id(s.get("parentSpanId")) or None,
                    name=s.get("name", ""),
                    attributes=_attrs(s.get("attributes")),
                    service=service if isinstance(service, str) else None,
                    links=tuple((_hex_id(link.get("spanId")), _attrs(link.get("attributes"))) for link in
                                s.get("links", ()) or ()),
                    start_ns=int(s.get("startTimeUnixNano") or 0),
                    end_ns=int(s.get("endTimeUnixNano") or 0),
                    events=tuple((e.get("name", ""), _attrs(e.get("attributes"))) for e in s.get("events", ()) or ()),
                    scope=scope if isinstance(scope, str) else None,
                )  # fmt: skip


def load_otlp_json(path: str | Path) -> list[Span]:
    """Spans from a file holding one OTLP JSON document or JSON Lines of them."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        docs: list[Any] = [json.loads(text)]
    except json.JSONDecodeError:
        docs = [json.loads(line) for line in text.splitlines() if line.strip()]
    spans: list[Span] = []
    for doc in docs:
        for item in doc if isinstance(doc, list) else [doc]:
            if not isinstance(item, dict) or "resourceSpans" not in item:
                raise ValueError(f"{path}: not OTLP JSON (no resourceSpans)")
            spans.extend(spans_from_otlp_json(item))
    return spans


def request_to_otlp_json(request: Any) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` (or ``TracesData``) protobuf as OTLP JSON, with hex ids as the spec says."""
    from google.protobuf import json_format

    doc: dict[str, Any] = json_format.MessageToDict(request)
    for rs in doc.get("resourceSpans", ()):
        for ss in rs.get("scopeSpans", ()):
            for s in ss.get("spans", ()):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if s.get(key):
                        s[key] = _hex_id(s[key])
                for link in s.get("links", ()):
                    for key in ("traceId", "spanId"):
                        if link.get(key):
                            link[key] = _hex_id(link[key])
    return doc
