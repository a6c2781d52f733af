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
6. Spans per collector CPU-second against the OpenTelemetry Collector as its users deploy it, same load in the
   same run. otelcol (``otelcol-mast-front``, built by scripts/setup-go-tools.sh): OTLP in, ``groupbytrace`` (1 s
   wait), ``batch`` (defaults), and an OTLP exporter whose sending queue is on ``file_storage``. mast-otel: a
   ``mast-otel collector`` process (signals judge, labels attached, store on disk, quiet period 1 s), once as one
   process and once with ``--processes auto``. The load is seeded (``--seed``) and mixed: ``--spans`` spans
   (default 100,000) in conversations of 2-200 spans (agent turns, messages, tool calls, handoffs, a root), 4-20
   attributes and 0-4 KiB of text per span, four conversations open at a time, 512-span requests from two senders.
   Each collector exports to one counting OTLP sink; the figure is the spans delivered divided by the collector's CPU
   time (user + system of it and its child processes, from /proc, startup excluded) read when the last span
   arrives, and the wall rate from the first request to the last span delivered. A round runs otelcol, the two
   mast-otel runs back to back (in turn first), otelcol again; each mast-otel run is set against otelcol's two
   figures interpolated at its time, so that a drift of the machine's speed through the round falls on neither side.
   ``--rounds`` (default 3) repeats it and prints the median of each ratio. ``--conversation-spans N`` sends,
   in place of the mixed load, conversations of N spans each as sections 1-4 make them (6 attributes, 200-byte
   messages; 8 spans: the load where the cost per conversation dominates).
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import random
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
from mast_otel.collector.release.exporter import SendResult

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


# --- 6. against the OpenTelemetry Collector as deployed ------------------------------------------------------------

LOAD_SEED = 20261128
_BASE_NS = 1_795_000_000 * 10**9  # a fixed start time: the same seed gives the same bytes on every run
_AGENTS = ("planner", "coder", "reviewer", "tester", "researcher", "writer")
_TOOLS = ("run_tests", "read_file", "search_code", "web_search", "write_file", "shell")
_MODELS = ("gpt-4o-mini", "claude-sonnet-4", "gemini-2.5-flash", "llama-3.1-70b")
# Attributes that instrumented LLM applications put on spans beside mast-otel's own, drawn to fill each span up
# to its attribute count.
_EXTRA_KEYS = (
    "gen_ai.request.model", "gen_ai.provider.name", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
    "gen_ai.response.id", "gen_ai.response.model", "gen_ai.request.temperature", "gen_ai.request.max_tokens",
    "server.address", "server.port", "gen_ai.response.finish_reasons", "app.user.id", "app.tenant", "app.request.id",
    "thread.name", "code.function.name", "deployment.environment.name", "gen_ai.request.top_p",
)  # fmt: skip


@dataclass
class MixedLoad:
    """Section 6's load: Export requests and what they hold."""

    requests: list[bytes]
    spans: int
    traces: int
    trace_sizes: list[int]
    attrs_per_span: list[int]
    text_bytes: int
    wire_bytes: int
    kinds: dict[str, int]

    def describe(self) -> str:
        q = statistics.quantiles(self.trace_sizes, n=10)
        a = self.attrs_per_span
        kinds = ", ".join(f"{k} {v / self.spans:.0%}" for k, v in sorted(self.kinds.items(), key=lambda kv: -kv[1]))
        return (f"{self.spans:,} spans in {self.traces:,} traces (spans per trace: min {min(self.trace_sizes)}, "
                f"p10 {q[0]:.0f}, median {statistics.median(self.trace_sizes):.0f}, p90 {q[8]:.0f}, max "
                f"{max(self.trace_sizes)}); attributes per span {min(a)}-{max(a)} (mean {statistics.mean(a):.1f}); "
                f"text {self.text_bytes / self.spans:,.0f} bytes per span on average; {len(self.requests):,} requests, "
                f"{self.wire_bytes / 2**20:,.0f} MiB on the wire; span kinds: {kinds}")  # fmt: skip


