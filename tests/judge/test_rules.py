"""Structural signals and the RulesJudge: labels from span shapes alone, with evidence span ids."""

from __future__ import annotations

from mast_otel import semconv as sc
from mast_otel.judge import RulesJudge, build_judge
from mast_otel.judge.config import JudgeConfig
from mast_otel.judge.llm import LLMJudge
from mast_otel.judge.signals import compute_signals
from mast_otel.judge.view import build_view
from tests.judge.scenarios import dialogue, message_ids, record, simple

LOOP = "Please run the full test suite again and report every failing test with its traceback."


def names(spans):
    return {(s.mode_id, s.name) for s in compute_signals(build_view(spans))}


def test_rules_judge_constructs_without_arguments_and_meets_the_protocol():
    judge = RulesJudge()
    verdict = judge.judge(simple())
    assert judge.name == "rules"
    assert verdict.status == sc.JUDGE_OK and verdict.source == sc.SOURCE_RULES
    assert verdict.modes == ()  # a clean run: nothing structural to flag
    assert verdict.task_completed is None  # rules cannot tell, so they do not say


def test_repetition_is_1_3_with_the_repeated_messages_as_evidence():
    spans = dialogue([("coder", "tester", LOOP), ("tester", "coder", "3 failed"), ("coder", "tester", LOOP),
                      ("tester", "coder", "3 failed"), ("coder", "tester", LOOP)])  # fmt: skip
    verdict = RulesJudge().judge(spans)
    assert verdict.failure_modes == ("1.3",)
    ids = message_ids(spans)
    assert set(verdict.modes[0].evidence_span_ids) == {ids[0], ids[2], ids[4]}
    assert "Step repetition" in verdict.modes[0].reason


def test_near_duplicates_count_as_repetition():
    spans = dialogue([("a", "b", LOOP), ("b", "a", "ok"), ("a", "b", LOOP.replace("every", "each")), ("b", "a", "ok")])
    assert ("1.3", "repeated_content") in names(spans)


def test_max_rounds_without_final_answer_is_1_5_with_root_as_evidence():
    spans = dialogue([("a", "b", "thinking about it"), ("b", "a", "me too")], termination=sc.TERMINATION_MAX_ROUNDS,
                     max_rounds=2)  # fmt: skip
    verdict = RulesJudge().judge(spans)
    assert "1.5" in verdict.failure_modes
    root = next(s for s in spans if s.is_conversation_root)
    label = next(m for m in verdict.modes if m.mode_id == "1.5")
    assert label.evidence_span_ids[0] == root.span_id
    assert "without a final answer" in label.reason


def test_reset_is_2_1_when_the_opening_message_comes_back_after_progress():
    opening = "Solve: a train leaves at 3pm at 60 km/h; when does it reach the city 180 km away?"
    spans = dialogue([("user", "a", opening), ("a", "user", "It arrives at 6pm."), ("user", "a", opening)])
    assert ("2.1", "task_resent") in names(spans)
    assert "2.1" in RulesJudge().judge(spans).failure_modes


def test_error_termination_is_3_1():
    spans = dialogue([("a", "b", "starting")], termination=sc.TERMINATION_ERROR)
    assert "3.1" in RulesJudge().judge(spans).failure_modes


def test_a_run_ending_on_a_tool_call_is_a_3_1_hint_only():
    def body(rec):
        rec.message("a", ["b"], "let me compute that", kind=sc.KIND_TOOL_CALL)

    spans = record(body)
    assert ("3.1", "dangling_tool_call") in names(spans)
    assert RulesJudge().judge(spans).failure_modes == ()
    assert "3.1" in RulesJudge(include_hints=True).judge(spans).failure_modes


def test_no_verifier_is_a_3_2_hint_and_a_verifier_turn_silences_it():
    plain = dialogue([("user", "solver", "Add 2 and 3."), ("solver", "user", "5")])
    checked = dialogue([("user", "solver", "Add 2 and 3."), ("solver", "verifier", "5"), ("verifier", "user", "ok")])
    assert ("3.2", "no_verifier") in names(plain)
    assert not any(m == "3.2" for m, _ in names(checked))


def test_partial_conversation_is_reported_as_partial():
    assert RulesJudge().judge(simple(), partial=True).status == sc.JUDGE_PARTIAL


def test_build_judge_picks_llm_only_when_configured(monkeypatch):
    for var in ("MAST_OTEL_JUDGE_BASE_URL", "MAST_OTEL_JUDGE_MODEL"):
        monkeypatch.delenv(var, raising=False)
    assert isinstance(build_judge(), RulesJudge)
    assert isinstance(build_judge(JudgeConfig()), RulesJudge)
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
