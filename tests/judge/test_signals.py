"""Structural signals: each fires on a case built to raise it and stays silent on its controls; the model-free
judge labels nothing (status skipped, saying how to get labels)."""

from __future__ import annotations

import pytest

from mast_otel import semconv as sc
from mast_otel.judge import NoModelJudge, build_judge
from mast_otel.judge.config import JudgeConfig
from mast_otel.judge.llm import LLMJudge
from mast_otel.judge.signals import SIGNALS, compute_signals
from mast_otel.judge.view import build_view
from mast_otel.recorder import Recorder
from tests.judge.scenarios import dialogue, message_ids, record, simple

LOOP = "Please run the full test suite again and report every failing test with its traceback."
EXEC = "exitcode: 1 (execution failed)\nCode output: FAILED test_one AssertionError expected 5 got 4 in line 12"
OPENING = "Solve: a train leaves at 3pm at 60 km/h; when does it reach the city 180 km away?"


def names(spans):
    return {s.name for s in compute_signals(build_view(spans))}


def signal(spans, name):
    return next(s for s in compute_signals(build_view(spans)) if s.name == name)


def _tool_loop(rec: Recorder) -> None:
    """A tool returning the same long output three times: tool results, not agent messages."""
    notes = ["First attempt: the adder drops the carry bit, so I patched it and reran everything.",
             "Second try after reading the traceback: the fixture feeds a stale value into the test.",
             "Third pass: the assertion compares against an old constant; updating the expected data now."]
    for note in notes:
        with rec.agent_turn("coder"):
            with rec.tool_call("run_tests", arguments={"path": "tests/"}) as call:
                call.set_result("FAILED tests/test_x.py::test_one - AssertionError: expected 5 got 4 " * 3)
            rec.message("runner", ["coder"], "FAILED test_one AssertionError expected 5 got 4 in tests/test_x.py "
                        "line 12 (exit status 1)", kind=sc.KIND_TOOL_RESULT)
        rec.message("coder", ["reviewer"], note)


def _approval(with_tool: bool, verdict: str = "Approved: the result is correct."):
    def body(rec: Recorder) -> None:
        rec.message("user", ["solver"], "Compute 17 * 23 and have it checked.")
        with rec.agent_turn("solver"):
            rec.message("solver", ["verifier"], "17 * 23 = 391.")
        with rec.agent_turn("verifier"):
            if with_tool:
                with rec.tool_call("python", arguments={"code": "print(17*23)"}) as call:
                    call.set_result("391")
            rec.message("verifier", ["user"], verdict)

    return record(body)


CASES = {
    # name: (a case built to raise it, controls that must not)
    "repeated_message": (
        lambda: dialogue([("coder", "tester", LOOP), ("tester", "coder", "3 failed"), ("coder", "tester", LOOP)]),
        [simple, lambda: record(_tool_loop),
         lambda: dialogue([("a", "b", "ok, continuing"), ("b", "a", "fine"), ("a", "b", "ok, continuing")]),
         lambda: dialogue([("a", "b", LOOP), ("b", "a", LOOP)]),  # the same text from two agents is not a repeat
         lambda: dialogue([("executor", "coder", EXEC), ("coder", "executor", "fixing"), ("executor", "coder", EXEC)])],
    ),
    "round_limit": (
        lambda: dialogue([("a", "b", "thinking about it"), ("b", "a", "me too")],
                         termination=sc.TERMINATION_MAX_ROUNDS, max_rounds=2),
        [simple, lambda: dialogue([("a", "b", "x"), ("b", "a", "The answer is 5.")], max_rounds=10,
                                  termination=sc.TERMINATION_MESSAGE)],
    ),
    "continued_after_answer": (
        lambda: dialogue([("a", "b", "The answer is 5."), *[("b", "a", f"more talk {i}") for i in range(4)]]),
        [simple],
    ),
    "task_resent": (
        lambda: dialogue([("user", "a", OPENING), ("a", "user", "It arrives at 6pm."), ("user", "a", OPENING)]),
        [simple, lambda: dialogue([("user", "a", OPENING), ("a", "user", "It arrives at 6pm.")])],
    ),
    "restart_announced": (
        lambda: dialogue([("user", "a", "Sort the list."), ("a", "user", "That failed; let's start over."),
                          ("user", "a", "ok")]),
        [simple],
    ),
    "stopped_early": (
        lambda: dialogue([("a", "b", "starting")], termination=sc.TERMINATION_ERROR),
        [simple],
    ),
    "dangling_tool_call": (
        lambda: record(lambda rec: rec.message("a", ["b"], "let me compute that", kind=sc.KIND_TOOL_CALL)),
        [simple],
    ),
    "too_short": (
        lambda: dialogue([("user", "solver", "Add 2 and 3.")]),
        [simple],
    ),
    "no_verification": (
        lambda: dialogue([("user", "solver", "Add 2 and 3."), ("solver", "user", "5")]),
        [lambda: dialogue([("user", "solver", "Add 2 and 3."), ("solver", "verifier", "5"),
                           ("verifier", "user", "ok")])],
    ),
    "unchecked_approval": (lambda: _approval(with_tool=False),
                           [lambda: _approval(with_tool=True), simple,
                            lambda: _approval(False, "I cannot approve this: it is not correct, 17 * 23 is 391.")]),
}  # fmt: skip