class _TraceMaker:
    """Seeded generator of mast-otel-shaped conversations: a root, agent turns holding messages and tool calls,
    handoffs between turns. Every span carries 4-20 attributes and 0-4 KiB of text (4 KiB x u^2, u uniform: most
    short, a few long, 1.4 KiB on average) in the attribute a recorder puts it in."""

    def __init__(self, seed: int) -> None:
        self.rng = r = random.Random(seed)
        # Prose-like text: 5,000 made-up words drawn with Zipf's law (the frequency of the k-th word ~ 1/k, as in
        # natural language), so that two messages share their common words but not their vocabulary. (Text from a
        # few dozen words makes every pair of messages look alike to the signals judge's near-duplicate check, a
        # pairwise diff that then dominates its cost: no conversation reads like that.)
        words = ["".join(r.choices("etaoinshrdlucmfwypvbgkjqxz", k=r.randint(2, 9))) for _ in range(5000)]
        self.corpus = " ".join(r.choices(words, weights=[1 / k for k in range(1, 5001)], k=250_000))
        self.attr_counts: list[int] = []
        self.text_bytes = 0
        self.kinds: dict[str, int] = {}

    def text(self) -> str:
        n = int(4096 * self.rng.random() ** 2)
        at = self.rng.randrange(len(self.corpus) - n)
        self.text_bytes += n
        return self.corpus[at : at + n]

    def _extra(self, key: str) -> Any:
        r = self.rng
        if key.endswith(("tokens", ".port")):
            return r.randrange(1, 8000)
        if key.endswith(("temperature", "top_p")):
            return round(r.random(), 2)
        if key.endswith("finish_reasons"):
            return ["stop"]
        if key.endswith(("model", "provider.name")):
            return r.choice(_MODELS)
        return r.randbytes(8).hex()

    def span(self, trace_id: bytes, parent: bytes, kind: str, name: str, start: int, attrs: dict[str, Any]) -> Span:
        span = Span(trace_id=trace_id, span_id=self.rng.randbytes(8), parent_span_id=parent, name=name,
                    kind=Span.SPAN_KIND_INTERNAL, start_time_unix_nano=start,
                    end_time_unix_nano=start + self.rng.randrange(1_000_000, 2_000_000_000))  # fmt: skip
        want = self.rng.randint(4, 20)
        for key in self.rng.sample(_EXTRA_KEYS, max(0, want - len(attrs))):
            attrs[key] = self._extra(key)
        for key, value in attrs.items():
            span.attributes.append(_any_kv(key, value))
        self.attr_counts.append(len(attrs))
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        return span

    def trace(self, n: int, start: int) -> list[Span]:
        """``n`` spans (n >= 2) of one conversation, in the order an SDK's batch processor exports them (as each
        ends: children before their parents, the root last)."""
        r, tid, conv = self.rng, self.rng.randbytes(16), self.rng.randbytes(16).hex()
        root_id = r.randbytes(8)
        out: list[Span] = []
        left, t, index, agent = n - 1, start, 0, r.choice(_AGENTS)
        agents = {agent}
        while left > 0:
            attrs: dict[str, Any] = {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
                                     sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_AGENT_TURN, sc.GEN_AI_AGENT_NAME: agent,
                                     sc.GEN_AI_CONVERSATION_ID: conv}  # fmt: skip
            turn = self.span(tid, root_id, "agent_turn", sc.agent_span_name(agent), t, attrs)
            left -= 1
            for _ in range(min(left, r.randint(0, 6))):
                t += 1_000_000
                if r.random() < 0.35:
                    tool = r.choice(_TOOLS)
                    attrs = {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_TOOL_CALL,
                             sc.GEN_AI_CONVERSATION_ID: conv, sc.GEN_AI_TOOL_NAME: tool,
                             sc.GEN_AI_TOOL_TYPE: "function", sc.GEN_AI_TOOL_CALL_ID: r.randbytes(6).hex(),
                             sc.GEN_AI_TOOL_CALL_RESULT: self.text()}  # fmt: skip
                    out.append(self.span(tid, turn.span_id, "tool_call", sc.tool_span_name(tool), t, attrs))
                else:
                    to = r.choice(_AGENTS)
                    attrs = {sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_MESSAGE, sc.GEN_AI_CONVERSATION_ID: conv,
                             sc.MESSAGE_SENDER: agent, sc.MESSAGE_RECIPIENTS: [to], sc.MESSAGE_INDEX: index,
                             sc.MESSAGE_KIND: sc.KIND_MESSAGE, sc.MESSAGE_CONTENT: self.text()}  # fmt: skip
                    out.append(self.span(tid, turn.span_id, "message", sc.message_span_name(agent, to), t, attrs))
                    index += 1
                left -= 1
            out.append(turn)  # a turn ends after what it holds
            if left > 0 and r.random() < 0.3:
                nxt = r.choice(_AGENTS)
                t += 1_000_000
                attrs = {sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_HANDOFF, sc.GEN_AI_CONVERSATION_ID: conv,
                         sc.HANDOFF_FROM: agent, sc.HANDOFF_TO: nxt,
                         sc.HANDOFF_REASON: sc.HANDOFF_LLM_SELECTION}  # fmt: skip
                out.append(self.span(tid, root_id, "handoff", sc.handoff_span_name(agent, nxt), t, attrs))
                left -= 1
                agent = nxt
                agents.add(agent)
            t += 1_000_000
        root = self.span(tid, b"", "conversation", sc.workflow_span_name("triage"), start, {
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_WORKFLOW, sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_CONVERSATION,
            sc.GEN_AI_CONVERSATION_ID: conv, sc.GEN_AI_WORKFLOW_NAME: "triage", sc.MAST_FRAMEWORK: "custom",
            sc.TERMINATION_REASON: sc.TERMINATION_COMPLETED, sc.CONVERSATION_ROUNDS: index,
            sc.CONVERSATION_AGENTS: sorted(agents), sc.CONVERSATION_TASK: self.text()})  # fmt: skip
        root.span_id = root_id
        out.append(root)
        return out


