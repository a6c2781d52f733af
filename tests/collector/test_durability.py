"""kill -9 of a real collector process, three times in the middle of a stream of 1,000 conversations, loses no
span and judges no conversation twice; delivery is at-least-once and the duplicates are measured."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import urllib.request
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from mast_otel import semconv as sc
from tests.collector.conftest import metric, recorded, wait_until
from tests.collector.sink import OtlpSink
from tests.servers import free_port, wait_http

N_CONVERSATIONS = 1000
BATCH = 256
KILLS = (0.2, 0.45, 0.7)  # fractions of the stream received when each kill -9 lands


class CollectorProcess:
    """``mast-otel collector`` as a subprocess on fixed free ports (a restart reuses them and the store)."""

    def __init__(
        self,
        tmp: Path,
        sink: OtlpSink,
        *,
        judge: str = "rules",
        env: dict[str, str] | None = None,
        extra: Sequence[str] = (),
        store: Path | None = None,
        python: str | None = None,  # another environment's interpreter (a framework's nox session runs the main one)
    ) -> None:
        self.grpc_port, self.http_port, self.metrics_port = free_port(), free_port(), free_port()
        self.cmd = [
            python or sys.executable, "-m", "mast_otel.cli", "collector",
            "--otlp-grpc", f"127.0.0.1:{self.grpc_port}", "--otlp-http", f"127.0.0.1:{self.http_port}",
            "--metrics", f"127.0.0.1:{self.metrics_port}", "--store", str(store or tmp / "collector.db"),
            "--export-endpoint", sink.grpc_endpoint, "--quiet-period", "0.05", "--max-trace-age", "120",
            "--poll-interval", "0.05", "--export-backoff-max", "1", "--judge", judge, "--store-reserve", "1MiB",
            *extra,
        ]  # fmt: skip
        self.env = None if env is None else {**os.environ, **env}
        self.log = tmp / "collector.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        wait_http(f"http://127.0.0.1:{self.metrics_port}/healthz", timeout=60, proc=self.proc)

    def kill9(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.terminate()
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def peak_rss(self) -> int:
        """The process's peak resident set (VmHWM), bytes."""
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmHWM in /proc status")

    def metrics(self) -> str:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            return str(response.read().decode())


@contextmanager
def collector_process(tmp: Path, sink: OtlpSink) -> Iterator[CollectorProcess]:
    proc = CollectorProcess(tmp, sink)
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.mark.integration  # a real collector process, killed three times: timing-sensitive under foreign load
@pytest.mark.parametrize("processes", [1, 2])  # 2: kill -9 of the front process, which kills its shards
def test_kill_9_three_times_mid_stream_loses_no_span_and_judges_once(
    tmp_path: Path, sink: OtlpSink, processes: int
) -> None:
    # prepare: 1,000 conversations of real recorder spans, streamed by the SDK's gRPC exporter in batches
    spans = recorded(N_CONVERSATIONS)
    want = {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in spans}
    batches = [spans[i : i + BATCH] for i in range(0, len(spans), BATCH)]
    judged = tmp_path / "judged.log"
    collector = CollectorProcess(tmp_path, sink, judge="tests.collector.counting_judge:factory",
                                 env={"MAST_TEST_JUDGE_LOG": str(judged)},
                                 extra=["--judge-concurrency", "8", "--processes", str(processes)])  # fmt: skip
    collector.start()
    try:
        exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True, timeout=30)
        sent = threading.Event()

        def stream() -> None:
            for batch in batches:
                while exporter.export(batch) != SpanExportResult.SUCCESS:
                    pass  # the SDK gave up after its own retries: send the same batch again
            sent.set()

        client = threading.Thread(target=stream, daemon=True)
        client.start()

        # test: kill -9 at each fraction of the stream, restart on the same store and ports each time
        received = 0.0
        for fraction in KILLS:

            def far_enough(fraction: float = fraction, before: float = received) -> bool:
                count = metric(collector.metrics(), "mast_collector_spans_received_total", protocol="grpc")
                return before + count >= len(spans) * fraction

            wait_until(far_enough, timeout=90, what=f"{fraction:.0%} of the stream received")
            received += metric(collector.metrics(), "mast_collector_spans_received_total", protocol="grpc")
            collector.kill9()
            collector.start()
        assert sent.wait(180), "the client could not finish the stream"
        exporter.shutdown()
        # verify: every span arrives downstream, every conversation labelled, none judged twice
        got = sink.wait_for(lambda s: want <= {x.key for x in s}, timeout=120)
        assert {s.key for s in got} == want
        roots: dict[tuple[str, str], list[dict[str, object]]] = {}
        for s in got:
            if s.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_WORKFLOW:
                roots.setdefault(s.key, []).append(s.attributes)
        assert len(roots) == N_CONVERSATIONS
        assert all(len({str(sorted(a.items())) for a in copies}) == 1 for copies in roots.values())  # same labels
        # A kill during a judge call (the claim is written before the call, the verdict after the answer) leaves a
        # conversation the judge may have billed: it goes out as an error and is never judged again.
        interrupted = {k for k, copies in roots.items() if copies[0][sc.JUDGE_STATUS] == "error"}
        assert all("stopped while this conversation was being judged" in str(roots[k][0][sc.JUDGE_STATUS_REASON])
                   for k in interrupted)  # fmt: skip
        judged_ok = [copies[0][sc.JUDGE_STATUS] for k, copies in roots.items() if k not in interrupted]
        assert set(judged_ok) <= {"ok", "partial"}
        calls = Counter(judged.read_text().splitlines())
        twice = sum(n > 1 for n in calls.values())
        duplicates = len(got) - len(want)
        print(f"\n{len(want)} spans, {len(KILLS)} kill -9s: {duplicates} delivered twice downstream "
              f"({duplicates / len(want):.2%}, at-least-once), {len(calls)} conversations judged, {twice} judged "
              f"twice, {len(interrupted)} released as interrupted")  # fmt: skip
        assert twice == 0
        # one judge call per conversation, except those a kill cut short (the call may not have begun)
        labelled = {f"{trace}/{span}" for trace, span in roots if (trace, span) not in interrupted}
        assert labelled <= set(calls)
        assert len(interrupted) <= len(KILLS) * 8 * processes  # at most the calls running at each kill (8 workers)
        assert collector.stop() == 0  # and a clean SIGTERM shutdown
    finally:
        collector.stop()
