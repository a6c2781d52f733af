"""A load of many multi-agent runs at once, each written as several traces, all giving the same answers: what
issue 45's acceptance is measured on (benchmarks/bench_runs_at_once.py) and pinned with (tests/collector/
test_runs_at_once.py).

Each run is a copy of a Semantic Kernel capture (tests/data/captures/semantic_kernel/): HandoffOrchestration and
GroupChatOrchestration, whose traces (one per runtime message) are tied by span links, and AgentGroupChat, whose
turns (a trace each) are tied only by the chat history each model call is handed (``gen_ai.assistant.message`` log
records). A copy gets fresh trace and span ids, rewritten consistently in its spans' parents and links and in its
log records, and its times moved so that every run starts within ``spread`` of the others: they all overlap. Every
copy says what its capture says, so every run gives the same answers at nearly the same time: the history index
holds identical answers from overlapping runs (ambiguous everywhere), and only links can tell the runs apart.

The load is sent as several instances of a service would send it: ``clients`` senders at once, each a program
whose batch processors put several runs' spans in one OTLP/HTTP protobuf request (up to ``spans_per_request``)
and their log records in another, log records first or spans first at random (OTel's log batch leaves after 1 s,
its span batch after 5 s: either may reach the collector first). A request refused for backpressure (503 or 429)
is sent again after its Retry-After, as OTLP exporters do. Deterministic for a seed.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from mast_otel import semconv as sc

CAPTURES = Path(__file__).resolve().parents[1] / "tests" / "data" / "captures" / "semantic_kernel"
LINKED = ("handoff", "group-chat")  # traces tied by span links
HISTORY_ONLY = "agent-group-chat"  # turns tied only by a shared history
PROTOBUF = "application/x-protobuf"


def _spans(request: ExportTraceServiceRequest) -> Iterator[Span]:
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            yield from ss.spans


def _records(request: ExportLogsServiceRequest) -> Iterator[LogRecord]:
    for rl in request.resource_logs:
        for sl in rl.scope_logs:
            yield from sl.log_records


def _ids_as_base64(item: Any) -> Any:
    """OTLP JSON (ids in hex) as protobuf's JSON mapping reads it (bytes in base64)."""
    if isinstance(item, list):
        return [_ids_as_base64(x) for x in item]
    if not isinstance(item, dict):
        return item
    out = {}
    for key, value in item.items():
        if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str):
            out[key] = base64.b64encode(bytes.fromhex(value)).decode()
        else:
            out[key] = _ids_as_base64(value)
    return out


@dataclass(frozen=True)
class Capture:
    """A capture's spans and log records as protobuf, and when its first span started."""

    name: str
    spans: ExportTraceServiceRequest
    logs: ExportLogsServiceRequest
    first_ns: int

    @classmethod
    def load(cls, name: str) -> Capture:
        data = json.loads((CAPTURES / f"{name}.json").read_text(encoding="utf-8"))
        spans = ParseDict(_ids_as_base64(data["otlp"]), ExportTraceServiceRequest())
        logs = ParseDict(_ids_as_base64(data["otlp_logs"]), ExportLogsServiceRequest())
        return cls(name, spans, logs, min(s.start_time_unix_nano for s in _spans(spans)))


@dataclass(frozen=True)
class Run:
    """One copy of a capture, as sent: its spans and log records and what identifies it."""

    index: int
    kind: str  # the capture's name
    spans: ExportTraceServiceRequest
    logs: ExportLogsServiceRequest
    traces: frozenset[str]  # hex trace ids of its spans
    span_keys: frozenset[tuple[str, str]]  # (trace id, span id), hex
    records: int  # log records

    @property
    def linked(self) -> bool:
        """Whether span links tie its traces (else only its shared history does)."""
        return self.kind in LINKED


