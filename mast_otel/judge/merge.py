"""From validated answers (one per chunk) to a :class:`~mast_otel.judge.model.Verdict`.

Chunks are merged without another model call: a mode is present if any chunk saw it (each chunk saw the
structural hints computed over the whole run and a digest of the parts before it, so cross-chunk patterns like
repetition are not lost), evidence is the union, task completion comes from the last chunk (it holds the end of
the run and the termination). With several chunks the verdict says which part cited what
(``extra["evidence_by_part"]``, e.g. ``1.3: part 1 M3,M5; part 3 M40``) and each reason names its part.
Evidence references the transcript does not contain are dropped and counted: a label never points at a span
the judge invented.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mast_otel import semconv as sc
from mast_otel.taxonomy import MODE_IDS

from .config import JudgeConfig
from .model import DecisiveStep, ModeLabel, Verdict
from .output import JudgeOutput
from .prepared import Prepared
from .prompt import PROMPT_VERSION

__all__ = ["to_verdict"]

_REASON_CHARS = 240
_SUMMARY_CHARS = 600


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def to_verdict(
    config: JudgeConfig,
    prepared: Prepared,
    answers: Sequence[JudgeOutput],
    *,
    tokens: tuple[int, int],
    partial: bool,
    extra: Mapping[str, str],
) -> Verdict:
    refs = prepared.transcript.refs
    unknown: list[str] = []
    labels: list[ModeLabel] = []
    by_part: list[str] = []
    several = len(answers) > 1
    for mode_id in MODE_IDS:
        seen = [(n, a.modes[mode_id]) for n, a in enumerate(answers, start=1) if a.modes[mode_id].present]
        if not seen:
            continue
        span_ids: list[str] = []
        cited: list[str] = []
        for n, assessment in seen:
            known = [ref for ref in assessment.refs() if ref in refs]
            unknown.extend(ref for ref in assessment.refs() if ref not in refs)
            span_ids.extend(refs[ref] for ref in known)
            cited.append(f"part {n} {','.join(known) or '-'}")
        if several:
            by_part.append(f"{mode_id}: {'; '.join(cited)}")
        reason = " / ".join(dict.fromkeys(
            (f"part {n}: " if several else "") + _one_line(a.reason, _REASON_CHARS) for n, a in seen if a.reason.strip()
        ))  # fmt: skip
        labels.append(ModeLabel(mode_id, tuple(dict.fromkeys(span_ids)), _one_line(reason, _REASON_CHARS * 2)))
    summaries = list(dict.fromkeys(a.summary.strip() for a in answers if a.summary.strip()))
    plan = prepared.plan
    status = sc.JUDGE_PARTIAL if partial else (sc.JUDGE_TRUNCATED if plan.truncated else sc.JUDGE_OK)
    reasons = []
    if partial:
        reasons.append("conversation not finished; judged on the spans seen so far")
    if plan.truncated:
        reasons.append(f"transcript compacted to the token budget ({plan.describe()})")
    info = {
        "prompt_version": PROMPT_VERSION,
        "transcript_sha256": prepared.transcript.sha256(),
        "compaction": plan.describe(),
        "chunks": str(len(plan.chunks)),
        "prompt_tokens_counted": str(sum(prepared.prompt_tokens)),
        "unknown_evidence_refs": str(len(unknown)),
        "redactions": str(prepared.transcript.redactions),
        **dict(extra),
    }
    if by_part:
        info["evidence_by_part"] = " | ".join(by_part)
    if unknown:
        info["unknown_evidence_examples"] = ",".join(list(dict.fromkeys(unknown))[:5])
    if prepared.signals:
        info["signals"] = ",".join(f"{s.mode_id}:{s.name}" for s in prepared.signals)
    decisive = _decisive(prepared, answers)
    if decisive is not None and several:
        info["decisive_part"] = str(decisive[1])
    return Verdict(
        decisive=decisive[0] if decisive is not None else None,
        status=status,
        source=sc.SOURCE_LLM,
        modes=tuple(labels),
        summary=_one_line(" | ".join(summaries), _SUMMARY_CHARS),
        task_completed=answers[-1].task_completed if answers else None,
        model=config.model_name,
        tokens_in=tokens[0],
        tokens_out=tokens[1],
        cost_usd=config.cost(*tokens),
        status_reason="; ".join(reasons) or None,
        extra=info,
    )


def _decisive(prepared: Prepared, answers: Sequence[JudgeOutput]) -> tuple[DecisiveStep, int] | None:
    """The decisive step and the part that named it: across parts, the earliest message any part names (the
    failure became inevitable there; a later part only saw its consequences). Answers were checked against their
    part's transcript before this, so every reference maps to a message span."""
    refs = prepared.transcript.refs
    index_of = {e.span.span_id: e.attr(sc.MESSAGE_INDEX) for e in prepared.transcript.view.messages}
    best: tuple[int, DecisiveStep, int] | None = None
    for part, answer in enumerate(answers, start=1):
        if answer.decisive is None or answer.decisive.ref() not in refs:
            continue
        span_id = refs[answer.decisive.ref()]
        index = index_of.get(span_id)
        if not isinstance(index, int):
            continue
        step = DecisiveStep(span_id, index, answer.decisive.agent, _one_line(answer.decisive.reason, _REASON_CHARS))
        if best is None or index < best[0]:
            best = (index, step, part)
    return (best[1], best[2]) if best is not None else None
