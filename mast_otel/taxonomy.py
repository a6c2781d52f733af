"""The 14 MAST failure modes as data: the one place the prompt, the eval, the metrics and the docs read them from.

Source: Cemri et al., "Why Do Multi-Agent LLM Systems Fail?" (arXiv:2503.13657, v3). Definitions are written in
this project's own words. The paper's releases disagree on 3.2 and 3.3 (the definitions file and the original
judge's prompt swap them); this module pins the v3 paper's meaning: 3.2 is *no or incomplete* verification,
3.3 is *incorrect* verification (a check exists but is wrong or superficial).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Category:
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class FailureMode:
    id: str
    name: str
    category: Category
    definition: str

    @property
    def slug(self) -> str:
        """``"1.3"`` -> ``"1_3"``: the form used in attribute keys and metric labels."""
        return self.id.replace(".", "_")


SYSTEM_DESIGN: Final = Category("FC1", "System design issues")
INTER_AGENT: Final = Category("FC2", "Inter-agent misalignment")
VERIFICATION: Final = Category("FC3", "Task verification")
CATEGORIES: Final = (SYSTEM_DESIGN, INTER_AGENT, VERIFICATION)

MODES: Final[tuple[FailureMode, ...]] = (
    FailureMode(
        "1.1",
        "Disobey task specification",
        SYSTEM_DESIGN,
        "The system's output or behaviour breaks an explicit requirement or constraint stated in the user's task "
        "(wrong format, a forbidden shortcut, a missing required feature).",
    ),
    FailureMode(
        "1.2",
        "Disobey role specification",
        SYSTEM_DESIGN,
        "An agent acts outside the role it was assigned, doing another agent's job or taking decisions its role "
        "does not own.",
    ),
    FailureMode(
        "1.3",
        "Step repetition",
        SYSTEM_DESIGN,
        "A step, phase or message that was already completed is done again without need, wasting turns or looping.",
    ),
    FailureMode(
        "1.4",
        "Loss of conversation history",
        SYSTEM_DESIGN,
        "An agent behaves as if recent context had vanished and falls back to an earlier state of the "
        "conversation, ignoring what was already established.",
    ),
    FailureMode(
        "1.5",
        "Unaware of termination conditions",
        SYSTEM_DESIGN,
        "Agents do not recognise that the interaction should stop (the task is done or cannot be done) and keep "
        "going, often until a round or turn limit cuts them off.",
    ),
    FailureMode(
        "2.1",
        "Conversation reset",
        INTER_AGENT,
        "The dialogue restarts unexpectedly, throwing away the context and progress accumulated so far.",
    ),
    FailureMode(
        "2.2",
        "Fail to ask for clarification",
        INTER_AGENT,
        "An agent proceeds on a guess when information is missing or ambiguous instead of asking the user or "
        "another agent.",
    ),
    FailureMode(
        "2.3",
        "Task derailment",
        INTER_AGENT,
        "The conversation drifts away from the actual objective into irrelevant or unproductive work.",
    ),
    FailureMode(
        "2.4",
        "Information withholding",
        INTER_AGENT,
        "An agent has information that others need for their decisions and does not pass it on.",
    ),
    FailureMode(
        "2.5",
        "Ignored other agent's input",
        INTER_AGENT,
        "An agent disregards a suggestion, correction or piece of feedback that another agent gave it.",
    ),
    FailureMode(
        "2.6",
        "Reasoning-action mismatch",
        INTER_AGENT,
        "What an agent says it concluded or will do differs from what it then actually does or outputs.",
    ),
    FailureMode(
        "3.1",
        "Premature termination",
        VERIFICATION,
        "The run ends before the objective is met, or before information needed to finish (results, checks, "
        "answers) has been exchanged.",
    ),
    FailureMode(
        "3.2",
        "No or incomplete verification",
        VERIFICATION,
        "The outputs are not checked at all, or only part of them is checked, so errors can pass through unnoticed.",
    ),
    FailureMode(
        "3.3",
        "Incorrect verification",
        VERIFICATION,
        "A check is performed but it is superficial or wrong and approves a bad result (for example 'it runs' "
        "while the logic is broken, or an arithmetic check that is itself mistaken).",
    ),
)

MODE_IDS: Final = tuple(m.id for m in MODES)
_BY_ID: Final = {m.id: m for m in MODES}


def mode(mode_id: str) -> FailureMode:
    """Look a mode up by id (``"1.3"``); raises KeyError naming the valid ids."""
    try:
        return _BY_ID[mode_id]
    except KeyError:
        raise KeyError(f"unknown MAST failure mode {mode_id!r}; valid ids are {', '.join(MODE_IDS)}") from None
