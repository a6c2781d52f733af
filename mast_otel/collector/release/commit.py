"""Releasing held spans: read them back from their segments, and write the release in one transaction.

A release (a judged conversation, or spans outside any conversation) writes the spans to export to the outbox,
a tombstone naming every released span, and deletes the segments it emptied, atomically; the assembler's
per-segment counts change under the pipeline lock in the same step, so two releases touching one segment never
both keep (or both delete) it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

from mast_otel.collector.assemble.assembler import Assembler, Location
from mast_otel.collector.assemble.summaries import SpanSummaries, summary_record
from mast_otel.collector.encoding import RawSpan, ScopeSpansView, scope_spans
from mast_otel.collector.metrics import CollectorMetrics
from mast_otel.collector.store.api import OutRow, SpanStore, StoredSegment, Tomb
from mast_otel.judge.model import DecisiveStep, ModeLabel, Verdict
from mast_otel.spans import SpanRecord, from_otlp_span, service_name

__all__ = [
    "Loaded", "ReleaseParts", "SegmentCache", "commit_release", "commit_releases", "is_unreadable", "persist_claim",
    "persist_verdict", "quarantine_release", "verdict_from_json", "verdict_to_json",
]  # fmt: skip

_log = logging.getLogger(__name__)


class SegmentCache:
    """Recently read segments with their parsed layout (segments are immutable and ids never reused).

    Bounded by bytes (``max_bytes``, what 16 requests of 4 MiB weigh), not by count: a request's conversations are
    released one by one, and with 16 entries of small requests the releases of a busy collector read and parsed
    each segment several times over.

    ``summaries``, when kept (a model-free judge), are what ingest kept of the same segments' spans
    (:mod:`.summaries`); they are forgotten with the segments."""

    def __init__(self, store: SpanStore, max_bytes: int = 64 << 20, summaries: SpanSummaries | None = None) -> None:
        self._store = store
        self.summaries = summaries
        self._max_bytes = max_bytes
        self._bytes = 0
        self._lock = threading.Lock()
        self._items: OrderedDict[int, tuple[StoredSegment, ScopeSpansView]] = OrderedDict()

    def get(self, segment_id: int) -> tuple[StoredSegment, ScopeSpansView]:
        with self._lock:
            found = self._items.get(segment_id)
            if found is not None:
                self._items.move_to_end(segment_id)
                return found
        segment = self._store.segment(segment_id)
        found = (segment, ScopeSpansView.parse(segment.data))
        with self._lock:
            if segment_id not in self._items:
                self._items[segment_id] = found
                self._bytes += len(segment.data)
            while self._bytes > self._max_bytes and len(self._items) > 1:
                self._bytes -= len(self._items.popitem(last=False)[1][0].data)
        return found

    def forget(self, segment_ids: Sequence[int]) -> None:
        if self.summaries is not None:
            self.summaries.forget(segment_ids)
        with self._lock:
            for sid in segment_ids:
                gone = self._items.pop(sid, None)
                if gone is not None:
                    self._bytes -= len(gone[0].data)


@dataclass(frozen=True, slots=True)
class _Group:
    segment: StoredSegment
    view: ScopeSpansView
    spans: list[tuple[bytes, bytes]]  # (span id, body)


@dataclass(frozen=True, slots=True)
class Loaded:
    """Some held spans, read back and grouped by the segment (resource and scope) they came in."""

    groups: list[_Group]

    @classmethod
    def read(cls, cache: SegmentCache, locations: Sequence[Location]) -> Loaded:
        by_segment: dict[int, list[Location]] = {}
        for loc in locations:
            by_segment.setdefault(loc[1], []).append(loc)
        groups = []
        for segment_id, locs in by_segment.items():
            segment, view = cache.get(segment_id)
            spans = view.spans
            groups.append(_Group(segment, view, [(sid, segment.data[slice(*spans[i])]) for sid, _, i in locs]))
        return cls(groups)

    def bodies(self) -> dict[bytes, bytes]:
        return {sid: body for g in self.groups for sid, body in g.spans}

    def exported(self) -> set[bytes]:
        """Span ids already sent downstream when they arrived (passthrough)."""
        return {sid for g in self.groups if g.segment.exported for sid, _ in g.spans}

    def records(self, store: SpanStore, *, summary: bool = False) -> list[SpanRecord]:
        """The spans as SpanRecords (what a judge reads), with their resource's service name; with ``summary``,
        only what a model-free release reads (:func:`.summaries.summary_record`), from a cheaper parse.

        Each span is parsed on its own (no request is built and parsed again), grouped by resource in the order
        resources first appear, as a request built from these segments would list them."""
        by_resource: dict[int, list[_Group]] = {}
        for g in self.groups:
            by_resource.setdefault(g.segment.resource, []).append(g)
        out: list[SpanRecord] = []
        for rid, groups in by_resource.items():
            service = service_name(Resource.FromString(store.resource(rid)[0]))
            if summary:
                out.extend(summary_record(RawSpan.FromString(body), service) for g in groups for _, body in g.spans)
                continue
            for g in groups:
                # The scope field alone is a valid ScopeSpans encoding: its name without parsing the spans again.
                scope = ScopeSpans.FromString(g.view.scope_field).scope.name or None
                out.extend(from_otlp_span(Span.FromString(body), service, scope) for _, body in g.spans)
        return out

    def outbox(self, replace: Mapping[bytes, bytes]) -> list[OutRow]:
        """Outbox rows for the spans not exported yet, with ``replace``'s bodies where given (the labelled ones)."""
        out = []
        for g in self.groups:
            if g.segment.exported:
                continue
            bodies = [replace.get(sid, body) for sid, body in g.spans]
            out.append(OutRow(g.segment.resource, scope_spans(g.view, bodies), len(bodies)))
        return out


