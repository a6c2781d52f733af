"""Labelled MAD files in their upstream formats: the rebuilt full dataset and the human-labelled traces.

Why this exists: the 1,242-row MAD release (and the step-list restructuring in ../shared/mast-data) attaches its
``mast_annotation`` vectors to the wrong traces (a record's labels depend only on its position in its group, a
stronger form of MAST issue #17), so no agreement figure measured on it means anything. Users who have the
rebuilt file (upstream, 2026-08-13, 1,642 rows keyed on ``trace.key`` + ``trace.index``) or the human-labelled
file get meaningful figures from these readers.

- **Rebuilt MAD** (``MAD_full_dataset.json``): a list of ``{mas_name, llm_name, benchmark_name, trace_id,
  trace: {key, index, trajectory}, mast_annotation}``; ``trajectory`` is one raw log string. Key:
  ``{trace.key}/{trace.index}``.
- **Human-labelled MAD** (``MAD_human_labelled_dataset.json``): ``{round, mas_name, benchmark_name, trace_id,
  trace, annotations: [{"failure mode": "<code> <name>", "annotator_1": bool, ...}]}``. Its rounds use three
  taxonomy versions with renumbered codes (MAST issue #18), so codes are remapped by the mode's *name* to the
  14-mode taxonomy; a mode counts present when most annotators marked it. Names that match no final mode (or
  match two) are dropped and reported.

A raw trajectory has no message structure: it becomes one conversation whose messages are the log's
blank-line-separated blocks (sender ``log``), so the judge reads the whole log, citable block by block. Structural
signals on such input see only that shape.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mast_otel.steplist import Step, StepRecord
from mast_otel.taxonomy import MODE_IDS

__all__ = ["LabelFormat", "detect_format", "human_labels", "old_release_warning", "records_from_mad"]

OLD_RELEASE_ROWS = 1242
BLOCK_CHARS = 4000  # a raw log block longer than this is split, so no single message swallows the log

# Names (and older names) of each final mode, matched as lowercase substrings of an annotation's mode text.
_NAMES: dict[str, tuple[str, ...]] = {
    "1.1": ("disobey task specification", "task specification"),
    "1.2": ("disobey role specification", "role specification"),
    "1.3": ("step repetition",),
    "1.4": ("loss of conversation history", "conversation history"),
    "1.5": ("unaware of termination", "termination condition"),
    "2.1": ("conversation reset",),
    "2.2": ("clarification",),
    "2.3": ("task derailment", "derailment"),
    "2.4": ("information withholding", "withholding information", "withhold"),
    "2.5": ("ignored other agent", "ignoring other agent", "ignored input", "ignore other agent"),
    "2.6": ("reasoning-action mismatch", "action-reasoning mismatch", "reasoning action mismatch",
            "action reasoning mismatch"),
    "3.1": ("premature termination",),
    "3.2": ("no or incomplete verification", "incomplete verification", "lack of verification"),
    "3.3": ("incorrect verification", "weak verification"),
}  # fmt: skip
_AMBIGUOUS = ("no or incorrect verification",)  # 3.2 in one release, 3.3 in another: dropped


@dataclass(frozen=True, slots=True)
class LabelFormat:
    """What kind of labelled file this is, and whether its labels can be trusted for agreement figures."""

    name: str  # "steplist-mad-1242", "mad-full", "mad-full-1242", "mad-human", "otlp"
    trusted: bool
    note: str = ""


def old_release_warning(rows: int) -> str:
    return (
        f"WARNING: these {rows} reference labels come from the 1,242-row MAD release, whose label vectors are not "
        "attached to their traces (a record's labels depend only on its position in its group; MAST issue #17). "
        "Precision, recall, F1 and kappa against them mean nothing. Use the rebuilt MAD file (1,642 rows, keyed on "
        "trace.key + trace.index) or MAD_human_labelled_dataset.json, or `mast-otel eval --suite`."
    )


def detect_format(data: Any) -> LabelFormat | None:
    """The format of a parsed JSON document, or None when it is not a MAD file this module reads."""
    if not isinstance(data, list) or not data or not isinstance(data[0], Mapping):
        return None
    first = data[0]
    if "steps" in first:  # the step-list restructuring of the 1,242-row release (../shared/mast-data)
        return LabelFormat("steplist-mad-1242", False, old_release_warning(len(data)))
    if "annotations" in first and isinstance(first.get("trace"), (Mapping, str)):
        return LabelFormat("mad-human", True, "human labels, remapped to the 14 modes by name (MAST issue #18)")
    if "mast_annotation" in first and isinstance(first.get("trace"), Mapping):
        # The rebuilt release added ProgramDev-v2 rows; the old one had exactly 1,242 rows and none.
        old = len(data) == OLD_RELEASE_ROWS or not any(
            str(r.get("benchmark_name", "")).endswith("-v2") for r in data if isinstance(r, Mapping)
        )
        if old:
            return LabelFormat("mad-full-1242", False, old_release_warning(len(data)))
        return LabelFormat("mad-full", True, "rebuilt MAD labels (o1 judge labels, keyed on trace.key + trace.index)")
    return None


def _blocks(trajectory: str) -> list[str]:
    out: list[str] = []
    for block in re.split(r"\n\s*\n", trajectory):
        block = block.strip()
        while len(block) > BLOCK_CHARS:
            out.append(block[:BLOCK_CHARS])
            block = block[BLOCK_CHARS:]
        if block:
            out.append(block)
    return out or [trajectory.strip() or "(empty trajectory)"]


def _trace(rec: Mapping[str, Any]) -> tuple[str, str, str]:
    """(key, index, trajectory) of a record's ``trace`` (a mapping, or a bare string in some copies)."""
    trace = rec.get("trace")
    if isinstance(trace, Mapping):
        return str(trace.get("key", "")), str(trace.get("index", "")), str(trace.get("trajectory", ""))
    return "", str(rec.get("trace_id", "")), str(trace or "")


