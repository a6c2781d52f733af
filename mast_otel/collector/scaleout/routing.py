"""Routing one Export request by trace id, for a collector that runs as several processes (see :mod:`.front`):
splitting it into one part per shard, forwarding the parts, and answering as a single process would.

A conversation is assembled, judged and released by the one process that holds all its spans, so every span of a
trace must reach the same shard: :func:`shard_of`, jump consistent hashing (Lamping and Veach, 2014) of the trace
id. It depends on nothing measured, gives each shard an equal share, and when the number of shards changes from N
to M moves only the traces that must move (|M - N| / max(M, N) of them, where ranges of a hash moved most). The
split works on the wire format and never re-encodes a span: each span's bytes, and each ScopeSpans' scope and
schema, are copied as they arrived into one request per shard (under length prefixes written anew). A request
whose spans all belong to one shard is forwarded as the bytes that arrived.

A span whose trace id is not 16 bytes goes to shard 0, which rejects it exactly as a single process would (and
says so in its partial-success answer); the split itself refuses only what no shard could read (:class:`Malformed`)
and requests over ``max_items`` (:class:`TooLarge`), counted before any per-span work.

OTLP logs are routed the same way (:meth:`Router.route_logs`): an ExportLogsServiceRequest has the trace request's
layout, and each record goes to the shard that owns its ``trace_id`` (LogRecord field 9), so a record meets its
span's conversation; a record without trace context goes to shard 0, which forwards it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from mast_otel.collector.encoding import _F, ShallowScopeSpans, _message_classes, field
from mast_otel.collector.metrics import REFUSE_SHARD_UNAVAILABLE
from mast_otel.collector.receive.ingest import (
    Backpressure,
    IngestResult,
    ItemBudget,
    Malformed,
    TooLarge,
    parse_error_reason,
    resource_spans_of,
)
from mast_otel.collector.receive.refusal import Refusal, RefusalKind

__all__ = ["Part", "Router", "shard_of", "split_request"]

_MASK64 = (1 << 64) - 1
_LCG = 2862933555777941757  # the 64-bit linear congruential step of jump consistent hashing


def shard_of(trace_id: bytes, shards: int) -> int:
    """The shard that owns a trace, in ``range(shards)``: stable across restarts, processes and machines (no salted
    hash). A trace id that is not 16 bytes goes to shard 0, which rejects it as a single process would.

    Jump consistent hashing keyed by the id's two halves XORed: W3C trace ids are random, and an id that is not
    (a counter, say) still spreads, since each step of the hash multiplies the key by a large odd constant."""
    if len(trace_id) != 16:
        return 0
    key = int.from_bytes(trace_id[:8], "little") ^ int.from_bytes(trace_id[8:], "little")
    shard, candidate = -1, 0
    while candidate < shards:
        shard = candidate
        key = (key * _LCG + 1) & _MASK64
        candidate = int((shard + 1) * (float(1 << 31) / float((key >> 33) + 1)))
    return shard


@dataclass(frozen=True, slots=True)
class Part:
    """One shard's share of a request: a serialized ExportTraceServiceRequest and how many spans it holds."""

    shard: int
    request: bytes
    spans: int


