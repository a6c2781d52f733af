"""Forty real OTLP clients at once: ``telemetrygen`` (the OpenTelemetry Collector project's load generator, built
by ``scripts/setup-go-tools.sh``), one process per client as forty instances of a service would be, each with its
exporter's default timeout and retry. Over gRPC with default receiver settings, one span per Export call: forty
calls at once for 8 receiver threads, and memory, store and disk all have room, so the calls wait briefly for a
thread and none may be lost (a refusal costs the Go exporter at least 2.5 s of its 10 s timeout). Over HTTP, more
connections than a lowered ``receiver_max_connections``: those wait for a slot, or, with no wait, are told to retry
(503 + Retry-After), and every span still arrives. Oracles: the ids the downstream received, counted apart from the
collector, and each client's own exit status and log.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.collector.conftest import metric
from tests.collector.sink import OtlpSink
from tests.collector.test_durability import CollectorProcess
from tests.go_servers import go_tool

# alone: forty clients each with its exporter's default 10 s timeout: the promise is about a collector that has the
# machine's cores, and a framework session beside it would be the load the clients measure.
pytestmark = [pytest.mark.integration, pytest.mark.alone]

CLIENTS = 40
TRACES = 100  # per client; each trace is telemetrygen's parent span and one child span
SPANS = CLIENTS * TRACES * 2  # 8,000
BATCH = 20  # spans per Export call over HTTP: each client keeps one call in flight ten times over, so they overlap
REFUSED = "mast_collector_requests_refused_total"
_ERRORS = ("\tERROR\t", "\tWARN\t", "export:")


def _run_clients(exe: str, port: int, logs: Path, *, http: bool = False) -> list[tuple[int, list[str]]]:
    """Start every client, then wait for all; each one's exit status and the errors it logged (telemetrygen's at
    ERROR; a batch the exporter gave up on, by the OpenTelemetry Go SDK's default handler: "traces export: ...")."""
    logs.mkdir()
    procs = []
    for i in range(CLIENTS):
        log = (logs / f"client-{i}.log").open("wb")
        batching = ["--otlp-http", "--batch-size", str(BATCH)] if http else ["--batch=false"]  # gRPC: a call a span
        cmd = [exe, "traces", "--otlp-endpoint", f"127.0.0.1:{port}", "--otlp-insecure", "--traces", str(TRACES),
               "--child-spans", "1", "--rate", "0", "--service", f"client-{i}", *batching]  # fmt: skip
        procs.append((subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log))
    results = []
    for i, (proc, log) in enumerate(procs):
        try:
            code = proc.wait(180)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait(10)
        log.close()
        lines = (logs / f"client-{i}.log").read_text().splitlines()
        results.append((code, [line[:300] for line in lines if any(m in line for m in _ERRORS)]))
    return results


@pytest.mark.parametrize("processes", ["1", "auto"])
def test_forty_telemetrygen_clients_deliver_every_span(tmp_path: Path, sink: OtlpSink, processes: str) -> None:
    exe = go_tool("telemetrygen")
    collector = CollectorProcess(tmp_path, sink, extra=["--processes", processes])
    collector.start()
    try:
        results = _run_clients(exe, collector.grpc_port, tmp_path / "clients")
        failed = [(i, code, errors) for i, (code, errors) in enumerate(results) if code != 0 or errors]
        assert not failed, f"{len(failed)} clients failed; the first: {failed[0]}"
        delivered = sink.wait_count(SPANS, timeout=120)
        assert len({s.key for s in delivered}) == SPANS
        text = collector.metrics()
        received = metric(text, "mast_collector_spans_received_total", protocol="grpc")
        refused = {
            reason: metric(text, REFUSED, protocol="grpc", reason=reason)
            for reason in ("concurrency", "memory_limit", "backpressure", "disk_full", "shard_unavailable",
                           "too_large", "malformed")
        }  # fmt: skip
        print(f"processes={processes}: {SPANS} of {SPANS} spans delivered in one call each; refused: {refused}")
        assert received >= SPANS
        # Nothing was short: no refusal for memory, store, disk or a shard, and none for good.
        assert not any(n for reason, n in refused.items() if reason != "concurrency"), refused
    finally:
        collector.stop()


@pytest.mark.parametrize("admission_wait", ["default", "0"])
def test_forty_telemetrygen_http_clients_over_the_connection_cap_deliver_every_span(
    tmp_path: Path, sink: OtlpSink, admission_wait: str
) -> None:
    """OTLP/HTTP with ``receiver_max_connections`` 24: a connection over it waits for a slot; with no wait (0) it is
    answered 503 + Retry-After at once (a reset would make the Go exporter drop the batch), counted per connection,
    and retried until all is in."""
    exe = go_tool("telemetrygen")
    wait = [] if admission_wait == "default" else ["--receiver-admission-wait", admission_wait]
    collector = CollectorProcess(tmp_path, sink, extra=["--receiver-max-connections", "24", *wait])
    collector.start()
    try:
        results = _run_clients(exe, collector.http_port, tmp_path / "clients", http=True)
        failed = [(i, code, errors) for i, (code, errors) in enumerate(results) if code != 0 or errors]
        assert not failed, f"{len(failed)} clients failed; the first: {failed[0]}"
        delivered = sink.wait_count(SPANS, timeout=120)
        assert len({s.key for s in delivered}) == SPANS
        refused = metric(collector.metrics(), REFUSED, protocol="http", reason="connection_limit")
        print(f"http, wait {admission_wait}: {SPANS} of {SPANS} spans delivered, {refused:g} connections over the "
              "cap answered 503")  # fmt: skip
        if admission_wait == "0":
            assert refused > 0, "no connection was over the cap: the test did not exercise it"
    finally:
        collector.stop()
