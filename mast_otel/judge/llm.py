"""``LLMJudge``: labels a conversation with an LLM behind any OpenAI-compatible endpoint.

Data flow: spans -> transcript (redacted, citable refs) -> structural signals as hints -> compaction to the token
budget (chunks if needed) -> cache lookup -> one request per chunk (schema-constrained where the server allows,
validated always, retried when invalid) -> merge -> :class:`~mast_otel.judge.model.Verdict` with evidence mapped
back to span ids. Whatever fails (endpoint down, output never valid) gives an ``error`` verdict with no labels:
a judge that could not answer never reads as "no failure".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord

from .cache import CachedAnswer, VerdictCache, cache_key
from .client import ChatClient, JudgeCallError
from .compaction import compact
from .config import JudgeConfig
from .merge import to_verdict
from .model import Verdict
from .output import JudgeOutput, OutputError, json_schema, parse_output
from .prepared import Prepared
from .prompt import PROMPT_VERSION, Prompt, build_prompt, format_hints, new_nonce, overhead_tokens, prompt_tokens
from .signals import compute_signals
from .tokens import count_tokens
from .transcript import render

__all__ = ["LLMJudge", "Prepared"]

_log = logging.getLogger(__name__)
_RETRY_NOTE_TOKENS = 80  # room kept in the budget for the "your answer was invalid" note on a retry
# Transcripts longer than this always lose what cannot be evidence (repeats, boilerplate, the middle of long tool
# output), even when they would fit the budget: on long runs that is most of the judge's cost.
CLEAN_ABOVE_TOKENS = 4_000
_WORST_NOTES = ("n" * 200,) * 5  # overhead is computed for the longest compaction notes, so every plan fits
_SCHEMA = json_schema()
_GRAMMAR_SCHEMA = json_schema(reason_max_chars=300, max_evidence=12)  # for servers that compile it to a grammar


class LLMJudge:
    """A :class:`~mast_otel.judge.model.Judge` backed by an LLM. Thread-safe; share one per process.

    ``sleep``, ``nonce`` and ``client`` are seams for tests; ``cache`` defaults to one per judge (plus the
    directory in ``config.cache_dir``).
    """

    name = "llm"

    def __init__(
        self,
        config: JudgeConfig | None = None,
        *,
        client: ChatClient | None = None,
        cache: VerdictCache | None = None,
        sleep: Callable[[float], None] = time.sleep,
        nonce: Callable[[], str] = new_nonce,
    ) -> None:
        self.config = config if config is not None else JudgeConfig.from_env()
        self.client = client or ChatClient(self.config, sleep=sleep)
        self.cache = cache if cache is not None else VerdictCache(self.config.cache_dir)
        self._nonce = nonce

    # -- preparation (no model call) -------------------------------------------------
    def prepare(self, spans: Sequence[SpanRecord]) -> Prepared:
        """Render, hint, compact and build the prompts for one conversation."""
        cfg = self.config
        transcript = render(spans, cfg.redactor)
        signals = tuple(compute_signals(transcript.view))
        hints = format_hints(signals, transcript)
        parts = max(cfg.max_chunks, 1)
        overhead = overhead_tokens(hints=hints, notes=_WORST_NOTES, part=(parts, parts))
        budget = cfg.token_budget - overhead - _RETRY_NOTE_TOKENS
        if budget < 200:
            raise ValueError(f"token_budget {cfg.token_budget} leaves no room for a transcript ({overhead} fixed)")
        plan = compact(transcript.lines, budget, max_chunks=parts, clean_above=CLEAN_ABOVE_TOKENS)
        n = len(plan.chunks)
        prompts = tuple(
            build_prompt(chunk, hints=hints, notes=plan.notes, part=(i + 1, n), nonce=self._nonce())
            for i, chunk in enumerate(plan.chunks)
        )
        tokens = tuple(prompt_tokens(p) for p in prompts)
        key = cache_key(
            PROMPT_VERSION, cfg.model_name, cfg.base_url, cfg.token_budget, cfg.max_chunks,
            transcript.sha256(), "\n".join(hints),
        )  # fmt: skip
        return Prepared(transcript, signals, plan, prompts, tokens, key)

    # -- judging ---------------------------------------------------------------------
    def judge(self, spans: Sequence[SpanRecord], *, partial: bool = False) -> Verdict:
        try:
            prepared = self.prepare(spans)
        except Exception as exc:  # a malformed conversation must yield a verdict, not kill the worker
            _log.exception("judge could not prepare the conversation")
            return Verdict.error(sc.SOURCE_LLM, f"could not build the prompt: {type(exc).__name__}: {exc}")
        if not any(line.body.strip() for line in prepared.transcript.lines if line.kind == sc.SPAN_TYPE_MESSAGE):
            return Verdict(
                status=sc.JUDGE_SKIPPED, source=sc.SOURCE_LLM, model=self.config.model_name,
                status_reason="no message content on the spans (content capture off?)",
            )  # fmt: skip
        return self.judge_prepared(prepared, partial=partial)

    def judge_prepared(self, prepared: Prepared, *, partial: bool = False) -> Verdict:
        cached = self.cache.get(prepared.key)
        if cached is not None:
            restored = [JudgeOutput.model_validate(a) for a in cached.answers]
            return to_verdict(self.config, prepared, restored, tokens=(0, 0), partial=partial,
                              extra={"cache": "hit", "cached_tokens_in": str(cached.tokens_in),
                                     "cached_tokens_out": str(cached.tokens_out)})  # fmt: skip
        answers: list[JudgeOutput] = []
        spent_in = spent_out = attempts = 0
        is_message = sc.SPAN_TYPE_MESSAGE
        speakers = {line.sender for line in prepared.transcript.lines if line.kind == is_message and line.sender}
        for prompt, chunk in zip(prepared.prompts, prepared.plan.chunks, strict=True):
            # A decisive step must cite a message this chunk shows, sent by an agent that spoke.
            message_refs = {line.ref: line.span_id for line in chunk if line.kind == is_message}
            try:
                answer, t_in, t_out, n = self._ask(prompt, _decisive_check(message_refs, speakers))
            except _Failed as failure:
                spent_in, spent_out = spent_in + failure.tokens_in, spent_out + failure.tokens_out
                return Verdict.error(
                    sc.SOURCE_LLM, failure.reason, model=self.config.model_name, tokens_in=spent_in,
                    tokens_out=spent_out, cost_usd=self.config.cost(spent_in, spent_out),
                    extra={"prompt_version": PROMPT_VERSION, "attempts": str(attempts + failure.attempts),
                           "response_format": self.client.response_format},
                )  # fmt: skip
            answers.append(answer)
            spent_in, spent_out, attempts = spent_in + t_in, spent_out + t_out, attempts + n
        self.cache.put(
            prepared.key, CachedAnswer(tuple(a.model_dump() for a in answers), spent_in, spent_out)
        )
        return to_verdict(self.config, prepared, answers, tokens=(spent_in, spent_out), partial=partial,
                          extra={"cache": "miss", "attempts": str(attempts),
                                 "response_format": self.client.response_format})  # fmt: skip

    def _ask(
        self, prompt: Prompt, check: Callable[[JudgeOutput], None] = lambda _: None
    ) -> tuple[JudgeOutput, int, int, int]:
        """One chunk: ask, validate (the schema, then ``check``), re-ask with the validation error; raises _Failed
        with what was spent."""
        messages = list(prompt)
        spent_in = spent_out = 0
        last = ""
        for attempt in range(self.config.invalid_retries + 1):
            try:
                completion = self.client.complete(messages, _SCHEMA, _GRAMMAR_SCHEMA)
            except JudgeCallError as exc:
                raise _Failed(str(exc), spent_in, spent_out, attempt + 1) from None
            spent_in += completion.tokens_in if completion.tokens_in is not None else prompt_tokens(messages)
            spent_out += completion.tokens_out if completion.tokens_out is not None else count_tokens(completion.text)
            try:
                answer = parse_output(completion.text)
                check(answer)
                return answer, spent_in, spent_out, attempt + 1
            except OutputError as exc:
                last = str(exc)
                if completion.finish_reason == "length":
                    last += " (the answer was cut off at max_tokens)"
                _log.warning("judge output invalid (attempt %d): %s", attempt + 1, last)
                messages = [*prompt, {"role": "user", "content": _retry_note(last)}]
        tries = self.config.invalid_retries + 1
        raise _Failed(f"no valid answer after {tries} attempt(s): {last}", spent_in, spent_out, tries)


def _decisive_check(message_refs: dict[str, str], speakers: set[str]) -> Callable[[JudgeOutput], None]:
    return lambda answer: answer.check_decisive(message_refs, speakers)


def _retry_note(error: str) -> str:
    return (
        f"Your previous answer was not valid: {error[:300]}. Answer again with only the JSON object of the shape "
        "given above, with all 14 mode ids."
    )


class _Failed(Exception):
    def __init__(self, reason: str, tokens_in: int, tokens_out: int, attempts: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.tokens_in = tokens_in
        self.tokens_out = tokens_out
        self.attempts = attempts
