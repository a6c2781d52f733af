"""What a user pays for is kept: a verdict the judge was paid for survives a ``kill -9`` between the answer and
the release that carries it, and the restarted collector releases that verdict without calling the judge again.

A real collector process: the judge answers, then holds the store's write lock (tests/collector/
store_locking_judge.py), so the release cannot be written; the process is killed in that window. The oracle is
the judge's own log of the calls it was paid for and the labels downstream.
"""

from __future__ import annotations

import time
from pathlib import Path

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from mast_otel import semconv as sc
from tests.collector.conftest import metric, recorded, wait_until
from tests.collector.sink import OtlpSink
from tests.collector.test_durability import CollectorProcess


def test_a_paid_verdict_survives_a_kill_before_its_release(tmp_path: Path, sink: OtlpSink) -> None:
    # prepare: one conversation; the judge answers (and is paid), then blocks every store write
    spans = recorded(1)
    store = tmp_path / "collector.db"
    calls = tmp_path / "judged.log"
    locking = CollectorProcess(tmp_path, sink, judge="tests.collector.store_locking_judge:factory", store=store,
                               env={"MAST_TEST_JUDGE_LOG": str(calls), "MAST_TEST_LOCK_STORE": str(store)})  # fmt: skip
    locking.start()
    try:
        exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{locking.grpc_port}", insecure=True, timeout=30)
        assert exporter.export(spans) == SpanExportResult.SUCCESS
        exporter.shutdown()
        # test: the judge was called and answered; the release waits for the lock; kill -9 in that window
        wait_until(lambda: calls.exists() and calls.read_text().count("\n") == 1, what="the paid judge call")
        time.sleep(0.5)  # well past the verdict's journal write, well before SQLite's 5 s busy timeout
        locking.kill9()
    finally:
        locking.stop()
    assert sink.spans() == []  # nothing was released before the kill
    restarted = CollectorProcess(tmp_path, sink, judge="tests.collector.counting_judge:factory", store=store,
                                 env={"MAST_TEST_JUDGE_LOG": str(calls)})  # fmt: skip
    restarted.start()
    try:
        # verify: every span delivered; the root carries the paid verdict; the judge was not called (billed) again
        got = sink.wait_count(len(spans), timeout=60)
        (root,) = [s for s in got if s.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_WORKFLOW]
        assert root.attributes[sc.JUDGE_STATUS] == sc.JUDGE_OK, root.attributes.get(sc.JUDGE_STATUS_REASON)
        assert calls.read_text().count("\n") == 1
        assert metric(restarted.metrics(), "mast_judge_errors_total", reason="interrupted") == 0
    finally:
        restarted.stop()
