"""What the judge pool promises (docs/collector.md, Judging and Durability), on an in-process collector with an
injected clock: a judge that fails, answers garbage or overruns ``judge_timeout`` (queueing included) never holds
spans longer; its late answer is ignored but paid for; a partial conversation is reported partial; a paid call a
stop cut short is released as interrupted after the restart, never billed twice; queued calls are not started.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import semconv as sc
from mast_otel.collector.judge.judges import NoJudgeAvailable, SkipAllJudge
from mast_otel.collector.release.annotations import PhoenixAnnotationSink
from mast_otel.collector.store.verdicts import CLAIMED
from mast_otel.judge.model import Verdict
from mast_otel.judge.rules import NoModelJudge
from mast_otel.recorder import Recorder
from mast_otel.spans import SpanRecord
from tests.collector.conftest import FakeJudge, flag_messages, provider, recorded, wait_until
from tests.collector.in_process import Delivered, InProcess, in_process
from tests.collector.test_annotations import phoenix
from tests.collector.test_release_contents import looping
from tests.collector.test_store import FlakyStore

Behaviour = Callable[[Sequence[SpanRecord], bool], Verdict]


class Gate:
    """A judge behaviour that waits until opened (a model still thinking), then answers as ``answer`` does."""

    def __init__(self, answer: Behaviour | None = None) -> None:
        self.started = threading.Event()
        self.opened = threading.Event()
        self._answer = answer or flag_messages("1.3")

    def __call__(self, spans: Sequence[SpanRecord], partial: bool) -> Verdict:
        self.started.set()
        assert self.opened.wait(10), "the test never opened the gate"
        return self._answer(spans, partial)


@contextmanager
def opened_at_exit(gate: Gate) -> Iterator[Gate]:
    """The gate, opened when the test ends, so no judge thread outlives it blocked."""
    try:
        yield gate
    finally:
        gate.opened.set()


def roots(got: Sequence[Delivered]) -> list[Delivered]:
    return [d for d in got if d.attributes.get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_CONVERSATION]


def the_root(got: Sequence[Delivered]) -> dict[str, object]:
    (root,) = roots(got)
    return root.attributes


def logged(caplog: pytest.LogCaptureFixture, *parts: str) -> str:
    """The one log line that starts with ``parts[0]`` and names every other part (what an operator greps for)."""
    lines = [r.getMessage() for r in caplog.records]
    (line,) = [m for m in lines if m.startswith(parts[0]) and all(p in m for p in parts[1:])]
    return line


def root_id(spans: Sequence[ReadableSpan]) -> int:
    (root,) = (s for s in spans if (s.attributes or {}).get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_CONVERSATION)
    return int(root.context.span_id)


def trace_of(spans: Sequence[ReadableSpan]) -> str:
    return f"{spans[0].context.trace_id:032x}"


def raising(exc: Exception) -> Behaviour:
    def judge(spans: Sequence[SpanRecord], partial: bool) -> Verdict:
        raise exc

    return judge


def submit(c: InProcess, spans: Sequence[ReadableSpan]) -> float:
    """Send ``spans`` and step the pipeline past the quiet period: their conversations go to the judge. Returns
    the time they were submitted (their deadlines run from there)."""
    c.send(spans)
    c.clock.advance(1)
    c.service.tick()
    return c.clock.now


# -- a judge that fails ------------------------------------------------------------------------------------------


def test_a_judge_that_raises_releases_the_conversation_with_status_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spans = recorded(1)
    with in_process(tmp_path, judge=FakeJudge(on_judge=raising(RuntimeError("model exploded")))) as c:
        c.send(spans)
        c.release()
        got = c.downstream.spans()
        assert c.metric("mast_judge_errors_total", {"reason": "exception"}) == 1
        assert c.metric("mast_judge_in_flight") == 0
    assert len(got) == len(spans)
    root = the_root(got)
    assert root[sc.JUDGE_STATUS] == sc.JUDGE_ERROR
    assert root[sc.JUDGE_STATUS_REASON] == "judge failed: RuntimeError: model exploded"
    assert root[sc.LABEL_SOURCE] == sc.SOURCE_LLM  # the kind of judge that failed
    assert sc.FAILED not in root  # no invented "no failure"
    assert logged(caplog, "judge fake failed on trace", trace_of(spans), "RuntimeError: model exploded")


def test_a_judges_error_text_is_capped(tmp_path: Path) -> None:
    spans = recorded(1)
    with in_process(tmp_path, judge=FakeJudge(on_judge=raising(ValueError("x" * 5000)))) as c:
        c.send(spans)
        c.release()
        reason = the_root(c.downstream.spans())[sc.JUDGE_STATUS_REASON]
    assert isinstance(reason, str) and reason.startswith("judge failed: ValueError: xxx") and len(reason) == 500


def test_a_judge_that_answers_no_verdict_is_a_failed_judge(tmp_path: Path) -> None:
    def garbage(spans: Sequence[SpanRecord], partial: bool) -> Verdict:
        return {"status": "ok"}  # type: ignore[return-value]

    spans = recorded(1)
    with in_process(tmp_path, judge=FakeJudge(on_judge=garbage)) as c:
        c.send(spans)
        c.release()
        root = the_root(c.downstream.spans())
        assert c.metric("mast_judge_errors_total", {"reason": "exception"}) == 1
    assert root[sc.JUDGE_STATUS] == sc.JUDGE_ERROR
    assert root[sc.JUDGE_STATUS_REASON] == "judge failed: TypeError: judge returned dict, not a Verdict"


@pytest.mark.parametrize("name", [NoModelJudge.name, SkipAllJudge.name, NoJudgeAvailable.name])
def test_a_model_free_judge_that_fails_reports_no_model_as_the_source(tmp_path: Path, name: str) -> None:
    spans = recorded(1)
    with in_process(tmp_path, judge=FakeJudge(name=name, on_judge=raising(RuntimeError("bug")))) as c:
        c.send(spans)
        c.release()
        root = the_root(c.downstream.spans())
    assert root[sc.JUDGE_STATUS] == sc.JUDGE_ERROR and root[sc.LABEL_SOURCE] == sc.SOURCE_NONE


# -- deadlines -----------------------------------------------------------------------------------------------------


def test_a_judge_that_overruns_the_timeout_never_holds_the_spans_longer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spans = recorded(1)
    with opened_at_exit(Gate()) as gate, in_process(tmp_path, judge=FakeJudge(on_judge=gate), judge_timeout=5) as c:
        submit(c, spans)
        assert gate.started.wait(10)
        c.clock.advance(4.5)
        c.service.tick()  # within the deadline: held
        assert c.metric("mast_judge_in_flight") == 1 and c.downstream.spans() == []
        c.clock.advance(0.5)
        c.service.tick()  # the deadline: released with status error at once
        assert c.service.flush(timeout=10)
        got = c.downstream.spans()
        assert c.metric("mast_judge_errors_total", {"reason": "timeout"}) == 1
        assert c.metric("mast_judge_in_flight") == 0
    assert len(got) == len(spans)
    root = the_root(got)
    assert root[sc.JUDGE_STATUS] == sc.JUDGE_ERROR and root[sc.JUDGE_STATUS_REASON] == "judge timed out after 5s"
    assert logged(caplog, "judge fake overran judge_timeout on trace", trace_of(spans))


def test_the_deadline_includes_the_time_spent_queueing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    spans = recorded(2)  # two conversations, one judge worker
    gate = Gate()
    judge = FakeJudge(on_judge=gate)
    with opened_at_exit(gate), in_process(tmp_path, judge=judge, judge_timeout=5, judge_concurrency=1) as c:
        submit(c, spans)
        assert gate.started.wait(10)
        c.clock.advance(5)
        c.service.tick()
        assert c.service.flush(timeout=10)
        got = c.downstream.spans()
        assert c.metric("mast_judge_errors_total", {"reason": "timeout"}) == 2
        gate.opened.set()
        assert c.service.flush(timeout=10)
        assert len(c.downstream.spans()) == len(spans)  # the late answer releases nothing again
    assert len(got) == len(spans)
    assert {r.attributes[sc.JUDGE_STATUS] for r in roots(got)} == {sc.JUDGE_ERROR}
    assert len(judge.calls) == 1  # the queued conversation's judge call was never started
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # a cancelled call is no error


def test_a_judge_that_fails_after_its_deadline_is_dropped_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = recorded(1), recorded(1)
    gate = Gate(raising(RuntimeError("too late")))
    with opened_at_exit(gate), in_process(tmp_path, judge=FakeJudge(on_judge=gate), judge_timeout=5,
                                          judge_concurrency=1) as c:  # fmt: skip
        submit(c, first)
        assert gate.started.wait(10)
        c.clock.advance(5)
        c.service.tick()  # released with status error; the call goes on
        assert c.service.flush(timeout=10)
        gate.opened.set()  # it fails now, after its conversation left
        c.send(second)  # one worker: judged once the late call is done with
        c.release()
        got = c.downstream.spans()
        assert c.metric("mast_judge_errors_total", {"reason": "timeout"}) == 1
        assert c.metric("mast_judge_errors_total", {"reason": "exception"}) == 1  # the second's, not the late one
    assert len(got) == len(first) + len(second)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def priced(spans: Sequence[SpanRecord], partial: bool) -> Verdict:
    """A model's verdict with its price: 100 tokens in, 20 out, 2 cents."""
    return dataclasses.replace(flag_messages("1.3")(spans, partial), cost_usd=0.02)