def split_request(raw: bytes, shards: int, *, max_items: int, logs: bool = False) -> list[Part]:
    """``raw`` (a serialized ExportTraceServiceRequest, or with ``logs`` an ExportLogsServiceRequest) as one part
    per shard that owns some of its spans (records).

    Raises :class:`Malformed` for bytes that are not an OTLP request and :class:`TooLarge` past ``max_items``
    (ResourceSpans + ScopeSpans + spans, as ingest counts them)."""
    trace_id_of = _record_trace_id if logs else _trace_id
    budget = ItemBudget(max_items)
    # shard -> resource_spans fields (bytes) and span count
    out: dict[int, tuple[list[bytes], int]] = {}
    for rs_data, rs in resource_spans_of(raw, budget):
        per_shard: dict[int, list[bytes]] = {}
        counts: dict[int, int] = {}
        for data in rs.scope_spans:
            if not data:
                continue
            try:
                parsed = ShallowScopeSpans.FromString(data)
            except DecodeError as exc:
                raise Malformed(f"a ScopeSpans is not valid protobuf: {parse_error_reason(exc)}") from None
            spans = parsed.spans
            budget.take(len(spans))
            by_shard = _by_shard(spans, shards, trace_id_of)
            if len(by_shard) == 1:  # the whole ScopeSpans belongs to one shard: its bytes as they came
                ((shard, mine),) = by_shard.items()
                per_shard.setdefault(shard, []).append(data)
                counts[shard] = counts.get(shard, 0) + len(mine)
                continue
            for shard, mine in by_shard.items():
                # each span's bytes as they came, and every scope field: protobuf merges a scope given twice, so
                # the shard merges them as a single process would; of schema_url, protobuf keeps the last
                part = ShallowScopeSpans(scope=parsed.scope, spans=mine)
                if parsed.HasField("schema_url"):
                    part.schema_url = parsed.schema_url
                per_shard.setdefault(shard, []).append(part.SerializeToString())
                counts[shard] = counts.get(shard, 0) + len(mine)
        if len(per_shard) == 1 and len(rs.scope_spans) == len(next(iter(per_shard.values()))):
            ((shard, _),) = per_shard.items()
            blobs, n = out.get(shard, ([], 0))
            out[shard] = ([*blobs, field(1, rs_data)], n + counts[shard])
            continue
        head = field(1, rs.resource) if rs.resource else b""
        tail = field(3, rs.schema_url.encode()) if rs.schema_url else b""
        for shard, blobs_of_shard in per_shard.items():
            resource_spans = head + b"".join(field(2, b) for b in blobs_of_shard) + tail
            blobs, n = out.get(shard, ([], 0))
            out[shard] = ([*blobs, field(1, resource_spans)], n + counts[shard])
    if len(out) == 1:
        ((shard, (_, n)),) = out.items()
        return [Part(shard, raw, n)]
    return [Part(shard, b"".join(blobs), n) for shard, (blobs, n) in sorted(out.items())]


def _by_shard(spans: Iterable[bytes], shards: int, trace_id_of: Callable[[bytes], bytes]) -> dict[int, list[bytes]]:
    """Serialized spans grouped by the shard that owns each one's trace, in the order they came. The split's
    per-span loop; a trace's spans usually come together, so its owner is worked out once per trace id."""
    out: dict[int, list[bytes]] = {}
    owners: dict[bytes, int] = {}
    for span in spans:
        trace_id = trace_id_of(span)
        shard = owners.get(trace_id)
        if shard is None:
            shard = owners[trace_id] = shard_of(trace_id, shards)
        mine = out.get(shard)
        if mine is None:
            out[shard] = [span]
        else:
            mine.append(span)
    return out


