"""What a model-free release reads of each held span, kept at ingest so that release does not decode spans again.

With a judge that reads no span content (``signals``, ``none``), a release still computes the structural signals,
the sampling decision, the root, its service and framework. Together they read a handful of attributes per span
(:data:`SUMMARY_KEYS`) and its ids, times and error status. Ingest has every span parsed already (ids, status and
the attribute map, in C), so it keeps those as a small :class:`~mast_otel.spans.SpanRecord` per span, grouped by
the segment the span is stored in. Release builds the conversation from them instead of parsing and decoding
every stored span again, which was a fifth of a collector's time.

The summaries live in memory only, bounded by bytes (``summary_memory``). While the bound is reached, ingest keeps
none for new spans (the oldest conversations are released first, and free room); their releases, and those after a
restart, make the same records from the stored spans parsed the same way (:meth:`.release.Loaded.records` with
``summary=True``), which costs the parse again but still not the full decode. A conversation another
instrumentation recorded is decoded in full: the adapters read every attribute.

Summaries and a full decode give the same release: tests/collector/test_summaries.py holds the signals, sampling
and labels of both equal, and checks that :data:`SUMMARY_KEYS` names every attribute a model-free release reads.
One difference, on input no SDK writes: an attribute whose ``KeyValue`` repeats its value field is read as its
last value (the parsed map keeps the last), where a full decode merges the two values.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from sys import getsizeof
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from mast_otel import semconv as sc
from mast_otel.collector.assemble.assembler import Location
from mast_otel.spans import SpanRecord, any_value

__all__ = ["SUMMARY_KEYS", "SpanSummaries", "summary_record"]

# Every attribute the model-free release path reads: the conversation view and its signals (mast_otel.judge.view,
# .signals), the sampling (.cost_controls), the partial check (.judging) and the root's framework and conversation
# (.release_builder). None is in the collector's own namespace, which ingest strips before storing.
SUMMARY_KEYS: frozenset[str] = frozenset({
    sc.MAST_SPAN_TYPE, sc.MAST_FRAMEWORK, sc.GEN_AI_CONVERSATION_ID, sc.GEN_AI_AGENT_NAME,
    sc.MESSAGE_CONTENT, sc.MESSAGE_SENDER, sc.MESSAGE_KIND, sc.MESSAGE_RECIPIENTS, sc.MESSAGE_INDEX,
    sc.GEN_AI_TOOL_CALL_ARGUMENTS, sc.GEN_AI_TOOL_CALL_RESULT, sc.HANDOFF_FROM,
    sc.TERMINATION_REASON, sc.CONVERSATION_ROUNDS, sc.CONVERSATION_MAX_ROUNDS,
})  # fmt: skip
_KEYS = tuple(sorted(SUMMARY_KEYS))
_STATUS_ERROR = Status.STATUS_CODE_ERROR
# What a span's summary costs in memory besides its values: the record, its dict and id strings (about 800 bytes
# by tracemalloc; test_summaries.py holds the whole estimate above what it measures).
_RECORD_BYTES = 900


def _value(raw: bytes) -> Any:
    """A serialized AnyValue as :func:`mast_otel.spans.any_value` gives it, for one that is not a short string
    (:func:`summary_record` reads those in place). A long string (a two-byte length) and a small non-negative int
    are read in place too; anything else is parsed."""
    if len(raw) >= 2:
        tag, length = raw[0], raw[1]
        if tag == 0x0A:  # string_value: the text is valid UTF-8, ingest's full parse of the ScopeSpans checked it
            if length >= 0x80 and len(raw) > 2 and raw[2] < 0x80 and len(raw) == ((length & 0x7F) | raw[2] << 7) + 3:
                return raw[3:].decode("utf-8")
        elif tag == 0x18 and length < 0x80 and len(raw) == 2:  # int_value 0-127 (indexes, counts)
            return length
    return any_value(AnyValue.FromString(raw))


def summary_record(span: Any, service: str | None) -> SpanRecord:
    """A ``RawScopeSpans`` span (already checked readable) as the SpanRecord a full decode would give, with only
    :data:`SUMMARY_KEYS` among its attributes and no events.

    Ingest makes one per mast-otel span it holds, so this is written for speed: the attribute map is asked
    ``key in`` then ``[key]`` (cheaper than ``get`` on the C map), a short string is read in place here rather than
    in a call to :func:`_value`, and the record is built from positional arguments (in :class:`SpanRecord`'s
    order)."""
    attributes = span.attributes
    values: dict[str, Any] = {}
    for key in _KEYS:
        if key in attributes:
            raw = attributes[key]
            # a string_value of under 128 bytes (span types, ids, names: what most attributes are), whose text
            # ingest's full parse of the ScopeSpans checked to be valid UTF-8
            if len(raw) >= 2 and raw[0] == 0x0A and raw[1] < 0x80 and len(raw) == raw[1] + 2:
                values[key] = raw[2:].decode("utf-8")
            else:
                values[key] = _value(raw)
    parent = span.parent_span_id
    return SpanRecord(
        span.trace_id.hex(), span.span_id.hex(), parent.hex() or None, span.name.decode("utf-8"),
        span.start_time_unix_nano, span.end_time_unix_nano, values, span.status.code == _STATUS_ERROR, service,
    )  # fmt: skip


class SpanSummaries:
    """Per stored segment, the summary records of its spans (by index) and its resource id. Segments are kept
    while less than ``max_bytes`` is, so at most ``max_bytes`` and one request's segments are, as weighed (each
    value by ``sys.getsizeof``, the rest by a measured estimate). Thread-safe: ingest puts, judge workers read,
    releases forget."""

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._bytes = 0
        self._lock = threading.Lock()
        self._items: dict[int, tuple[int, Mapping[int, SpanRecord] | None, int]] = {}  # None: put_foreign

    @property
    def bytes(self) -> int:
        return self._bytes

    def has_room(self) -> bool:
        """Whether ingest should summarise a new segment's spans (asked before the work, without the lock)."""
        return self._bytes < self._max_bytes

    def put(self, segment_id: int, resource_id: int, records: Mapping[int, SpanRecord]) -> None:
        """Keep a stored segment's summaries, unless the bound is reached (then its releases make them again)."""
        weight = _RECORD_BYTES * len(records)
        for record in records.values():
            for value in record.attributes.values():  # text of any width, and arrays: each object as it weighs
                weight += getsizeof(value)
                if type(value) is tuple:
                    weight += sum(map(getsizeof, value))
        with self._lock:
            if self._bytes < self._max_bytes:
                self._items[segment_id] = (resource_id, records, weight)
                self._bytes += weight

    def put_foreign(self, segment_id: int) -> None:
        """Note a stored segment with no mast-otel span: a conversation made only of such segments is decoded in
        full at once (the adapters read it), not summarised first."""
        with self._lock:
            self._items[segment_id] = (0, None, 0)

    def foreign(self, locations: Sequence[Location]) -> bool:
        """Whether every span at ``locations`` is in a segment noted by :meth:`put_foreign`."""
        with self._lock:
            for loc in locations:
                found = self._items.get(loc[1])
                if found is None or found[1] is not None:
                    return False
        return True

    def forget(self, segment_ids: Sequence[int]) -> None:
        with self._lock:
            for sid in segment_ids:
                gone = self._items.pop(sid, None)
                if gone is not None:
                    self._bytes -= gone[2]

    def records(self, locations: Sequence[Location]) -> list[SpanRecord] | None:
        """The spans at ``locations`` in the order :meth:`.release.Loaded.records` gives them (by resource in first
        appearance, then by segment, then as listed), or None when one is not kept."""
        by_segment: dict[int, list[int]] = {}
        for loc in locations:
            by_segment.setdefault(loc[1], []).append(loc[2])
        by_resource: dict[int, list[SpanRecord]] = {}
        with self._lock:
            for segment_id, indexes in by_segment.items():
                found = self._items.get(segment_id)
                if found is None:
                    return None
                resource_id, kept, _ = found
                if kept is None:
                    return None
                out = by_resource.setdefault(resource_id, [])
                for index in indexes:
                    record = kept.get(index)
                    if record is None:
                        return None
                    out.append(record)
        return [r for group in by_resource.values() for r in group]
