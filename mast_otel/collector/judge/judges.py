"""Which judge the collector runs (``--judge``), imported lazily so the collector never needs the judge extra.

``signals`` (the default; ``rules`` is its old name) is :class:`mast_otel.judge.rules.NoModelJudge`: no model, so
no MAST labels; every conversation is ``skipped`` with that reason and carries only the structural signals the
collector attaches whatever the judge (``mast.signal.*``). If that module cannot be imported, the collector falls
back to :class:`NoJudgeAvailable`, which labels every conversation ``skipped`` with the import error as the reason,
so spans still flow and the gap is visible on every trace. ``llm`` builds mast_otel.judge's
LLM judge from ``--judge-model``/``--judge-base-url``/``--judge-api-key`` (and ``MAST_OTEL_JUDGE_*``); ``none``
skips every conversation; ``MODULE:CALLABLE`` calls ``CALLABLE()`` and expects a Judge back.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Sequence

from mast_otel.collector.config import CollectorConfig, ConfigError
from mast_otel.judge.model import Judge, Verdict
from mast_otel.spans import SpanRecord

__all__ = ["NoJudgeAvailable", "SkipAllJudge", "build_judge", "judge_name", "reads_span_content"]

_log = logging.getLogger(__name__)


class SkipAllJudge:
    """``--judge none``: every conversation is labelled skipped (spans still flow, counters still count)."""

    name = "none"
    reads_span_content = False

    def judge(self, spans: Sequence[SpanRecord], *, partial: bool = False) -> Verdict:
        return Verdict.skipped("judging is off (--judge none)")


class NoJudgeAvailable:
    """The minimal fallback when ``mast_otel.judge.rules`` cannot be imported: skipped, saying why."""

    name = "unavailable"
    reads_span_content = False

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def judge(self, spans: Sequence[SpanRecord], *, partial: bool = False) -> Verdict:
        return Verdict.skipped(f"no judge available: {self.reason}")


def judge_name(judge: Judge) -> str:
    return str(getattr(judge, "name", type(judge).__name__))


def reads_span_content(judge: Judge) -> bool:
    """Whether the judge reads what the spans say; one that does not (``reads_span_content = False``: the
    model-free judges) lets release use the summaries ingest kept (:mod:`.summaries`) instead of decoding spans."""
    return bool(getattr(judge, "reads_span_content", True))


def build_judge(config: CollectorConfig) -> Judge:
    """The judge ``config.judge`` names; ConfigError when it cannot be built (fails at startup, not per trace)."""
    spec = config.judge
    if spec == "none":
        return SkipAllJudge()
    if spec in ("signals", "rules"):
        try:
            from mast_otel.judge.rules import NoModelJudge
        except ImportError as exc:
            _log.warning("mast_otel.judge.rules is not importable (%s); conversations will be labelled skipped", exc)
            return NoJudgeAvailable(f"mast_otel.judge.rules: {exc}")
        return NoModelJudge()
    if spec == "llm":
        return _llm_judge(config)
    module_name, _, attr = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"judge: cannot import {spec!r}: {exc}") from None
    judge = factory()
    if not callable(getattr(judge, "judge", None)):
        raise ConfigError(f"judge: {spec!r} returned {type(judge).__name__}, which has no judge(spans, partial=)")
    return judge  # type: ignore[no-any-return]


def _llm_judge(config: CollectorConfig) -> Judge:
    try:
        from mast_otel.judge import build_judge as build_llm
        from mast_otel.judge.config import JudgeConfig
    except ImportError as exc:
        raise ConfigError(f"judge=llm needs the judge extra (pip install 'mast-otel[judge]'): {exc}") from None
    judge_config = JudgeConfig.from_env(
        base_url=config.judge_base_url, model=config.judge_model, api_key=config.judge_api_key
    )
    if not judge_config.llm_configured:
        raise ConfigError("judge=llm needs --judge-model or --judge-base-url (or MAST_OTEL_JUDGE_MODEL/_BASE_URL)")
    try:
        return build_llm(judge_config)
    except ImportError as exc:
        raise ConfigError(f"judge=llm: the LLM judge cannot be imported: {exc}") from None
