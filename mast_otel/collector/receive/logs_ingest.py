"""OTLP logs in: one Export logs request -> stored (forwarding queue, and content for the judge) -> acknowledged.

``receivers (LogsService/Export, POST /v1/logs) -> LogIngestor.ingest -> store: log_outbox + log_record ->
logs Exporter -> logs downstream`` and, for the judge, ``log_record -> JudgePool -> span events`` (:mod:`.log_events`).

The same promises as spans, by the same machinery:

- **Persisted before the acknowledgement.** Each ``ScopeLogs`` of the request is written, as received, to the
  store's ``log_outbox`` (the logs exporter forwards it unchanged, with its Resource, and deletes it once the
  downstream acknowledged it: at-least-once), and each record that names a span (valid trace id and span id) is
  written to ``log_record``, in the same committed transaction, before :meth:`LogIngestor.ingest` returns.
- **Limits.** The receivers apply ``max_request_bytes``, the memory limiter and auth as for spans;
  ``max_request_spans`` counts ResourceLogs, ScopeLogs and log records (read shallowly first, as spans are);
  ``max_pending_bytes`` counts the log tables too. Refusals raise the exceptions of :mod:`.ingest`, which the
  receivers count in ``mast_collector_requests_refused_total`` under ``protocol="grpc_logs"`` / ``"http_logs"``.
- **Joining a conversation.** A record with a trace id and span id is kept until its span's conversation is
  judged (the release's tombstone deletes it), so it counts whether it arrives before or after its span, as long as
  it is before the release. A record whose span was already released is forwarded only. A record whose span
  never arrives is forgotten after ``tombstone_ttl`` (the store's garbage collection).
- **Several processes.** The front routes each record to the shard that owns its trace id, as it routes spans
  (:meth:`.routing.Router.route_logs`); the shard ingests it here.

Log records are never refused for their ids: a record without trace context is forwarded only. The wire layout
of ``ExportLogsServiceRequest`` / ``ResourceLogs`` / ``ScopeLogs`` is that of the trace messages (fields 1, 2, 3),
so the shallow reader of :mod:`.ingest` and the request writer of :mod:`.encoding` serve both.
"""

from __future__ import annotations

import base64
import json
import logging
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.logs.v1.logs_pb2 import ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from mast_otel.adapters import ASSISTANT_MESSAGE_EVENT, history_key, json_of
from mast_otel.collector.assemble.trace_groups import Note, TraceGroups
from mast_otel.collector.metrics import REFUSE_BACKPRESSURE, REFUSE_DISK_FULL, CollectorMetrics
from mast_otel.collector.receive.ingest import (
    Backpressure,
    IngestResult,
    ItemBudget,
    Malformed,
    parse_error_reason,
    resource_service,
    resource_spans_of,
    tenant_of,
)
from mast_otel.collector.store.api import LogRow, OutRow, SpanStore
from mast_otel.spans import any_value

__all__ = [
    "LOGS_PATH", "LOGS_SERVICE", "LogIngestor", "decode_json_logs", "history_evidence", "logs_response", "owner_of",
    "tenant_and_service",
]  # fmt: skip

_log = logging.getLogger(__name__)
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
LOGS_PATH = "/v1/logs"
_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)
_EVENT_NAME = "event.name"  # the older convention's place for a record's event name


@dataclass(frozen=True, slots=True)
class _ScopeLogs:
    resource: bytes  # the serialized Resource, as received
    schema: str
    data: bytes  # the serialized ScopeLogs, as received
    records: int
    joined: list[LogRow]  # its records that name a span
    evidence: list[tuple[bytes, list[str]]]  # (trace, what ties it to other traces): earlier answers given as history
    tenant: str = ""  # whose records these are (tenant_attributes of the resource)
    service: str = ""


