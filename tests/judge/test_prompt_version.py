"""The prompt version keys the verdict cache (``cache_key`` in judge/llm.py): a change to what the model is shown
without a new ``PROMPT_VERSION`` would serve verdicts judged on the old prompt. This test fails on any such change
until the version is bumped and its digest recorded here."""

from __future__ import annotations

import hashlib
import json

from mast_otel.judge.config import JudgeConfig
from mast_otel.judge.llm import LLMJudge
from mast_otel.judge.prompt import PROMPT_VERSION
from tests.judge.test_long_traces import long_run

# What the model is shown for two fixed conversations (one call, and compacted into chunks), per prompt version.
SHOWN_DIGEST = {
    "mast-otel-judge/4": "430c8468298a9211f905ee4c286e41a05d9f1ae4c3b604483bbb9292d3a51b6d",
}


def _shown() -> str:
    digest = hashlib.sha256()
    for turns, words, chunks in ((6, 40, 1), (120, 400, 3)):
        judge = LLMJudge(JudgeConfig(model="m", token_budget=4000, max_chunks=chunks), nonce=lambda: "fixed-nonce")
        for prompt in judge.prepare(long_run(turns, words, loop_every=5)).prompts:
            digest.update(json.dumps(prompt, sort_keys=True).encode())
    return digest.hexdigest()


def test_a_change_to_what_the_model_is_shown_bumps_the_prompt_version() -> None:
    assert PROMPT_VERSION in SHOWN_DIGEST, f"record the digest of {PROMPT_VERSION}: {_shown()}"
    assert _shown() == SHOWN_DIGEST[PROMPT_VERSION], (
        "the prompt changed: bump PROMPT_VERSION in mast_otel/judge/prompt.py (the verdict cache is keyed by it) "
        f"and record {_shown()} for it here"
    )
