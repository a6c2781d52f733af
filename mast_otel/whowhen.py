"""Who&When runs: failed multi-agent runs with the agent and the step a human found decisive.

The Who&When study ("Which Agent Causes Task Failures and When?", Zhang et al., ICML 2025) annotated failed
multi-agent runs with the agent whose message made the failure inevitable, that message's position and why.
Those are the only human labels on multi-agent traces attached to their own traces, so they are what
``mast-otel eval --attribution`` scores against. One JSON object per file, in one of the study's two shapes:

- **algorithm-generated** (126 AG2 CaptainAgent runs): the sender is ``name``::

    {"question": "...", "question_ID": "...", "level": 1, "ground_truth": "...", "is_correct": false,
     "history": [{"content": "...", "role": "assistant", "name": "Excel_Expert"}, ...],
     "mistake_agent": "Excel_Expert", "mistake_step": "0", "mistake_reason": "...", "system_prompt": {...}}

- **hand-crafted** (58 Magentic-One runs): no ``name``; the sender is the ``role`` itself (``human``,
  ``WebSurfer``, ..., and the orchestrator as ``Orchestrator (thought)``, ``Orchestrator (-> WebSurfer)``,
  ``Orchestrator (termination condition)``), ``is_corrected`` instead of ``is_correct``::

    {"question": "...", "question_ID": "...", "ground_truth": "...", "is_corrected": false,
     "history": [{"content": "...", "role": "human"}, {"content": "...", "role": "Orchestrator (thought)"}, ...],
     "mistake_agent": "WebSurfer", "mistake_step": "12", "mistake_reason": "..."}

  The agent of an orchestrator role is ``Orchestrator`` (what ``mistake_agent`` calls it); the role is kept on
  the message (:mod:`mast_otel.magentic_one` replays it by role).

:func:`load_whowhen` reads a file or a directory of them; :func:`to_step_record` turns a run into the
:class:`~mast_otel.steplist.StepRecord` the replay already knows: one message per history entry, in order
(``mast.message.index`` = the history index, which is what ``mistake_step`` counts), the question as the
conversation's task, and the human labels on the root as ``mast.reference.decisive_*``. An algorithm-generated
run yields the spans a live AG2 run yields; a hand-crafted one those the autogen-agentchat integration records
for a live Magentic-One run.

Malformed input raises :class:`WhoWhenError` naming the file and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import magentic_one
from .steplist import Step, StepRecord

__all__ = [
    "ALGORITHM_GENERATED",
    "HAND_CRAFTED",
    "SUBSETS",
    "WhoWhenError",
    "WhoWhenRun",
    "is_whowhen_document",
    "load_whowhen",
    "to_step_record",
]

ALGORITHM_GENERATED = "algorithm-generated"  # AG2 CaptainAgent group chats
HAND_CRAFTED = "hand-crafted"  # Magentic-One runs
SUBSETS = (ALGORITHM_GENERATED, HAND_CRAFTED)
MAS_NAME = "AG2"
MAD_KEY = "whowhen"  # trace keys whowhen_<n> (algorithm-generated; kept as they were) and whowhen-hand-crafted_<n>
_HAND_CRAFTED_KEY = "whowhen-hand-crafted"


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
    subset: str = ALGORITHM_GENERATED

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
    # The shape is the file's, decided once: a file mixing named and role-only messages is refused.
    subset = HAND_CRAFTED if isinstance(raw_history[0], dict) and "name" not in raw_history[0] else ALGORITHM_GENERATED
    history = tuple(_message(m, f"{source}: history[{i}]", subset) for i, m in enumerate(raw_history))
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
        subset=subset,
    )


def to_step_record(run: WhoWhenRun, index: int = 0) -> StepRecord:
    """The run as a step-list record: every history entry one ``message`` step, the question as the task.

    A hand-crafted run's steps keep their role in ``metadata["role"]`` and the record names Magentic-One, which
    the replay reads to record it as the autogen-agentchat integration records a live Magentic-One run."""
    steps = tuple(
        Step(agent=m.sender, content=m.content, kind="message", index=i, metadata={"role": m.role})
        for i, m in enumerate(run.history)
    )
    hand_crafted = run.subset == HAND_CRAFTED
    references: dict[str, str | int] = {
        "decisive_agent": run.mistake_agent,
        "decisive_step": run.mistake_step,
        "decisive_reason": run.mistake_reason,
    }
    return StepRecord(
        index=index,
        steps=steps,
        trace_id=Path(run.source).stem,
        mad_trace_key=_HAND_CRAFTED_KEY if hand_crafted else MAD_KEY,
        mas_name=magentic_one.MAS_NAME if hand_crafted else MAS_NAME,
        framework_name=magentic_one.FRAMEWORK if hand_crafted else None,
        benchmark_name=f"whowhen-{run.subset}",
        n_turns=len(steps),
        extra={"question_id": run.question_id},
        task_text=run.question,
        references=references,
    )


def _message(raw: Any, where: str, subset: str) -> Message:
    field = "role" if subset == HAND_CRAFTED else "name"
    if not isinstance(raw, dict):
        raise WhoWhenError(f"{where}: must be an object with 'content' and '{field}'")
    content = raw.get("content")
    if not isinstance(content, str):
        raise WhoWhenError(f"{where}: 'content' must be a string")
    if subset == HAND_CRAFTED:
        role = raw.get("role")
        if not isinstance(role, str) or not role.strip():
            raise WhoWhenError(f"{where}: 'role' must be a non-empty string (a hand-crafted run: no 'name')")
        if "name" in raw:
            raise WhoWhenError(f"{where}: has 'name', but history[0] has none: one shape per file")
        return Message(sender=magentic_one.agent_of(role), content=content, role=role)
    sender = raw.get("name")
    if not isinstance(sender, str) or not sender:
        raise WhoWhenError(f"{where}: 'name' must be a non-empty string")
    return Message(sender=sender, content=content, role=str(raw.get("role") or ""))


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise WhoWhenError(f"{path.name}: not JSON ({exc.msg} at line {exc.lineno})") from None


def _natural(path: Path) -> tuple[int, str]:
    return (int(path.stem), "") if path.stem.isdigit() else (1 << 30, path.stem)
