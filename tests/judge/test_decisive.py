"""Who and when: the judge's decisive step, validated against the transcript, mapped to its span, labelled, and
scored by ``mast-otel eval --attribution`` (plumbing, against a scripted OpenAI-compatible server)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanPb

from mast_otel import semconv as sc
from mast_otel.collector.release.commit import verdict_from_json, verdict_to_json
from mast_otel.collector.release.labeller import label_spans
from mast_otel.judge.model import DecisiveStep, Verdict
from mast_otel.judge.prompt import prompt_tokens
from mast_otel.whowhen import load_whowhen
from tests.judge.fake_openai import Reply, answer, completion, fake_openai
from tests.judge.scenarios import message_ids, simple
from tests.judge.test_llm_judge import judge_for
from tests.replay.test_whowhen import FULL, SAMPLE
from tests.replay.test_whowhen_hand_crafted import HAND_CRAFTED


def test_a_valid_decisive_step_is_mapped_to_its_message_span() -> None:
    spans = simple()
    ids = message_ids(spans)
    reply = answer({"3.1": ["M2"]}, decisive={"message": "[M2]", "agent": "solver", "reason": "stopped early"})
    with fake_openai([completion(reply)]) as server:
        verdict = judge_for(server.base_url).judge(spans)
    assert verdict.status == sc.JUDGE_OK
    assert verdict.decisive == DecisiveStep(ids[1], 1, "solver", "stopped early")


def test_a_reference_not_in_the_transcript_is_re_asked_then_an_error_never_a_guess() -> None:
    bad = completion(answer({"3.1": ["M2"]}, decisive={"message": "M99", "agent": "solver", "reason": "x"}))
    good = completion(answer({"3.1": ["M2"]}, decisive={"message": "M1", "agent": "user", "reason": "y"}))
    with fake_openai([bad, good]) as server:
        verdict = judge_for(server.base_url).judge(simple())
    assert verdict.status == sc.JUDGE_OK and verdict.decisive is not None and verdict.decisive.agent == "user"
    assert "decisive.message 'M99' is not a message reference" in server.bodies()[1]["messages"][-1]["content"]
    with fake_openai([bad]) as server:
        failed = judge_for(server.base_url, invalid_retries=1).judge(simple())
    assert failed.status == sc.JUDGE_ERROR and failed.decisive is None and failed.modes == ()
    assert len(server.requests) == 2


def test_an_agent_that_never_spoke_is_an_error() -> None:
    ghost = completion(answer({"3.1": ["M2"]}, decisive={"message": "M2", "agent": "auditor", "reason": "x"}))
    with fake_openai([ghost]) as server:
        verdict = judge_for(server.base_url, invalid_retries=1).judge(simple())
    assert verdict.status == sc.JUDGE_ERROR
    assert "decisive.agent 'auditor' never sent a message" in (verdict.status_reason or "")


def test_the_decisive_span_and_the_root_are_labelled_and_the_stored_verdict_keeps_it() -> None:
    root_id, decisive_id = bytes.fromhex("01" * 8), bytes.fromhex("02" * 8)
    step = DecisiveStep(decisive_id.hex(), 4, "coder", "resent broken code")
    verdict = Verdict(status=sc.JUDGE_OK, source=sc.SOURCE_LLM, decisive=step)
    bodies = {sid: SpanPb(span_id=sid, name=name).SerializeToString() for sid, name in
              ((root_id, "invoke_workflow x"), (decisive_id, "message coder -> critic"))}  # fmt: skip
    new = label_spans(verdict, root_id=root_id, bodies=bodies, judge_name="llm", now_ns=1)

    def attrs(sid: bytes) -> dict[str, Any]:
        span = SpanPb.FromString(new[sid])
        return {kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in span.attributes}

    assert attrs(decisive_id) == {sc.DECISIVE: True, sc.DECISIVE_REASON: "resent broken code"}
    root = attrs(root_id)
    assert (root[sc.DECISIVE_AGENT], root[sc.DECISIVE_MESSAGE_INDEX]) == ("coder", 4)
    assert verdict_from_json(verdict_to_json(verdict)) == verdict


def _first_message_judge(body: Any) -> Reply:
    """Blames whoever sent M1 (the transcript says who: ``[M1] sender -> ...``)."""
    prompt = "\n".join(m["content"] for m in body["messages"] if isinstance(m.get("content"), str))
    sender = re.search(r"^\[M1\] (\S+) ->", prompt, re.MULTILINE)
    assert sender is not None
    return completion(answer({"3.3": ["M1"]}, decisive={"message": "M1", "agent": sender.group(1), "reason": "r"}))


def test_attribution_eval_reads_the_judges_decisive_step_and_scores_it(tmp_path: Any) -> None:
    runs = load_whowhen(SAMPLE)
    expected = sum(1 for r in runs if r.history[0].sender == r.mistake_agent) / len(runs)
    steps = sum(1 for r in runs if r.mistake_step == 0) / len(runs)
    with fake_openai([_first_message_judge]) as server:
        done = subprocess.run([sys.executable, "-m", "mast_otel.cli", "eval", "--attribution", str(SAMPLE),
                               "--base-url", server.base_url, "--model", "scripted", "--out", str(tmp_path)],
                              capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "attribution.json").read_text())
    judge = report["methods"]["judge"]
    assert judge["runs"] == 3 and judge["predicted"] == 3 and judge["errors"] == 0
    assert judge["agent"] == round(expected, 4) and judge["step_exact"] == round(steps, 4)
    # the judge blamed M1, which is exactly what the first-speaker baseline does
    assert judge["agent"] == report["methods"]["first_speaker"]["agent"]
    assert all(row["judge"]["step"] == 0 for row in report["rows"])


def _labelled_step_judge(labels: dict[str, int]) -> Any:
    """Knows each run's human label, found by the run's question in the prompt: blames the message whose reference
    is the labelled history index + 1 in the part that shows it, naming the sender the line shows; a part that does
    not show it names no decisive step."""

    def reply(body: Any) -> Reply:
        prompt = "\n".join(m["content"] for m in body["messages"] if isinstance(m.get("content"), str))
        (step,) = [s for question, s in labels.items() if question in prompt]
        line = re.search(rf"^\[M{step + 1}\] (\S+) ->", prompt, re.MULTILINE)
        if line is None:
            return completion(answer({}, done=False))
        decisive = {"message": f"M{step + 1}", "agent": line.group(1), "reason": "labelled"}
        return completion(answer({"3.3": [f"M{step + 1}"]}, done=False, decisive=decisive))

    return reply


def test_long_runs_chunked_to_the_token_budget_keep_the_references_the_human_labels_use(tmp_path: Any) -> None:
    """Hand-crafted Magentic-One runs (up to 95 messages) under a 4,000-token budget: the long ones go in parts,
    every request fits the budget, and the message the labels name is the one the judge's reference maps to."""
    raw = [json.loads(p.read_text()) for p in sorted(HAND_CRAFTED.glob("*.json"), key=lambda p: int(p.stem))]
    labels = {r["question"].strip().splitlines()[0][:60]: int(r["mistake_step"]) for r in raw}
    assert len(labels) == len(raw)
    budget = 4000
    with fake_openai([_labelled_step_judge(labels)]) as server:
        done = subprocess.run([sys.executable, "-m", "mast_otel.cli", "eval", "--attribution", str(HAND_CRAFTED),
                               "--base-url", server.base_url, "--model", "scripted", "--token-budget", str(budget),
                               "--out", str(tmp_path)], capture_output=True, text=True, timeout=300,
                              check=False)  # fmt: skip
        bodies = server.bodies()
    assert done.returncode == 0, done.stderr
    assert len(bodies) >= len(raw) + 2  # some runs needed more than one part
    assert max(prompt_tokens(b["messages"]) for b in bodies) <= budget
    report = json.loads((tmp_path / "attribution.json").read_text())
    judge = report["subsets"]["hand-crafted"]["methods"]["judge"]
    assert judge["runs"] == len(raw) and judge["errors"] == 0
    assert judge["step_exact"] == 1.0
    sender = ["Orchestrator" if r["history"][int(r["mistake_step"])]["role"].startswith("Orchestrator (")
              else r["history"][int(r["mistake_step"])]["role"] for r in raw]  # fmt: skip
    assert [row["judge"]["agent"] for row in report["rows"]] == sender