def test_a_late_answer_is_ignored_but_its_tokens_and_cost_count(tmp_path: Path) -> None:
    first, second = recorded(1), recorded(1)
    with (
        opened_at_exit(Gate(priced)) as gate,
        in_process(tmp_path, judge=FakeJudge(on_judge=gate), judge_timeout=5, judge_token_budget_per_hour=100) as c,
    ):
        submit(c, first)
        assert gate.started.wait(10)
        c.clock.advance(5)
        c.service.tick()
        assert c.service.flush(timeout=10)
        gate.opened.set()  # the judge answers after the deadline: 100 tokens in, 20 out, paid for
        wait_until(lambda: c.metric("mast_judge_tokens_total", {"direction": "in"}) == 100, timeout=10)
        assert c.metric("mast_judge_tokens_total", {"direction": "out"}) == 20
        assert c.metric("mast_judge_cost_usd_total") == 0.02
        c.send(second)
        c.release()  # the budget is spent: the next conversation is not judged
        got = c.downstream.spans()
    assert len(got) == len(first) + len(second)
    statuses = sorted(str(r.attributes[sc.JUDGE_STATUS]) for r in roots(got))
    assert statuses == [sc.JUDGE_ERROR, sc.JUDGE_SKIPPED]
    (skipped,) = (r for r in roots(got) if r.attributes[sc.JUDGE_STATUS] == sc.JUDGE_SKIPPED)
    assert skipped.attributes[sc.JUDGE_STATUS_REASON] == "judge token budget exhausted (100 tokens per hour)"


