"""Long traces: every prompt stays within the budget, compaction keeps what matters, chunks are merged."""

from __future__ import annotations

import json
import re

from mast_otel import semconv as sc
from mast_otel.judge.compaction import compact
from mast_otel.judge.config import JudgeConfig
from mast_otel.judge.llm import LLMJudge
from mast_otel.judge.prompt import prompt_tokens
from mast_otel.judge.tokens import count_tokens, cut_to_tokens
from mast_otel.judge.transcript import render
from tests.judge.fake_openai import answer, completion, fake_openai
from tests.judge.scenarios import dialogue, message_ids

WORDS = "the agent reviews the module and proposes a change to the parser before running tests again ".split()


def essay(n_words: int, seed: int) -> str:
    return " ".join(WORDS[(i * 7 + seed) % len(WORDS)] + str((i + seed) % 97) for i in range(n_words))


def long_run(turns: int, words: int = 400, loop_every: int = 0):
    msgs = []
    for i in range(turns):
        sender, recipient = ("coder", "reviewer") if i % 2 == 0 else ("reviewer", "coder")
        looping = loop_every and i % loop_every == 0
        text = "Please fix the parser bug and re-run: " + essay(150, 0) if looping else f"turn {i}: " + essay(words, i)
        msgs.append((sender, recipient, text))
    msgs[-1] = ("reviewer", "coder", "FINAL: giving up, the budget is spent.")
    return dialogue(msgs, termination=sc.TERMINATION_MAX_TURNS, max_rounds=turns)


def test_cut_to_tokens_keeps_head_and_tail_and_marks_the_cut():
    text = "HEAD " + essay(3000, 1) + " TAIL"
    out, cut = cut_to_tokens(text, 200)
    assert cut and count_tokens(out) <= 200
    assert out.startswith("HEAD") and out.endswith("TAIL") and "chars cut ...]" in out


def test_budget_holds_whatever_the_length():
    for turns, words in ((10, 50), (60, 400), (400, 800)):
        spans = long_run(turns, words)
        config = JudgeConfig(model="m", token_budget=4000, max_chunks=3)
        prepared = LLMJudge(config).prepare(spans)
        assert all(t <= config.token_budget for t in prepared.prompt_tokens), (turns, prepared.prompt_tokens)
        assert all(t == prompt_tokens(p) for t, p in zip(prepared.prompt_tokens, prepared.prompts, strict=True))
        assert len(prepared.prompts) <= 3
        for prompt in prepared.prompts:  # every definition, every time
            for mode_id in ("1.1", "1.5", "2.6", "3.3"):
                assert f"\n{mode_id} " in prompt[1]["content"]


def test_compaction_keeps_first_and_last_turns_and_termination():
    spans = long_run(400, 800)
    prepared = LLMJudge(JudgeConfig(model="m", token_budget=4000, max_chunks=1)).prepare(spans)
    (prompt,) = prepared.prompts
    body = prompt[1]["content"]
    assert prepared.plan.truncated and prepared.plan.dropped > 0
    assert "[M1] coder -> reviewer: turn 0:" in body  # the first turn
    assert "FINAL: giving up" in body  # the last turn
    assert "[R] termination: max_turns" in body
    assert "lines omitted: " in body


def test_repeats_are_collapsed_with_their_count_first():
    transcript = render(long_run(40, 120, loop_every=2))
    full = sum(count_tokens(line.text()) + 1 for line in transcript.lines)
    plan = compact(transcript.lines, int(full * 0.7))
    assert plan.collapsed == 19 + 37 and not plan.cut and len(plan.chunks) == 1  # 19 messages, 37 of 39 handoffs
    text = "\n".join(line.text() for line in plan.chunks[0])
    assert "<repeat 20 of 20 of M1>" in text and "[H3] handoff as H1" in text and "[H2] handoff reviewer" in text


def test_chunked_judging_merges_and_reports_truncated():
    spans = long_run(120, 400)
    ids = message_ids(spans)

    def reply(body):
        user = body["messages"][1]["content"]
        part = "1.3" if "part 1 of" in user else "2.3"
        refs = ["M2"] if part == "1.3" else ["M119", "M500"]
        return completion(answer({part: refs}, summary=f"saw {part}", done=part == "1.3"), 1000, 100)

    with fake_openai([reply]) as server:
        config = JudgeConfig(base_url=server.base_url, model="m", token_budget=6000, max_chunks=4)
        verdict = LLMJudge(config).judge(spans)
    n = len(server.requests)
    assert 2 <= n <= 4
    assert verdict.status == sc.JUDGE_TRUNCATED and verdict.extra["chunks"] == str(n)
    assert verdict.failure_modes == ("1.3", "2.3")
    assert dict((m.mode_id, m.evidence_span_ids) for m in verdict.modes) == {"1.3": (ids[1],), "2.3": (ids[118],)}
    assert verdict.extra["unknown_evidence_refs"] == str(n - 1)  # M500, once per later chunk
    assert verdict.task_completed is False  # from the last chunk
    assert verdict.tokens_in == 1000 * n
    for req in server.requests:
        assert prompt_tokens(req.json["messages"]) <= 6000
        assert json.loads(req.raw)["response_format"]["type"] == "json_schema"