def test_attribution_eval_with_the_scripted_judge_on_both_halves_prints_every_subset(tmp_path: Any) -> None:
    """Plumbing on the full algorithm-generated set (../shared) and the shipped hand-crafted runs: the scripted
    judge blames the opening message, so per subset it must score exactly what the first-speaker baseline does."""
    if not FULL.is_dir():
        pytest.skip(f"Who&When runs not found at {FULL} (set MAST_OTEL_WHOWHEN_DATA)")
    with fake_openai([_first_message_judge]) as server:
        done = subprocess.run([sys.executable, "-m", "mast_otel.cli", "eval", "--attribution", str(FULL),
                               str(HAND_CRAFTED), "--base-url", server.base_url, "--model", "scripted", "--out",
                               str(tmp_path)], capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "attribution.json").read_text())
    assert [(k, v["runs"]) for k, v in report["subsets"].items()] == [
        ("algorithm-generated", 126), ("hand-crafted", 6), ("all", 132)]  # fmt: skip
    for block in report["subsets"].values():
        judge, first = block["methods"]["judge"], block["methods"]["first_speaker"]
        assert judge["errors"] == 0
        assert {k: judge[k] for k in first} == first
    for heading in ("## algorithm-generated (126 runs)", "## hand-crafted (6 runs)", "## all runs (132 runs)"):
        assert heading in done.stdout
