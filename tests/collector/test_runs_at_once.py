"""One run, one verdict with many runs at once (issue 45): hundreds of Semantic Kernel runs, each written as several
traces, all giving the same answers within 50 ms of each other (benchmarks/concurrent_runs.py), sent as OTLP/HTTP
protobuf by several senders at once to a real ``mast-otel collector`` process.

The promises that are not about time (the latency, memory and drain figures are benchmarks/bench_runs_at_once.py's):
every run tied by span links gets exactly one verdict, on its own spans, from one judge call reading only that run;
the runs tied only by their shared history (AgentGroupChat), which runs at once make ambiguous, are never read
together with another run, and the ambiguity is counted; the evidence index stays within ``--evidence-memory`` at
every moment it is sampled, and what it forgets to stay there is counted and merges nothing; every span and log
record acknowledged is exported once. Oracles: the runs as sent, a recording judge
(:mod:`tests.collector.recording_judge`) and a real OTLP sink.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from benchmarks.concurrent_runs import Run, Sent, make_runs, requests_of, send, verdicts_per_run
from mast_otel import semconv as sc
from tests.collector.conftest import metric
from tests.collector.sink import OtlpSink
from tests.collector.test_durability import CollectorProcess
from tests.collector.test_run_identity import _judged_ids

pytestmark = pytest.mark.integration  # a real collector process

ROOT = Path(__file__).resolve().parents[2]
LINKED_RUNS = 200
GROUP_CHATS = 20
CLIENTS = 4
EVIDENCE = "mast_collector_evidence_bytes"
DROPPED = "mast_collector_evidence_dropped_total"
DRAIN_S = 45.0  # the longest wait for every span out (3 s when the pipeline keeps up; a loaded machine)


@dataclass
class Outcome:
    runs: list[Run]
    sent: Sent
    exported: Counter[tuple[str, str]]  # span keys as the sink received them
    labelled: list[tuple[str, str]]  # the spans carrying a verdict
    logs_sent: Counter[bytes]
    logs_exported: Counter[bytes]
    calls: list[dict[str, object]]  # the recording judge's lines
    gauge: list[float] = field(default_factory=list)  # the evidence gauge, sampled all along
    dropped: dict[str, float] = field(default_factory=dict)


def _sampled(collector: CollectorProcess, into: list[float], stop: threading.Event) -> None:
    while not stop.wait(0.05):
        try:
            into.append(metric(collector.metrics(), EVIDENCE))
        except OSError:
            pass


def _run(tmp: Path, evidence_memory: str, *, group_chats: int) -> Outcome:
    """``LINKED_RUNS`` and ``group_chats`` runs sent at once to a collector process, until every span and log record
    is out (or ``DRAIN_S``); then it is stopped."""
    runs = make_runs(LINKED_RUNS, group_chats)
    judged = tmp / "judged.jsonl"
    sink = OtlpSink().start()
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])  # the judge plugin is in tests/
    collector = CollectorProcess(tmp, sink, judge="tests.collector.recording_judge:factory",
                                 env={"MAST_TEST_JUDGE_LOG": str(judged), "PYTHONPATH": path},
                                 extra=["--quiet-period", "1", "--evidence-memory", evidence_memory])  # fmt: skip
    gauge: list[float] = []
    stop = threading.Event()
    sampler = threading.Thread(target=_sampled, args=(collector, gauge, stop), daemon=True)
    try:
        collector.start()
        sampler.start()
        sent = send(collector.http_port, requests_of(runs, CLIENTS))
        acked = {key for request in sent.acked if request.path == "/v1/traces" for n in request.runs
                 for key in runs[n].span_keys}  # fmt: skip
        logs_sent = Counter(record.SerializeToString() for request in sent.acked if request.path == "/v1/logs"
                            for n in request.runs for rl in runs[n].logs.resource_logs for sl in rl.scope_logs
                            for record in sl.log_records)  # fmt: skip
        sink.wait_for(lambda spans: acked <= {s.key for s in spans}, timeout=DRAIN_S)
        sink.wait_logs(sum(logs_sent.values()), timeout=DRAIN_S)
        stop.set()
        sampler.join()
        exposed = collector.metrics()
        assert collector.stop() == 0, collector.log.read_text()[-3000:]
        spans = sink.spans()
        calls = [json.loads(line) for line in judged.read_text().splitlines()] if judged.exists() else []
        return Outcome(runs, sent, Counter(s.key for s in spans),
                       [s.key for s in spans if sc.JUDGE_STATUS in s.attributes], logs_sent,
                       Counter(log.data for log in sink.logs()), calls, gauge,
                       {r: metric(exposed, DROPPED, reason=r) for r in ("memory", "age", "ambiguous")})  # fmt: skip
    finally:
        stop.set()
        if collector.alive():  # a wait above failed: nothing to keep
            collector.kill9()
        sink.stop()


def _runs_read(outcome: Outcome) -> list[set[int]]:
    """The runs each judge call read (by the span ids the judge was given)."""
    run_of_span = {span: run.index for run in outcome.runs for _, span in run.span_keys}
    depth = max((len(c["span_ids"]) for c in outcome.calls), default=0)  # type: ignore[arg-type]
    judged_as = _judged_ids(run_of_span, depth)
    read = []
    for call in outcome.calls:
        ids = call["span_ids"]
        assert isinstance(ids, list)
        unknown = [s for s in ids if s not in judged_as]
        assert not unknown, f"a judge call on spans that came from no run sent: {unknown[:3]}"
        read.append({judged_as[s] for s in ids})
    return read


def _nothing_lost(outcome: Outcome) -> None:
    """Every request acknowledged (refusals retried), every span and log record sent exported exactly once."""
    assert outcome.sent.failures == []
    sent = {key for run in outcome.runs for key in run.span_keys}
    assert {key: n for key, n in outcome.exported.items() if key in sent} == dict.fromkeys(sent, 1)
    assert outcome.logs_exported == outcome.logs_sent


def test_each_linked_run_of_hundreds_at_once_gets_one_verdict_of_its_own(tmp_path: Path) -> None:
    # prepare / test: 200 runs tied by links, the same answers, all at once
    outcome = _run(tmp_path, "64MiB", group_chats=0)
    # verify: nothing lost
    _nothing_lost(outcome)
    # verify: each run one verdict, from one judge call that read only it
    per_run = verdicts_per_run(outcome.runs, outcome.labelled)
    read = _runs_read(outcome)
    calls_of = Counter(n for runs in read for n in runs)
    linked = [run.index for run in outcome.runs]
    assert {n: per_run[n] for n in linked} == dict.fromkeys(linked, 1)
    assert {n: calls_of[n] for n in linked} == dict.fromkeys(linked, 1)
    assert [runs for runs in read if len(runs) > 1] == []
    # verify: the histories they all gave at once tied nothing, counted; the index within its bound
    assert outcome.dropped["ambiguous"] > 0
    assert outcome.gauge
    peak = max(outcome.gauge)
    assert peak <= 64 << 20


def test_group_chats_tied_only_by_history_are_never_judged_with_another_run(tmp_path: Path) -> None:
    # prepare / test: 200 linked runs and 20 AgentGroupChat runs (tied only by history), the same answers, at once
    outcome = _run(tmp_path, "64MiB", group_chats=GROUP_CHATS)
    # verify: nothing lost; no judge call read two runs; the ambiguity counted
    _nothing_lost(outcome)
    assert [runs for runs in _runs_read(outcome) if len(runs) > 1] == []
    assert outcome.dropped["ambiguous"] > 0


def test_an_evidence_index_too_small_for_the_load_stays_within_its_bound_and_loses_nothing(tmp_path: Path) -> None:
    # prepare / test: 200 linked runs at once, the index given 256 KiB (they need more: groups are forgotten)
    bound = 256 << 10
    outcome = _run(tmp_path, "256KiB", group_chats=0)
    # verify: the gauge never above the bound, the groups forgotten counted
    assert outcome.gauge
    peak = max(outcome.gauge)
    assert peak <= bound
    assert outcome.dropped["memory"] > 0
    # verify: forgetting merges nothing and loses nothing (the forgotten runs' traces are judged one by one)
    _nothing_lost(outcome)
    assert [runs for runs in _runs_read(outcome) if len(runs) > 1] == []
