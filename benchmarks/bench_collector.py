"""Collector benchmark (not a test): durable ingest rate vs a bare receiver, memory per pending trace, label delay.

    .venv/bin/python benchmarks/bench_collector.py [--batches 200] [--quick]

1. Spans/s through the collector's gRPC receiver + ingest (decode, assemble, persist to SQLite WAL, commit before
   the ack) vs a bare decode-only gRPC receiver, same client, same batches of 512 spans, in the same run; the
   client sends sequentially (unary calls, raw bytes, no SDK overhead on the client side).
2. Memory held per 10,000 pending traces (Python heap by tracemalloc, and RSS), at 10k/20k/30k pending, and after
   all were released and exported (flat = back to the start).
3. Delay from a root span's end to its labelled export downstream, beyond the quiet period (real threads, real
   SDK exporter, the model-free signals judge, an in-process OTLP sink), idle: a few conversations.
4. The same delay under sustained load: a collector *process* (``mast-otel collector``, signals judge) fed
   ``--rate`` spans/s for ``--seconds`` by a paced gRPC client, exporting to an OTLP sink; p50/p95/max over every
   conversation, and the collector's peak RSS.
5. Peak RSS of a collector process under hostile load vs its ``memory_limit``: concurrent requests of the most
   amplifying kinds (empty spans, empty attributes, OTLP JSON of tiny objects) at ``max_request_bytes``.
6. Spans per collector CPU-second against the OpenTelemetry Collector, same load in the same run: ``--conversations``
   conversations of 8 spans in 512-span requests through (a) a ``mast-otel collector`` process (signals judge,
   labels attached, store on disk), (b) ``otelcol-mast-front`` (built by scripts/setup-go-tools.sh) with OTLP in,
   ``groupbytrace`` (1 s wait) and an OTLP exporter whose sending queue is on ``file_storage``, (c) the same with
   the queue in memory. Each exports to one counting OTLP sink; the figure is the spans the sink received divided by
   the collector process's CPU time (user + system, from /proc, startup excluded), and the wall rate from the first
   request to the last span received. mast-otel runs twice more, pinned to one core and on all cores (taskset), for
   the wall-clock gain of a second core: back to back, each round in the other order. (b) runs again at the end of
   the round, and each run's CPU ratio is against (b)'s two figures interpolated at the time it ran, so that a
   drift of the machine's speed through the round does not fall on one side of a ratio. ``--rounds`` (default 3)
   repeats all of it in turn and prints the median of each ratio: on a machine whose speed drifts, one round
   compares runs made minutes apart.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mast_otel import semconv as sc
from mast_otel.collector import CollectorConfig, CollectorService
from mast_otel.collector.exporter import SendResult

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
SPANS_PER_BATCH = 512
SPANS_PER_TRACE = 8
TEXT = "x" * 200


def _kv(key: str, value: Any) -> KeyValue:
    if isinstance(value, str):
        return KeyValue(key=key, value=AnyValue(string_value=value))
    return KeyValue(key=key, value=AnyValue(int_value=value))


def make_batch(n_spans: int = SPANS_PER_BATCH, spans_per_trace: int = SPANS_PER_TRACE) -> bytes:
    """One Export request: conversations of ``spans_per_trace`` recorder-like spans, 6 attributes each."""
    scope = ScopeSpans()
    scope.scope.name = sc.SCOPE_NAME
    now = time.time_ns()
    for _ in range(n_spans // spans_per_trace):
        trace_id, root = os.urandom(16), os.urandom(8)
        conv = os.urandom(16).hex()
        for j in range(spans_per_trace):
            is_root = j == spans_per_trace - 1
            span = Span(
                trace_id=trace_id, span_id=root if is_root else os.urandom(8), parent_span_id=b"" if is_root else root,
                name="invoke_workflow demo" if is_root else "message a -> b", start_time_unix_nano=now,
                end_time_unix_nano=now + 1000,
            )  # fmt: skip
            attrs = [
                _kv(sc.MAST_SPAN_TYPE, "conversation" if is_root else "message"),
                _kv(sc.GEN_AI_CONVERSATION_ID, conv),
                _kv(sc.MESSAGE_SENDER, "planner"),
                _kv(sc.MESSAGE_INDEX, j),
                _kv(sc.MESSAGE_CONTENT, TEXT),
                _kv(sc.GEN_AI_OPERATION_NAME, "invoke_workflow" if is_root else "chat"),
            ]
            span.attributes.extend(attrs)
            scope.spans.append(span)
    rs = ResourceSpans(resource=Resource(attributes=[_kv("service.name", "bench")]))
    rs.scope_spans.append(scope)
    return ExportTraceServiceRequest(resource_spans=[rs]).SerializeToString()


class BareReceiver:
    """The baseline: decode the request, count the spans, acknowledge."""

    def __init__(self) -> None:
        self.spans = 0
        self.server = grpc.server(ThreadPoolExecutor(4), options=[("grpc.max_receive_message_length", 64 << 20)])
        handler = grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.trace.v1.TraceService",
            {"Export": grpc.unary_unary_rpc_method_handler(self._export)},
        )
        self.server.add_generic_rpc_handlers((handler,))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def _export(self, raw: bytes, context: Any) -> bytes:
        request = ExportTraceServiceRequest.FromString(raw)
        self.spans += sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
        return b""


class NullSender:
    def send(self, payload: bytes, timeout: float) -> SendResult:
        return SendResult(True)

    def close(self) -> None:
        pass


def push(port: int, batches: list[bytes]) -> tuple[float, float]:
    """Send every batch sequentially: (spans per wall-clock second, spans per CPU second of this process).

    Client and server share the process, so CPU time counts both; the client's share is the same for every
    receiver, and CPU time is what other load on a shared machine does not distort.
    """
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", 64 << 20)]) as ch:
        call = ch.unary_unary(EXPORT)
        call(batches[0], timeout=30)  # connect and warm up (not counted)
        started, cpu = time.perf_counter(), time.process_time()
        for b in batches[1:]:
            call(b, timeout=30)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    n = (len(batches) - 1) * SPANS_PER_BATCH
    return n / elapsed, n / cpu


def config(tmp: Path, name: str, **kw: Any) -> CollectorConfig:
    values: dict[str, Any] = {
        "otlp_grpc": "127.0.0.1:0", "otlp_http": "off", "metrics": "off", "store": str(tmp / f"{name}.db"),
        "export_endpoint": "http://127.0.0.1:9", "quiet_period": 3600, "max_trace_age": 7200, "judge": "none",
        "max_pending_traces": 10_000_000, "max_pending_bytes": "64GiB", "store_reserve": "1MiB",
    }  # fmt: skip
    values.update(kw)
    return CollectorConfig(**values)


def bench_throughput(tmp: Path, n_batches: int) -> None:
    print(f"== 1. ingest rate, {n_batches} batches x {SPANS_PER_BATCH} spans ({SPANS_PER_TRACE} spans/trace)")
    batches = [make_batch() for _ in range(n_batches)]
    print(f"   batch size: {len(batches[0]) / 1024:.0f} KiB")
    bare = BareReceiver()
    rates: dict[str, list[tuple[float, float]]] = {"bare": [], "normal": [], "full": []}
    for rnd in range(3):  # interleaved rounds, so all see the same machine load; the best round counts
        rates["bare"].append(push(bare.port, batches))
        for sync in ("normal", "full"):
            service = CollectorService(config(tmp, f"tp-{sync}-{rnd}", store_sync=sync), sender=NullSender())
            service.start(pipeline=False)
            assert service.grpc is not None
            rates[sync].append(push(service.grpc.port, batches))
            assert service.assembler.held_spans == n_batches * SPANS_PER_BATCH
            service.stop(grace=0.2)
    bare.server.stop(0)
    wall = {k: max(r[0] for r in v) for k, v in rates.items()}
    cpu = {k: max(r[1] for r in v) for k, v in rates.items()}
    print(f"   bare decode-only receiver  : {wall['bare']:>9,.0f} spans/s wall, {cpu['bare']:>9,.0f} spans/CPU-s")
    for sync in ("normal", "full"):
        print(
            f"   durable (store_sync={sync:<6}): {wall[sync]:>9,.0f} spans/s wall, {cpu[sync]:>9,.0f} spans/CPU-s"
            f"  = {wall[sync] / wall['bare']:.2f} x bare (wall), {cpu[sync] / cpu['bare']:.2f} x bare (CPU)"
        )


def _rss_mib() -> float:
    """Current resident set size (not the peak)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def bench_memory(tmp: Path, step: int = 10_000) -> None:
    print(f"== 2. memory held per {step:,} pending traces ({SPANS_PER_TRACE} spans each)")
    service = CollectorService(config(tmp, "mem"), sender=NullSender())
    per_batch = SPANS_PER_BATCH // SPANS_PER_TRACE

    def feed(n_traces: int) -> None:
        for _ in range(n_traces // per_batch):
            b = make_batch()  # built on the fly: only the collector's memory stays
            service.ingestor.ingest(b, "grpc")

    def release_and_export() -> None:
        service.release_now()
        assert service.flush(120)

    def heap_mib() -> float:
        """The Python heap's growth since the start, after a full collection (garbage would blur the figure)."""
        gc.collect()
        return (tracemalloc.get_traced_memory()[0] - base_heap) / 2**20

    gc.collect()
    tracemalloc.start()
    base_heap = tracemalloc.get_traced_memory()[0]
    base_rss = _rss_mib()
    for k in (1, 2, 3):
        feed(step)
        heap = heap_mib()
        print(f"   {service.assembler.pending_traces:>6,} pending: Python heap +{heap:6.1f} MiB "
              f"({heap / k:.1f} MiB per {step:,}), RSS +{_rss_mib() - base_rss:.0f} MiB")  # fmt: skip
    release_and_export()
    print(f"   after release + export: {service.assembler.pending_traces} pending, "
          f"Python heap +{heap_mib():.1f} MiB, store {service.store.counts()}")  # fmt: skip
    for cycle in (1, 2, 3):  # flat: the same load again leaves the same memory behind
        feed(step)
        release_and_export()
        print(f"   cycle {cycle}: {step:,} more traces in, judged, exported: Python heap +{heap_mib():.1f} MiB, "
              f"RSS +{_rss_mib() - base_rss:.0f} MiB")  # fmt: skip
    tracemalloc.stop()
    service.stop(grace=0.2)


def bench_delay(tmp: Path, n: int = 40, quiet: float = 1.0) -> None:
    print(f"== 3. delay from root span end to labelled export, beyond quiet_period={quiet}s ({n} conversations)")
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    from mast_otel.recorder import Recorder
    from tests.collector.conftest import conversation, provider
    from tests.collector.sink import OtlpSink

    sink = OtlpSink().start()
    service = CollectorService(
        config(tmp, "delay", quiet_period=quiet, max_trace_age=60, judge="signals", export_endpoint=sink.grpc_endpoint)
    )
    service.start()
    assert service.grpc is not None
    tp = provider(OTLPSpanExporter(endpoint=f"127.0.0.1:{service.grpc.port}", insecure=True), "bench")
    rec = Recorder(tracer_provider=tp)
    for i in range(n):
        conversation(rec, f"c{i}")
        time.sleep(0.05)
    roots = sink.wait_for(
        lambda spans: sum(1 for s in spans if s.attributes.get(sc.JUDGE_STATUS)) >= n, timeout=60 + n * quiet
    )
    delays = sorted(s.arrived - s.end_ns / 1e9 - quiet for s in roots if s.attributes.get(sc.JUDGE_STATUS))
    q = statistics.quantiles(delays, n=20)
    print(f"   beyond the quiet period: p50 {statistics.median(delays) * 1000:.0f} ms, "
          f"p95 {q[18] * 1000:.0f} ms, max {delays[-1] * 1000:.0f} ms")  # fmt: skip
    tp.shutdown()
    service.stop(grace=0.2)
    sink.stop()


def _collector_process(tmp: Path, name: str, sink_endpoint: str, *extra: str) -> tuple[Any, int, int]:
    """``mast-otel collector`` as a subprocess on free ports: (process, gRPC port, HTTP port)."""
    import subprocess

    from tests.servers import free_port, wait_http

    grpc_port, http_port, metrics_port = free_port(), free_port(), free_port()
    cmd = [sys.executable, "-m", "mast_otel.cli", "collector", "--otlp-grpc", f"127.0.0.1:{grpc_port}",
           "--otlp-http", f"127.0.0.1:{http_port}", "--metrics", f"127.0.0.1:{metrics_port}",
           "--store", str(tmp / f"{name}.db"), "--export-endpoint", sink_endpoint, "--log-level", "warning",
           *extra]  # fmt: skip
    log = open(tmp / f"{name}.log", "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    wait_http(f"http://127.0.0.1:{metrics_port}/healthz", timeout=60, proc=proc)
    return proc, grpc_port, http_port


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _stop(proc: Any) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except Exception:
        proc.kill()
        proc.wait(5)


def bench_delay_under_load(tmp: Path, rate: int, seconds: float, quiet: float = 1.0) -> None:
    print(f"== 4. label delay under sustained load: {rate:,} spans/s for {seconds:g}s, quiet_period={quiet}s, "
          "collector process, signals judge")  # fmt: skip
    from tests.collector.sink import OtlpSink

    sink = OtlpSink().start()
    proc, grpc_port, _ = _collector_process(tmp, "load", sink.grpc_endpoint, "--quiet-period", str(quiet))
    tick = 0.1
    per_tick = max(SPANS_PER_TRACE, int(rate * tick) // SPANS_PER_TRACE * SPANS_PER_TRACE)
    sent = late = 0
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as ch:
        call = ch.unary_unary(EXPORT)
        started = time.monotonic()
        next_at = started
        while time.monotonic() - started < seconds:
            call(make_batch(per_tick), timeout=30)  # roots end now: their quiet period starts now
            sent += per_tick
            next_at += tick
            pause = next_at - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            else:
                late += 1
        achieved = sent / (time.monotonic() - started)
    n_roots = sent // SPANS_PER_TRACE
    roots = sink.wait_for(lambda spans: sum(1 for s in spans if s.attributes.get(sc.JUDGE_STATUS)) >= n_roots,
                          timeout=120 + seconds)  # fmt: skip
    delays = sorted(s.arrived - s.end_ns / 1e9 - quiet for s in roots if s.attributes.get(sc.JUDGE_STATUS))
    q = statistics.quantiles(delays, n=20)
    print(f"   sent {sent:,} spans at {achieved:,.0f} spans/s ({late} ticks behind schedule); {len(delays):,} "
          f"conversations labelled")  # fmt: skip
    print(f"   beyond the quiet period: p50 {statistics.median(delays) * 1000:.0f} ms, p95 {q[18] * 1000:.0f} ms, "
          f"max {delays[-1] * 1000:.0f} ms; collector peak RSS {_peak_rss_mib(proc.pid):.0f} MiB")  # fmt: skip
    print(f"   downstream Export calls: {sink.requests:,} ({len(sink.spans()) / max(1, sink.requests):.0f} spans each)")
    _stop(proc)
    sink.stop()


def bench_hostile_rss(tmp: Path, memory_limit_mib: int = 512, max_request_mib: int = 4, clients: int = 8) -> None:
    print(f"== 5. peak RSS under amplifying requests: {clients} concurrent clients x 3 kinds x "
          f"{max_request_mib} MiB, memory_limit={memory_limit_mib} MiB")  # fmt: skip
    import json as jsonlib
    import socket

    from mast_otel.collector.encoding import field
    from tests.collector.sink import OtlpSink

    sink = OtlpSink().start()
    size = max_request_mib * 2**20
    proc, grpc_port, http_port = _collector_process(
        tmp, "rss", sink.grpc_endpoint, "--memory-limit", f"{memory_limit_mib}MiB", "--max-request-bytes",
        f"{max_request_mib}MiB", "--max-request-spans", "10000000",
    )  # fmt: skip
    base = _peak_rss_mib(proc.pid)
    ids = field(1, os.urandom(16)) + field(2, os.urandom(8))
    empty_spans = field(1, field(2, b"\x12\x00" * (size // 2 - 64)))
    empty_attrs = field(1, field(2, field(2, ids + b"\x4a\x00" * (size // 2 - 64))))
    json_body = (b'{"resourceSpans":[' + b"{}," * (size // 3 - 10) + b"{}]}")
    codes: dict[str, int] = {}

    def grpc_send(payload: bytes) -> None:
        options = [("grpc.max_send_message_length", 64 << 20)]
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}", options=options) as ch:
            try:
                ch.unary_unary(EXPORT)(payload, timeout=60)
                key = "OK"
            except grpc.RpcError as err:
                key = err.code().name
        codes[key] = codes.get(key, 0) + 1

    def http_send(body: bytes) -> None:
        head = (f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()  # fmt: skip
        with socket.create_connection(("127.0.0.1", http_port), timeout=60) as s:
            try:
                s.sendall(head + body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # refused on its declared length and closed while the body was still going out
            try:
                reply = s.recv(64)
            except ConnectionResetError:
                reply = b""
        key = "HTTP " + reply.split(b" ")[1].decode() if reply.startswith(b"HTTP/") else "closed before an answer"
        codes[key] = codes.get(key, 0) + 1

    jobs = [(grpc_send, empty_spans), (grpc_send, empty_attrs), (http_send, json_body)] * clients
    with ThreadPoolExecutor(len(jobs)) as pool:
        list(pool.map(lambda job: job[0](job[1]), jobs))
    peak = _peak_rss_mib(proc.pid)
    print(f"   answers: {dict(sorted(codes.items()))} (refusals are memory_limit: retry later)")
    print(f"   peak RSS {peak:.0f} MiB = startup {base:.0f} MiB + {peak - base:.0f} MiB "
          f"(memory_limit {memory_limit_mib} MiB); {jsonlib.dumps(proc.poll() is None)} = still running")  # fmt: skip
    _stop(proc)
    sink.stop()


class CountingSink(BareReceiver):
    """The downstream of section 6: counts the spans it receives (decode only) and when the last one came."""

    def __init__(self) -> None:
        self.last = 0.0
        self._cond = threading.Condition()
        super().__init__()

    def _export(self, raw: bytes, context: Any) -> bytes:
        request = ExportTraceServiceRequest.FromString(raw)
        n = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
        with self._cond:
            self.spans += n
            self.last = time.perf_counter()
            self._cond.notify_all()
        return b""

    def wait(self, n: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.spans < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.5))
        return True

    def reset(self) -> None:
        with self._cond:
            self.spans, self.last = 0, 0.0


def _stat_seconds(pid: int) -> list[float]:
    """utime, stime, cutime, cstime of a process in seconds, from /proc (zeros once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return [0.0] * 4
    return [int(f) / os.sysconf("SC_CLK_TCK") for f in fields[11:15]]


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time so far of a process, its threads and its running child processes (a collector
    with ``--processes N`` is a front and N shards), plus what its exited children used."""
    total = sum(_stat_seconds(pid))
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        total += sum(_cpu_seconds(int(child)) for child in task.read_text().split())
    return total


def _own_cpu_seconds(pid: int) -> float:
    """User + system CPU time so far of one process and its threads, not its children."""
    return sum(_stat_seconds(pid)[:2])


_OTELCOL_CONFIG = """
extensions:
  file_storage: {{directory: "{dir}", create_directory: true}}
  health_check: {{endpoint: "127.0.0.1:{health}"}}
receivers:
  otlp: {{protocols: {{grpc: {{endpoint: "127.0.0.1:{port}", max_recv_msg_size_mib: 64}}}}}}
processors:
  groupbytrace: {{wait_duration: 1s, num_traces: 1000000}}
exporters:
  otlp_grpc:
    endpoint: "127.0.0.1:{sink}"
    tls: {{insecure: true}}
    sending_queue: {{enabled: true, {storage}queue_size: 100000}}
service:
  extensions: [{extensions}]
  telemetry: {{metrics: {{level: none}}, logs: {{level: warn}}}}
  pipelines:
    traces: {{receivers: [otlp], processors: [groupbytrace], exporters: [otlp_grpc]}}
"""


def _otelcol_process(tmp: Path, name: str, sink_port: int, durable: bool) -> tuple[Any, int]:
    """``otelcol-mast-front`` with groupbytrace and an OTLP exporter (queue on file_storage when ``durable``)."""
    import subprocess

    from tests.go_servers import go_tool
    from tests.servers import free_port, wait_http

    port, health = free_port(), free_port()
    name = "".join(c if c.isalnum() else "-" for c in name)
    (tmp / name).mkdir()
    text = _OTELCOL_CONFIG.format(
        dir=tmp / name, health=health, port=port, sink=sink_port, storage="storage: file_storage, " if durable else "",
        extensions="file_storage, health_check" if durable else "health_check",
    )  # fmt: skip
    (tmp / f"{name}.yaml").write_text(text)
    log = open(tmp / f"{name}.log", "wb")
    proc = subprocess.Popen([go_tool("otelcol-mast-front"), "--config", str(tmp / f"{name}.yaml")], stdout=log,
                            stderr=subprocess.STDOUT)  # fmt: skip
    try:
        wait_http(f"http://127.0.0.1:{health}/", timeout=60, proc=proc)
    except RuntimeError:
        print((tmp / f"{name}.log").read_text()[-2000:])
        raise
    return proc, port


def _run_load(proc: Any, port: int, sink: CountingSink, batches: list[bytes], clients: int) -> tuple[float, float]:
    """Send every batch (``clients`` concurrent senders), wait for the sink to have them all: (spans per collector
    CPU-second, spans per wall second)."""
    total = len(batches) * SPANS_PER_BATCH
    sink.reset()
    time.sleep(0.5)  # startup work done
    cpu0, top0 = _cpu_seconds(proc.pid), _own_cpu_seconds(proc.pid)
    started, own0 = time.perf_counter(), time.process_time()
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", 64 << 20)]) as ch:
        call = ch.unary_unary(EXPORT)
        with ThreadPoolExecutor(clients) as pool:
            list(pool.map(lambda b: call(b, timeout=120), batches))
    if not sink.wait(total, timeout=600):
        raise RuntimeError(f"only {sink.spans} of {total} spans reached the sink")
    wall = sink.last - started
    cpu, top = _cpu_seconds(proc.pid) - cpu0, _own_cpu_seconds(proc.pid) - top0
    front = f"; the front process: {top / cpu:.0%} of the collector's CPU" if top < cpu * 0.98 else ""  # has shards
    # the senders and the sink share the machine's cores with the collector: what they took is not the collector's
    print(f"   (client and sink: {(time.process_time() - own0) / wall:.2f} cores{front})", flush=True)
    return total / cpu, total / wall


@dataclass
class _Round:
    """One round of section 6: each collector's ``(spans per CPU-second, spans per wall second)`` and the middle of
    its run (``time.monotonic``), which places it between the round's two otelcol durable runs."""

    results: dict[str, tuple[float, float]] = field(default_factory=dict)
    when: dict[str, float] = field(default_factory=dict)

    def baseline(self, name: str) -> float:
        """otelcol durable's spans per CPU-second at the time ``name`` ran: the round's first and last durable runs,
        interpolated in time. This machine's speed drifts by up to 2x within a quarter of an hour, and a round runs
        for minutes: a linear drift through the round cancels this way, whichever run it falls on."""
        t0, t1 = self.when[_DURABLE], self.when[_DURABLE_AGAIN]
        b0, b1 = self.results[_DURABLE][0], self.results[_DURABLE_AGAIN][0]
        return b0 + (b1 - b0) * (self.when[name] - t0) / (t1 - t0)


def _vs_otelcol_round(tmp: Path, tag: str, batches: list[bytes], sink: CountingSink, clients: int,
                      cores: set[int], order: int) -> _Round:  # fmt: skip
    """One round of section 6: every collector in turn, between two runs of otelcol durable; ``order`` 0 runs
    mast-otel on all cores before the one-core run, 1 after it."""
    endpoint = f"http://127.0.0.1:{sink.port}"
    round_ = _Round()

    def timed(name: str, proc: Any, port: int) -> None:
        started = time.monotonic()
        round_.results[name] = _run_load(proc, port, sink, batches, clients)
        round_.when[name] = (started + time.monotonic()) / 2
        cpu, wall = round_.results[name]
        print(f"   {name:<46}: {cpu:>9,.0f} spans/CPU-s, {wall:>9,.0f} spans/s wall (load {os.getloadavg()[0]:.1f})",
              flush=True)  # fmt: skip

    def mast(name: str, on: set[int], *extra: str) -> None:
        slug = "".join(c if c.isalnum() else "-" for c in name) + tag
        mine = os.sched_getaffinity(0)
        os.sched_setaffinity(0, on)  # this thread's: the collector and its shards inherit it
        try:
            proc, port, _ = _collector_process(tmp, slug, endpoint, "--quiet-period", "1", "--store-reserve", "1MiB",
                                               *extra)  # fmt: skip
        finally:
            os.sched_setaffinity(0, mine)
        try:
            timed(name, proc, port)
        finally:
            _stop(proc)

    def otelcol(name: str, durable: bool) -> None:
        proc, port = _otelcol_process(tmp, name + tag, sink.port, durable)
        try:
            timed(name, proc, port)
        finally:
            _stop(proc)

    otelcol(_DURABLE, True)
    mast(_ONE_PROCESS, cores)
    otelcol("otelcol groupbytrace, memory queue", False)
    # The two runs of the wall-clock ratio run back to back, in turn first: the machine drifts less between them
    # than over a whole round, and a drift that lasts the round favours neither.
    pair = [(_all_cores(len(cores)), cores), (_ONE_CORE, {min(cores)})]
    for name, on in pair if order == 0 else reversed(pair):
        mast(name, on, "--processes", "auto")
    otelcol(_DURABLE_AGAIN, True)
    return round_


# The names a round's results are kept under, and read back by the summary.
_DURABLE = "otelcol groupbytrace + file_storage queue"
_DURABLE_AGAIN = "otelcol groupbytrace + file_storage queue again"
_ONE_PROCESS = "mast-otel, 1 process"
_ONE_CORE = "mast-otel, 1 core (processes auto)"


def _all_cores(n: int) -> str:
    return f"mast-otel, {n} cores (processes auto)"


def bench_vs_otelcol(tmp: Path, conversations: int, clients: int = 2, rounds: int = 1) -> None:
    n_batches = conversations * SPANS_PER_TRACE // SPANS_PER_BATCH
    print(f"== 6. spans per collector CPU-second vs the OpenTelemetry Collector: {n_batches * SPANS_PER_BATCH:,} "
          f"spans ({SPANS_PER_TRACE}/conversation, {SPANS_PER_BATCH}/request, {clients} senders), {rounds} "
          f"round(s), load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    batches = [make_batch() for _ in range(n_batches)]
    sink = CountingSink()
    cores = os.sched_getaffinity(0)
    n = len(cores)
    two, one = _all_cores(n), _ONE_CORE
    ratios: list[tuple[float, ...]] = []  # per round: 1 process, n cores, 1 core (CPU vs otelcol); wall n / 1
    for i in range(rounds):
        if rounds > 1:
            print(f"   -- round {i + 1} of {rounds}")
        round_ = _vs_otelcol_round(tmp, f"-{i}", batches, sink, clients, cores, order=i % 2)
        results = round_.results
        first, last = results[_DURABLE][0], results[_DURABLE_AGAIN][0]
        print(f"   summary (otelcol durable {first:,.0f} then {last:,.0f} spans/CPU-s, {last / first - 1:+.0%}: each "
              "run is set against the two interpolated at its time):")  # fmt: skip
        for name, (cpu, wall) in results.items():
            print(f"   {name:<46}: {cpu:>9,.0f} spans/CPU-s ({cpu / round_.baseline(name):.2f} x otelcol durable), "
                  f"{wall:>9,.0f} spans/s wall")  # fmt: skip
        print(f"   mast-otel wall throughput, {n} cores / 1 core: {results[two][1] / results[one][1]:.2f}x; "
              f"load average now {os.getloadavg()[0]:.2f}")  # fmt: skip
        cpu_ratios = [results[k][0] / round_.baseline(k) for k in (_ONE_PROCESS, two, one)]
        ratios.append((*cpu_ratios, results[two][1] / results[one][1]))
    if rounds > 1:
        # This machine's speed drifts by up to 2x within a quarter of an hour, so one round compares runs made
        # minutes apart: the median over the rounds is the figure to read, with how many rounds met each threshold.
        print(f"   over {rounds} rounds: median (range; rounds at or above the threshold)")
        labels = (("1 process / otelcol durable (CPU)", 1.0), (f"{n} cores / otelcol durable (CPU)", 1.0),
                  ("1 core / otelcol durable (CPU)", 1.0), (f"wall, {n} cores / 1 core", 1.6))  # fmt: skip
        for k, (label, threshold) in enumerate(labels):
            values = [r[k] for r in ratios]
            print(f"   {label:<46}: {statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f}; "
                  f"{sum(v >= threshold for v in values)} of {rounds} >= {threshold})")
    sink.server.stop(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="fewer batches and traces (a smoke run)")
    parser.add_argument("--rate", type=int, default=6000, help="spans/s for the sustained-load delay (4.)")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the sustained load lasts (4.)")
    parser.add_argument("--conversations", type=int, default=25_000, help="conversations of 8 spans (6.)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of section 6, each running every collector")
    parser.add_argument("--only", type=int, nargs="*", help="run only these sections (1-6)")
    args = parser.parse_args()
    only = set(args.only or range(1, 7))
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if 1 in only:
            bench_throughput(tmp, 30 if args.quick else args.batches)
        if 2 in only:
            bench_memory(tmp, 2_000 if args.quick else 10_000)
        if 3 in only:
            bench_delay(tmp, 10 if args.quick else 40)
        if 4 in only:
            bench_delay_under_load(tmp, args.rate, 10 if args.quick else args.seconds)
        if 5 in only:
            bench_hostile_rss(tmp)
        if 6 in only:
            bench_vs_otelcol(tmp, 2_500 if args.quick else args.conversations, rounds=1 if args.quick else args.rounds)


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    main()
