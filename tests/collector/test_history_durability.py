"""The verdict history across kill -9 and changes of ``--processes``: a real collector, killed twice mid-stream and
restarted each time with another number of processes (2, then 1, then 3), keeps the verdict of every conversation
it delivered, each process each conversation once, and ``mast-otel report`` reads the histories of every process
that ever ran as one."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from mast_otel import semconv as sc
from mast_otel.collector.history import HistoryFile, history_files
from tests.collector.conftest import metric, recorded, wait_until
from tests.collector.sink import OtlpSink
from tests.collector.test_durability import CollectorProcess

N_CONVERSATIONS = 300
BATCH = 64
RESTARTS = ((0.3, 1), (0.6, 3))  # (share of the stream received when kill -9 lands, processes after the restart)


def with_processes(cmd: list[str], processes: int) -> list[str]:
    i = cmd.index("--processes")
    return [*cmd[: i + 1], str(processes), *cmd[i + 2 :]]


@pytest.mark.integration  # real collector processes, killed twice: timing-sensitive under foreign load
def test_the_history_keeps_every_delivered_verdict_across_kill_9_and_processes_changes(
        tmp_path: Path, sink: OtlpSink) -> None:  # fmt: skip
    spans = recorded(N_CONVERSATIONS)
    batches = [spans[i : i + BATCH] for i in range(0, len(spans), BATCH)]
    collector = CollectorProcess(tmp_path, sink, judge="tests.collector.counting_judge:factory",
                                 env={"MAST_TEST_JUDGE_LOG": str(tmp_path / "judged.log")},
                                 extra=["--judge-concurrency", "4", "--processes", "2"])  # fmt: skip
    collector.start()
    try:
        exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True, timeout=30)
        sent = threading.Event()

        def stream() -> None:
            for batch in batches:
                while exporter.export(batch) != SpanExportResult.SUCCESS:
                    pass  # the SDK gave up after its own retries (a restart): send the same batch again
            sent.set()

        threading.Thread(target=stream, daemon=True).start()
        received = 0.0
        for fraction, processes in RESTARTS:

            def far_enough(fraction: float = fraction, before: float = received) -> bool:
                count = metric(collector.metrics(), "mast_collector_spans_received_total", protocol="grpc")
                return before + count >= len(spans) * fraction

            wait_until(far_enough, timeout=120, what=f"{fraction:.0%} of the stream received")
            received += metric(collector.metrics(), "mast_collector_spans_received_total", protocol="grpc")
            collector.kill9()
            collector.cmd = with_processes(collector.cmd, processes)
            collector.start()
        assert sent.wait(240), "the client could not finish the stream"
        exporter.shutdown()
        roots = lambda got: {s.trace_id for s in got if s.attributes.get(sc.GEN_AI_OPERATION_NAME)  # noqa: E731
                             == sc.OP_INVOKE_WORKFLOW and s.attributes.get(sc.JUDGE_STATUS)}  # fmt: skip
        delivered = roots(sink.wait_for(lambda got: len(roots(got)) >= N_CONVERSATIONS, timeout=180))
        assert len(delivered) == N_CONVERSATIONS
        assert collector.stop() == 0
    finally:
        collector.stop()
    # verify: every history file any process wrote, read as one
    store = tmp_path / "collector.db"
    files = history_files(store)
    assert {p.name for p in files} >= {"collector.db.history", "collector.db.shard1.history"}
    per_file: dict[str, Counter[str]] = {}
    for path in files:
        with HistoryFile(path) as f:
            per_file[path.name] = Counter(v.trace_id for v in f.verdicts(0, 2**40))
    kept = sum(per_file.values(), Counter())
    assert set(kept) == delivered, f"missing {len(delivered - set(kept))}, extra {len(set(kept) - delivered)}"
    for name, counts in per_file.items():  # one process never keeps a conversation twice, restarts or not
        assert set(counts.values()) == {1}, (name, [t for t, n in counts.items() if n > 1])
    # A batch the client sent again after a kill (its answer never came) may reach another shard when --processes
    # changed: that shard judges it too, and its verdict is kept as the metrics count it (at-least-once delivery).
    resent = [t for t, n in kept.items() if n > 1]
    print(
        f"\n{N_CONVERSATIONS} conversations, {len(RESTARTS)} kill -9s with --processes 2 -> 1 -> 3: all in the "
        f"history of {len(files)} processes, {len(resent)} judged again by another shard after a restart"
    )
    assert len(resent) <= BATCH * len(RESTARTS)
    # and the report counts them all, whichever process judged them: every verdict the histories keep, a batch
    # judged again by another shard included, as the metrics count it (at-least-once delivery, above)
    cmd = [sys.executable, "-m", "mast_otel.cli", "report", "--store", str(store), "--since", "1d", "--json",
           str(tmp_path / "report.json")]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert sum(report["statuses"][0].values()) == sum(kept.values())
    assert len(report["sources"]) == len(files)
