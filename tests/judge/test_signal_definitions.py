"""Each structural signal at the edges of its definition in the catalogue (``SIGNALS``): the bound itself and one
step past it, for every count, length and reason the definition names. The definitions are the oracle; a signal
that fires one message early or late, or on a reason it does not list, tells a user something that did not happen.
"""

from __future__ import annotations

import dataclasses

import pytest

from mast_otel import semconv as sc
from mast_otel.judge.signals import MIN_CHARS, MIN_WORDS, Signal, compute_signals
from mast_otel.judge.view import build_view
from mast_otel.spans import SpanRecord
from tests.judge.scenarios import dialogue, message_ids


def found(spans: list[SpanRecord]) -> dict[str, Signal]:
    return {s.name: s for s in compute_signals(build_view(spans))}


def _text(chars: int, words: int) -> str:
    """A message of exactly ``chars`` characters and ``words`` words."""
    assert chars >= 2 * words - 1
    head = ["w"] * (words - 1)
    last = "x" * (chars - len(" ".join(head)) - (1 if head else 0))
    return " ".join([*head, last])


@pytest.mark.parametrize(("chars", "words", "counts"), [(MIN_CHARS, MIN_WORDS, True), (MIN_CHARS - 1, MIN_WORDS, False),
                                                        (MIN_CHARS, MIN_WORDS - 1, False), (80, 20, True)])  # fmt: skip
def test_a_repeat_counts_from_the_substantive_length_on(chars: int, words: int, counts: bool) -> None:
    """Substantive: at least MIN_WORDS words and MIN_CHARS characters (both bounds included)."""
    text = _text(chars, words)
    assert (len(text), len(text.split())) == (chars, words)
    spans = dialogue([("coder", "tester", text), ("tester", "coder", "ok"), ("coder", "tester", text)])
    assert ("repeated_message" in found(spans)) is counts


def test_agents_whose_names_differ_only_in_case_are_different_agents() -> None:
    """The same text from "Coder" and "coder" is two agents saying it once each, not one agent repeating."""
    text = _text(60, 10)
    assert "repeated_message" not in found(dialogue([("Coder", "x", text), ("x", "coder", "ok"), ("coder", "x", text)]))


def test_a_near_duplicate_names_its_agent() -> None:
    loop = "Please run the full test suite again and report every failing test with its traceback."
    spans = dialogue([("solver", "b", loop), ("b", "solver", "ok"), ("solver", "b", loop.replace("every", "each"))])
    signal = found(spans)["repeated_message"]
    assert signal.detail.endswith("(solver)") and not signal.confident  # one copy: a hint, not confident
    assert set(signal.evidence_span_ids) == {message_ids(spans)[0], message_ids(spans)[2]}


def _without_reason(spans: list[SpanRecord]) -> list[SpanRecord]:
    """The spans as a recorder that knew no stop reason writes them (the root without mast.termination.reason)."""
    return [dataclasses.replace(s, attributes={k: v for k, v in s.attributes.items() if k != sc.TERMINATION_REASON})
            if s.is_conversation_root else s for s in spans]  # fmt: skip


@pytest.mark.parametrize(
    ("messages", "max_rounds", "fires"), [(4, 4, True), (4, 5, False), (5, 4, True), (4, 0, False)]
)
def test_the_round_limit_without_a_reason_is_reached_at_max_rounds(messages: int, max_rounds: int, fires: bool) -> None:
    """No reason recorded: the message count reached (>=) mast.conversation.max_rounds (a positive one); with a
    reason, the reason decides."""
    spans = dialogue([("a", "b", f"step {i}") for i in range(messages)], max_rounds=max_rounds)
    assert ("round_limit" in found(_without_reason(spans))) is fires
    assert "round_limit" not in found(spans)  # "completed": the framework's own stop reason is the fact


@pytest.mark.parametrize(
    "reason",
    [sc.TERMINATION_MAX_ROUNDS, sc.TERMINATION_MAX_TURNS, sc.TERMINATION_MAX_AUTO_REPLIES, sc.TERMINATION_BUDGET],
)
def test_every_limit_reason_is_a_round_limit_and_confident(reason: str) -> None:
    signal = found(dialogue([("a", "b", "one"), ("b", "a", "two"), ("a", "b", "three")], termination=reason))
    assert signal["round_limit"].confident and reason in signal["round_limit"].detail


