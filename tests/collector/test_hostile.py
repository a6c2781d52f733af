"""Hostile clients against a real collector process: every class of bad request gets the right answer (permanent
or retryable), the process stays up, its peak RSS stays within ``memory_limit`` plus a fixed overhead, and good
traffic sent afterwards arrives exact and labelled.

Bounded: one collector for the module, every loop capped in count and time, 127.0.0.1 and free ports only.
"""

from __future__ import annotations

import gzip
import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.sdk.trace.export import SpanExportResult

from mast_otel import semconv as sc
from mast_otel.collector.encoding import field
from tests.collector.conftest import metric, recorded, wait_until
from tests.collector.sink import OtlpSink
from tests.collector.test_durability import CollectorProcess
from tests.collector.test_hardening import _group_scope, request_of

MiB = 1024 * 1024
MEMORY_LIMIT = 384 * MiB
MAX_REQUEST = 4 * MiB
TIMEOUT = 2.0
MAX_CONNECTIONS = 48
ADMISSION_WAIT = 0.2  # how long a connection over the cap waits for a slot: far below TIMEOUT, when slots free
# What the process may hold beyond memory_limit: the interpreter and libraries' growth after startup, gRPC's
# buffers (receiver threads decoding x 2 x max_request_bytes at most; a waiting call holds its stream's flow-control
# window, not its body), uvicorn's per-connection buffers.
OVERHEAD = 256 * MiB
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


@dataclass
class Hostile:
    proc: CollectorProcess
    sink: OtlpSink
    baseline_rss: int

    @property
    def http(self) -> tuple[str, int]:
        return "127.0.0.1", self.proc.http_port

    def grpc(self, payload: bytes) -> tuple[grpc.StatusCode, dict[str, bytes], bytes]:
        with grpc.insecure_channel(f"127.0.0.1:{self.proc.grpc_port}") as channel:
            try:
                response = channel.unary_unary(EXPORT)(payload, timeout=30)
                return grpc.StatusCode.OK, {}, bytes(response)
            except grpc.RpcError as err:
                return err.code(), dict(err.trailing_metadata() or ()), b""

    def refused(self, protocol: str, reason: str) -> float:
        return metric(self.proc.metrics(), "mast_collector_requests_refused_total", protocol=protocol, reason=reason)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    tmp = tmp_path_factory.mktemp("hostile")
    sink = OtlpSink().start()
    # A judge that answers ok, so the good traffic afterwards comes back labelled by the collector, not the client.
    proc = CollectorProcess(tmp, sink, judge="tests.collector.counting_judge:factory",
                            env={"MAST_TEST_JUDGE_LOG": str(tmp / "judged.log"), "MAST_TEST_JUDGE_SECONDS": "0"},
                            extra=[
        "--max-request-bytes", str(MAX_REQUEST), "--memory-limit", str(MEMORY_LIMIT),
        "--receiver-timeout", str(TIMEOUT), "--receiver-max-connections", str(MAX_CONNECTIONS),
        "--max-request-spans", "100000", "--receiver-threads", "4",
        "--receiver-admission-wait", str(ADMISSION_WAIT),
    ])  # fmt: skip
    proc.start()
    try:
        yield Hostile(proc, sink, proc.peak_rss())
    finally:
        proc.stop()
        sink.stop()


def http_exchange(address: tuple[str, int], head: bytes, body: bytes = b"", timeout: float = 15.0) -> bytes:
    """Send raw bytes, return the response's status line (b"" if the server closed without one)."""
    with socket.create_connection(address, timeout=timeout) as s:
        try:
            s.sendall(head + body)
        except OSError:
            pass  # the server may answer and close before the body is in
        data = b""
        try:
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
        return data.split(b"\r\n", 1)[0]