def test_tokens_a_judge_reports_fill_the_budget(tmp_path: Path) -> None:
    first, second = recorded(1), recorded(1)
    with in_process(tmp_path, judge=FakeJudge(on_judge=flag_messages("1.3")), judge_token_budget_per_hour=120) as c:
        c.send(first)
        c.release()  # 100 + 20 tokens: the hour's budget
        c.send(second)
        c.release()
        got = c.downstream.spans()
    statuses = [r.attributes[sc.JUDGE_STATUS] for r in roots(got)]
    assert sorted(map(str, statuses)) == [sc.JUDGE_OK, sc.JUDGE_SKIPPED]


def quiet_conversation() -> list[ReadableSpan]:
    """One short message and a normal end: no error, no confident signal, so sampling may leave it out."""
    memory = InMemorySpanExporter()
    tp = provider(memory)
    rec = Recorder(tracer_provider=tp, framework="custom")
    with rec.conversation("quiet"), rec.agent_turn("planner"):
        rec.message("planner", ["coder"], "ok")
        rec.terminate(sc.TERMINATION_COMPLETED)
    tp.shutdown()
    return list(memory.get_finished_spans())


def test_only_judge_calls_are_timed_and_a_sampled_out_conversation_costs_no_call(tmp_path: Path) -> None:
    judge = FakeJudge(on_judge=flag_messages("1.3"))
    with in_process(tmp_path, judge=judge, judge_fraction=0.0) as c:
        c.send(quiet_conversation())  # sampled out
        c.send(looping())  # two agents repeating themselves: a confident signal, always judged
        c.release()
        statuses = sorted(str(r.attributes[sc.JUDGE_STATUS]) for r in roots(c.downstream.spans()))
        assert c.metric("mast_judge_duration_seconds_count", {"source": sc.SOURCE_LLM}) == 1
        assert c.metric("mast_judge_duration_seconds_count", {"source": sc.SOURCE_NONE}) == 0
        assert 0 <= c.metric("mast_judge_duration_seconds_sum", {"source": sc.SOURCE_LLM}) < 30  # a fake's call
    assert statuses == [sc.JUDGE_OK, sc.JUDGE_SKIPPED] and len(judge.calls) == 1


# -- partial conversations -----------------------------------------------------------------------------------------