def test_every_signal_has_a_case():
    assert set(CASES) == set(SIGNALS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_signal_fires_on_its_case_and_not_on_its_controls(name):
    case, controls = CASES[name]
    found = signal(case(), name)
    assert found.mode_id == SIGNALS[name].mode_id and found.evidence_span_ids and found.detail
    for control in controls:
        assert name not in names(control()), f"{name} fired on a control"


def test_repetition_cites_every_copy_and_counts_them():
    spans = dialogue([("coder", "tester", LOOP), ("tester", "coder", "3 failed"), ("coder", "tester", LOOP),
                      ("tester", "coder", "3 failed"), ("coder", "tester", LOOP)])  # fmt: skip
    found = signal(spans, "repeated_message")
    ids = message_ids(spans)
    assert set(found.evidence_span_ids) == {ids[0], ids[2], ids[4]}
    assert found.detail.startswith("2 substantive message(s)") and found.confident


def test_near_duplicates_count_as_repetition():
    spans = dialogue([("a", "b", LOOP), ("b", "a", "ok"), ("a", "b", LOOP.replace("every", "each")), ("b", "a", "ok")])
    assert "repeated_message" in names(spans)


def test_round_limit_points_at_the_root_and_says_whether_an_answer_came():
    spans = dialogue([("a", "b", "thinking about it"), ("b", "a", "me too")], termination=sc.TERMINATION_MAX_ROUNDS,
                     max_rounds=2)  # fmt: skip
    found = signal(spans, "round_limit")
    root = next(s for s in spans if s.is_conversation_root)
    assert found.evidence_span_ids[0] == root.span_id and "no message read as a final answer" in found.detail


def test_the_model_free_judge_labels_nothing_and_says_how_to_get_labels():
    judge = NoModelJudge()
    for spans in (simple(), CASES["repeated_message"][0](), CASES["round_limit"][0]()):
        verdict = judge.judge(spans)
        assert verdict.status == sc.JUDGE_SKIPPED and verdict.modes == () and verdict.source == sc.SOURCE_NONE
        assert "no model configured" in (verdict.status_reason or "")
        assert "MAST_OTEL_JUDGE_BASE_URL" in (verdict.status_reason or "")


def test_build_judge_picks_llm_only_when_configured(monkeypatch):
    for var in ("MAST_OTEL_JUDGE_BASE_URL", "MAST_OTEL_JUDGE_MODEL"):
        monkeypatch.delenv(var, raising=False)
    assert isinstance(build_judge(), NoModelJudge)
    assert isinstance(build_judge(JudgeConfig()), NoModelJudge)
    assert isinstance(build_judge(JudgeConfig(base_url="http://127.0.0.1:1/v1")), LLMJudge)
    monkeypatch.setenv("MAST_OTEL_JUDGE_MODEL", "gpt-4o-mini")
    judge = build_judge()
    assert isinstance(judge, LLMJudge) and judge.config.model == "gpt-4o-mini"


def test_config_from_env_reads_key_fallback_and_hides_it():
    env = {"OPENAI_API_KEY": "sk-env-secret-value-1234567890", "MAST_OTEL_JUDGE_CONCURRENCY": "2",
           "MAST_OTEL_JUDGE_TIMEOUT": "not-a-number", "MAST_OTEL_JUDGE_BASE_URL": "http://h/v1"}  # fmt: skip
    config = JudgeConfig.from_env(env, model="m")
    assert config.api_key == "sk-env-secret-value-1234567890" and "sk-env" not in repr(config)
    assert config.concurrency == 2 and config.timeout_s == 120.0 and config.model == "m"
    assert JudgeConfig.from_env({**env, "MAST_OTEL_JUDGE_API_KEY": "k2"}).api_key == "k2"


def test_keyed_patterns_answer_as_their_regex_does() -> None:
    """The substring pre-check only skips texts the pattern cannot match: same answers on phrases that match,
    near misses, other cases and non-ASCII text."""
    import random
    import re

    from mast_otel.judge import signals

    phrases = [
        "The Final Answer is 42", "\\boxed{7}", "TERMINATE", "terminated", "answer: yes", "answer:   ", "ANSWER: no",
        "please double-check this", "Re-check the sums", "unit tests pass", "Pytest ran", "we CONFIRMED it",
        "LGTM", "looks right to me", "it seems correct", "I cannot approve this", "all checks passed",
        "let's start over", "Starting from scratch", "restarting the process", "from the beginning",
        "exitcode: 1 (execution failed)", "Traceback (most recent call last):", "***** Response from calling tool",
        "nothing to see", "x" * 200, "answer-less", "ﬁnal answer", "İ TERMINATE", "ſtart over", "K verified",
    ]  # fmt: skip
    rng = random.Random(7)
    words = [w for p in phrases for w in p.split()] + ["the", "is", "a", "over", "correct"]
    texts = phrases + [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(2000)]
    keyed = [signals._MACHINE_OUTPUT, signals._FINAL, signals._VERIFY, signals._APPROVAL, signals._RESTART]
    for k in keyed:
        plain = re.compile(k._pattern.pattern, re.IGNORECASE)
        for text in texts:
            assert bool(k.search(text)) == bool(plain.search(text)), (k._pattern.pattern, text)
            assert [m.span() for m in k.finditer(text)] == [m.span() for m in plain.finditer(text)]