def head(length: str | None = None, *, media: str = "application/x-protobuf", extra: str = "") -> bytes:
    lines = ["POST /v1/traces HTTP/1.1", "Host: collector", f"Content-Type: {media}"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n" + extra + "\r\n").encode()


def test_negative_or_malformed_content_length_is_400(hostile: Hostile) -> None:
    for length in ("-1", "0x10", "12 13"):
        status = http_exchange(hostile.http, head(length), b"\x0a\x00" * 4096)
        assert status.startswith(b"HTTP/1.1 400"), (length, status)
    assert hostile.refused("http", "malformed") >= 3


def test_declared_length_over_the_limit_is_413_before_the_body(hostile: Hostile) -> None:
    started = time.monotonic()
    status = http_exchange(hostile.http, head(str(1 << 40)))  # no body sent at all
    assert status.startswith(b"HTTP/1.1 413") and time.monotonic() - started < TIMEOUT


def test_chunked_stream_past_the_limit_is_413_while_reading(hostile: Hostile) -> None:
    chunk = b"\x0a\x00" * 32768
    sent = 0
    with socket.create_connection(hostile.http, timeout=15) as s:
        s.sendall(head(extra="Transfer-Encoding: chunked\r\n"))
        response = b""
        while sent < 64 * MiB and not response:
            try:
                s.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            except OSError:
                break
            sent += len(chunk)
            if select.select([s], [], [], 0)[0]:
                response = s.recv(4096)
        response = response or s.recv(4096)
    assert response.startswith(b"HTTP/1.1 413")
    assert sent <= MAX_REQUEST + 8 * MiB  # refused as the limit passed, not after the client was done


def test_gzip_bomb_is_413(hostile: Hostile) -> None:
    bomb = gzip.compress(bytes(64 * MiB), compresslevel=9)  # ~64 KiB on the wire, 16x the limit inflated
    status = http_exchange(hostile.http, head(str(len(bomb)), extra="Content-Encoding: gzip\r\n"), bomb)
    assert status.startswith(b"HTTP/1.1 413")


def test_deep_json_is_400_not_retryable(hostile: Hostile) -> None:
    body = b'{"resourceSpans": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    status = http_exchange(hostile.http, head(str(len(body)), media="application/json"), body)
    assert status.startswith(b"HTTP/1.1 400")


def test_empty_element_floods_are_cheap_and_permanent(hostile: Hostile) -> None:
    for flood in (request_of(b"\x12\x00" * (MAX_REQUEST // 2 - 64)), b"\x0a\x00" * (MAX_REQUEST // 2)):
        started = time.monotonic()
        code, trailers, _ = hostile.grpc(flood)
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "google.rpc.retryinfo-bin" not in trailers
        assert time.monotonic() - started < 5
    code, _, raw = hostile.grpc(request_of(b"\x12\x00" * 90_000))  # under max_request_spans: per-span refusal
    assert code == grpc.StatusCode.OK
    assert ExportTraceServiceResponse.FromString(raw).partial_success.rejected_spans == 90_000


def test_group_fields_valid_are_stored_invalid_are_permanent_errors(hostile: Hostile) -> None:
    assert hostile.grpc(request_of(_group_scope()))[0] == grpc.StatusCode.OK  # an unknown field: kept, released
    code, _, _ = hostile.grpc(request_of(_group_scope(end=6)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    body = request_of(_group_scope(end=6))
    assert http_exchange(hostile.http, head(str(len(body))), body).startswith(b"HTTP/1.1 400")


def test_memory_limit_refuses_with_retry_advice(hostile: Hostile) -> None:
    """Big JSON bodies (slow to decode) at once: at most one fits in the limit, the others are told to retry."""
    attrs = [{"key": f"k{i}", "value": {"intValue": str(i)}} for i in range(60_000)]
    span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "big", "attributes": attrs}
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
    assert MAX_REQUEST // 2 < len(body) < MAX_REQUEST
    statuses: list[bytes] = []
    barrier = threading.Barrier(6)

    def post() -> None:
        barrier.wait()
        statuses.append(http_exchange(hostile.http, head(str(len(body)), media="application/json"), body))

    threads = [threading.Thread(target=post) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(s.startswith((b"HTTP/1.1 200", b"HTTP/1.1 503")) for s in statuses), statuses
    refused = sum(s.startswith(b"HTTP/1.1 503") for s in statuses)
    assert refused >= 1 and hostile.refused("http", "memory_limit") == refused


def _threads(proc: CollectorProcess) -> int:
    assert proc.proc is not None
    status = Path(f"/proc/{proc.proc.pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:")))


def test_slow_clients_hold_no_thread_and_are_cut_off(hostile: Hostile) -> None:
    before = _threads(hostile.proc)
    slow = []
    for _ in range(MAX_CONNECTIONS + 12):
        s = socket.create_connection(hostile.http, timeout=10)
        s.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")  # headers never finished
        slow.append(s)
    time.sleep(0.5)
    assert _threads(hostile.proc) < before + 10  # the old server held one thread per connection (60 here)
    wait_until(lambda: hostile.refused("http", "connection_limit") >= 12, 10, "the 12 over the cap given up")
    # A whole request over the cap, after waiting for a slot, is told to retry later (a reset is not retried by
    # every OTLP exporter).
    busy = http_exchange(hostile.http, head("4"), b"\x0a\x00\x0a\x00")
    assert busy == b"HTTP/1.1 503 Service Unavailable"
    assert hostile.refused("http", "connection_limit") >= 13
    time.sleep(TIMEOUT + 1.0)
    closed = answered = 0
    for s in slow:
        try:
            data = s.recv(1024)
        except OSError:
            data = b""
        if data.startswith(b"HTTP/1.1 503"):  # over the cap: answered after the wait, retry after the delay
            answered += 1
            assert b"\r\nretry-after: 1\r\n" in data
        else:
            closed += data == b""
        s.close()
    assert answered == 12
    assert closed + answered == len(slow)  # every one cut off or answered, none left holding a slot
    with socket.create_connection(hostile.http, timeout=10) as no_body:
        started = time.monotonic()
        no_body.sendall(head("1000"))  # headers, then no body: 408 after the timeout
        assert no_body.recv(1024).startswith(b"HTTP/1.1 408")
        assert TIMEOUT - 0.5 < time.monotonic() - started < TIMEOUT + 2


def test_clients_that_hang_up_leave_no_traceback(hostile: Hostile) -> None:
    body = request_of(b"\x12\x00" * 1000)
    for _ in range(50):
        with socket.create_connection(hostile.http, timeout=5) as s:
            s.sendall(head(str(len(body))) + body[: len(body) // 2])
    time.sleep(0.5)
    text = hostile.proc.log.read_text(errors="replace")
    assert "Traceback" not in text and "BrokenPipe" not in text


def _forged_request(n: int) -> tuple[bytes, set[tuple[str, str]]]:
    spans = recorded(n, service="forged")
    request = encode_spans(spans)
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for s in ss.spans:
                s.attributes.extend([
                    KeyValue(key=sc.FAILED, value=AnyValue(bool_value=False)),
                    KeyValue(key=sc.fm_attribute("1.1"), value=AnyValue(bool_value=True)),
                ])  # fmt: skip
    return bytes(request.SerializeToString()), {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}")
                                                 for s in spans}  # fmt: skip


def test_after_the_attack_good_traffic_arrives_exact_and_labelled(hostile: Hostile) -> None:
    assert hostile.proc.alive()
    by_grpc, by_http = recorded(10, service="good-grpc"), recorded(10, service="good-http")
    grpc_exporter = GrpcExporter(endpoint=f"127.0.0.1:{hostile.proc.grpc_port}", insecure=True, timeout=30)
    http_exporter = HttpExporter(endpoint=f"http://127.0.0.1:{hostile.proc.http_port}/v1/traces", timeout=30)
    assert grpc_exporter.export(by_grpc) == SpanExportResult.SUCCESS
    assert http_exporter.export(by_http) == SpanExportResult.SUCCESS
    grpc_exporter.shutdown()
    http_exporter.shutdown()
    forged, forged_keys = _forged_request(5)
    assert hostile.grpc(forged)[0] == grpc.StatusCode.OK
    want = {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in [*by_grpc, *by_http]} | forged_keys
    traces = {t for t, _ in want}
    got = hostile.sink.wait_for(lambda spans: want <= {s.key for s in spans}, timeout=60)
    ours = [s for s in got if s.trace_id in traces]
    assert {s.key for s in ours} == want and len(ours) == len(want)  # exact: nothing lost, nothing twice
    roots = [s for s in ours if s.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_WORKFLOW]
    assert len(roots) == 25 and all(r.attributes[sc.JUDGE_STATUS] == sc.JUDGE_OK for r in roots)
    for r in roots:  # the client's mast.failed=false / mast.fm.1_1 are gone; what is left is the collector's
        assert r.attributes[sc.FAILED] == bool(r.attributes[sc.FAILURE_MODES])
        assert (sc.fm_attribute("1.1") in r.attributes) == ("1.1" in r.attributes[sc.FAILURE_MODES])
    assert hostile.proc.alive()
    peak = hostile.proc.peak_rss()
    print(f"\npeak RSS {peak / MiB:.0f} MiB (baseline {hostile.baseline_rss / MiB:.0f} MiB, memory_limit "
          f"{MEMORY_LIMIT / MiB:.0f} MiB)")  # fmt: skip
    assert peak <= hostile.baseline_rss + MEMORY_LIMIT + OVERHEAD
    assert "Traceback" not in hostile.proc.log.read_text(errors="replace")
    assert field(1, b"") == b"\x0a\x00"