def test_a_conversation_without_its_root_is_judged_partial_and_says_why(tmp_path: Path) -> None:
    spans = recorded(1)
    judge = FakeJudge(on_judge=lambda spans, partial: Verdict(status=sc.JUDGE_OK, source=sc.SOURCE_LLM))
    with in_process(tmp_path, judge=judge) as c:
        c.send([s for s in spans if (s.attributes or {}).get(sc.MAST_SPAN_TYPE) != sc.SPAN_TYPE_CONVERSATION])
        c.release(61)  # past max_trace_age
        (verdict,) = (d for d in c.downstream.spans() if d.name == sc.VERDICT_SPAN_NAME)
    ((_, partial),) = judge.calls
    assert partial is True  # the judge is told
    assert verdict.attributes[sc.JUDGE_STATUS] == sc.JUDGE_PARTIAL  # an "ok" on part of a conversation is partial
    assert verdict.attributes[sc.JUDGE_STATUS_REASON] == "conversation not finished; judged on the spans seen so far"


def test_a_judge_that_itself_answers_partial_gets_the_reason_too(tmp_path: Path) -> None:
    spans = recorded(1)
    judge = FakeJudge()  # answers "partial", without a reason, when told the conversation is partial
    with in_process(tmp_path, judge=judge) as c:
        c.send([s for s in spans if (s.attributes or {}).get(sc.MAST_SPAN_TYPE) != sc.SPAN_TYPE_CONVERSATION])
        c.release(61)
        (verdict,) = (d for d in c.downstream.spans() if d.name == sc.VERDICT_SPAN_NAME)
    assert verdict.attributes[sc.JUDGE_STATUS] == sc.JUDGE_PARTIAL
    assert verdict.attributes[sc.JUDGE_STATUS_REASON] == "conversation not finished; judged on the spans seen so far"


def test_a_partial_verdict_keeps_the_judges_own_reason_and_an_error_stays_an_error(tmp_path: Path) -> None:
    answers = iter([
        Verdict(status=sc.JUDGE_OK, source=sc.SOURCE_LLM, status_reason="only the planner's turn was readable"),
        Verdict.error(sc.SOURCE_LLM, "model refused"),
    ])  # fmt: skip
    judge = FakeJudge(on_judge=lambda spans, partial: next(answers))
    spans = recorded(1)
    without_root = [s for s in spans if (s.attributes or {}).get(sc.MAST_SPAN_TYPE) != sc.SPAN_TYPE_CONVERSATION]
    with in_process(tmp_path, judge=judge) as c:
        c.send(without_root)
        c.release(61)
        c.send([s for s in recorded(1) if (s.attributes or {}).get(sc.MAST_SPAN_TYPE) != sc.SPAN_TYPE_CONVERSATION])
        c.release(61)
        verdicts = [d.attributes for d in c.downstream.spans() if d.name == sc.VERDICT_SPAN_NAME]
    assert [(v[sc.JUDGE_STATUS], v[sc.JUDGE_STATUS_REASON]) for v in verdicts] == [
        (sc.JUDGE_PARTIAL, "only the planner's turn was readable"),
        (sc.JUDGE_ERROR, "model refused"),
    ]


def test_a_root_that_recorded_more_messages_than_arrived_is_judged_partial(tmp_path: Path) -> None:
    spans = recorded(1)  # four messages
    lost = next(s for s in spans if (s.attributes or {}).get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_MESSAGE)
    judge = FakeJudge()
    with in_process(tmp_path, judge=judge) as c:
        c.send([s for s in spans if s is not lost])
        c.release()
        root = the_root(c.downstream.spans())
    ((_, partial),) = judge.calls
    assert partial is True
    assert root[sc.JUDGE_STATUS] == sc.JUDGE_PARTIAL
    assert root[sc.JUDGE_STATUS_REASON] == (
        "3 of the 4 messages the conversation recorded arrived here; judged on those"
    )


@pytest.mark.parametrize("rounds", [None, True], ids=["no count", "not a number"])
def test_a_root_without_a_message_count_is_judged_on_what_arrived(tmp_path: Path, rounds: bool | None) -> None:
    # An older recorder (or another writer of mast-otel roots) may leave the count out: nothing says a part is missing
    request = encode_spans(recorded(1))
    for span in (s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans):
        for kv in span.attributes:
            if kv.key == sc.CONVERSATION_ROUNDS:
                if rounds is None:
                    kv.key = "x.rounds.removed"
                else:
                    kv.value.Clear()
                    kv.value.bool_value = rounds
    judge = FakeJudge()
    with in_process(tmp_path, judge=judge) as c:
        c.send(request)
        c.release()
        root = the_root(c.downstream.spans())
    ((_, partial),) = judge.calls
    assert partial is False and root[sc.JUDGE_STATUS] == sc.JUDGE_OK


