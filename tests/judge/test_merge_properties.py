"""What the judge's verdict keeps of the model's answers: each reason and the summary are one line within their
bound (a reason at the bound kept whole, a longer one cut with an ellipsis), and with several chunks every
reason names its part and the verdict says which part cited what; with one chunk neither."""

from __future__ import annotations

import json

from mast_otel.judge.config import JudgeConfig
from mast_otel.judge.llm import LLMJudge
from mast_otel.taxonomy import MODE_IDS
from tests.judge.fake_openai import completion, fake_openai
from tests.judge.scenarios import simple
from tests.judge.test_long_traces import long_run


def reply_with(reasons: dict[str, str], summary: str) -> str:
    modes = {m: {"evidence": ["M1"] if m in reasons else [], "reason": reasons.get(m, ""), "present": m in reasons}
             for m in MODE_IDS}  # fmt: skip
    return json.dumps({"summary": summary, "task_completed": True, "modes": modes, "decisive": None})


def test_reasons_and_summary_are_one_line_within_their_bounds() -> None:
    at_bound = "b" * 240
    long_reason = "first line\n  second line " + "x" * 1000
    long_summary = "summary\nline " + "s" * 2000
    with fake_openai([completion(reply_with({"1.3": long_reason, "2.6": at_bound}, long_summary))]) as server:
        verdict = LLMJudge(JudgeConfig(base_url=server.base_url, model="m")).judge(simple())
    reasons = {m.mode_id: m.reason for m in verdict.modes}
    assert reasons["2.6"] == at_bound  # exactly at the bound: kept whole
    cut = reasons["1.3"]
    assert "\n" not in cut and len(cut) == 240 and cut.endswith("…")
    assert cut.startswith("first line second line xxx")  # whitespace collapsed, the head kept
    assert "\n" not in verdict.summary and len(verdict.summary) == 600 and verdict.summary.endswith("…")
    assert verdict.summary.startswith("summary line sss")
    assert "evidence_by_part" not in verdict.extra and "decisive_part" not in verdict.extra  # one chunk


def test_with_two_chunks_each_reason_names_its_part() -> None:
    spans = long_run(120, 400)

    def reply(body):  # type: ignore[no-untyped-def]
        part = 1 if "part 1 of" in body["messages"][1]["content"] else 2
        return completion(reply_with({"1.3": f"seen in {part}"}, f"summary {part}"), 1000, 100)

    with fake_openai([reply]) as server:
        config = JudgeConfig(base_url=server.base_url, model="m", token_budget=6000, max_chunks=2)
        verdict = LLMJudge(config).judge(spans)
    assert len(server.requests) == 2
    (label,) = verdict.modes
    assert label.reason == "part 1: seen in 1 / part 2: seen in 2"
    assert verdict.extra["evidence_by_part"] == "1.3: part 1 M1; part 2 M1"
    assert verdict.summary == "summary 1 | summary 2"


def test_the_verdict_records_how_it_was_reached() -> None:
    """The provenance a user reproduces a verdict from: prompt version, transcript hash, compaction, counted prompt
    tokens, redactions, structural signals, and the references the model invented (five examples at most)."""
    from mast_otel import semconv as sc
    from mast_otel.judge.prompt import PROMPT_VERSION
    from tests.judge.scenarios import dialogue

    spans = dialogue(
        [("user", "coder", "Deploy with api_key=sk-live-abcdefghijklmnop1234 please."),
         ("coder", "user", "Deploying now."), ("coder", "user", "Deploying now."), ("coder", "user", "Deploying now.")],
        termination=sc.TERMINATION_MAX_TURNS, max_rounds=4,
    )  # fmt: skip
    invented = ["M90", "M91", "M92", "M93", "M94", "M95", "M90"]
    reasons = {"1.3": "the same message three times"}
    body = json.loads(reply_with(reasons, "repeats"))
    body["modes"]["1.3"]["evidence"] = ["M2", *invented]
    with fake_openai([completion(json.dumps(body))]) as server:
        judge = LLMJudge(JudgeConfig(base_url=server.base_url, model="m"))
        prepared = judge.prepare(spans)
        verdict = judge.judge_prepared(prepared, partial=True)  # (each prepare draws a new nonce)
    extra = verdict.extra
    assert extra["prompt_version"] == PROMPT_VERSION
    assert extra["transcript_sha256"] == prepared.transcript.sha256()
    assert extra["compaction"] == prepared.plan.describe()
    assert extra["prompt_tokens_counted"] == str(sum(prepared.prompt_tokens))
    assert extra["redactions"] == str(prepared.transcript.redactions) != "0"
    assert extra["signals"] == ",".join(f"{s.mode_id}:{s.name}" for s in prepared.signals) != ""
    assert extra["unknown_evidence_refs"] == str(len(invented))
    assert extra["unknown_evidence_examples"] == "M90,M91,M92,M93,M94"  # each once, five at most
    assert (verdict.status, verdict.status_reason) == (
        sc.JUDGE_PARTIAL, "conversation not finished; judged on the spans seen so far")
    (label,) = verdict.modes
    assert label.evidence_span_ids == (prepared.transcript.refs["M2"],)


def test_an_untruncated_verdict_is_ok_with_no_reason() -> None:
    with fake_openai([completion(reply_with({}, "fine"))]) as server:
        verdict = LLMJudge(JudgeConfig(base_url=server.base_url, model="m")).judge(simple())
    from mast_otel import semconv as sc

    assert (verdict.status, verdict.status_reason, verdict.modes) == (sc.JUDGE_OK, None, ())
