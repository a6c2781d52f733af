"""The MAST judge: turns one conversation's spans into failure-mode labels (see ``model`` for the contract).

``build_judge(config)`` returns an :class:`~mast_otel.judge.llm.LLMJudge` when an endpoint or model is
configured (``MAST_OTEL_JUDGE_BASE_URL`` / ``MAST_OTEL_JUDGE_MODEL``), else
:class:`~mast_otel.judge.rules.NoModelJudge`, which labels nothing (status ``skipped``): without a model there are
structural signals (:mod:`~mast_otel.judge.signals`), never MAST verdicts. The LLM side (openai, pydantic,
bpe-openai) is imported only when it is used, so the collector can import this package without the ``judge``
extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .model import Judge, ModeLabel, Verdict
from .rules import NoModelJudge

if TYPE_CHECKING:
    from .config import JudgeConfig

__all__ = ["Judge", "ModeLabel", "NoModelJudge", "Verdict", "build_judge"]


def build_judge(config: JudgeConfig | None = None) -> Judge:
    """The LLM judge when a model or base URL is configured (from ``config`` or the environment), else none."""
    if config is None:
        try:
            from .config import JudgeConfig
        except ImportError:  # the judge extra is not installed: no model
            return NoModelJudge()
        config = JudgeConfig.from_env()
    if not config.llm_configured:
        return NoModelJudge()
    from .llm import LLMJudge

    return LLMJudge(config)