class LogIngestor:
    """Receivers call :meth:`ingest` for OTLP logs; it returns only once the records are committed to the store."""

    def __init__(
        self,
        *,
        store: SpanStore,
        lock: threading.RLock,
        metrics: CollectorMetrics,
        forward: bool,
        max_pending_bytes: int,
        max_request_items: int,
        retry_after: float,
        clock: Callable[[], float],
        groups: TraceGroups | None = None,
        tenant_attributes: tuple[str, ...] = ("service.namespace",),
    ) -> None:
        """``forward``: a logs endpoint is configured (else records are kept only for the judge). ``groups``: where
        a record that gives a model an earlier agent's answer ties its trace to that answer's (a run written as a
        trace per turn, :mod:`mast_otel.collector.assemble.trace_groups`)."""
        self._store = store
        self._lock = lock  # the pipeline lock: resources are garbage-collected under it
        self._metrics = metrics
        self._forward = forward
        self._max_bytes = max_pending_bytes
        self._max_items = max_request_items
        self._retry_after = retry_after
        self._clock = clock
        self._groups = groups
        self._tenant_attributes = tenant_attributes
        self.on_queued: Callable[[], None] = lambda: None
        self.disk_full: Callable[[], bool] = lambda: False

    def ingest(self, raw: bytes, protocol: str) -> IngestResult:
        """Store the records of ``raw``, a serialized ExportLogsServiceRequest. Raises :class:`.Malformed` or
        :class:`.TooLarge` (permanent) and :class:`.Backpressure` (retryable); returns once committed."""
        scopes, total = self._decode(raw)
        with self._lock:
            self._check_room(len(raw), total)
            kept = self._unreleased([row for s in scopes for row in s.joined])
            try:
                outbox = []
                if self._forward:
                    outbox = [OutRow(self._store.resource_id(s.resource, s.schema), s.data, s.records) for s in scopes]
                self._store.write(log_outbox=outbox, log_records=kept)
                if self._groups is not None:
                    now = self._clock()
                    for scope in scopes:
                        for trace_id, keys in scope.evidence:
                            self._groups.submit(Note(trace_id, scope.tenant, scope.service, keys, now))
            except sqlite3.OperationalError as exc:
                if self.disk_full():
                    message = f"the store's disk is full ({exc})"
                    raise Backpressure(message, self._retry_after, REFUSE_DISK_FULL) from None
                raise
        self._metrics.log_records_received.labels(protocol).inc(total)
        if outbox:
            self.on_queued()
        return IngestResult(total)

    def _decode(self, raw: bytes) -> tuple[list[_ScopeLogs], int]:
        """Each non-empty ScopeLogs, and the number of records. Counted shallowly before anything is parsed in
        full; each ScopeLogs is then parsed once, which is also the check that its bytes can be read back."""
        budget = ItemBudget(self._max_items)
        scopes: list[_ScopeLogs] = []
        total = 0
        now = self._clock()
        positions: dict[bytes, int] = {}  # (trace, span) -> earlier answers seen in that model call's history
        for _, rs in resource_spans_of(raw, budget):
            resource_checked = False
            tenant = tenant_of(rs.resource, self._tenant_attributes)
            service: str | None = None
            for data in list(rs.scope_spans):
                if not data:
                    continue
                try:
                    scope = ScopeLogs.FromString(data)
                    if not resource_checked:
                        Resource.FromString(rs.resource)
                        resource_checked = True
                except (DecodeError, RecursionError) as exc:
                    raise Malformed(f"a ScopeLogs is not valid OTLP protobuf: {parse_error_reason(exc)}") from None
                records = scope.log_records
                budget.take(len(records))
                rows = []
                evidence = []
                for record in records:
                    tid, sid = record.trace_id, record.span_id
                    if len(tid) == 16 and len(sid) == 8 and tid != _ZERO_TRACE and sid != _ZERO_SPAN:
                        key = history_evidence(record, positions)
                        if key is not None:
                            evidence.append((tid, [key]))
                            if service is None:
                                service = resource_service(rs.resource) or ""
                        rows.append(LogRow(tid, sid, now, record.SerializeToString(), owner_of(tenant, service or "")))
                total += len(records)
                scopes.append(_ScopeLogs(rs.resource, rs.schema_url, data, len(records), rows, evidence, tenant,
                                         service or ""))  # fmt: skip
        return scopes, total

    def _unreleased(self, rows: list[LogRow]) -> list[LogRow]:
        """The records whose span was not released yet (those already released are only forwarded)."""
        out = []
        released: dict[bytes, set[bytes]] = {}
        for row in rows:
            ids = released.get(row.trace_id)
            if ids is None:
                ids = released[row.trace_id] = {i for t in self._store.tombs(row.trace_id) for i in t.ids()}
            if row.span_id not in ids:
                out.append(row)
        return out

    def _check_room(self, size: int, records: int) -> None:
        if self.disk_full():
            self._refuse(records, "the store's disk is full", REFUSE_DISK_FULL)
        pending = self._store.counts()[1]
        if pending + size > self._max_bytes:
            self._refuse(records, f"the store holds {pending} bytes (max_pending_bytes={self._max_bytes})")

    def _refuse(self, records: int, message: str, reason: str = REFUSE_BACKPRESSURE) -> None:
        self._metrics.log_records_refused.labels(reason).inc(records)
        _log.warning("refusing an Export logs request: %s; raise the limit or restore the downstream", message)
        raise Backpressure(message, self._retry_after, reason)