@pytest.mark.parametrize(
    ("reason", "fires", "confident"),
    [(sc.TERMINATION_ERROR, True, True), (sc.TERMINATION_NO_REPLY, True, False),
     (sc.TERMINATION_NO_SPEAKER, True, False), (sc.TERMINATION_USER_EXIT, True, False),
     (sc.TERMINATION_IDLE, False, False), (sc.TERMINATION_MESSAGE, False, False),
     (sc.TERMINATION_COMPLETED, False, False)],
)  # fmt: skip
def test_stopped_early_is_the_listed_reasons_and_only_an_error_is_confident(
    reason: str, fires: bool, confident: bool
) -> None:
    signals = found(dialogue([("a", "b", "one"), ("b", "a", "two"), ("a", "b", "three")], termination=reason))
    assert ("stopped_early" in signals) is fires
    if fires:
        assert signals["stopped_early"].confident is confident


@pytest.mark.parametrize(("messages", "fires"), [(1, True), (2, True), (3, False)])
def test_too_short_is_one_or_two_messages(messages: int, fires: bool) -> None:
    assert ("too_short" in found(dialogue([("a", "b", f"step {i}") for i in range(messages)]))) is fires


OPENING = "Solve: a train leaves at 3pm at 60 km/h; when does it reach the city 180 km away?"


@pytest.mark.parametrize(("resends", "fires"), [(1, True), (2, False)])
def test_the_task_resent_exactly_once(resends: int, fires: bool) -> None:
    """Sent again once, after other messages: a reset; again and again is a loop, not a reset."""
    turns = [("user", "a", OPENING)]
    for i in range(resends):
        turns += [("a", "user", f"It arrives at {6 + i}pm."), ("user", "a", OPENING)]
    assert ("task_resent" in found(dialogue(turns))) is fires


def test_verification_language_in_the_task_alone_is_no_verification() -> None:
    """The opening message is the task: asking for a check is not checking."""
    spans = dialogue([("user", "solver", "Add 2 and 3 and verify the result."), ("solver", "user", "5")])
    assert "no_verification" in found(spans)
    spans = dialogue([("user", "solver", "Add 2 and 3."), ("solver", "user", "5, verified by hand")])
    assert "no_verification" not in found(spans)


def test_an_unchecked_approval_is_a_verifiers_of_another_agents_result() -> None:
    """ "A verifier-named agent approved another agent's result ... with no tool call and no tool result between":
    not a non-verifier's approval, not an approval of the task itself, and the result is the last message of
    another agent, whatever the verifier said in between."""
    approval = "Approved: the result is correct."
    task = ("user", "solver", "Compute 17 * 23 and have it checked.")
    assert "unchecked_approval" not in found(dialogue([task, ("solver", "manager", "391."), ("manager", "user",
                                                                                             approval)]))  # fmt: skip
    assert "unchecked_approval" not in found(dialogue([("user", "verifier", "Please check this plan."),
                                                       ("verifier", "user", approval)]))  # fmt: skip
    spans = dialogue([task, ("solver", "verifier", "391."), ("verifier", "verifier", "Let me look at it."),
                      ("verifier", "user", approval)])  # fmt: skip
    signal = found(spans)["unchecked_approval"]
    ids = message_ids(spans)
    assert signal.detail == "verifier approved solver's result with no tool run in between" and signal.confident
    assert signal.evidence_span_ids == (ids[3], ids[1])


def test_a_verifier_with_a_long_name_is_still_a_verifier() -> None:
    """Names are read whatever their length (long ones are only not cached)."""
    long_name = "code_reviewer_" + "x" * 200
    spans = dialogue([("user", "solver", "Compute 17 * 23 and have it checked."), ("solver", long_name, "391."),
                      (long_name, "user", "Approved: the result is correct.")])  # fmt: skip
    assert "unchecked_approval" in found(spans) and "no_verification" not in found(spans)