def copy_run(capture: Capture, index: int, start_ns: int, salt: str = "") -> Run:
    """``capture`` as the ``index``-th run of a load: new trace and span ids (the same new id wherever an old one
    appears: a span, its parent, a link, a log record), every time moved so that its first span starts at
    ``start_ns``."""
    spans, logs = ExportTraceServiceRequest(), ExportLogsServiceRequest()
    spans.CopyFrom(capture.spans)
    logs.CopyFrom(capture.logs)
    shift = start_ns - capture.first_ns
    new: dict[bytes, bytes] = {}
    prefix = f"{salt}/{index}/".encode()

    def fresh(old: bytes) -> bytes:
        if not old:
            return old
        found = new.get(old)
        if found is None:
            found = new[old] = hashlib.blake2b(prefix + old, digest_size=len(old)).digest()
        return found

    for span in _spans(spans):
        span.trace_id, span.span_id, span.parent_span_id = (fresh(span.trace_id), fresh(span.span_id),
                                                            fresh(span.parent_span_id))  # fmt: skip
        for link in span.links:
            link.trace_id, link.span_id = fresh(link.trace_id), fresh(link.span_id)
        span.start_time_unix_nano += shift
        span.end_time_unix_nano += shift
        for event in span.events:
            event.time_unix_nano += shift
    records = 0
    for record in _records(logs):
        record.trace_id, record.span_id = fresh(record.trace_id), fresh(record.span_id)
        if record.time_unix_nano:
            record.time_unix_nano += shift
        if record.observed_time_unix_nano:
            record.observed_time_unix_nano += shift
        records += 1
    keys = frozenset((s.trace_id.hex(), s.span_id.hex()) for s in _spans(spans))
    return Run(index, capture.name, spans, logs, frozenset(t for t, _ in keys), keys, records)


def make_runs(linked: int, history_only: int = 0, *, spread_s: float = 0.05, seed: int = 45,
              start_ns: int | None = None) -> list[Run]:  # fmt: skip
    """``linked`` copies of the linked captures (handoff and group chat in turn) and ``history_only`` copies of
    AgentGroupChat, each starting at a seeded random point within ``spread_s`` of ``start_ns`` (default: now), in
    a seeded random order."""
    rng = random.Random(seed)
    base = time.time_ns() if start_ns is None else start_ns
    captures = {name: Capture.load(name) for name in (*LINKED, HISTORY_ONLY)}
    kinds = [LINKED[i % len(LINKED)] for i in range(linked)] + [HISTORY_ONLY] * history_only
    rng.shuffle(kinds)
    spread = int(spread_s * 1e9)
    return [copy_run(captures[kind], i, base + rng.randrange(spread + 1), salt=str(seed))
            for i, kind in enumerate(kinds)]  # fmt: skip


# --- requests -----------------------------------------------------------------------------------------------------
def spans_request(runs: Iterable[Run]) -> bytes:
    """One ExportTraceServiceRequest (protobuf) holding every span of ``runs``."""
    request = ExportTraceServiceRequest()
    for run in runs:
        request.resource_spans.extend(run.spans.resource_spans)
    return bytes(request.SerializeToString())


def logs_request(runs: Iterable[Run]) -> bytes:
    """One ExportLogsServiceRequest (protobuf) holding every log record of ``runs``."""
    request = ExportLogsServiceRequest()
    for run in runs:
        request.resource_logs.extend(run.logs.resource_logs)
    return bytes(request.SerializeToString())


@dataclass(frozen=True)
class Request:
    path: str  # /v1/traces or /v1/logs
    body: bytes
    runs: tuple[int, ...]  # the indexes of the runs it carries


def requests_of(runs: list[Run], clients: int, spans_per_request: int = 512, seed: int = 45) -> list[list[Request]]:
    """Each client's requests, in the order it sends them: client ``c`` runs every ``clients``-th run; its runs'
    spans go out in requests of at most ``spans_per_request`` spans (whole runs), each batch's log records in one
    request of their own, before or after its spans at random."""
    rng = random.Random(seed)
    out: list[list[Request]] = []
    for c in range(clients):
        sent: list[Request] = []
        batch: list[Run] = []
        size = 0
        for run in [*runs[c::clients], None]:
            n = len(run.span_keys) if run is not None else 0
            if batch and (run is None or size + n > spans_per_request):
                ids = tuple(r.index for r in batch)
                pair = [Request("/v1/traces", spans_request(batch), ids),
                        Request("/v1/logs", logs_request(batch), ids)]  # fmt: skip
                if rng.random() < 0.5:
                    pair.reverse()
                sent.extend(pair)
                batch, size = [], 0
            if run is not None:
                batch.append(run)
                size += n
        out.append(sent)
    return out