def decode_json_logs(body: bytes) -> ExportLogsServiceRequest:
    """OTLP JSON -> request. OTLP JSON writes ids as hex, protobuf's JSON mapping expects base64: convert first."""
    data = json.loads(body)
    if not isinstance(data, dict):
        raise ValueError("the body is not a JSON object")
    for rl in _objects(data.get("resourceLogs")):
        for sl in _objects(rl.get("scopeLogs")):
            for record in _objects(sl.get("logRecords")):
                for key in ("traceId", "spanId"):
                    value = record.get(key)
                    if isinstance(value, str) and value:
                        record[key] = base64.b64encode(bytes.fromhex(value)).decode()
    request = ExportLogsServiceRequest()
    json_format.ParseDict(data, request, ignore_unknown_fields=True)
    return request


def logs_response(result: IngestResult) -> ExportLogsServiceResponse:
    """The answer to a stored logs request: empty, or a partial success naming the records rejected (with several
    processes, a shard's part refused for good). On the wire it is the trace answer's bytes; in OTLP JSON its
    field is ``rejectedLogRecords``."""
    response = ExportLogsServiceResponse()
    if result.rejected:
        response.partial_success.rejected_log_records = result.rejected
        response.partial_success.error_message = result.message
    return response


def _objects(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def owner_of(tenant: str, service: str) -> str:
    """A log record's owner as the store keeps it (:attr:`LogRow.owner`)."""
    return f"{tenant}\x1e{service}" if tenant or service else ""


def tenant_and_service(owner: str) -> tuple[str, str]:
    """:func:`owner_of`, read back."""
    tenant, _, service = owner.partition("\x1e")
    return tenant, service


def history_evidence(record: Any, positions: dict[bytes, int] | None = None) -> str | None:
    """The key of an earlier agent's answer that a ``gen_ai.assistant.message`` record gives a model as history
    (its ``name`` and ``content``, in a map body or a string body holding JSON), or None. ``positions`` counts, per
    model call (trace and span id), the answers already seen in its history: their order, as the records come."""
    name = record.event_name
    if not name:
        name = next((kv.value.string_value for kv in record.attributes if kv.key == _EVENT_NAME), "")
    if name != ASSISTANT_MESSAGE_EVENT or not record.HasField("body"):
        return None
    body = any_value(record.body)
    if isinstance(body, str):
        body = json_of(body)  # (nested too deep or too large: no history, as the judge reads none)
    if not isinstance(body, dict):
        return None
    call = record.trace_id + record.span_id
    position = 0
    if positions is not None:
        position = positions.get(call, 0)
        positions[call] = position + 1
    return history_key(body.get("name"), body.get("content"), record.time_unix_nano or record.observed_time_unix_nano,
                       record.span_id.hex(), position)  # fmt: skip
