"""Counts over conversations: by mode, category, framework and service, shared by every renderer.

Each conversation counts once per mode whatever the number of evidence spans, and only judged conversations
(``mast.judge.status`` ok, partial or truncated) count: an error or skipped judge run is not "no failure".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mast_otel.collector.report.conversations import UNKNOWN, Conversation
from mast_otel.taxonomy import CATEGORIES, MODES, mode

__all__ = ["Report", "category_of", "pct"]


@dataclass(frozen=True, slots=True)
class Report:
    """Counts over a set of conversations (each conversation counted once per mode)."""

    conversations: tuple[Conversation, ...]

    @property
    def judged(self) -> list[Conversation]:
        return [c for c in self.conversations if c.judged]

    @property
    def failed(self) -> list[Conversation]:
        return [c for c in self.conversations if c.failed]

    def statuses(self) -> Counter[str]:
        return Counter(c.status for c in self.conversations)

    def by_mode(self, where: Mapping[str, str] | None = None) -> Counter[str]:
        """Conversations per mode id, optionally only those whose ``framework``/``service`` match ``where``."""
        counts: Counter[str] = Counter()
        for c in self.judged:
            if where and any(getattr(c, k) != v for k, v in where.items()):
                continue
            counts.update(set(c.modes))
        return counts

    def by_category(self) -> Counter[str]:
        """Conversations with at least one mode in each category."""
        counts: Counter[str] = Counter()
        for c in self.judged:
            counts.update({category_of(m) for m in c.modes})
        return counts

    def by_signal(self) -> Counter[str]:
        """Conversations per structural signal (facts, counted whatever the verdict, judged or skipped)."""
        counts: Counter[str] = Counter()
        for c in self.conversations:
            counts.update(set(c.signals))
        return counts

    def groups(self, key: str) -> list[str]:
        """The framework or service values present, most conversations first."""
        return [k for k, _ in Counter(getattr(c, key) for c in self.conversations).most_common()]

    def judged_in(self, key: str, value: str) -> int:
        return sum(1 for c in self.judged if getattr(c, key) == value)

    def to_json(self) -> dict[str, Any]:
        return {
            "conversations": len(self.conversations),
            "judged": len(self.judged),
            "failed": len(self.failed),
            "statuses": dict(self.statuses()),
            "by_mode": {m.id: self.by_mode()[m.id] for m in MODES},
            "by_category": {c.id: self.by_category()[c.id] for c in CATEGORIES},
            "by_framework": {f: dict(self.by_mode({"framework": f})) for f in self.groups("framework")},
            "by_service": {s: dict(self.by_mode({"service": s})) for s in self.groups("service")},
            "by_signal": dict(self.by_signal()),
            "failed_conversations": [
                {"trace_id": c.trace_id, "name": c.name, "service": c.service, "framework": c.framework,
                 "status": c.status, "source": c.source, "modes": list(c.modes),
                 "evidence": {m: list(v) for m, v in c.evidence.items()}}
                for c in self.failed
            ],
        }  # fmt: skip


def category_of(mode_id: str) -> str:
    """The category id of a mode, or ``unknown`` for a mode id outside the taxonomy (a newer judge's label)."""
    try:
        return mode(mode_id).category.id
    except KeyError:
        return UNKNOWN


def pct(n: int, total: int) -> str:
    """``n`` as a whole percentage of ``total``; ``-`` when there is nothing to divide by."""
    return f"{100.0 * n / total:.0f}%" if total else "-"
