"""``Prepared``: what the LLM judge decides about a conversation before any model call.

Its own module because both the judge (:mod:`.llm`, which builds it) and the merge of chunk answers
(:mod:`.merge`, which reads the transcript and plan from it) need the type, and ``llm`` imports ``merge``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .compaction import CompactionPlan
from .prompt import Prompt
from .signals import Signal
from .tokens import count_tokens
from .transcript import Transcript

__all__ = ["Prepared"]


@dataclass(frozen=True, slots=True)
class Prepared:
    """Everything decided before any call: what `mast-otel judge --dry-run` reports."""

    transcript: Transcript
    signals: tuple[Signal, ...]
    plan: CompactionPlan
    prompts: tuple[Prompt, ...]
    prompt_tokens: tuple[int, ...]
    key: str

    @property
    def transcript_tokens(self) -> int:
        return count_tokens(self.transcript.text())
