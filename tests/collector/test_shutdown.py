"""SIGTERM while the judge hangs: the collector exits in bounded time and the next start finishes the work."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from mast_otel import semconv as sc
from tests.collector.conftest import recorded, wait_until
from tests.collector.sink import OtlpSink
from tests.collector.test_durability import CollectorProcess

REPO = Path(__file__).resolve().parents[2]
EXIT_BOUND_S = 15.0  # generous: the judge grace is 5 s (min(judge_timeout, judge_shutdown_grace))


def test_sigterm_with_a_hung_judge_exits_and_a_restart_releases_the_conversations(
    tmp_path: Path, sink: OtlpSink
) -> None:
    # prepare: 3 conversations, a judge that never answers (2 workers: two calls hang, one waits in the queue)
    spans = recorded(3)
    want = {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in spans}
    started = tmp_path / "judge-started"
    hung = CollectorProcess(
        tmp_path, sink, judge="tests.collector.hanging_judge:factory",
        env={"PYTHONPATH": str(REPO), "MAST_TEST_JUDGE_STARTED": str(started)},
    )  # fmt: skip
    hung.start()
    try:
        exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{hung.grpc_port}", insecure=True, timeout=30)
        assert exporter.export(spans) == SpanExportResult.SUCCESS
        exporter.shutdown()
        wait_until(started.exists, timeout=30, what="a judge call in flight")

        # test: SIGTERM with judge calls in flight
        assert hung.proc is not None
        hung.proc.terminate()
        t0 = time.monotonic()
        try:
            code = hung.proc.wait(EXIT_BOUND_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the collector did not exit within {EXIT_BOUND_S}s of SIGTERM") from None
        print(f"\nexited {time.monotonic() - t0:.1f}s after SIGTERM")
    finally:
        hung.stop()  # SIGKILL only if the assertion above failed
    assert code == 0
    assert sink.spans() == []  # held for a verdict, not released with an error

    # verify: a restart (same store, a judge that answers) judges and exports every span
    with_rules = CollectorProcess(tmp_path, sink, judge="rules")
    with_rules.start()
    try:
        got = sink.wait_for(lambda s: want <= {x.key for x in s}, timeout=60)
    finally:
        assert with_rules.stop() == 0
    assert {s.key for s in got} == want
    roots = [s for s in got if s.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_WORKFLOW]
    assert len(roots) == 3
    assert all(r.attributes.get(sc.JUDGE_STATUS) == sc.JUDGE_SKIPPED for r in roots)  # no model: released, skipped
