"""Forty real OTLP clients at once: ``telemetrygen`` (the OpenTelemetry Collector project's load generator, built
by ``scripts/setup-go-tools.sh``), one process per client as forty instances of a service would be. Over gRPC with
default receiver settings, more calls arrive at once than the receiver admits (``4 x receiver_threads`` = 32); over
HTTP, more connections than a lowered ``receiver_max_connections``. Either way some are refused for now, the Go
exporters retry exactly what the OTLP specification lets them retry, and every span must arrive. Oracles: the ids the
downstream received, counted apart from the collector, and each client's own exit status and log.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.collector.conftest import metric
from tests.collector.sink import OtlpSink
from tests.collector.test_durability import CollectorProcess
from tests.go_servers import go_tool

pytestmark = pytest.mark.integration

CLIENTS = 40
TRACES = 100  # per client; each trace is telemetrygen's parent span and one child span
SPANS = CLIENTS * TRACES * 2  # 8,000
BATCH = 20  # spans per Export call: each client keeps one call in flight ten times over, so the calls overlap
REFUSED = "mast_collector_requests_refused_total"
_ERRORS = ("\tERROR\t", "\tWARN\t", "export:")


def _run_clients(exe: str, port: int, logs: Path, *, http: bool = False) -> list[tuple[int, list[str]]]:
    """Start every client, then wait for all; each one's exit status and the errors it logged (telemetrygen's at
    ERROR; a batch the exporter gave up on, by the OpenTelemetry Go SDK's default handler: "traces export: ...")."""
    logs.mkdir()
    procs = []
    for i in range(CLIENTS):
        log = (logs / f"client-{i}.log").open("wb")
        cmd = [exe, "traces", "--otlp-endpoint", f"127.0.0.1:{port}", "--otlp-insecure", "--traces", str(TRACES),
               "--child-spans", "1", "--rate", "0", "--batch-size", str(BATCH), "--service", f"client-{i}",
               *(["--otlp-http"] if http else [])]  # fmt: skip
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
        refused = metric(text, REFUSED, protocol="grpc", reason="concurrency")
        received = metric(text, "mast_collector_spans_received_total", protocol="grpc")
        # A refused call is retried and then stored, so nothing refused is lost; every refusal is counted, and forty
        # clients starting at once do pass the cap of 32 (else this test would not exercise it).
        assert received >= SPANS
        assert refused > 0, "no call was refused: the load never reached the receiver's cap"
        print(f"processes={processes}: {SPANS} of {SPANS} spans delivered, {refused:g} calls refused over the cap")
        other = {
            reason: metric(text, REFUSED, protocol="grpc", reason=reason)
            for reason in ("memory_limit", "backpressure", "shard_unavailable", "too_large", "malformed")
        }
        print(f"other gRPC refusals: {other}")
        assert other["too_large"] == other["malformed"] == 0
    finally:
        collector.stop()


def test_forty_telemetrygen_http_clients_over_the_connection_cap_deliver_every_span(
    tmp_path: Path, sink: OtlpSink
) -> None:
    """OTLP/HTTP with ``receiver_max_connections`` 24: the connections over it are answered 503 + Retry-After (a
    reset would make the Go exporter drop the batch; past twice the cap the receiver still resets, so the cap is
    set where forty clients stay below that), counted per connection, and retried until all is in."""
    exe = go_tool("telemetrygen")
    collector = CollectorProcess(tmp_path, sink, extra=["--receiver-max-connections", "24"])
    collector.start()
    try:
        results = _run_clients(exe, collector.http_port, tmp_path / "clients", http=True)
        failed = [(i, code, errors) for i, (code, errors) in enumerate(results) if code != 0 or errors]
        assert not failed, f"{len(failed)} clients failed; the first: {failed[0]}"
        delivered = sink.wait_count(SPANS, timeout=120)
        assert len({s.key for s in delivered}) == SPANS
        refused = metric(collector.metrics(), REFUSED, protocol="http", reason="connection_limit")
        assert refused > 0, "no connection was over the cap: the test did not exercise it"
        print(f"http: {SPANS} of {SPANS} spans delivered, {refused:g} connections over the cap answered 503")
    finally:
        collector.stop()
