"""What ``judge_fraction`` and ``judge_token_budget_per_hour`` decide, conversation by conversation.

Unit tests of :class:`CostControls` on real recorder conversations (docs/collector.md, Judging): a conversation
with an error span or a confident structural signal is always judged; the rest are sampled by a hash of the
trace id, the same way after a restart, about ``judge_fraction`` of them; past the rolling hour's token budget
nothing is judged, and the reasons users see in ``mast.judge.status_reason`` name the knob.
"""

from __future__ import annotations

import random

import pytest

from mast_otel import semconv as sc
from mast_otel.collector.judge.cost_controls import CostControls
from mast_otel.collector.release.builder import compute_signals_of
from mast_otel.judge.model import Verdict
from mast_otel.recorder import Recorder
from mast_otel.spans import SpanRecord
from tests.collector.conftest import FakeClock
from tests.judge.scenarios import dialogue, record

_QUIET_TURNS = [
    ("planner", "coder", "Please add 2 and 3 and reply with the sum."),
    ("coder", "planner", "I checked it twice: the answer is 5."),
]


def quiet() -> list[SpanRecord]:
    """A finished conversation with no error span and no confident structural signal: sampling may leave it out."""
    records = dialogue(_QUIET_TURNS, termination=sc.TERMINATION_COMPLETED)
    assert not any(r.error for r in records)
    assert not any(s.confident for s in compute_signals_of(records))
    return records


def root(records: list[SpanRecord]) -> SpanRecord:
    (found,) = (r for r in records if r.span_type == sc.SPAN_TYPE_CONVERSATION)
    return found


def trace_ids(n: int) -> list[bytes]:
    """``n`` distinct 16-byte trace ids, the same on every run."""
    draw = random.Random(24)
    return [draw.getrandbits(128).to_bytes(16, "big") for _ in range(n)]


def judged(controls: CostControls, ids: list[bytes], records: list[SpanRecord]) -> set[bytes]:
    """The trace ids (each carrying ``records``) that ``controls`` sends to the judge."""
    top = root(records)
    return {t for t in ids if controls.sample(t, "conv", top, records) is None}


def controls(fraction: float = 1.0, budget: int = 0, clock: FakeClock | None = None) -> CostControls:
    return CostControls(fraction=fraction, token_budget_per_hour=budget, clock=clock or FakeClock())


# -- judge_fraction ----------------------------------------------------------------------------------------------


def test_every_conversation_is_judged_at_the_default_fraction() -> None:
    records = quiet()
    ids = trace_ids(200)
    assert judged(controls(fraction=1.0), ids, records) == set(ids)


def test_a_quiet_conversation_left_out_is_skipped_with_the_fraction_in_the_reason() -> None:
    records = quiet()
    verdict = controls(fraction=0.0).sample(trace_ids(1)[0], "conv", root(records), records)
    assert isinstance(verdict, Verdict)
    assert verdict.status == sc.JUDGE_SKIPPED
    assert verdict.status_reason == "sampled out (judge_fraction=0)"
    assert verdict.source == sc.SOURCE_NONE and not verdict.modes  # no invented "no failure"


@pytest.mark.parametrize("fraction", [0.1, 0.25, 0.5, 0.8])
def test_about_the_configured_fraction_of_quiet_conversations_is_judged(fraction: float) -> None:
    records = quiet()
    ids = trace_ids(2000)
    share = len(judged(controls(fraction=fraction), ids, records)) / len(ids)
    # 2,000 independent draws: the binomial standard deviation is at most 1.2 points; 4 points is > 3 sigma
    assert abs(share - fraction) < 0.04, share


def test_the_reason_names_the_configured_fraction() -> None:
    records = quiet()
    reasons = {
        v.status_reason
        for t in trace_ids(50)
        if (v := controls(fraction=0.25).sample(t, "conv", root(records), records)) is not None
    }
    assert reasons == {"sampled out (judge_fraction=0.25)"}


def test_sampling_is_the_same_after_a_restart_and_raising_the_fraction_only_adds_conversations() -> None:
    records = quiet()
    ids = trace_ids(1000)
    quarter = judged(controls(fraction=0.25), ids, records)
    assert judged(controls(fraction=0.25), ids, records) == quarter  # a new instance: the same answer
    half = judged(controls(fraction=0.5), ids, records)
    assert quarter < half < set(ids)


def test_two_conversations_of_one_trace_are_sampled_each_on_its_own() -> None:
    # A trace can carry several conversations (units); each is one judge call, each gets its own draw.
    records = quiet()
    top = root(records)
    sampler = controls(fraction=0.5)
    ids = trace_ids(400)
    first = {t for t in ids if sampler.sample(t, "first", top, records) is None}
    second = {t for t in ids if sampler.sample(t, "second", top, records) is None}
    assert first != second
    assert 0.3 < len(first & second) / len(first) < 0.7  # independent draws: about half of one is in the other