# --- what cannot be evidence goes first; every message stays citable; one call where possible --------------------

PREAMBLE = ["You are part of a team. Always answer in English and keep the project style guide in mind.",
            "Reply TERMINATE when the task is done and nothing else remains to do in this run."]  # fmt: skip


def tool_heavy_run(rounds: int, output_lines: int = 120):
    """An agent loop: each round a preamble-carrying instruction, a tool run with long log output (the same
    output every third round), and an analysis; built with the real recorder."""

    def body(rec):
        for i in range(rounds):
            with rec.agent_turn("planner"):
                rec.message("planner", ["coder"], "\n".join([*PREAMBLE, f"Step {i}: " + essay(60, i)]))
            with rec.agent_turn("coder"):
                with rec.tool_call("run_tests", arguments={"round": i}) as call:
                    seed = i if i % 3 else 0
                    log = "\n".join(f"tests/test_{seed}_{k}.py::case PASSED [{k}%] " + essay(8, seed + k)
                                    for k in range(output_lines))  # fmt: skip
                    call.set_result(f"collected {output_lines} items\n{log}\n=== {i % 3} failed ===")
                rec.message("coder", ["planner"], f"Round {i} analysis: " + essay(180, 100 + i))

    from tests.judge.scenarios import record

    return record(body, task="Make the test suite pass.")


def prepared(spans, **config):
    return LLMJudge(JudgeConfig(model="m", **config)).prepare(spans)


def test_long_run_loses_boilerplate_repeated_and_long_output_but_keeps_every_reference():
    spans = tool_heavy_run(12, 40)
    prep = prepared(spans)
    plan = prep.plan
    assert len(prep.prompts) == 1 and plan.boilerplate >= 2 * 10 and plan.trimmed >= 8 and plan.collapsed >= 3
    body = prep.prompts[0][1]["content"]
    assert body.count(PREAMBLE[0]) == 1 and "[2 repeated lines]" in body  # shown where it first appears
    assert "<same output as T1>" in body  # the same test log again
    assert "chars cut ...]" in body and "=== 2 failed ===" in body  # the middle of a log cut, its end kept
    refs = set(prep.transcript.refs)
    assert all(f"[{ref}]" in body for ref in refs if ref != "R")  # every message, handoff and tool run citable


def test_a_60k_character_run_is_judged_in_one_call_under_the_default_budget():
    spans = tool_heavy_run(11, 40)
    chars = sum(len(str(s.attributes.get(k, ""))) for s in spans
                for k in ("mast.message.content", "gen_ai.tool.call.result"))  # fmt: skip
    assert 50_000 <= chars <= 70_000, chars
    prep = prepared(spans)
    assert len(prep.prompts) == 1 and prep.prompt_tokens[0] <= JudgeConfig().token_budget


def test_parts_carry_a_digest_of_the_parts_before_and_the_verdict_says_which_part_cited_what():
    spans = long_run(300, 400, loop_every=5)

    def reply(body):
        user = body["messages"][1]["content"]
        part = int(re.search(r"This is part (\d+) of", user).group(1))
        return completion(answer({"1.3": [f"M{part * 100}"]}, summary=f"part {part}"), 1000, 100)

    with fake_openai([reply]) as server:
        config = JudgeConfig(base_url=server.base_url, model="m", token_budget=5000, max_chunks=6)
        verdict = LLMJudge(config).judge(spans)
    prompts = [r.json["messages"][1]["content"] for r in server.requests]
    assert len(prompts) >= 2
    assert not any(line.startswith("[D] digest") for line in prompts[0].splitlines())
    for user in prompts[1:]:
        digest_line = next(line for line in user.splitlines() if line.startswith("[D] digest"))
        assert "agents: coder" in digest_line and "reviewer" in digest_line
        assert "repeats so far:" in digest_line and "last message M" in digest_line
    assert verdict.extra["evidence_by_part"].startswith("1.3: part 1 M100; part 2 M200")
    assert "part 1: " in verdict.modes[0].reason


def test_every_part_of_a_chunked_run_states_the_task_even_when_it_is_the_opening_message():
    from mast_otel.replay import load_records, spans_for_record
    from tests.replay.test_whowhen_hand_crafted import HAND_CRAFTED

    path = HAND_CRAFTED / "9.json"  # 95 messages of Magentic-One; the task is its opening (human) message
    question = json.loads(path.read_text())["question"]
    judge = LLMJudge(JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", token_budget=4000))
    prepared = judge.prepare(spans_for_record(load_records(path)[0]))
    assert len(prepared.prompts) > 1
    for prompt, tokens in zip(prepared.prompts, prepared.prompt_tokens, strict=True):
        assert question[:60] in "\n".join(m["content"] for m in prompt)
        assert tokens <= 4000
