"""One verdict as the history keeps it: what it is about, in plain values (the writer turns them into ids)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from mast_otel import semconv as sc
from mast_otel.judge.model import Verdict

__all__ = ["UNKNOWN", "VerdictEntry", "entry_of", "unit_digest"]

UNKNOWN = "unknown"
_JUDGED = (sc.JUDGE_OK, sc.JUDGE_PARTIAL, sc.JUDGE_TRUNCATED)


@dataclass(frozen=True, slots=True)
class VerdictEntry:
    """A verdict with its time kept by the writer: the conversation (trace id, unit key), how it was judged, the
    modes found, the service, ``service.version`` and framework of the conversation's resource, and the decisive
    agent and step where attribution ran."""

    trace_id: bytes
    unit: str  # the conversation's key within its trace (root span id, or conv:<id>)
    status: str  # mast.judge.status
    modes: tuple[str, ...]  # present modes; () unless status is ok, partial or truncated
    service: str = UNKNOWN
    version: str = UNKNOWN
    framework: str = UNKNOWN
    agent: str | None = None  # the decisive agent (mast.decisive.agent)
    step: int | None = None  # the decisive message's index (mast.decisive.message_index)
    judge: str = UNKNOWN  # the judge model, or the judge's name

    @property
    def key(self) -> tuple[bytes, int]:
        """What makes a verdict the same conversation's again (a restart releasing it a second time)."""
        return self.trace_id, unit_digest(self.unit)


def unit_digest(unit: str) -> int:
    """A conversation key as a signed 64-bit integer (eight bytes a row instead of a 16+ character string)."""
    return int.from_bytes(hashlib.blake2b(unit.encode(), digest_size=8).digest(), "big", signed=True)


def entry_of(
    verdict: Verdict,
    *,
    trace_id: bytes,
    unit: str,
    service: str | None,
    version: str | None,
    framework: str | None,
    judge_name: str,
) -> VerdictEntry:
    """The history entry of a released verdict: modes only when it was judged (an error or skip is never "no
    failure"), the decisive step only when the judge gave one for a failed run."""
    judged = verdict.status in _JUDGED
    modes = tuple(dict.fromkeys(verdict.failure_modes)) if judged else ()
    decisive = verdict.decisive if judged and modes else None
    return VerdictEntry(
        trace_id=trace_id,
        unit=unit,
        status=verdict.status,
        modes=modes,
        service=service or UNKNOWN,
        version=version or UNKNOWN,
        framework=framework or UNKNOWN,
        agent=decisive.agent if decisive is not None else None,
        step=decisive.message_index if decisive is not None else None,
        judge=(verdict.model or judge_name) if verdict.status != sc.JUDGE_SKIPPED else judge_name,
    )