def probe_request() -> bytes:
    """A request another service sends meanwhile: one span, a whole conversation as mast-otel's recorder writes it
    (its root, with a conversation id), so it is acknowledged and judged on its own."""
    span = Span(trace_id=os.urandom(16), span_id=os.urandom(8), name="invoke_workflow probe",
                start_time_unix_nano=time.time_ns(), end_time_unix_nano=time.time_ns() + 1000)  # fmt: skip
    for key, value in ((sc.MAST_SPAN_TYPE, sc.SPAN_TYPE_CONVERSATION), (sc.GEN_AI_OPERATION_NAME,
                       sc.OP_INVOKE_WORKFLOW), (sc.GEN_AI_CONVERSATION_ID, os.urandom(8).hex())):  # fmt: skip
        span.attributes.add(key=key).value.string_value = value
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    rs.resource.attributes.add(key="service.name").value.string_value = "probe"
    ss = rs.scope_spans.add()
    ss.scope.name = sc.SCOPE_NAME
    ss.spans.append(span)
    return bytes(request.SerializeToString())


# --- sending ------------------------------------------------------------------------------------------------------
@dataclass
class Sent:
    """What sending measured: each attempt's (send time, latency, status), refusals retried."""

    attempts: list[tuple[float, float, int]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # requests never acknowledged, and why
    acked: list[Request] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, at: float, latency: float, status: int) -> None:
        with self._lock:
            self.attempts.append((at, latency, status))

    @property
    def latencies(self) -> list[float]:
        return [latency for _, latency, _ in self.attempts]

    @property
    def refused(self) -> int:
        return sum(1 for _, _, status in self.attempts if status in (429, 503))


def post(conn: http.client.HTTPConnection, path: str, body: bytes, timeout: float) -> tuple[int, float, float]:
    """POST ``body`` (protobuf); (status, latency in seconds, Retry-After or 0)."""
    conn.timeout = timeout
    started = time.perf_counter()
    conn.request("POST", path, body, {"Content-Type": PROTOBUF})
    response = conn.getresponse()
    response.read()
    latency = time.perf_counter() - started
    retry_after = float(response.getheader("Retry-After") or 0) if response.status in (429, 503) else 0.0
    return response.status, latency, retry_after


def send(port: int, per_client: list[list[Request]], *, timeout: float = 30.0, retries: int = 20,
         on_acked: Callable[[Request], None] | None = None) -> Sent:  # fmt: skip
    """Send each client's requests from a thread of its own (keep-alive connection), all clients at once; a
    refused request is retried after its Retry-After, up to ``retries`` times. Returns when every client is done."""
    sent = Sent()

    def client(requests: list[Request]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            for request in requests:
                error = "never sent"
                for _ in range(retries + 1):
                    at = time.perf_counter()
                    try:
                        status, latency, retry_after = post(conn, request.path, request.body, timeout)
                    except (OSError, http.client.HTTPException) as e:
                        sent.add(at, time.perf_counter() - at, 0)
                        conn.close()
                        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
                        error = f"{type(e).__name__}: {e}"
                        time.sleep(0.5)
                        continue
                    sent.add(at, latency, status)
                    if status == 200:
                        error = ""
                        with sent._lock:
                            sent.acked.append(request)
                        if on_acked is not None:
                            on_acked(request)
                        break
                    error = f"HTTP {status}"
                    if status not in (429, 503):
                        break
                    time.sleep(retry_after or 1.0)
                if error:
                    sent.failures.append(f"{request.path} of runs {request.runs[:3]}...: {error}")
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(r,), name=f"client-{i}") for i, r in enumerate(per_client)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sent


# --- what came out ------------------------------------------------------------------------------------------------
def verdicts_per_run(runs: list[Run], labelled: Iterable[tuple[str, str]]) -> dict[int, int]:
    """How many labelled spans (``(trace id, span id)`` of spans carrying ``mast.judge.status``) each run got."""
    run_of = {trace: run.index for run in runs for trace in run.traces}
    count = {run.index: 0 for run in runs}
    for trace, _ in labelled:
        if trace in run_of:
            count[run_of[trace]] += 1
    return count