def test_a_conversation_with_an_error_span_is_judged_whatever_the_fraction() -> None:
    def failing_tool(rec: Recorder) -> None:
        with rec.agent_turn("planner"):
            rec.message("planner", ["coder"], _QUIET_TURNS[0][2])
        with rec.agent_turn("coder"):
            with pytest.raises(RuntimeError), rec.tool_call("add", arguments={"a": 2, "b": 3}):
                raise RuntimeError("tool crashed")
            rec.message("coder", ["planner"], _QUIET_TURNS[1][2])
        rec.terminate(sc.TERMINATION_COMPLETED)

    records = record(failing_tool)
    assert any(r.error for r in records)
    assert not any(s.confident for s in compute_signals_of(records))  # only the error span can keep it in
    ids = trace_ids(100)
    assert judged(controls(fraction=0.0), ids, records) == set(ids)


@pytest.mark.parametrize(
    "termination",
    [sc.TERMINATION_ERROR, sc.TERMINATION_MAX_ROUNDS, sc.TERMINATION_MAX_TURNS, sc.TERMINATION_MAX_AUTO_REPLIES],
)
def test_a_conversation_stopped_by_an_error_or_a_limit_is_judged_whatever_the_fraction(termination: str) -> None:
    records = dialogue(_QUIET_TURNS, termination=termination)
    ids = trace_ids(100)
    assert judged(controls(fraction=0.0), ids, records) == set(ids)


def test_a_conversation_with_a_confident_structural_signal_is_judged_whatever_the_fraction() -> None:
    repeated = "Here is the full plan again: parse input, compute the total, print the result, then stop."
    records = dialogue([(s, "team", repeated) for s in ("planner", "coder", "planner", "coder")])
    assert any(s.confident for s in compute_signals_of(records))
    ids = trace_ids(100)
    assert judged(controls(fraction=0.0), ids, records) == set(ids)


def test_a_weak_hint_alone_does_not_keep_a_conversation_from_sampling() -> None:
    # "too short" and "no verification" are weak hints: they fire on most conversations, so they must not count
    records = dialogue(_QUIET_TURNS[:1], termination=sc.TERMINATION_COMPLETED)
    hints = compute_signals_of(records)
    assert hints and not any(s.confident for s in hints)
    assert judged(controls(fraction=0.0), trace_ids(100), records) == set()


# -- judge_token_budget_per_hour ---------------------------------------------------------------------------------


def test_the_budget_stops_judging_once_the_hours_tokens_are_spent() -> None:
    clock = FakeClock()
    budget = controls(budget=1000, clock=clock)
    records = quiet()
    trace = trace_ids(1)[0]
    budget.spend(600)
    clock.advance(10)
    budget.spend(399)
    assert budget.spent() == 999
    assert budget.sample(trace, "conv", root(records), records) is None  # one token left: still judged
    budget.spend(1)
    verdict = budget.sample(trace, "conv", root(records), records)
    assert isinstance(verdict, Verdict)
    assert verdict.status == sc.JUDGE_SKIPPED
    assert verdict.status_reason == "judge token budget exhausted (1000 tokens per hour)"


def test_an_exhausted_budget_skips_even_a_conversation_that_is_always_sampled() -> None:
    budget = controls(budget=100)
    records = dialogue(_QUIET_TURNS, termination=sc.TERMINATION_ERROR)
    budget.spend(150)
    verdict = budget.sample(trace_ids(1)[0], "conv", root(records), records)
    assert verdict is not None and verdict.status == sc.JUDGE_SKIPPED


def test_tokens_leave_the_budget_an_hour_after_they_were_spent() -> None:
    clock = FakeClock()
    budget = controls(budget=1000, clock=clock)
    budget.spend(700)
    clock.advance(1800)
    budget.spend(300)
    clock.advance(1800)  # the first spend is exactly an hour old: still inside the rolling hour
    assert budget.spent() == 1000
    clock.advance(0.5)  # now it is older than an hour
    assert budget.spent() == 300
    records = quiet()
    assert budget.sample(trace_ids(1)[0], "conv", root(records), records) is None
    clock.advance(1800)
    assert budget.spent() == 0


def test_a_zero_budget_is_unlimited() -> None:
    budget = controls(budget=0)
    budget.spend(10**9)
    records = quiet()
    assert budget.spent() == 10**9
    assert budget.sample(trace_ids(1)[0], "conv", root(records), records) is None


def test_a_call_that_reported_no_tokens_costs_nothing() -> None:
    budget = controls(budget=10)
    budget.spend(0)
    budget.spend(4)
    assert budget.spent() == 4