def commit_release(
    *,
    store: SpanStore,
    assembler: Assembler,
    lock: threading.RLock,
    cache: SegmentCache,
    locations: tuple[Location, ...],
    outbox: Sequence[OutRow],
    tomb: Tomb,
) -> None:
    """Write the release; the emptied segments go in the same transaction."""
    commit_releases(store=store, assembler=assembler, lock=lock, cache=cache,
                    releases=[(locations, outbox, (tomb,))])  # fmt: skip


# One release: the spans it takes out of their segments, its outbox rows, its tombstones (one per trace).
ReleaseParts = tuple[tuple[Location, ...], Sequence[OutRow], Sequence[Tomb]]


def commit_releases(
    *,
    store: SpanStore,
    assembler: Assembler,
    lock: threading.RLock,
    cache: SegmentCache,
    releases: Sequence[ReleaseParts],
) -> None:
    """Write several releases in one transaction (all or none), with the segments they empty.

    One commit per release was about half of a release's store time: the transaction's fixed cost (begin, commit,
    the WAL pages written again) is shared by every release of a group."""
    emptied: list[int] = []
    consumed: list[tuple[Location, ...]] = []
    with lock:
        try:
            for locations, _, _ in releases:
                emptied.extend(assembler.consume(locations))
                consumed.append(locations)
            outbox = [row for _, rows, _ in releases for row in rows]
            store.write(outbox=outbox, tombs=[t for _, _, tombs in releases for t in tombs], drop_segments=emptied)
        except BaseException:
            for locations in consumed:
                assembler.unconsume(locations)
            raise
    cache.forget(emptied)


def is_unreadable(exc: BaseException) -> bool:
    """Stored bytes that cannot be read back (a damaged row, a segment gone): retrying can never succeed, unlike
    a store error (locked, disk full), which a later try can."""
    return isinstance(exc, (DecodeError, ValueError, KeyError, IndexError, TypeError, RecursionError))