class Router:
    """``route(raw, protocol)``: what a receiver calls instead of ingest; same results and exceptions.

    The receiver's thread writes every part to its shard's link (:mod:`.shard_link`) before it reads any answer, so
    the shards store their parts at the same time; no other thread is involved. ``link_of(k)`` is shard ``k``'s
    link, or None while that shard is restarting."""

    def __init__(self, *, shards: int, link_of: Callable[[int], Any], max_items: int, retry_after: float) -> None:
        self._shards = shards
        self._link_of = link_of
        self._max_items = max_items
        self._retry_after = retry_after

    def route(self, raw: bytes, protocol: str) -> IngestResult:
        return self._route(split_request(raw, self._shards, max_items=self._max_items), protocol)

    def route_logs(self, raw: bytes, protocol: str) -> IngestResult:
        """An OTLP logs request, by its records' trace ids; each shard takes its part as ``<protocol>_logs``."""
        parts = split_request(raw, self._shards, max_items=self._max_items, logs=True)
        return self._route(parts, f"{protocol}_logs")

    def _route(self, parts: list[Part], protocol: str) -> IngestResult:
        answers = [_answer(sent) for sent in [self._send(part, protocol) for part in parts]]
        total = sum(p.spans for p in parts)
        rejected, messages, for_good = 0, [], []
        retry: Backpressure | None = None
        for part, answer in zip(parts, answers, strict=True):
            if isinstance(answer, ExportTraceServiceResponse):
                if answer.partial_success.rejected_spans:
                    rejected += answer.partial_success.rejected_spans
                    messages.append(answer.partial_success.error_message)
                continue
            outcome = self._refused(part, answer)
            if isinstance(outcome, Backpressure):  # the longest delay any shard asked for
                retry = outcome if retry is None or outcome.retry_after > retry.retry_after else retry
            else:
                for_good.append(outcome)
                rejected += part.spans
                messages.append(outcome.message)
        if retry is not None:
            raise retry
        if parts and len(for_good) == len(parts):  # nothing taken: the client is told as a single process tells it
            told = "; ".join(messages)
            raise TooLarge(told) if all(r.kind is RefusalKind.TOO_LARGE for r in for_good) else Malformed(told)
        return IngestResult(total, rejected, "; ".join(m for m in messages if m))

    def _send(self, part: Part, protocol: str) -> Any:
        """The part written to its shard: the exchange to read its answer from, an OSError, or None (restarting)."""
        link = self._link_of(part.shard)
        if link is None:
            return None
        try:
            return link.send(part.request, protocol)
        except OSError as exc:
            return exc

    def _refused(self, part: Part, answer: Refusal | OSError | None) -> Backpressure | Refusal:
        """A part not stored: retryable (a Backpressure to raise) or refused for good (malformed or too large)."""
        if isinstance(answer, Refusal):
            if answer.kind is RefusalKind.RETRY_LATER:  # full, its disk full, its memory limit: the shard's delay
                return Backpressure(answer.message, answer.retry_after, answer.reason)
            if answer.kind is RefusalKind.STORE_FAILED:  # the shard's reason (internal_error) and delay
                message = f"collector shard {part.shard}: could not store: {answer.message}"
                return Backpressure(message, answer.retry_after, answer.reason)
            return answer
        if answer is None:
            why = f"collector shard {part.shard} is restarting; retry"
        else:
            why = f"collector shard {part.shard} is not answering ({answer}); retry"
        return Backpressure(why, self._retry_after, REFUSE_SHARD_UNAVAILABLE)


def _answer(sent: Any) -> ExportTraceServiceResponse | Refusal | OSError | None:
    """A part's answer or refusal from its exchange; an OSError or None (restarting) as :meth:`Router._send` gave."""
    if sent is None or isinstance(sent, OSError):
        return sent
    try:
        answer: ExportTraceServiceResponse | Refusal = sent.answer()
    except OSError as exc:
        return exc
    return answer


# A Span as the split reads it: its trace_id only, every other field skipped by protobuf's C parser. The id is read
# as each shard's full parse reads it, by construction: of a trace_id given twice, the last. Any reader of its own
# (the first 16 bytes in place, a walk of the fields in Python) could route a span by another id than the one the
# shard files it under, and is slower than the C parser besides.
_SpanTraceId: Any
_RecordTraceId: Any  # a LogRecord as the split of a logs request reads it: its trace_id (field 9) only
(_SpanTraceId, _RecordTraceId) = _message_classes("mast_otel_collector_route.proto", "mast_otel.route", "proto3", {
    "Span": (("trace_id", 1, _F.TYPE_BYTES, _F.LABEL_OPTIONAL),),
    "LogRecord": (("trace_id", 9, _F.TYPE_BYTES, _F.LABEL_OPTIONAL),),
})  # fmt: skip


def _trace_id(span: bytes) -> bytes:
    """The trace_id (field 1) of a serialized Span, as protobuf reads it; b"" when absent or unreadable (shard 0's
    ingest then refuses the ScopeSpans with the reason)."""
    try:
        trace_id: bytes = _SpanTraceId.FromString(span).trace_id
    except DecodeError:
        return b""
    return trace_id


def _record_trace_id(record: bytes) -> bytes:
    """The trace_id (field 9) of a serialized LogRecord, as protobuf reads it; b"" when absent or unreadable (shard 0
    then forwards the record, or refuses the ScopeLogs with the reason)."""
    try:
        trace_id: bytes = _RecordTraceId.FromString(record).trace_id
    except DecodeError:
        return b""
    return trace_id
