"""A paid verdict is in the journal before its release is written, in-process and fast (the kill -9 version with
real processes is tests/collector/test_paid_verdicts.py).

The release cannot be written (the store refuses it), so the collector still holds the spans; what a restart
would find is read from the journal file itself (``STORE.verdicts``) with a fresh :class:`VerdictJournal`, exactly
what a restarted store opens.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from mast_otel import semconv as sc
from mast_otel.collector.release.commit import verdict_from_json
from mast_otel.collector.store.verdicts import CLAIMED, VerdictJournal
from mast_otel.judge.model import Verdict
from tests.collector.conftest import FakeJudge, flag_messages, recorded
from tests.collector.sink import OtlpSink
from tests.collector.test_pipeline import roots, send


class HeldReleases:
    """The store's release writes wait at a gate, as behind another writer's lock: the window in which a kill -9
    after a paid judge call used to lose the verdict. Ingest writes go through."""

    def __init__(self, service: Any) -> None:
        self.waiting, self.gate = threading.Event(), threading.Event()
        real_write = service.store.write

        def gated(**kw: object) -> list[int]:
            if kw.get("tombs"):
                self.waiting.set()
                self.gate.wait(10)
            return list(real_write(**kw))

        service.store.write = gated


def judge_with_release_held(make_collector: Any, sink: OtlpSink, judge: FakeJudge, tmp_path: Path) -> str | None:
    """One conversation judged; what a restarted collector would find in the journal (``STORE.verdicts``) for it,
    read while its release waits; then the release goes on."""
    spans = recorded(1)
    (root,) = [s for s in spans if s.attributes and s.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_WORKFLOW]
    trace_id, unit = root.context.trace_id.to_bytes(16, "big"), f"{root.context.span_id:016x}"
    service = make_collector(sink, judge=judge, quiet_period=0.0)
    service.start(pipeline=False)
    send(service, spans)
    held = HeldReleases(service)
    service.release_now()
    assert held.waiting.wait(10), "the release never started"
    try:
        journal = VerdictJournal(str(tmp_path / "collector.db.verdicts"))
        journal.close()
        return journal.get(trace_id, unit)
    finally:
        held.gate.set()
        assert service.flush(timeout=10)


def test_a_paid_verdict_is_journalled_before_its_release(sink: OtlpSink, make_collector: Any, tmp_path: Path) -> None:
    # prepare: a judge that bills (tokens)
    judge = FakeJudge(on_judge=flag_messages("1.3"))
    # test: judged and paid; the journal is read while the release waits (a kill -9 there)
    saved = judge_with_release_held(make_collector, sink, judge, tmp_path)
    # verify: a restart finds the paid verdict itself, not just the claim that a call began; judged once
    assert len(judge.calls) == 1
    assert saved is not None and saved != CLAIMED
    verdict = verdict_from_json(saved)
    assert verdict.status == sc.JUDGE_OK and [m.mode_id for m in verdict.modes] == ["1.3"]
    assert (verdict.tokens_in, verdict.tokens_out, verdict.model) == (100, 20, "fake-model")
    # and the release, once it can be written, carries that verdict downstream
    (root,) = roots(sink.wait_count(len(recorded(1)), timeout=10))
    assert root.attributes[sc.FAILURE_MODES] == ("1.3",)


def test_a_free_verdict_is_not_journalled(sink: OtlpSink, make_collector: Any, tmp_path: Path) -> None:
    # a verdict that cost nothing (no tokens) is simply asked for again after a restart: only the claim is kept
    judge = FakeJudge(on_judge=lambda spans, partial: Verdict(status=sc.JUDGE_OK, source="rules"))
    saved = judge_with_release_held(make_collector, sink, judge, tmp_path)
    assert len(judge.calls) == 1
    assert saved in (None, CLAIMED)