def _record(rec: Mapping[str, Any], index: int, labels: Mapping[str, bool]) -> StepRecord:
    key, trace_index, trajectory = _trace(rec)
    steps = tuple(Step(agent="log", content=b, kind="message", index=i) for i, b in enumerate(_blocks(trajectory)))
    return StepRecord(
        index=index,
        steps=steps,
        trace_id=trace_index or str(rec.get("trace_id", index)),
        mad_trace_key=key or str(rec.get("mas_name", "mad")),
        mas_name=str(rec.get("mas_name") or "unknown"),
        llm_name=rec.get("llm_name"),
        benchmark_name=rec.get("benchmark_name"),
        mast_annotation=dict(labels),
        n_turns=len(steps),
    )


def mode_for_name(text: str) -> str | None:
    """The final mode an annotation's "<code> <name>" text names, or None (unknown or ambiguous name)."""
    low = " ".join(text.lower().replace("_", " ").split())
    if any(a in low for a in _AMBIGUOUS):
        return None
    hits = {m for m, names in _NAMES.items() if any(n in low for n in names)}
    if len(hits) == 2 and hits == {"3.2", "3.3"}:
        hits = {"3.2"} if "incomplete" in low else {"3.3"}
    return hits.pop() if len(hits) == 1 else None


def human_labels(annotations: Iterable[Any]) -> tuple[dict[str, bool], list[str]]:
    """Majority-vote labels over the 14 modes, and the annotation names that could not be remapped."""
    labels = {m: False for m in MODE_IDS}
    unmapped: list[str] = []
    for a in annotations:
        if not isinstance(a, Mapping):
            continue
        name = str(a.get("failure mode") or a.get("failure_mode") or "")
        votes = [bool(v) for k, v in a.items() if k.startswith("annotator")]
        target = mode_for_name(name)
        if target is None:
            unmapped.append(name)
            continue
        if votes and sum(votes) * 2 > len(votes):
            labels[target] = True
    return labels, unmapped


@dataclass
class MadRecords:
    records: list[StepRecord]
    unmapped: dict[str, int] = field(default_factory=dict)  # human file: mode names dropped, with their count


def records_from_mad(data: Sequence[Any], fmt: LabelFormat) -> MadRecords:
    """Step records (one per trace, the raw log as blocks) with their reference labels."""
    out = MadRecords([])
    for i, rec in enumerate(data):
        if not isinstance(rec, Mapping):
            raise ValueError(f"record {i}: expected an object, got {type(rec).__name__}")
        if fmt.name == "mad-human":
            labels, unmapped = human_labels(rec.get("annotations") or ())
            for name in unmapped:
                out.unmapped[name] = out.unmapped.get(name, 0) + 1
        else:
            raw = rec.get("mast_annotation") or {}
            labels = {m: bool(int(raw.get(m, 0) or 0)) for m in MODE_IDS}
        out.records.append(_record(rec, i, labels))
    return out
