"""LLMJudge against a scripted OpenAI-compatible server: mapping, retries, formats, errors, cache."""

from __future__ import annotations

from mast_otel import semconv as sc
from mast_otel.judge.config import JudgeConfig
from mast_otel.judge.llm import LLMJudge
from tests.judge.fake_openai import answer, completion, error, fake_openai
from tests.judge.scenarios import dialogue, message_ids, simple


def judge_for(url: str, sleeps: list[float] | None = None, **kw) -> LLMJudge:
    kw.setdefault("model", "fake-model")
    config = JudgeConfig(base_url=url, api_key="sk-test-key-never-logged-0123456789", **kw)
    return LLMJudge(config, sleep=(sleeps.append if sleeps is not None else lambda s: None))


def test_valid_output_maps_evidence_to_span_ids_and_drops_unknown_refs():
    # prepare
    spans = simple()
    ids = message_ids(spans)
    reply = answer({"1.3": ["M2", "[M3]", "M99"], "3.2": ["Z7"]}, summary="Repeats itself.", done=False)
    with fake_openai([completion(reply, prompt_tokens=1234, completion_tokens=56)]) as server:
        # test
        verdict = judge_for(server.base_url, price_in_per_mtok=1.0, price_out_per_mtok=2.0).judge(spans)
    # verify
    assert verdict.status == sc.JUDGE_OK and verdict.source == sc.SOURCE_LLM
    assert verdict.failure_modes == ("1.3", "3.2")
    (m13, m32) = verdict.modes
    assert m13.evidence_span_ids == (ids[1], ids[2])
    assert m13.reason == "reason 1.3"
    assert m32.evidence_span_ids == ()  # its only reference was unknown: dropped, not invented
    assert verdict.extra["unknown_evidence_refs"] == "2"
    assert verdict.summary == "Repeats itself." and verdict.task_completed is False
    assert (verdict.tokens_in, verdict.tokens_out) == (1234, 56)
    assert verdict.cost_usd == round((1234 * 1.0 + 56 * 2.0) / 1e6, 6)
    assert verdict.model == "fake-model"
    (body,) = server.bodies()
    assert body["model"] == "fake-model" and body["temperature"] == 0.0
    assert body["response_format"]["type"] == "json_schema"
    assert set(body["response_format"]["json_schema"]["schema"]["properties"]["modes"]["required"]) == set(
        ["1.1", "1.2", "1.3", "1.4", "1.5", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "3.1", "3.2", "3.3"]
    )


def test_invalid_then_valid_output_is_retried_with_the_error():
    with fake_openai([completion("I think 1.3 applies."), completion(answer({"1.5": ["R"]}))]) as server:
        verdict = judge_for(server.base_url).judge(simple())
    assert verdict.status == sc.JUDGE_OK and verdict.failure_modes == ("1.5",)
    first, second = server.bodies()
    assert len(second["messages"]) == len(first["messages"]) + 1
    assert "not valid" in second["messages"][-1]["content"]
    assert verdict.extra["attempts"] == "2"
    assert verdict.tokens_in == 200  # both attempts are paid for


def test_garbage_every_time_is_an_error_verdict_with_no_labels():
    garbage = [completion("{}"), completion('{"modes": {"1.1": {"present": true}}}'), completion("no")]
    with fake_openai(garbage) as server:
        verdict = judge_for(server.base_url, invalid_retries=2).judge(simple())
    assert verdict.status == sc.JUDGE_ERROR
    assert verdict.modes == () and verdict.failure_modes == ()
    assert verdict.task_completed is None
    assert "no valid answer after 3 attempt(s)" in (verdict.status_reason or "")
    assert len(server.requests) == 3
    assert verdict.tokens_in == 300  # the failed attempts still cost tokens, and say so


def test_missing_mode_is_invalid_not_absent():
    partial = answer({"1.3": ["M1"]}).replace('"3.3"', '"9.9"')  # 3.3 missing, an unknown id instead
    with fake_openai([completion(partial)]) as server:
        verdict = judge_for(server.base_url, invalid_retries=0).judge(simple())
    assert verdict.status == sc.JUDGE_ERROR and verdict.modes == ()
    assert "3.3" in (verdict.status_reason or "")


def test_429_honours_retry_after():
    sleeps: list[float] = []
    script = [error(429, "slow down", {"Retry-After": "7"}), completion(answer())]
    with fake_openai(script) as server:
        verdict = judge_for(server.base_url, sleeps, response_format="json_object").judge(simple())
    assert verdict.status == sc.JUDGE_OK
    assert sleeps == [7.0]
    assert len(server.requests) == 2
    assert server.bodies()[0] == server.bodies()[1]  # the same request, resent


def test_retry_after_is_capped_and_429_exhaustion_is_an_error():
    sleeps: list[float] = []
    with fake_openai([error(429, "slow down", {"Retry-After": "3600"})]) as server:
        verdict = judge_for(server.base_url, sleeps, max_retries=2, backoff_max_s=30).judge(simple())
    assert verdict.status == sc.JUDGE_ERROR and verdict.modes == ()
    assert sleeps == [30.0, 30.0]
    assert len(server.requests) == 3
    assert "HTTP 429" in (verdict.status_reason or "")