def test_a_whole_conversation_is_judged_as_whole(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    judge = FakeJudge()
    with in_process(tmp_path, judge=judge) as c:
        c.send(recorded(1))
        c.release()
        root = the_root(c.downstream.spans())
        # nothing is left behind: no job, no held span, no conversation the assembler still tracks as in flight
        assert c.metric("mast_judge_in_flight") == 0 and c.service.assembler.held_spans == 0
        assert c.service.assembler.inflight == 0
    ((_, partial),) = judge.calls
    assert partial is False and root[sc.JUDGE_STATUS] == sc.JUDGE_OK and sc.JUDGE_STATUS_REASON not in root
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # nothing to report (no sink either)


# -- stop and restart ----------------------------------------------------------------------------------------------


def stop_while_judging(tmp_path: Path, spans: Sequence[ReadableSpan], gate: Gate, name: str = "fake") -> InProcess:
    """A collector stopped (0.2 s grace) while its judge call on ``spans`` still runs: what a restart finds."""
    with in_process(tmp_path, judge=FakeJudge(name=name, on_judge=gate), judge_shutdown_grace=0.2) as first:
        submit(first, spans)
        assert gate.started.wait(10)
    return first


def test_a_paid_call_a_stop_cut_short_is_released_as_interrupted_and_not_billed_again(tmp_path: Path) -> None:
    spans = recorded(1)
    with opened_at_exit(Gate()) as gate:
        first = stop_while_judging(tmp_path, spans, gate)
        assert first.downstream.spans() == []  # stopped with the call running: its spans stay held
        judge = FakeJudge(on_judge=flag_messages("1.3"))
        with in_process(tmp_path, judge=judge) as second:
            second.release()
            got = second.downstream.spans()
            assert second.metric("mast_judge_errors_total", {"reason": "interrupted"}) == 1
    assert judge.calls == []
    assert len(got) == len(spans)
    root = the_root(got)
    assert root[sc.JUDGE_STATUS] == sc.JUDGE_ERROR
    assert "never billed twice" in str(root[sc.JUDGE_STATUS_REASON])


def test_judge_interrupted_again_judges_a_cut_short_call_again(tmp_path: Path) -> None:
    spans = recorded(1)
    with opened_at_exit(Gate()) as gate:
        stop_while_judging(tmp_path, spans, gate)
        judge = FakeJudge(on_judge=flag_messages("1.3"))
        with in_process(tmp_path, judge=judge, judge_interrupted="again") as second:
            second.release()
            root = the_root(second.downstream.spans())
            assert second.metric("mast_judge_errors_total", {"reason": "interrupted"}) == 0
    assert len(judge.calls) == 1 and root[sc.JUDGE_STATUS] == sc.JUDGE_OK


def test_a_model_free_judge_cut_short_simply_runs_again(tmp_path: Path) -> None:
    spans = recorded(1)
    with opened_at_exit(Gate()) as gate:
        stop_while_judging(tmp_path, spans, gate, name="signals")
        judge = FakeJudge(name="signals")
        with in_process(tmp_path, judge=judge) as second:
            second.release()
            root = the_root(second.downstream.spans())
            assert second.metric("mast_judge_errors_total", {"reason": "interrupted"}) == 0
    assert len(judge.calls) == 1 and root[sc.JUDGE_STATUS] == sc.JUDGE_OK


def test_queued_conversations_are_not_started_at_a_stop_and_are_judged_after_the_restart(tmp_path: Path) -> None:
    spans = recorded(3)  # three conversations, one worker: one running, two queued at the stop
    gate = Gate()
    judge = FakeJudge(on_judge=gate)
    with opened_at_exit(gate):
        with in_process(tmp_path, judge=judge, judge_concurrency=1, judge_shutdown_grace=0.2) as first:
            submit(first, spans)
            assert gate.started.wait(10)
        gate.opened.set()
        assert len(judge.calls) == 1
        again = FakeJudge(on_judge=flag_messages("1.3"))
        with in_process(tmp_path, judge=again) as second:
            second.release()
            got = second.downstream.spans()
            assert second.metric("mast_judge_errors_total", {"reason": "interrupted"}) == 1
    assert len(again.calls) == 2 and len(got) == len(spans)
    assert sorted(str(r.attributes[sc.JUDGE_STATUS]) for r in roots(got)) == [
        sc.JUDGE_ERROR,
        sc.JUDGE_OK,
        sc.JUDGE_OK,
    ]
    assert len(judge.calls) == 1  # no queued call started after the stop


def test_a_stop_waits_for_the_running_calls_only_and_says_how_many_are_left(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spans = recorded(3)  # one call running, two queued (cancelled at the stop, not waited for)
    with opened_at_exit(Gate()) as gate:
        with in_process(tmp_path, judge=FakeJudge(on_judge=gate), judge_concurrency=1,
                        judge_shutdown_grace=0.3) as first:  # fmt: skip
            submit(first, spans)
            assert gate.started.wait(10)
    (line,) = [r.getMessage() for r in caplog.records if "still being judged" in r.getMessage()]
    assert line.startswith("stopping with 1 conversations still being judged")


def test_a_call_that_finishes_within_the_grace_is_released_before_the_stop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spans = recorded(1)
    gate = Gate()
    with opened_at_exit(gate):
        with in_process(tmp_path, judge=FakeJudge(on_judge=gate), judge_shutdown_grace=5) as first:
            submit(first, spans)
            assert gate.started.wait(10)
            threading.Timer(0.2, gate.opened.set).start()  # the model answers while the collector stops
            first.service.stop(grace=0.2)
            assert first.service.judges.in_flight == 0
        # the released conversation waits in the outbox for the next start, which sends it without judging
        judge = FakeJudge()
        with in_process(tmp_path, judge=judge) as second:
            second.release()
            root = the_root(second.downstream.spans())
    assert judge.calls == [] and root[sc.FAILURE_MODES] == ("1.3",)
    assert not [r for r in caplog.records if "still being judged" in r.getMessage()]


# -- what else a release touches ---------------------------------------------------------------------------------


def test_stored_bytes_that_cannot_be_read_back_are_quarantined_not_retried(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spans = recorded(1)
    judge = FakeJudge()
    with in_process(tmp_path, judge=judge) as c:
        c.send(spans)
        with sqlite3.connect(c.store) as db:  # a damaged row
            db.execute("UPDATE segment SET data = ?", (b"\x0a\x05abc",))
        c.release()
        c.release()
        assert c.metric("mast_collector_segments_quarantined_total", {"stage": "release"}) == 1
        assert c.metric("mast_judge_errors_total", {"reason": "store"}) == 0  # not retried as a store error
        assert c.metric("mast_judge_in_flight") == 0 and c.service.assembler.held_spans == 0
        assert c.service.assembler.inflight == 0  # nothing of it left behind
        assert c.downstream.spans() == []
        with sqlite3.connect(c.store) as db:
            ((reason,),) = db.execute("SELECT reason FROM quarantine").fetchall()
    assert judge.calls == []
    assert reason.startswith(("ValueError", "DecodeError", "IndexError")), reason  # why the bytes are unreadable
    assert reason in logged(caplog, f"{len(spans)} spans of trace {trace_of(spans)} cannot be read back")


def test_each_verdict_is_posted_to_phoenix_on_its_root_and_evidence(tmp_path: Path) -> None:
    spans = recorded(1)
    root = next(s for s in spans if (s.attributes or {}).get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_CONVERSATION)
    evidence = {f"{s.context.span_id:016x}" for s in spans if (s.attributes or {}).get(sc.MAST_SPAN_TYPE) == "message"}
    with phoenix([200]) as (fake, url), in_process(tmp_path, judge=FakeJudge(on_judge=flag_messages("1.3")),
                                                   phoenix_url=url) as c:  # fmt: skip
        assert c.service.annotations is not None
        c.service.annotations.start()
        c.send(spans)
        c.release()
        wait_until(lambda: bool(fake.posts), timeout=10)
    posted = {(r["span_id"], r["name"]) for _, _, body in fake.posts for r in body["data"]}
    assert {r["metadata"]["trace_id"] for _, _, body in fake.posts for r in body["data"]} == {
        f"{root.context.trace_id:032x}"
    }
    assert (f"{root.context.span_id:016x}", "MAST verdict") in posted
    assert {sid for sid, name in posted if name == "MAST 1.3 Step repetition"} >= evidence


def test_a_failing_verdict_sink_never_fails_a_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(self: PhoenixAnnotationSink, verdict: Verdict, trace_id: str, root_span_id: str | None) -> None:
        raise RuntimeError("sink bug")

    monkeypatch.setattr(PhoenixAnnotationSink, "submit", broken)
    spans = recorded(1)
    with in_process(tmp_path, judge=FakeJudge(on_judge=flag_messages("1.3")), phoenix_url="http://127.0.0.1:9") as c:
        c.send(spans)
        c.release()
        got = c.downstream.spans()
        assert c.metric("mast_judge_in_flight") == 0
    assert len(got) == len(spans) and the_root(got)[sc.FAILURE_MODES] == ("1.3",)
    trace = f"{spans[0].context.trace_id:032x}"
    assert logged(caplog, "verdict sink failed for trace", trace)


def restart_releases_the_kept_verdict(tmp_path: Path) -> None:
    """A restart on the same store releases the verdict kept there (1.3): no judge call, not as interrupted."""
    judge = FakeJudge()
    with in_process(tmp_path, judge=judge) as second:
        second.release()
        root = the_root(second.downstream.spans())
        assert second.metric("mast_judge_errors_total", {"reason": "interrupted"}) == 0
    assert judge.calls == [] and root[sc.FAILURE_MODES] == ("1.3",)


def refusing_releases(path: str) -> FlakyStore:
    """A real store that refuses every release (a write with a tombstone), as a full disk would."""

    def refuse(kw: dict[str, Sequence[Any]]) -> None:
        if kw.get("tombs"):
            raise OSError("disk full")

    store = FlakyStore(path)
    store.on_write = refuse  # type: ignore[method-assign]
    return store


def unpaid(spans: Sequence[SpanRecord], partial: bool) -> Verdict:
    """A user judge's verdict that reports no tokens (kept only when its release fails)."""
    return dataclasses.replace(flag_messages("1.3")(spans, partial), tokens_in=0, tokens_out=0)


@pytest.mark.parametrize("answer", [flag_messages("1.3"), unpaid], ids=["tokens reported", "no tokens reported"])
def test_a_verdict_the_store_refused_is_kept_and_released_after_a_restart_without_judging_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, answer: Behaviour
) -> None:
    spans = recorded(1)
    with in_process(tmp_path, judge=FakeJudge(on_judge=answer), make_store=refusing_releases,
                    judge_shutdown_grace=0.3) as first:  # fmt: skip
        submit(first, spans)
        wait_until(lambda: first.metric("mast_judge_errors_total", {"reason": "store"}) == 1, timeout=10)
        # The error is counted just before it is logged, in the judge's thread: wait for the line too.
        wait_until(lambda: any(r.getMessage().startswith("could not store the verdict") for r in caplog.records),
                   timeout=10)  # fmt: skip
        assert "retrying" in logged(caplog, "could not store the verdict for trace", trace_of(spans))
        first.service.tick()  # retried, refused again: still one conversation waiting
        assert first.metric("mast_judge_errors_total", {"reason": "store"}) == 2
        assert first.metric("mast_judge_in_flight") == 1
    # awaiting a retry is not being judged: the stop does not wait for it
    assert not [r for r in caplog.records if "still being judged" in r.getMessage()]
    restart_releases_the_kept_verdict(tmp_path)


def test_judge_calls_run_on_the_named_judge_workers(tmp_path: Path) -> None:
    # Thread dumps and profiles (py-spy, docs/collector.md's profiling notes) tell the judge workers by name.
    threads: list[str] = []

    def record_thread(spans: Sequence[SpanRecord], partial: bool) -> Verdict:
        threads.append(threading.current_thread().name)
        return Verdict(status=sc.JUDGE_OK, source=sc.SOURCE_LLM)

    with in_process(tmp_path, judge=FakeJudge(on_judge=record_thread), judge_concurrency=2) as c:
        c.send(recorded(3))
        c.release()
    assert len(threads) == 3 and all(re.fullmatch(r"judge_[01]", name) for name in threads), threads


@pytest.mark.parametrize(
    "price",
    [{"tokens_in": 100}, {"tokens_out": 20}, {"cost_usd": 0.02}],
    ids=["tokens in", "tokens out", "cost"],
)
def test_a_paid_verdict_survives_a_crash_before_its_release(tmp_path: Path, price: dict[str, Any]) -> None:
    """The collector dies while writing the release (here: the write never returns, and a second collector
    opens the same store, as a restart after ``kill -9`` would): the verdict the judge was paid for is used,
    and the judge is not called (billed) again."""
    writing, gone = threading.Event(), threading.Event()

    def dies_writing(path: str) -> FlakyStore:
        def hang(kw: dict[str, Sequence[Any]]) -> None:
            if kw.get("tombs"):
                writing.set()
                gone.wait(10)
                raise OSError("the process is gone")

        store = FlakyStore(path)
        store.on_write = hang  # type: ignore[method-assign]
        return store

    def paid(spans: Sequence[SpanRecord], partial: bool) -> Verdict:
        answer = dataclasses.replace(flag_messages("1.3")(spans, partial), tokens_in=0, tokens_out=0)
        return dataclasses.replace(answer, **price)

    spans = recorded(1)
    try:
        with in_process(tmp_path, judge=FakeJudge(on_judge=paid), make_store=dies_writing,
                        judge_shutdown_grace=0.2) as first:  # fmt: skip
            submit(first, spans)
            assert writing.wait(10)
            judge = FakeJudge()
            with in_process(tmp_path, judge=judge) as restarted:
                restarted.release()
                root = the_root(restarted.downstream.spans())
            gone.set()
    finally:
        gone.set()
    assert judge.calls == [] and root[sc.FAILURE_MODES] == ("1.3",)


def test_a_conversation_awaiting_a_store_retry_is_never_timed_out(tmp_path: Path) -> None:
    refused: list[int] = []

    def refuse_once(path: str) -> FlakyStore:
        def refuse(kw: dict[str, Sequence[Any]]) -> None:
            if kw.get("tombs") and not refused:
                refused.append(1)
                raise OSError("disk full")

        store = FlakyStore(path)
        store.on_write = refuse  # type: ignore[method-assign]
        return store

    spans = recorded(1)
    with in_process(tmp_path, judge=FakeJudge(on_judge=flag_messages("1.3")), make_store=refuse_once,
                    judge_timeout=5) as c:  # fmt: skip
        submit(c, spans)
        wait_until(lambda: bool(refused), timeout=10)
        c.release(10)  # past the judge's deadline: the retry still carries the verdict the judge gave
        root = the_root(c.downstream.spans())
        assert c.metric("mast_judge_errors_total", {"reason": "timeout"}) == 0
    assert root[sc.JUDGE_STATUS] == sc.JUDGE_OK and root[sc.FAILURE_MODES] == ("1.3",)


@pytest.mark.parametrize("where", ["after the grace", "at the pipeline lock"])
def test_an_answer_that_arrives_once_the_grace_is_over_is_kept_for_the_next_start(tmp_path: Path, where: str) -> None:
    """The grace is over (nothing more is released), but the store is still open: the judge's answer is kept, and
    the next start releases it without calling the judge again (not as interrupted)."""
    spans = recorded(1)
    with opened_at_exit(Gate(unpaid)) as gate:  # no tokens reported: kept only by the stop's own bookkeeping
        with in_process(tmp_path, judge=FakeJudge(on_judge=gate), judge_shutdown_grace=0.1) as first:
            submit(first, spans)
            assert gate.started.wait(10)
            if where == "after the grace":
                first.service.judges.shutdown(0.1)
                gate.opened.set()
            else:  # the answer's release waits for the pipeline lock while the grace ends
                with first.service.lock:
                    gate.opened.set()
                    time.sleep(0.3)
                    first.service.judges.shutdown(0.1)
            trace, key = spans[0].context.trace_id.to_bytes(16, "big"), f"{root_id(spans):016x}"
            wait_until(lambda: first.service.store.verdict(trace, key) not in (None, CLAIMED), timeout=10)
            assert first.downstream.spans() == []  # nothing released after the grace
        restart_releases_the_kept_verdict(tmp_path)


def test_a_rootless_conversation_goes_to_phoenix_without_an_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spans = recorded(1)
    without_root = [s for s in spans if (s.attributes or {}).get(sc.MAST_SPAN_TYPE) != sc.SPAN_TYPE_CONVERSATION]
    with phoenix([200]) as (fake, url), in_process(tmp_path, judge=FakeJudge(on_judge=flag_messages("1.3")),
                                                   phoenix_url=url) as c:  # fmt: skip
        assert c.service.annotations is not None
        c.service.annotations.start()
        c.send(without_root)
        c.release(61)
        wait_until(lambda: bool(fake.posts), timeout=10)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_pool_that_was_shut_down_starts_no_judge_call(tmp_path: Path) -> None:
    judge = FakeJudge()
    with in_process(tmp_path, judge=judge) as c:
        c.send(recorded(1))
        held = c.service.assembler.held_spans
        c.service.judges.shutdown(0)
        c.clock.advance(1)
        c.service.tick()  # due now, but the pool takes no new work: the spans stay held for the next start
        assert c.metric("mast_judge_in_flight") == 0 and c.service.assembler.held_spans == held
    assert judge.calls == []