def _any_kv(key: str, value: Any) -> KeyValue:
    if isinstance(value, list):
        kv = KeyValue(key=key)
        kv.value.array_value.values.extend(AnyValue(string_value=v) for v in value)
        return kv
    if isinstance(value, float):
        return KeyValue(key=key, value=AnyValue(double_value=value))
    return _kv(key, value)


def make_mixed_load(n_spans: int, seed: int = LOAD_SEED, concurrent: int = 4) -> MixedLoad:
    """``n_spans`` spans of conversations of 2-200 spans (log-uniform: many short, a few long), ``concurrent`` of
    them open at a time with their spans interleaved as a process running them exports them, in requests of
    ``SPANS_PER_BATCH`` spans (an SDK batch processor's default batch). Deterministic for a seed."""
    maker = _TraceMaker(seed)
    r = maker.rng
    sizes: list[int] = []
    left = n_spans
    while left > 0:
        n = min(left, round(math.exp(r.uniform(math.log(2), math.log(200)))))
        if left - n == 1:
            n += 1
        sizes.append(n)
        left -= n
    pending = [maker.trace(n, _BASE_NS + i * 10**9) for i, n in enumerate(sizes)]
    pending.reverse()
    open_: list[list[Span]] = []
    stream: list[Span] = []
    while pending or open_:
        while pending and len(open_) < concurrent:
            open_.append(pending.pop())
        k = r.randrange(len(open_))
        take = r.randint(1, 8)
        stream.extend(open_[k][:take])
        del open_[k][:take]
        if not open_[k]:
            open_.pop(k)
    resource = Resource(attributes=[_kv("service.name", "agents"), _kv("service.version", "1.4.2"),
                                    _kv("telemetry.sdk.language", "python"), _kv("host.name", "worker-1")])  # fmt: skip
    requests = []
    for at in range(0, len(stream), SPANS_PER_BATCH):
        scope = ScopeSpans()
        scope.scope.name = sc.SCOPE_NAME
        scope.spans.extend(stream[at : at + SPANS_PER_BATCH])
        rs = ResourceSpans(resource=resource)
        rs.scope_spans.append(scope)
        requests.append(ExportTraceServiceRequest(resource_spans=[rs]).SerializeToString())
    return MixedLoad(requests, len(stream), len(sizes), sizes, maker.attr_counts, maker.text_bytes,
                     sum(map(len, requests)), maker.kinds)  # fmt: skip