def quarantine_release(
    *,
    store: SpanStore,
    assembler: Assembler,
    lock: threading.RLock,
    cache: SegmentCache,
    metrics: CollectorMetrics,
    locations: tuple[Location, ...],
    trace_id: bytes,
    exc: BaseException,
) -> None:
    """Spans whose stored bytes cannot be read back: their segments go to the quarantine table, the spans leave
    the assembler and a tombstone marks them done (a restart does not try again). Counted and logged once."""
    segments = sorted({loc[1] for loc in locations})
    reason = f"{type(exc).__name__}: {exc}"[:500]
    with lock:
        assembler.consume(locations)
        store.quarantine(segments, "release", reason)
        store.write(tombs=[Tomb(trace_id, b"".join(loc[0] for loc in locations), time.time())])
    cache.forget(segments)
    metrics.segments_quarantined.labels("release").inc(len(segments))
    _log.error("%d spans of trace %s cannot be read back from the store (%s); their segments %s are quarantined",
               len(locations), trace_id.hex(), reason, segments)  # fmt: skip


def persist_verdict(store: SpanStore, trace_id: bytes, unit: str, verdict: Verdict, at: float) -> None:
    """Save a fresh verdict before its release is written; a store that cannot take it only costs the guarantee."""
    try:
        store.save_verdict(trace_id, unit, verdict_to_json(verdict), at)
    except (sqlite3.Error, OSError) as exc:
        _log.warning("could not save the verdict of trace %s before releasing it: %s", trace_id.hex(), exc)


def persist_claim(store: SpanStore, trace_id: bytes, unit: str, at: float) -> None:
    """Note that a paid judge call begins; a store that cannot take it only costs the at-most-once guarantee."""
    try:
        store.claim_verdict(trace_id, unit, at)
    except (sqlite3.Error, OSError) as exc:
        _log.warning("could not note the judge call for trace %s: %s", trace_id.hex(), exc)


_VERDICT_FIELDS = tuple(f.name for f in dataclasses.fields(Verdict))


_last_json: tuple[Verdict | None, str] = (None, "")


def verdict_to_json(verdict: Verdict) -> str:
    """The verdict as ``json.dumps(dataclasses.asdict(verdict))`` writes it, built without asdict's deep copies
    (a sizeable share of each release's time). Consecutive equal verdicts (a model-free judge gives the same one to
    every conversation) reuse the last text."""
    global _last_json
    last, text = _last_json  # one tuple, read and replaced whole: safe across the judge threads
    if last is not None and last == verdict:
        return text
    text = _encode_verdict(verdict)
    _last_json = (verdict, text)
    return text


def _encode_verdict(verdict: Verdict) -> str:
    out: dict[str, Any] = {}
    for name in _VERDICT_FIELDS:
        value = getattr(verdict, name)
        if name == "modes":
            value = [{"mode_id": m.mode_id, "evidence_span_ids": list(m.evidence_span_ids), "reason": m.reason}
                     for m in value]  # fmt: skip
        elif dataclasses.is_dataclass(value) or (
            isinstance(value, tuple) and any(map(dataclasses.is_dataclass, value))
        ):
            value = dataclasses.asdict(verdict)[name]  # a field this module does not know: the generic way
        out[name] = value
    return json.dumps(out, default=str)


def verdict_from_json(text: str) -> Verdict:
    """A verdict saved by :func:`verdict_to_json` (fields this version does not know are ignored)."""
    data: dict[str, Any] = json.loads(text)
    known = {f.name for f in dataclasses.fields(Verdict)}
    values = {k: v for k, v in data.items() if k in known}
    values["modes"] = tuple(
        ModeLabel(m["mode_id"], tuple(m.get("evidence_span_ids") or ()), m.get("reason") or "")
        for m in values.get("modes") or ()
    )
    decisive = values.get("decisive")
    values["decisive"] = DecisiveStep(**decisive) if isinstance(decisive, dict) else None
    return Verdict(**values)
