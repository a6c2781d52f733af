"""Typed reading of recorded MAS traces in the step-list JSON format (the MAD/MAST-Data restructuring).

A step-list file is a JSON list of records::

    [{"steps": [{"agent": "assistant", "content": "...", "kind": "tool_call", "metadata": {"step_index": 1}}, ...],
      "metadata": {"trace_id": 0, "mad_trace_key": "AG2_GSM_Plus_GPT4o", "mas_name": "AG2", "llm_name": "GPT-4o",
                   "benchmark_name": "GSM", "mast_annotation": {"1.1": 0, ..., "3.3": 1}, "n_turns": 4, ...}}]

Quirks of the real files (../shared/mast-data/parsers_output), handled here so callers never see them:

- ``trace_id`` is an int in the AG2 file and a string in the MetaGPT file; it is kept as a string. It repeats
  across runs, so a record's key is ``mad_trace_key`` + ``trace_id`` (:attr:`StepRecord.trace_key`, the form the
  third-party judge baseline uses, e.g. ``AG2_GSM_Plus_Claude_0``) and its position in the file is kept too.
- ``kind`` is ``message``, ``tool_call`` or ``tool_result``, and ``system`` for the group chat manager's
  introduction in the AG2 MMLU traces; any string is accepted and kept as written.
- The MetaGPT records' ``metadata.task`` is a parser artefact (``"\\nACTION: ...UserRequirement\\nCONTENT:"``);
  the task is the first step's content (:attr:`StepRecord.task`).
- Labels are the released o1 (LLM) labels, a noisy reference, not ground truth.

Malformed input raises :class:`StepListError` naming the record index and the field, e.g.
``record 12: steps[3].content must be a string, got int``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Step", "StepListError", "StepRecord", "load_steplist", "parse_record", "parse_steplist"]

_MODE_ID = re.compile(r"^\d+\.\d+$")
# Top-level metadata fields read into typed attributes; everything else is kept in StepRecord.extra.
_TYPED_FIELDS = frozenset(
    {"trace_id", "mad_trace_key", "mas_name", "llm_name", "benchmark_name", "mast_annotation", "n_turns"}
)


class StepListError(ValueError):
    """A step-list file or record that does not have the expected shape."""


@dataclass(frozen=True, slots=True)
class Step:
    """One recorded step: an agent's message, tool call or tool result."""

    agent: str
    content: str
    kind: str  # as written in the file: message, tool_call, tool_result, system, ...
    index: int  # the step's position in its record (metadata.step_index when present)
    is_final_answer: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One recorded conversation and its metadata."""

    index: int  # position in the file
    steps: tuple[Step, ...]
    trace_id: str
    mad_trace_key: str
    mas_name: str
    llm_name: str | None = None
    benchmark_name: str | None = None
    mast_annotation: Mapping[str, bool] = field(default_factory=dict)  # mode id -> present (reference labels)
    n_turns: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)  # the other metadata fields, untouched
    # A task stated apart from the steps (Who&When: the question); None = the first step's content.
    task_text: str | None = None
    # Other reference labels, each on the root as ``mast.reference.<key>`` (Who&When: the decisive agent/step).
    references: Mapping[str, str | int] = field(default_factory=dict)
    # ``mast.framework`` when it is not ``mas_name`` lowercased (Who&When's Magentic-One runs: autogen_agentchat).
    framework_name: str | None = None

    @property
    def trace_key(self) -> str:
        """A unique key: ``{mad_trace_key}_{trace_id}``."""
        return f"{self.mad_trace_key}_{self.trace_id}"

    @property
    def framework(self) -> str:
        """The framework name as mast-otel spells it (``mast.framework``): ``mas_name`` lowercased unless named."""
        return self.framework_name or self.mas_name.lower()

    @property
    def task(self) -> str:
        """The task: as stated apart from the steps when the source does, else the initiator's first message."""
        return self.task_text if self.task_text is not None else self.steps[0].content

    @property
    def reference_modes(self) -> tuple[str, ...]:
        """The failure-mode ids the reference labels mark present, in label order."""
        return tuple(mode for mode, present in self.mast_annotation.items() if present)

    @property
    def agents(self) -> tuple[str, ...]:
        """Every agent that speaks, in order of first appearance."""
        return tuple(dict.fromkeys(step.agent for step in self.steps))


