"""Who&When runs: failed multi-agent runs with the agent and the step a human found decisive.

The Who&When study ("Which Agent Causes Task Failures and When?", Zhang et al., ICML 2025) annotated failed runs
of AG2's CaptainAgent with the agent whose message made the failure inevitable, that message's position and
why. Those are the only human labels on multi-agent traces attached to their own traces, so they are what
``mast-otel eval --attribution`` scores against. One JSON object per file::

    {"question": "...", "question_ID": "...", "level": 1, "ground_truth": "...", "is_correct": false,
     "history": [{"content": "...", "role": "assistant", "name": "Excel_Expert"}, ...],
     "mistake_agent": "Excel_Expert", "mistake_step": "0", "mistake_reason": "...", "system_prompt": {...}}

:func:`load_whowhen` reads a file or a directory of them; :func:`to_step_record` turns a run into the
:class:`~mast_otel.steplist.StepRecord` the replay already knows, so a Who&When run yields the span shapes a live
AG2 run yields: one message per history entry, in order (``mast.message.index`` = the history index, which is
what ``mistake_step`` counts), the question as the conversation's task, and the human labels on the root as
``mast.reference.decisive_*``.

Malformed input raises :class:`WhoWhenError` naming the file and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .steplist import Step, StepRecord

__all__ = ["WhoWhenError", "WhoWhenRun", "is_whowhen_document", "load_whowhen", "to_step_record"]

MAS_NAME = "AG2"  # the runs are AG2 CaptainAgent group chats
MAD_KEY = "whowhen"


class WhoWhenError(ValueError):
    """A Who&When file that cannot be read as one, with the file and the field at fault."""


@dataclass(frozen=True, slots=True)
class Message:
    sender: str
    content: str
    role: str


@dataclass(frozen=True, slots=True)
class WhoWhenRun:
    """One annotated run. ``mistake_step`` indexes ``history``."""

    source: str  # file name, without the directory
    question: str
    question_id: str
    history: tuple[Message, ...]
    mistake_agent: str
    mistake_step: int
    mistake_reason: str
    level: str | None = None
    ground_truth: str | None = None

    @property
    def agents(self) -> tuple[str, ...]:
        """Every agent that speaks, in order of first appearance."""
        return tuple(dict.fromkeys(m.sender for m in self.history))


def is_whowhen_document(data: Any) -> bool:
    return isinstance(data, dict) and "history" in data and "mistake_agent" in data


def load_whowhen(path: str | Path) -> list[WhoWhenRun]:
    """A Who&When file, or every ``*.json`` in a directory, in natural order of the file names (1, 2, ..., 10)."""
    root = Path(path)
    files = sorted(root.glob("*.json"), key=_natural) if root.is_dir() else [root]
    if not files:
        raise WhoWhenError(f"{root}: no *.json files")
    return [parse_run(_read(f), f.name) for f in files]


def parse_run(data: Any, source: str) -> WhoWhenRun:
    if not is_whowhen_document(data):
        raise WhoWhenError(f"{source}: not a Who&When run (an object with 'history' and 'mistake_agent')")
    raw_history = data["history"]
    if not isinstance(raw_history, list) or not raw_history:
        raise WhoWhenError(f"{source}: 'history' must be a non-empty list")
    history = tuple(_message(m, f"{source}: history[{i}]") for i, m in enumerate(raw_history))
    try:
        step = int(str(data.get("mistake_step")).strip())
    except ValueError:
        raise WhoWhenError(f"{source}: 'mistake_step' must be an integer, got {data.get('mistake_step')!r}") from None
    if not 0 <= step < len(history):
        raise WhoWhenError(f"{source}: 'mistake_step' {step} is outside the history (0..{len(history) - 1})")
    agent = data["mistake_agent"]
    if not isinstance(agent, str) or not agent:
        raise WhoWhenError(f"{source}: 'mistake_agent' must be a non-empty string")
    question = data.get("question")
    if not isinstance(question, str):
        raise WhoWhenError(f"{source}: 'question' must be a string")
    return WhoWhenRun(
        source=source,
        question=question,
        question_id=str(data.get("question_ID") or Path(source).stem),
        history=history,
        mistake_agent=agent,
        mistake_step=step,
        mistake_reason=str(data.get("mistake_reason") or ""),
        level=None if data.get("level") is None else str(data["level"]),
        ground_truth=None if data.get("ground_truth") is None else str(data["ground_truth"]),
    )


def to_step_record(run: WhoWhenRun, index: int = 0) -> StepRecord:
    """The run as a step-list record: every history entry one ``message`` step, the question as the task."""
    steps = tuple(Step(agent=m.sender, content=m.content, kind="message", index=i) for i, m in enumerate(run.history))
    references: dict[str, str | int] = {
        "decisive_agent": run.mistake_agent,
        "decisive_step": run.mistake_step,
        "decisive_reason": run.mistake_reason,
    }
    return StepRecord(
        index=index,
        steps=steps,
        trace_id=Path(run.source).stem,
        mad_trace_key=MAD_KEY,
        mas_name=MAS_NAME,
        benchmark_name="whowhen-algorithm-generated",
        n_turns=len(steps),
        extra={"question_id": run.question_id},
        task_text=run.question,
        references=references,
    )


def _message(raw: Any, where: str) -> Message:
    if not isinstance(raw, dict):
        raise WhoWhenError(f"{where}: must be an object with 'content' and 'name'")
    sender, content = raw.get("name"), raw.get("content")
    if not isinstance(sender, str) or not sender:
        raise WhoWhenError(f"{where}: 'name' must be a non-empty string")
    if not isinstance(content, str):
        raise WhoWhenError(f"{where}: 'content' must be a string")
    return Message(sender=sender, content=content, role=str(raw.get("role") or ""))


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise WhoWhenError(f"{path.name}: not JSON ({exc.msg} at line {exc.lineno})") from None


def _natural(path: Path) -> tuple[int, str]:
    return (int(path.stem), "") if path.stem.isdigit() else (1 << 30, path.stem)