def test_500s_are_retried_with_exponential_backoff():
    sleeps: list[float] = []
    script = [error(500), error(503), completion(answer({"2.1": ["M1"]}))]
    with fake_openai(script) as server:
        verdict = judge_for(server.base_url, sleeps, response_format="json_object").judge(simple())
    assert verdict.status == sc.JUDGE_OK and verdict.failure_modes == ("2.1",)
    assert sleeps == [1.0, 2.0]
    assert len(server.requests) == 3


def test_persistent_500_is_an_error_verdict():
    sleeps: list[float] = []
    with fake_openai([error(500)]) as server:
        verdict = judge_for(server.base_url, sleeps, max_retries=3).judge(simple())
    assert verdict.status == sc.JUDGE_ERROR and verdict.modes == ()
    # auto: the first 500 drops json_schema (llama.cpp's answer to it); the next ones are retried as failures
    assert [b["response_format"]["type"] for b in server.bodies()] == ["json_schema"] + ["json_object"] * 4
    assert sleeps == [1.0, 2.0, 4.0]


def test_4xx_other_than_429_is_not_retried():
    with fake_openai([error(401, "bad key")]) as server:
        verdict = judge_for(server.base_url, response_format="json_object").judge(simple())
    assert verdict.status == sc.JUDGE_ERROR and "HTTP 401" in (verdict.status_reason or "")
    assert len(server.requests) == 1


def test_timeouts_are_retried_then_reported():
    from tests.judge.fake_openai import Reply

    sleeps: list[float] = []
    with fake_openai([Reply(hang=True), completion(answer())]) as server:
        ok = judge_for(server.base_url, sleeps, timeout_s=0.3, response_format="json_object").judge(simple())
    assert ok.status == sc.JUDGE_OK and sleeps == [1.0]
    sleeps.clear()
    with fake_openai([Reply(hang=True)]) as server:
        bad = judge_for(server.base_url, sleeps, timeout_s=0.3, max_retries=1).judge(simple())
    assert bad.status == sc.JUDGE_ERROR and "timeout" in (bad.status_reason or "")
    assert len(server.requests) == 2 and sleeps == [1.0]


def test_json_schema_rejected_falls_back_to_json_object_with_schema_and_remembers():
    script = [error(500, "response_format json_schema not supported"), completion(answer()), completion(answer())]
    with fake_openai(script) as server:
        judge = judge_for(server.base_url)
        first = judge.judge(simple())
        second = judge.judge(dialogue([("a", "b", "something else entirely")]))
    assert first.status == second.status == sc.JUDGE_OK
    formats = [b["response_format"] for b in server.bodies()]
    assert formats[0]["type"] == "json_schema"
    assert formats[1]["type"] == "json_object" and formats[1]["schema"]["required"] == [
        "summary", "task_completed", "modes", "decisive"
    ]
    entry = formats[1]["schema"]["properties"]["modes"]["properties"]["1.1"]["properties"]
    assert entry["reason"]["maxLength"] == 300 and entry["evidence"]["maxItems"] == 12  # grammar bounds
    assert "maxLength" not in str(formats[0])  # strict json_schema gets no keywords it may reject
    assert formats[2]["type"] == "json_object"  # remembered: no second json_schema attempt
    assert second.extra["response_format"] == "json_object"


def test_text_mode_parses_json_out_of_prose():
    text = "Here is my verdict:\n```json\n" + answer({"1.1": ["M2"]}) + "\n```\nHope this helps."
    with fake_openai([completion(text)]) as server:
        verdict = judge_for(server.base_url, response_format="text").judge(simple())
    assert verdict.failure_modes == ("1.1",)
    assert "response_format" not in server.bodies()[0]


def test_cache_hit_for_a_replayed_conversation_maps_to_the_new_span_ids():
    with fake_openai([completion(answer({"1.3": ["M2"]}), 500, 20)]) as server:
        judge = judge_for(server.base_url)
        first_run, replayed = simple(), simple()  # same content, different span ids
        v1 = judge.judge(first_run)
        v2 = judge.judge(replayed)
    assert len(server.requests) == 1
    assert v1.extra["cache"] == "miss" and v2.extra["cache"] == "hit"
    assert (v2.tokens_in, v2.tokens_out, v2.cost_usd) == (0, 0, 0.0)
    assert v2.extra["cached_tokens_in"] == "500"
    assert v1.modes[0].evidence_span_ids == (message_ids(first_run)[1],)
    assert v2.modes[0].evidence_span_ids == (message_ids(replayed)[1],)


def test_disk_cache_survives_a_new_judge(tmp_path):
    with fake_openai([completion(answer())]) as server:
        judge_for(server.base_url, cache_dir=tmp_path).judge(simple())
        again = judge_for(server.base_url, cache_dir=tmp_path).judge(simple())
    assert len(server.requests) == 1 and again.extra["cache"] == "hit"


def test_partial_conversation_gets_partial_status():
    with fake_openai([completion(answer())]) as server:
        verdict = judge_for(server.base_url).judge(simple(), partial=True)
    assert verdict.status == sc.JUDGE_PARTIAL


def test_no_content_is_skipped_without_a_call():
    spans = dialogue([("a", "b", "")])
    with fake_openai([completion(answer())]) as server:
        verdict = judge_for(server.base_url).judge(spans)
    assert verdict.status == sc.JUDGE_SKIPPED and not server.requests