def load_steplist(path: str | Path) -> list[StepRecord]:
    """Read and check a step-list JSON file; raises :class:`StepListError` (or ``OSError``) on failure."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise StepListError(f"{path}: not valid JSON: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise StepListError(f"{path}: not UTF-8 text: {exc}") from exc
    try:
        return parse_steplist(data)
    except StepListError as exc:
        raise StepListError(f"{path}: {exc}") from None


def parse_steplist(data: Any) -> list[StepRecord]:
    """Check already-decoded JSON (a list of records) and return typed records."""
    if not isinstance(data, list):
        raise StepListError(f"a step-list file holds a JSON list of records, got {_type(data)}")
    return [parse_record(obj, index) for index, obj in enumerate(data)]


def parse_record(obj: Any, index: int) -> StepRecord:
    """One record; ``index`` is its position in the file (used as its fallback ``trace_id`` and in errors)."""
    where = f"record {index}"
    if not isinstance(obj, dict):
        raise StepListError(f"{where}: must be an object with 'steps' and 'metadata', got {_type(obj)}")
    raw_steps = obj.get("steps")
    if not isinstance(raw_steps, list):
        raise StepListError(f"{where}: 'steps' must be a list, got {_type(raw_steps)}")
    if not raw_steps:
        raise StepListError(f"{where}: 'steps' is empty: nothing to replay")
    meta = obj.get("metadata", {})
    if not isinstance(meta, dict):
        raise StepListError(f"{where}: 'metadata' must be an object, got {_type(meta)}")
    steps = tuple(_parse_step(raw, i, where) for i, raw in enumerate(raw_steps))

    trace_id = meta.get("trace_id", index)
    if isinstance(trace_id, bool) or not isinstance(trace_id, (int, str)):
        raise StepListError(f"{where}: metadata.trace_id must be an int or a string, got {_type(trace_id)}")
    n_turns = meta.get("n_turns", len(steps))
    if isinstance(n_turns, bool) or not isinstance(n_turns, int) or n_turns < 0:
        raise StepListError(f"{where}: metadata.n_turns must be a non-negative int, got {n_turns!r}")
    return StepRecord(
        index=index,
        steps=steps,
        trace_id=str(trace_id),
        mad_trace_key=_required_str(meta, "mad_trace_key", where),
        mas_name=_required_str(meta, "mas_name", where),
        llm_name=_optional_str(meta, "llm_name", where),
        benchmark_name=_optional_str(meta, "benchmark_name", where),
        mast_annotation=_parse_annotation(meta.get("mast_annotation"), where),
        n_turns=n_turns,
        extra={k: v for k, v in meta.items() if k not in _TYPED_FIELDS},
    )


def _parse_step(raw: Any, i: int, where: str) -> Step:
    at = f"{where}: steps[{i}]"
    if not isinstance(raw, dict):
        raise StepListError(f"{at} must be an object, got {_type(raw)}")
    agent = raw.get("agent")
    if not isinstance(agent, str) or not agent.strip():
        raise StepListError(f"{at}.agent must be a non-empty string, got {agent!r}")
    content = raw.get("content", "")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise StepListError(f"{at}.content must be a string, got {_type(content)}")
    kind = raw.get("kind", "message")
    if not isinstance(kind, str) or not kind:
        raise StepListError(f"{at}.kind must be a non-empty string, got {kind!r}")
    meta = raw.get("metadata") or {}
    if not isinstance(meta, dict):
        raise StepListError(f"{at}.metadata must be an object, got {_type(meta)}")
    step_index = meta.get("step_index", i)
    if isinstance(step_index, bool) or not isinstance(step_index, int):
        raise StepListError(f"{at}.metadata.step_index must be an int, got {step_index!r}")
    return Step(
        agent=agent,
        content=content,
        kind=kind,
        index=step_index,
        is_final_answer=meta.get("is_final_answer") is True,
        metadata=meta,
    )


def _parse_annotation(raw: Any, where: str) -> dict[str, bool]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise StepListError(f"{where}: metadata.mast_annotation must be an object, got {_type(raw)}")
    labels: dict[str, bool] = {}
    for mode, value in raw.items():
        if not _MODE_ID.match(str(mode)):
            raise StepListError(f"{where}: metadata.mast_annotation key {mode!r} is not a mode id like '1.3'")
        if value not in (0, 1):  # also admits True/False
            raise StepListError(f"{where}: metadata.mast_annotation[{mode!r}] must be 0/1 or a boolean, got {value!r}")
        labels[str(mode)] = bool(value)
    return labels


def _required_str(meta: Mapping[str, Any], key: str, where: str) -> str:
    value = meta.get(key)
    if not isinstance(value, str) or not value.strip():
        raise StepListError(f"{where}: metadata.{key} must be a non-empty string, got {value!r}")
    return value


def _optional_str(meta: Mapping[str, Any], key: str, where: str) -> str | None:
    value = meta.get(key)
    if value is not None and not isinstance(value, str):
        raise StepListError(f"{where}: metadata.{key} must be a string, got {_type(value)}")
    return value


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__
