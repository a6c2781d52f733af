"""``mast-otel collector --processes 2``: a real front process and two shard processes, real OTLP in (gRPC and
HTTP, the SDK's exporters) and out. Oracles: the spans the client sent and the processes the kernel lists."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from mast_otel import semconv as sc
from mast_otel.collector.report import load
from tests.collector.conftest import metric, recorded, wait_until
from tests.collector.sink import OtlpSink
from tests.collector.test_durability import CollectorProcess

pytestmark = pytest.mark.integration


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        out |= {int(c) for c in task.read_text().split()}
    return out


def _opened(pid: int, path: Path) -> bool:
    """Whether process ``pid`` holds ``path`` open (a shard holds its own store, and no other)."""
    fds = Path(f"/proc/{pid}/fd")
    return any(os.path.realpath(fd) == str(path.resolve()) for fd in fds.iterdir())


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _listening(pid: int) -> list[str]:
    """The listening sockets process ``pid`` holds: ``tcp:PORT`` for TCP, ``unix`` for a Unix socket."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:
                found.append(f"tcp:{int(f[1].rsplit(':', 1)[1], 16)}")
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        f = line.split()
        if int(f[3], 16) & 0x10000 and f[6] in inodes:
            found.append("unix")
    return found


def _held(store: Path) -> int:
    """Spans a store still holds (segments not released), read with SQLite itself."""
    with sqlite3.connect(store) as db:
        return int(db.execute("SELECT count(*) FROM segment").fetchone()[0])


def _keys(spans: list) -> set[tuple[str, str]]:  # type: ignore[type-arg]
    return {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in spans}


def _delivered(sink: OtlpSink, want: set[tuple[str, str]]) -> None:
    """Every span sent reached the downstream, and nothing else did."""
    got = sink.wait_for(lambda s: want <= {x.key for x in s}, timeout=60)
    assert {s.key for s in got} == want


def _send(exporter: OTLPSpanExporter | HttpExporter, spans: list, batch: int = 64) -> None:  # type: ignore[type-arg]
    for i in range(0, len(spans), batch):
        while exporter.export(spans[i : i + batch]) != SpanExportResult.SUCCESS:
            time.sleep(0.1)


def test_two_processes_deliver_every_span_once_labelled_and_count_as_one_collector(
    tmp_path: Path, sink: OtlpSink
) -> None:
    over_grpc, over_http = recorded(60, service="grpc-svc"), recorded(20, service="http-svc")
    want = {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in over_grpc + over_http}
    collector = CollectorProcess(tmp_path, sink, extra=["--processes", "2"])
    collector.start()
    try:
        assert collector.proc is not None
        shards = _children(collector.proc.pid)
        assert len(shards) == 2
        # No other process can reach a shard: each listens on its /metrics port alone (which the front scrapes);
        # the front's link to it is a socket pair handed over a control socket the shard inherited.
        for pid in shards:
            assert len(_listening(pid)) == 1 and _listening(pid)[0].startswith("tcp:"), _listening(pid)
        cores = os.sched_getaffinity(0)
        if len(cores) == 2:  # one core per shard: each pinned to its own (GIL handoffs stay on one core)
            pinned = [os.sched_getaffinity(pid) for pid in shards]
            assert all(len(p) == 1 for p in pinned) and set().union(*pinned) == cores
            # the front, every thread of it, on any core: the kernel balances it (no share is tuned to it)
            front = {frozenset(os.sched_getaffinity(int(t))) for t in os.listdir(f"/proc/{collector.proc.pid}/task")}
            assert front == {frozenset(cores)}
        else:  # the kernel places them
            assert all(os.sched_getaffinity(pid) == cores for pid in shards)
        _send(OTLPSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True, timeout=30), over_grpc)
        _send(HttpExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces", timeout=30), over_http)
        got = sink.wait_for(lambda s: want <= {x.key for x in s}, timeout=60)
        assert sorted(s.key for s in got) == sorted(want)  # each exactly once
        roots = [s for s in got if s.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_WORKFLOW]
        assert len(roots) == 80 and all(r.attributes.get(sc.JUDGE_STATUS) for r in roots)
        # both shards took traces: each store was written (a shard's store exists only once it opened it)
        for store in (tmp_path / "collector.db", tmp_path / "collector.db.shard1"):
            assert store.exists()
        text = collector.metrics()
        assert metric(text, "mast_collector_spans_received_total", protocol="grpc") == len(over_grpc)
        assert metric(text, "mast_collector_spans_received_total", protocol="http") == len(over_http)
        assert metric(text, "mast_collector_spans_exported_total") == len(want)
        wait_until(lambda: metric(collector.metrics(), "mast_collector_traces_pending") == 0, timeout=30,
                   what="nothing pending")  # fmt: skip
        # a clean stop stops every shard; none is left behind
        assert collector.stop() == 0
        assert not any(_alive(pid) for pid in shards)
        # `report --store` reads every shard's store: all 80 verdicts, whichever shard judged them
        report = load([], str(tmp_path / "collector.db"))
        assert sorted(c.trace_id for c in report.conversations) == sorted({r.trace_id for r in roots})
    finally:
        collector.stop()


def test_kill_9_of_the_front_kills_its_shards_and_a_restart_delivers_what_was_held(
    tmp_path: Path, sink: OtlpSink
) -> None:
    spans = recorded(40)
    want = _keys(spans)
    # a quiet period longer than the test: everything acknowledged is still held when the front is killed
    collector = CollectorProcess(tmp_path, sink, extra=["--processes", "2", "--quiet-period", "100"])
    collector.start()
    assert collector.proc is not None
    shards = _children(collector.proc.pid)
    _send(OTLPSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True, timeout=30), spans)
    collector.kill9()
    wait_until(lambda: not any(_alive(pid) for pid in shards), timeout=10, what="the shards killed with the front")
    assert sink.spans() == []
    assert _held(tmp_path / "collector.db") > 0 and _held(tmp_path / "collector.db.shard1") > 0
    # restart with a short quiet period: the shards resume their stores and release everything
    collector.cmd[collector.cmd.index("100")] = "0.05"
    collector.start()
    try:
        _delivered(sink, want)
    finally:
        assert collector.stop() == 0


