"""The collector keeps every verdict it releases in its history: with the resource's ``service.version``, the decisive
agent and step, its status; exporting the spans and forgetting the tombstones leave it; a crash between the history
and the release commit neither loses nor doubles a verdict.

In-process collectors (tests/collector/in_process.py): real store and history files, no sockets.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import semconv as sc
from mast_otel.collector.history import HistoryFile
from mast_otel.collector.history.reader import StoredVerdict
from mast_otel.collector.judge import judging
from mast_otel.collector.release.commit import commit_releases
from mast_otel.judge.model import DecisiveStep, ModeLabel, Verdict
from mast_otel.recorder import Recorder
from mast_otel.spans import SpanRecord
from tests.collector.conftest import FakeJudge, conversation, wait_until
from tests.collector.in_process import in_process


def runs(n: int, *, service: str = "shop", version: str | None = "1.4") -> list[ReadableSpan]:
    """``n`` conversations (a trace each) of a service at a version."""
    memory = InMemorySpanExporter()
    attributes = {"service.name": service, **({"service.version": version} if version else {})}
    tp = TracerProvider(resource=Resource.create(attributes))
    tp.add_span_processor(SimpleSpanProcessor(memory))
    rec = Recorder(tracer_provider=tp, framework="custom")
    for i in range(n):
        conversation(rec, f"conv-{i}")
    tp.shutdown()
    return list(memory.get_finished_spans())


def blames_the_coder(spans: Sequence[SpanRecord], partial: bool) -> Verdict:
    """2.3 on every conversation whose name ends in an even digit, the coder's message decisive; others pass."""
    root = next(s for s in spans if s.span_type == sc.SPAN_TYPE_CONVERSATION)
    if int(root.name[-1]) % 2:
        return Verdict(status=sc.JUDGE_OK, source=sc.SOURCE_LLM, model="judge-1")
    message = next(s for s in spans if s.span_type == sc.SPAN_TYPE_MESSAGE and s.get(sc.MESSAGE_SENDER) == "coder")
    index = message.get(sc.MESSAGE_INDEX)
    assert isinstance(index, int)
    return Verdict(status=sc.JUDGE_OK, source=sc.SOURCE_LLM, model="judge-1",
                   modes=(ModeLabel("2.3", (message.span_id,), "derailed"),),
                   decisive=DecisiveStep(message.span_id, index, "coder", "ran the wrong tests"))  # fmt: skip


def history_rows(store: Path) -> list[StoredVerdict]:
    with HistoryFile(str(store) + ".history") as f:
        return list(f.verdicts(0, 2**40))


def test_each_released_verdict_is_kept_with_version_and_decisive_agent(tmp_path: Path) -> None:
    with in_process(tmp_path, judge=FakeJudge(on_judge=blames_the_coder)) as c:
        c.send(runs(4, version="1.4"))
        c.send(runs(2, service="desk", version=None))
        c.release()
        roots = {d.span.trace_id.hex(): d for d in c.downstream.spans() if d.attributes.get(sc.JUDGE_STATUS)}
        assert len(roots) == 6
    rows = history_rows(c.store)
    assert sorted(r.trace_id for r in rows) == sorted(roots)
    by_trace = {r.trace_id: r for r in rows}
    for trace_id, root in roots.items():
        row = by_trace[trace_id]
        assert row.status == root.attributes[sc.JUDGE_STATUS] == "ok"
        assert row.modes == tuple(root.attributes.get(sc.FAILURE_MODES) or ())
        assert row.agent == root.attributes.get(sc.DECISIVE_AGENT)
        assert row.step == root.attributes.get(sc.DECISIVE_MESSAGE_INDEX)
        assert (row.service, row.version, row.framework) == (
            (root.service, "1.4", "custom") if root.service == "shop" else ("desk", "unknown", "custom")
        )
    assert Counter((r.service, r.agent) for r in rows) == {("shop", "coder"): 2, ("shop", None): 2,
                                                           ("desk", "coder"): 1, ("desk", None): 1}  # fmt: skip


def test_export_and_forgotten_tombstones_leave_the_history(tmp_path: Path) -> None:
    with in_process(tmp_path, judge=FakeJudge(on_judge=blames_the_coder), tombstone_ttl=60) as c:
        c.send(runs(3))
        c.release()
        c.clock.advance(3600)  # past tombstone_ttl and the collector's gc interval
        c.service.tick()
        tombs = c.service.store._db.execute("SELECT count(*) FROM tomb").fetchone()[0]  # type: ignore[attr-defined]
        assert tombs == 0 and c.service.store.counts() == (0, 0)  # the store forgot everything
    assert len(history_rows(c.store)) == 3


def test_a_crash_between_history_and_release_keeps_each_verdict_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The history is written first; a collector that dies before its release commits releases the same
    conversations again after the restart, and the history keeps them once.

    The first collector stands for the killed one: none of its release transactions ever commits (its judge pool
    keeps retrying them and is never ticked again), so its store holds the spans as a kill -9 would leave them."""
    real = commit_releases

    class Killed(Exception):
        """This collector's release transaction never commits."""

    judge = FakeJudge(on_judge=blames_the_coder)
    with in_process(tmp_path, judge=judge) as first:

        def die(**kwargs: Any) -> None:
            if kwargs["store"] is first.service.store:
                raise Killed
            real(**kwargs)

        monkeypatch.setattr(judging, "commit_releases", die)
        first.send(runs(4))
        first.clock.advance(1)
        first.service.tick()
        wait_until(lambda: len(history_rows(first.store)) == 4, what="the verdicts in the history")
        assert not [d for d in first.downstream.spans() if d.attributes.get(sc.JUDGE_STATUS)]
        # the restart: a second collector on the same store and history, as after a kill -9
        with in_process(tmp_path, judge=judge, clock=first.clock) as second:
            second.release()
            assert len({d.span.trace_id for d in second.downstream.spans() if d.attributes.get(sc.JUDGE_STATUS)}) == 4
            second.send(runs(1))  # and a new conversation after the restart is recorded as usual
            second.release()
    assert Counter(Counter(r.trace_id for r in history_rows(tmp_path / "in-process.db")).values()) == {1: 5}


def test_report_on_the_store_points_at_the_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mast_otel.cli import main as cli_main

    with in_process(tmp_path, judge=FakeJudge(on_judge=blames_the_coder)) as c:
        c.send(runs(3))
        c.release()
    assert cli_main(["report", "--store", str(c.store)]) == 0
    out = capsys.readouterr().out
    assert f"The verdict history beside this store holds 3 verdicts: mast-otel report --store {c.store}" in out
    assert cli_main(["report", "--store", str(c.store), "--from", "2023-11-01", "--to", "2023-12-01"]) == 0
    assert "2.3   Task derailment" in capsys.readouterr().out  # (the tests' clock starts on 2023-11-14)


def test_a_damaged_history_stops_the_start_with_what_to_do(tmp_path: Path) -> None:
    from mast_otel.collector.store.api import StoreError

    (tmp_path / "in-process.db.history").write_bytes(b"not a database" * 1000)
    with pytest.raises(StoreError, match=r"not a verdict history .*move it away"):
        with in_process(tmp_path):
            pass
