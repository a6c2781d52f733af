"""The contract between the collector and any judge: a conversation's spans in, a :class:`Verdict` out.

The collector knows no judge internals and no framework; a judge knows no collector. Both import only this.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord


@dataclass(frozen=True, slots=True)
class ModeLabel:
    """One failure mode found present, with the spans it was seen on (span ids) and a one-line reason."""

    mode_id: str  # "1.3"
    evidence_span_ids: tuple[str, ...] = ()
    reason: str = ""


@dataclass(frozen=True, slots=True)
class DecisiveStep:
    """Where the failure became inevitable: the message's span, its ordinal, who sent it, and why (one line).

    A judge gives it only for a failed run, and only citing a message that exists in the transcript, sent by an
    agent that spoke: anything else is an invalid answer, never a guess.
    """

    span_id: str
    message_index: int  # mast.message.index of the decisive message
    agent: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Verdict:
    """A judge's answer for one conversation.

    ``status`` is a ``mast.judge.status`` value (ok, error, skipped, truncated, partial); ``source`` a
    ``mast.label.source`` value (llm; none when skipped; a user judge may name its own). ``modes`` lists only
    the modes found *present*; an ``error`` verdict carries no modes, never an invented "no failure".
    """

    status: str
    source: str
    modes: tuple[ModeLabel, ...] = ()
    summary: str = ""
    task_completed: bool | None = None
    model: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    status_reason: str | None = None  # why error/skipped/truncated/partial
    extra: dict[str, str] = field(default_factory=dict)
    decisive: DecisiveStep | None = None  # who and when (a judge that attributes failures gives it)

    @property
    def failure_modes(self) -> tuple[str, ...]:
        return tuple(m.mode_id for m in self.modes)

    @property
    def failed(self) -> bool:
        return bool(self.modes)

    @classmethod
    def error(cls, source: str, reason: str, **kw: object) -> Verdict:
        return cls(status=sc.JUDGE_ERROR, source=source, status_reason=reason, **kw)  # type: ignore[arg-type]

    @classmethod
    def skipped(cls, reason: str) -> Verdict:
        return cls(status=sc.JUDGE_SKIPPED, source=sc.SOURCE_NONE, status_reason=reason)


class Judge(Protocol):
    """Anything that labels a conversation. ``partial`` is True when the conversation never finished
    (its root did not end before the collector's maximum age) and only the spans seen so far are given."""

    name: str

    def judge(self, spans: Sequence[SpanRecord], *, partial: bool = False) -> Verdict: ...
