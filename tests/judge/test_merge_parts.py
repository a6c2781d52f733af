"""A run judged in two parts, merged into one verdict: who and when is the earliest message any part names (and
the verdict says which part named it), each mode's evidence and reason say which part saw what, and the verdict's
provenance counts both parts.

The answers are built here (the judge's JSON, parsed by the judge's own parser) and merged by ``to_verdict``
directly: no server, so each case costs one merge. The oracle is the conversation itself: the recorder's message
spans in order (``message_ids``: M1 is the first), and who sent each (``long_run``: coder on even turns).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pytest

from mast_otel import semconv as sc
from mast_otel.judge.config import JudgeConfig
from mast_otel.judge.llm import LLMJudge
from mast_otel.judge.merge import to_verdict
from mast_otel.judge.model import DecisiveStep, Verdict
from mast_otel.judge.output import JudgeOutput, parse_output
from mast_otel.judge.prepared import Prepared
from tests.judge.fake_openai import answer
from tests.judge.scenarios import message_ids
from tests.judge.test_long_traces import long_run

CONFIG = JudgeConfig(model="m", token_budget=4000, max_chunks=3, price_in_per_mtok=2.0, price_out_per_mtok=10.0)
TURNS = 30


@pytest.fixture(scope="module")
def run() -> tuple[list[str], Prepared]:
    """Thirty turns that need two parts under a 4,000-token budget: the message span ids and the prepared run."""
    spans = long_run(TURNS, 150)
    prepared = LLMJudge(CONFIG).prepare(spans)
    assert len(prepared.plan.chunks) == 2 and prepared.plan.truncated
    return message_ids(spans), prepared


def sender(ref: str) -> str:
    """Who sent message ``M<n>`` in ``long_run``: the coder opens, then they alternate; the reviewer ends it (any
    other reference: the coder, as a model might claim)."""
    n = int(ref[1:]) if ref[:1] == "M" else 1
    return "reviewer" if n == TURNS or n % 2 == 0 else "coder"


def part(
    evidence: Mapping[str, Sequence[str]] | None = None,
    *,
    reasons: Mapping[str, str] | None = None,
    summary: str = "ok",
    done: bool = True,
    decisive: str | None = None,
    why: str = "decided here",
) -> JudgeOutput:
    """One part's answer: modes present with their evidence (reason ``reason <mode>`` unless given), and the
    decisive message by reference (its sender as the transcript shows it)."""
    step = {"message": decisive, "agent": sender(decisive), "reason": why} if decisive else None
    body = json.loads(answer(dict(evidence or {}), summary=summary, done=done, decisive=step))
    for mode_id, reason in (reasons or {}).items():
        body["modes"][mode_id]["reason"] = reason
    return parse_output(json.dumps(body))


def merge(prepared: Prepared, *answers: JudgeOutput, partial: bool = False) -> Verdict:
    return to_verdict(CONFIG, prepared, answers, tokens=(1200, 300), partial=partial, extra={"cache": "miss"})


def step(ids: list[str], ref: str, why: str = "decided here") -> DecisiveStep:
    n = int(ref[1:])
    return DecisiveStep(ids[n - 1], n - 1, sender(ref), why)


# --- who and when, across parts ---------------------------------------------------------------------------------


def test_the_decisive_step_is_the_earliest_message_either_part_names(run: tuple[list[str], Prepared]) -> None:
    ids, prepared = run
    verdict = merge(prepared, part(decisive="M5"), part(decisive="M21"))
    assert verdict.decisive == step(ids, "M5") and verdict.extra["decisive_part"] == "1"
    # whichever part comes first in the list: the message order decides, not the part order
    verdict = merge(prepared, part(decisive="M22"), part(decisive="M7"))
    assert verdict.decisive == step(ids, "M7") and verdict.extra["decisive_part"] == "2"


def test_a_part_that_names_no_step_leaves_the_other_parts_step(run: tuple[list[str], Prepared]) -> None:
    ids, prepared = run
    for first, second, expected, named_by in ((None, "M24", "M24", "2"), ("M3", None, "M3", "1")):
        verdict = merge(prepared, part(decisive=first), part(decisive=second))
        assert verdict.decisive == step(ids, expected) and verdict.extra["decisive_part"] == named_by


def test_when_two_parts_name_the_same_message_the_first_parts_step_is_kept(run: tuple[list[str], Prepared]) -> None:
    ids, prepared = run
    verdict = merge(prepared, part(decisive="M19", why="first look"), part(decisive="M19", why="second look"))
    assert verdict.decisive == step(ids, "M19", "first look") and verdict.extra["decisive_part"] == "1"


def test_a_step_that_is_not_a_message_of_the_transcript_is_never_the_decisive_one(
    run: tuple[list[str], Prepared],
) -> None:
    """A handoff (``H``) or a reference the transcript lacks cannot be a decisive message; the other part's is
    kept, and with no valid one the verdict has none (and no part number)."""
    ids, prepared = run
    for bad in ("H2", "M99", "R"):
        verdict = merge(prepared, part(decisive=bad), part(decisive="M25"))
        assert verdict.decisive == step(ids, "M25") and verdict.extra["decisive_part"] == "2", bad
        alone = merge(prepared, part(decisive=bad), part())
        assert alone.decisive is None and "decisive_part" not in alone.extra, bad


def test_the_decisive_reason_is_one_line_within_240_characters(run: tuple[list[str], Prepared]) -> None:
    _, prepared = run
    verdict = merge(prepared, part(decisive="M2", why="sent the\nwrong   file " + "z" * 400), part())
    assert verdict.decisive is not None
    reason = verdict.decisive.reason
    assert len(reason) == 240 and reason.endswith("…") and reason.startswith("sent the wrong file zzz")


def test_one_part_names_its_step_without_a_part_number(run: tuple[list[str], Prepared]) -> None:
    ids, prepared = run
    verdict = merge(prepared, part(decisive="M4"))
    assert verdict.decisive == step(ids, "M4") and "decisive_part" not in verdict.extra


# --- evidence and reasons, by part ------------------------------------------------------------------------------


def test_evidence_by_part_names_each_part_that_saw_a_mode_and_what_it_cited(run: tuple[list[str], Prepared]) -> None:
    """A part that saw the mode but cited nothing the transcript holds shows ``-``; a part that did not see a mode
    is not listed for it; the evidence is the union, each message once, in the order cited."""
    ids, prepared = run
    first = part({"1.3": ["M2", "[M4]", "M99"], "2.6": ["M6"]})
    second = part({"1.3": ["M500"], "3.3": ["M20", "M2"]})
    verdict = merge(prepared, first, second)
    assert verdict.extra["evidence_by_part"] == "1.3: part 1 M2,M4; part 2 - | 2.6: part 1 M6 | 3.3: part 2 M20,M2"
    evidence = {m.mode_id: m.evidence_span_ids for m in verdict.modes}
    assert evidence == {"1.3": (ids[1], ids[3]), "2.6": (ids[5],), "3.3": (ids[19], ids[1])}
    assert verdict.extra["unknown_evidence_refs"] == "2"
    assert verdict.extra["unknown_evidence_examples"] == "M99,M500"


def test_both_parts_citing_the_same_message_give_it_once(run: tuple[list[str], Prepared]) -> None:
    ids, prepared = run
    verdict = merge(prepared, part({"1.3": ["M3", "M5"]}), part({"1.3": ["M5", "M21"]}))
    (label,) = verdict.modes
    assert label.evidence_span_ids == (ids[2], ids[4], ids[20])
    assert verdict.extra["evidence_by_part"] == "1.3: part 1 M3,M5; part 2 M5,M21"


def test_each_reason_names_its_part_and_a_part_with_no_reason_is_left_out(run: tuple[list[str], Prepared]) -> None:
    _, prepared = run
    three = (part({"1.3": ["M2"]}, reasons={"1.3": "loops\non the parser"}),
             part({"1.3": ["M20"]}, reasons={"1.3": "  "}),
             part({"1.3": ["M21"]}, reasons={"1.3": "loops again"}))  # fmt: skip
    (label,) = merge(prepared, *three).modes
    assert label.reason == "part 1: loops on the parser / part 3: loops again"
    (silent,) = merge(prepared, part({"1.3": ["M2"]}, reasons={"1.3": ""}), part()).modes
    assert (silent.mode_id, silent.reason) == ("1.3", "")


def test_the_joined_reason_is_one_line_within_480_characters(run: tuple[list[str], Prepared]) -> None:
    """Each part's reason is first cut to 240 characters, then the joined reason to 480: two long reasons keep
    the head of both."""
    _, prepared = run
    first = part({"1.3": ["M2"]}, reasons={"1.3": "a" * 300})
    second = part({"1.3": ["M20"]}, reasons={"1.3": "b" * 300})
    (label,) = merge(prepared, first, second).modes
    head = "part 1: " + "a" * 239 + "… / part 2: "
    assert label.reason == head + "b" * (479 - len(head)) + "…"
    assert len(label.reason) == 480


# --- what the verdict says about how it was reached ---------------------------------------------------------------


def test_a_verdict_in_parts_records_both_parts(run: tuple[list[str], Prepared]) -> None:
    _, prepared = run
    first = part({"1.3": ["M2"]}, summary="the coder repeats", done=True)
    second = part({"1.5": ["M30"]}, summary="  ", done=False)
    verdict = merge(prepared, first, second)
    extra = verdict.extra
    assert extra["chunks"] == "2" and extra["compaction"] == prepared.plan.describe()
    assert extra["prompt_tokens_counted"] == str(sum(prepared.prompt_tokens))
    assert extra["unknown_evidence_refs"] == "0" and "unknown_evidence_examples" not in extra
    assert extra["cache"] == "miss"  # what the caller adds is kept
    assert verdict.failure_modes == ("1.3", "1.5")
    assert verdict.summary == "the coder repeats"  # a blank summary adds nothing
    assert verdict.task_completed is False  # the last part holds the end of the run
    compacted = f"transcript compacted to the token budget ({prepared.plan.describe()})"
    assert (verdict.status, verdict.status_reason) == (sc.JUDGE_TRUNCATED, compacted)
    assert (verdict.source, verdict.model, verdict.tokens_in, verdict.tokens_out) == (sc.SOURCE_LLM, "m", 1200, 300)
    assert verdict.cost_usd == pytest.approx((1200 * 2.0 + 300 * 10.0) / 1_000_000)  # the configured prices


def test_the_same_summary_from_both_parts_is_said_once(run: tuple[list[str], Prepared]) -> None:
    _, prepared = run
    verdict = merge(prepared, part(summary="stuck in a loop"), part(summary="stuck in a loop "))
    assert verdict.summary == "stuck in a loop"
    both = merge(prepared, part(summary="first"), part(summary="second"))
    assert both.summary == "first | second"


def test_an_unfinished_run_in_parts_gives_both_reasons(run: tuple[list[str], Prepared]) -> None:
    _, prepared = run
    verdict = merge(prepared, part(), part(), partial=True)
    assert verdict.status == sc.JUDGE_PARTIAL
    assert verdict.status_reason == ("conversation not finished; judged on the spans seen so far; transcript "
                                     f"compacted to the token budget ({prepared.plan.describe()})")  # fmt: skip


def test_merging_no_answers_gives_a_verdict_that_claims_nothing(run: tuple[list[str], Prepared]) -> None:
    """No answer, no claim: no mode, no decisive step, and task completion unknown (not the last part's)."""
    _, prepared = run
    verdict = to_verdict(CONFIG, prepared, [], tokens=(0, 0), partial=False, extra={})
    assert (verdict.modes, verdict.decisive, verdict.task_completed, verdict.summary) == ((), None, None, "")
    assert "evidence_by_part" not in verdict.extra and "decisive_part" not in verdict.extra