def test_a_shard_killed_is_restarted_and_what_it_held_is_delivered(tmp_path: Path, sink: OtlpSink) -> None:
    spans = recorded(30)
    want = _keys(spans)
    collector = CollectorProcess(tmp_path, sink, extra=["--processes", "2", "--quiet-period", "2"])
    collector.start()
    try:
        assert collector.proc is not None
        before = _children(collector.proc.pid)
        exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True, timeout=30)
        _send(exporter, spans)
        victim = max(before)
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda: len(_children(collector.proc.pid) - before) == 1, timeout=30,  # type: ignore[union-attr]
                   what="a new shard started")  # fmt: skip
        _delivered(sink, want)
        assert "exited with code -9; restarting" in collector.log.read_text()
        more = recorded(10)  # and the restarted shard takes new traffic
        _send(exporter, more)
        want |= _keys(more)
        sink.wait_for(lambda s: want <= {x.key for x in s}, timeout=60)
    finally:
        assert collector.stop() == 0


@pytest.mark.parametrize(("before", "after"), [(2, 1), (3, 2)])
def test_fewer_processes_after_more_still_drain_the_stores_left(
    tmp_path: Path, sink: OtlpSink, before: int, after: int
) -> None:
    spans = recorded(30)
    want = _keys(spans)
    held = CollectorProcess(tmp_path, sink, extra=["--processes", str(before), "--quiet-period", "100"])
    held.start()
    _send(OTLPSpanExporter(endpoint=f"127.0.0.1:{held.grpc_port}", insecure=True, timeout=30), spans)
    assert held.stop() == 0
    left = tmp_path / f"collector.db.shard{before - 1}"
    assert _held(left) > 0 and sink.spans() == []
    fewer = CollectorProcess(tmp_path, sink, extra=["--processes", str(after)])
    fewer.start()
    try:
        if after > 1:  # the shard draining the store left runs on any core (the routed ones may be pinned)
            assert fewer.proc is not None
            (drainer,) = [pid for pid in _children(fewer.proc.pid) if _opened(pid, left)]
            assert os.sched_getaffinity(drainer) == os.sched_getaffinity(0)
        _delivered(sink, want)
        assert "holds spans from a run with more processes: draining it" in fewer.log.read_text()
    finally:
        assert fewer.stop() == 0


def test_a_shard_that_cannot_start_stops_the_collector_with_its_reason(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "collector.db.shard1").write_bytes(b"this is not a database" * 100)
    cmd = [sys.executable, "-m", "mast_otel.cli", "collector", "--store", str(tmp_path / "collector.db"),
           "--processes", "2", "--otlp-grpc", "127.0.0.1:0", "--otlp-http", "off", "--metrics", "off",
           "--export-endpoint", "http://127.0.0.1:9", "--store-reserve", "1MiB"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("mast-otel collector: cannot start: ")
    assert f"cannot open the store {tmp_path / 'collector.db.shard1'}" in last
    assert "Traceback" not in done.stderr
