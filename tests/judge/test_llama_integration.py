"""LLMJudge against a real llama.cpp OpenAI-compatible server (Gemma 3 270M base model): structure only.

What this establishes, measured on the project machines: llama-cpp-python answers ``json_schema`` with HTTP 500,
the judge falls back to ``json_object`` carrying the schema, and the server's grammar then constrains the output
to the schema's shape. It does not get a complete answer: grammar-constrained sampling over Gemma's 262k-token
vocabulary runs at about 1.5 tokens/s here (2 threads), and the smallest valid answer (14 modes) is ~300
tokens, over three minutes. Within this test's 60 s the answer is cut at ``max_tokens``, so the verdict must be
an ``error`` with no labels: the judge never reads a cut answer as "no failure".
"""

from __future__ import annotations

import pytest

from mast_otel import semconv as sc
from mast_otel.judge.config import JudgeConfig
from mast_otel.judge.llm import LLMJudge
from mast_otel.judge.output import parse_output
from mast_otel.taxonomy import MODE_IDS
from tests.judge.scenarios import dialogue

pytestmark = pytest.mark.integration


def test_llm_judge_against_llama_cpp_in_json_mode(llama):
    spans = dialogue([("user", "solver", "Add 2 and 3."), ("solver", "user", "5. TERMINATE")])
    config = JudgeConfig(base_url=llama.base_url, model=llama.model, max_output_tokens=10, timeout_s=55,
                         max_retries=0, invalid_retries=0, token_budget=3000)  # fmt: skip
    judge = LLMJudge(config)
    texts: list[str] = []
    complete = judge.client.complete

    def recording(messages, schema, grammar_schema=None):
        completion = complete(messages, schema, grammar_schema)
        texts.append(completion.text)
        return completion

    judge.client.complete = recording  # type: ignore[method-assign]
    verdict = judge.judge(spans)

    assert judge.client.response_format == "json_object"  # json_schema was refused, the fallback took over
    (text,) = texts
    assert text.lstrip().startswith("{") and "summary" in text  # the grammar enforced the schema's shape
    if verdict.status == sc.JUDGE_ERROR:
        assert verdict.modes == () and verdict.task_completed is None
        assert "cut off at max_tokens" in (verdict.status_reason or "")
    else:  # a faster machine or model that completes the answer must yield a schema-valid verdict
        assert verdict.status == sc.JUDGE_OK and verdict.source == sc.SOURCE_LLM
        assert set(parse_output(text).modes) == set(MODE_IDS)
    assert verdict.tokens_in > 0 and verdict.model == llama.model
