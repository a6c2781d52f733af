"""``NoModelJudge``: what runs when no model is configured. It labels nothing.

Structural signals (:mod:`mast_otel.judge.signals`) are facts about a conversation's shape, not the judgement MAST
defines, so without a model there is no MAST verdict: every conversation is ``mast.judge.status=skipped`` with the
reason, and the collector attaches the signals as ``mast.signal.*`` (it does so whatever judge runs). MAST labels
(``mast.failure_modes``, ``mast.fm.*``, ``mast_failure_mode_total``) come only from a judge: the LLM judge, or a
user-supplied ``MODULE:CALLABLE``.
"""

from __future__ import annotations

from collections.abc import Sequence

from mast_otel.spans import SpanRecord

from .model import Verdict

__all__ = ["NO_MODEL_REASON", "NoModelJudge"]

NO_MODEL_REASON = (
    "no model configured: structural signals only (mast.signal.*), no MAST labels; for labels run the LLM judge "
    "(collector: --judge llm) with a model: OPENAI_API_KEY + MAST_OTEL_JUDGE_MODEL, or MAST_OTEL_JUDGE_BASE_URL "
    "(+ MAST_OTEL_JUDGE_MODEL) for any OpenAI-compatible endpoint"
)


class NoModelJudge:
    """A :class:`mast_otel.judge.model.Judge` for the model-free path: every verdict is ``skipped``, saying why."""

    name = "signals"
    reads_span_content = False  # the collector may then hand it span summaries (mast_otel.collector.assemble.summaries)

    def judge(self, spans: Sequence[SpanRecord], *, partial: bool = False) -> Verdict:
        return Verdict.skipped(NO_MODEL_REASON)