def make_uniform_load(n_spans: int, spans_per_trace: int) -> MixedLoad:
    """About ``n_spans`` spans in conversations of ``spans_per_trace`` spans each (:func:`make_batch`'s: 6 attributes,
    200-byte messages), in requests of ``SPANS_PER_BATCH`` spans."""
    per_request = SPANS_PER_BATCH // spans_per_trace * spans_per_trace
    requests = [make_batch(per_request, spans_per_trace) for _ in range(max(1, n_spans // per_request))]
    spans = per_request * len(requests)
    traces = spans // spans_per_trace
    kinds = {"conversation": traces, "message": spans - traces}
    return MixedLoad(requests, spans, traces, [spans_per_trace] * traces, [6] * spans, len(TEXT) * spans,
                     sum(map(len, requests)), kinds)  # fmt: skip


class CountingSink(BareReceiver):
    """The downstream of section 6: counts the spans it receives (decode only), when the last one came, and the
    collector's CPU time at that moment (``arm``), so that nothing the collector does after delivering is counted.
    mast-otel's verdict spans (sent only for a conversation whose root cannot carry the labels) are counted apart."""

    def __init__(self) -> None:
        self.last = 0.0
        self.verdicts = 0
        self.requests = 0
        self._target = 0
        self._cpu: Any = None
        self.cpu_at_last: Any = None
        self._cond = threading.Condition()
        super().__init__()

    def _export(self, raw: bytes, context: Any) -> bytes:
        request = ExportTraceServiceRequest.FromString(raw)
        spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
        verdicts = sum(1 for s in spans if s.name == sc.VERDICT_SPAN_NAME)
        with self._cond:
            before = self.spans
            self.spans += len(spans) - verdicts
            self.verdicts += verdicts
            self.requests += 1
            self.last = time.perf_counter()
            if before < self._target <= self.spans and self._cpu is not None:
                self.cpu_at_last = self._cpu()
            self._cond.notify_all()
        return b""

    def arm(self, target: int, cpu: Any) -> None:
        """Start counting afresh; when ``target`` spans have come, read ``cpu()`` (the collector's CPU seconds)."""
        with self._cond:
            self.spans, self.verdicts, self.requests, self.last = 0, 0, 0, 0.0
            self._target, self._cpu, self.cpu_at_last = target, cpu, None

    def wait(self, n: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.spans < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.5))
        return True


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


# The OpenTelemetry Collector as its users deploy it in front of a trace backend when they need whole traces and
# durable delivery: OTLP in, groupbytrace (whole traces, 1 s wait), the batch processor with its defaults
# (send_batch_size 8192, timeout 200ms; after groupbytrace, as groupbytrace's README asks), and the OTLP exporter
# with its sending queue persisted on file_storage (queue defaults: 1,000 requests, 10 consumers). The exporter's
# own batching (sending_queue.batch) stays off, its default: one batching stage, the batch processor, which is the
# shape the contrib READMEs and most published configurations show. Everything else is left at its default.
_OTELCOL_CONFIG = """
extensions:
  file_storage: {{directory: "{dir}", create_directory: true}}
  health_check: {{endpoint: "127.0.0.1:{health}"}}
receivers:
  otlp: {{protocols: {{grpc: {{endpoint: "127.0.0.1:{port}", max_recv_msg_size_mib: 64}}}}}}
processors:
  groupbytrace: {{wait_duration: 1s}}
  batch: {{}}
exporters:
  otlp_grpc:
    endpoint: "127.0.0.1:{sink}"
    tls: {{insecure: true}}
    sending_queue: {{enabled: true, storage: file_storage}}
service:
  extensions: [file_storage, health_check]
  telemetry: {{metrics: {{level: none}}, logs: {{level: warn}}}}
  pipelines:
    traces: {{receivers: [otlp], processors: [groupbytrace, batch], exporters: [otlp_grpc]}}
"""


def _otelcol_process(tmp: Path, name: str, sink_port: int) -> tuple[Any, int]:
    """``otelcol-mast-front`` (built by scripts/setup-go-tools.sh) with ``_OTELCOL_CONFIG``."""
    import subprocess

    from tests.go_servers import go_tool
    from tests.servers import free_port, wait_http

    port, health = free_port(), free_port()
    name = "".join(c if c.isalnum() else "-" for c in name)
    (tmp / name).mkdir()
    text = _OTELCOL_CONFIG.format(dir=tmp / name, health=health, port=port, sink=sink_port)
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


@dataclass
class _Run:
    cpu_rate: float  # spans per collector CPU-second, to the last delivered span
    wall_rate: float  # spans per second, from the first request sent to the last span delivered
    cpu: float  # the collector's CPU seconds
    front: float  # the share of it the front process took (1.0 for one process)
    requests: int  # Export calls the sink received
    load: float  # the 1-minute load average when the run ended


def _run_load(proc: Any, port: int, sink: CountingSink, load: MixedLoad, clients: int) -> _Run:
    """Send every request (``clients`` concurrent senders) and wait for the sink to have every span."""
    time.sleep(0.5)  # startup work done
    cpu0, top0 = _cpu_seconds(proc.pid), _own_cpu_seconds(proc.pid)
    sink.arm(load.spans, lambda: (_cpu_seconds(proc.pid), _own_cpu_seconds(proc.pid)))
    started = time.perf_counter()
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", 64 << 20)]) as ch:
        call = ch.unary_unary(EXPORT)
        with ThreadPoolExecutor(clients) as pool:
            list(pool.map(lambda b: call(b, timeout=120), load.requests))
    if not sink.wait(load.spans, timeout=600):
        raise RuntimeError(f"only {sink.spans} of {load.spans} spans reached the sink")
    cpu_end, top_end = sink.cpu_at_last
    cpu, top = cpu_end - cpu0, top_end - top0
    if sink.verdicts:
        print(f"   ({sink.verdicts} verdict spans besides the load)")
    return _Run(load.spans / cpu, load.spans / (sink.last - started), cpu, top / cpu, sink.requests,
                os.getloadavg()[0])  # fmt: skip


# The names a round's results are kept under, and read back by the summary.
_OTELCOL = "otelcol (groupbytrace, batch, file_storage queue)"
_OTELCOL_AGAIN = "otelcol again"
_ONE_PROCESS = "mast-otel, 1 process"
_AUTO = "mast-otel, --processes auto"


@dataclass
class _Round:
    """One round of section 6: each collector's run and the middle of its run (``time.monotonic``), which places it
    between the round's two otelcol runs."""

    runs: dict[str, _Run] = field(default_factory=dict)
    when: dict[str, float] = field(default_factory=dict)

    def baseline(self, name: str) -> float:
        """otelcol's spans per CPU-second at the time ``name`` ran: the round's first and last otelcol runs,
        interpolated in time. This machine's speed drifts by up to 2x within a quarter of an hour, and a round runs
        for minutes: a linear drift through the round cancels this way, whichever run it falls on."""
        t0, t1 = self.when[_OTELCOL], self.when[_OTELCOL_AGAIN]
        b0, b1 = self.runs[_OTELCOL].cpu_rate, self.runs[_OTELCOL_AGAIN].cpu_rate
        return b0 + (b1 - b0) * (self.when[name] - t0) / (t1 - t0)


def _vs_otelcol_round(tmp: Path, tag: str, load: MixedLoad, sink: CountingSink, clients: int, order: int) -> _Round:
    """otelcol, the two mast-otel runs back to back (one process first when ``order`` is 0, ``auto`` first when
    1), otelcol again. Every collector is a fresh process with a fresh store or queue directory."""
    endpoint = f"http://127.0.0.1:{sink.port}"
    round_ = _Round()

    def timed(name: str, proc: Any, port: int) -> None:
        started = time.monotonic()
        try:
            run = round_.runs[name] = _run_load(proc, port, sink, load, clients)
        finally:
            _stop(proc)
        round_.when[name] = (started + time.monotonic()) / 2
        front = f"; front {run.front:.0%} of it" if run.front < 0.98 else ""
        print(f"   {name:<50}: {run.cpu_rate:>8,.0f} spans/CPU-s ({run.cpu:.1f} CPU-s{front}), "
              f"{run.wall_rate:>8,.0f} spans/s wall, {run.requests:,} exports, load {run.load:.1f}",
              flush=True)  # fmt: skip

    def mast(name: str, *extra: str) -> None:
        slug = "".join(c if c.isalnum() else "-" for c in name) + tag
        proc, port, _ = _collector_process(tmp, slug, endpoint, "--quiet-period", "1", "--store-reserve", "1MiB",
                                           *extra)  # fmt: skip
        timed(name, proc, port)

    def otelcol(name: str) -> None:
        proc, port = _otelcol_process(tmp, name + tag, sink.port)
        timed(name, proc, port)

    otelcol(_OTELCOL)
    pair = [(_ONE_PROCESS, ()), (_AUTO, ("--processes", "auto"))]
    for name, extra in pair if order == 0 else reversed(pair):
        mast(name, *extra)
    otelcol(_OTELCOL_AGAIN)
    return round_


def bench_vs_otelcol(tmp: Path, n_spans: int, clients: int = 2, rounds: int = 3, seed: int = LOAD_SEED,
                     conversation_spans: int | None = None) -> None:  # fmt: skip
    if conversation_spans is None:
        load = make_mixed_load(n_spans, seed)
    else:
        load = make_uniform_load(n_spans, conversation_spans)
    cores = len(os.sched_getaffinity(0))
    print(f"== 6. spans per collector CPU-second vs the OpenTelemetry Collector as deployed, {rounds} round(s), "
          f"{clients} senders, {cores} cores, seed {seed}, load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"   load: {load.describe()}")
    sink = CountingSink()
    ratios: list[tuple[float, float, float, float]] = []  # per round: 1 process, auto (CPU vs otelcol); wall x2
    for i in range(rounds):
        print(f"   -- round {i + 1} of {rounds}")
        round_ = _vs_otelcol_round(tmp, f"-{i}", load, sink, clients, order=i % 2)
        runs = round_.runs
        one, auto = runs[_ONE_PROCESS], runs[_AUTO]
        wall_otelcol = (runs[_OTELCOL].wall_rate + runs[_OTELCOL_AGAIN].wall_rate) / 2
        r = (one.cpu_rate / round_.baseline(_ONE_PROCESS), auto.cpu_rate / round_.baseline(_AUTO),
             auto.wall_rate / one.wall_rate, one.wall_rate / wall_otelcol)  # fmt: skip
        ratios.append(r)
        print(f"   round {i + 1}: CPU vs otelcol (interpolated at each run's time): 1 process {r[0]:.2f}x, auto "
              f"{r[1]:.2f}x; wall, auto / 1 process: {r[2]:.2f}x; wall, 1 process / otelcol: {r[3]:.2f}x; "
              f"otelcol moved {runs[_OTELCOL_AGAIN].cpu_rate / runs[_OTELCOL].cpu_rate - 1:+.0%} through the "
              f"round", flush=True)  # fmt: skip
    print(f"   over {rounds} round(s): median (range)")
    labels = ("1 process / otelcol, spans per CPU-second", "auto / otelcol, spans per CPU-second",
              f"wall, auto / 1 process ({cores} cores)", "wall, 1 process / otelcol")  # fmt: skip
    for k, label in enumerate(labels):
        values = [r[k] for r in ratios]
        print(f"   {label:<50}: {statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})")
    print(f"   load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    sink.server.stop(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="fewer batches and traces (a smoke run)")
    parser.add_argument("--rate", type=int, default=6000, help="spans/s for the sustained-load delay (4.)")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the sustained load lasts (4.)")
    parser.add_argument("--spans", type=int, default=100_000, help="spans sent to each collector (6.)")
    parser.add_argument("--seed", type=int, default=LOAD_SEED, help="seed of section 6's load")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of section 6, each running every collector")
    parser.add_argument("--only", type=int, nargs="*", help="run only these sections (1-6)")
    parser.add_argument("--conversation-spans", type=int, metavar="N",
                        help="section 6 on conversations of N spans each (the load of sections 1-4), not the mixed "
                             "load")  # fmt: skip
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
            bench_vs_otelcol(tmp, 10_000 if args.quick else args.spans, rounds=1 if args.quick else args.rounds,
                             seed=args.seed, conversation_spans=args.conversation_spans)  # fmt: skip


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    main()
