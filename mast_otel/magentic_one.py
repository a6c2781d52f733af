"""Who&When's hand-crafted runs (Magentic-One) replayed as the autogen-agentchat integration records a live one.

The study's 58 hand-crafted runs are logs of Magentic-One, one of the systems the MAST study diagnosed. Their
``history`` names each message's sender by its ``role``: ``human`` (the task), a participant (``WebSurfer``,
``FileSurfer``, ``Assistant``, ``ComputerTerminal``), or the orchestrator, whose role says what it did:
``Orchestrator (thought)`` (its plan, its ledger updates, "Next speaker X"), ``Orchestrator (-> X)`` (its
instruction to X) and ``Orchestrator (termination condition)`` (why the run stopped). :func:`replay` makes, for
each entry in order, the recorder calls :mod:`mast_otel.integrations.autogen_agentchat` makes for the matching
moment of a live ``MagenticOneGroupChat`` run, so a replayed run and a live one have the same span shapes:

=============================================  ==================================================================
Who&When role                                  recorder calls (as the live integration makes them)
=============================================  ==================================================================
``human``                                      the task message, to every participant
``Orchestrator (thought)``                     the orchestrator's own message, to every participant; an
                                               ``Initial plan:`` / ``New plan:`` one is preceded by the
                                               ``mast.orchestrator.plan`` event (facts and plan) on the root, a
                                               ``Stalled.... Replanning...`` one by the stall and re-plan events;
                                               an ``Updated Ledger:`` one is the progress ledger the next
                                               handoff states its reason from
``Orchestrator (-> X)``                        a handoff from the orchestrator to X, reason ``progress_ledger``,
                                               ``mast.handoff.stated_reason`` = the ledger's ``next_speaker``
                                               reason, ``mast.handoff.detail`` = the instruction; inside it the
                                               instruction as a message to X (live, the instruction is published
                                               to the whole group; the log says whom it is for, so it is kept)
participant X                                  an agent turn of X with X's message inside it, to the others
``Orchestrator (termination condition)``       the orchestrator's message, and the run's termination: ``No
                                               agent selected.`` after a satisfied ledger -> ``completed`` (detail:
                                               the ledger's reason, as live), after ``Replan counter exceeded`` ->
                                               ``custom_condition``; ``Max rounds (N) reached.`` ->
                                               ``max_rounds``; ``Max time (Ns) reached.`` -> ``timeout``
=============================================  ==================================================================

Every message is one message span whose ``mast.message.index`` is its history index (what ``mistake_step``
counts), sender the agent (``Orchestrator`` for every orchestrator role, as ``mistake_agent`` names it), with
the recorded role as ``mast.replay.role``. The names are the log's (``human``, ``Orchestrator``), not autogen's
defaults (``user``, ``MagenticOneOrchestrator``), because the human labels use them. A run whose log ends with
no termination condition (27 of the 58: logs cut short, some by an error) is ``completed`` with a detail saying
the termination was inferred, as :mod:`mast_otel.replay` does for step lists; ``error`` when the last message
reports a failed publish.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.util.types import AttributeValue

from . import semconv as sc
from .recorder import Handoff, Recorder
from .steplist import Step, StepRecord

__all__ = ["FRAMEWORK", "MAS_NAME", "ORCHESTRATOR", "TEAM_TYPE", "Role", "agent_of", "parse_role", "replay"]

MAS_NAME = "Magentic-One"
FRAMEWORK = "autogen-agentchat"  # what the live integration writes as mast.framework
TEAM_TYPE = "MagenticOneGroupChat"  # the team class, and the conversation's name (a team's default name)
ORCHESTRATOR = "Orchestrator"
MESSAGE_CLASS = "TextMessage"  # the log keeps text only: every message is autogen's TextMessage
MAX_STALLS = 3  # Magentic-One's default before it re-plans (autogen-magentic-one and autogen-agentchat alike)

TASK, THOUGHT, INSTRUCTION, TERMINATION, TURN = "task", "thought", "instruction", "termination", "turn"
_ORCHESTRATOR_ROLE = re.compile(r"^Orchestrator \((.*)\)$")
_TEAM_LIST = re.compile(r"we have assembled the following team:\s*\n(.*?)\n\s*\n", re.DOTALL)
_FACTS = re.compile(r"Here is (?:an initial|the [\w ]*?) fact sheet[^\n]*:")
_PLAN = "Here is the plan to follow as best as possible:"
_LEDGER_PREFIX = "Updated Ledger:"
_PLAN_PREFIXES = ("Initial plan:", "New plan:")
_STALLED_PREFIX = "Stalled"
_REPLAN_EXCEEDED = "Replan counter exceeded"
_PUBLISH_ERROR = "Error processing publish message"


@dataclass(frozen=True, slots=True)
class Role:
    """What a Who&When role says: who sent the message, what act it was, and for whom (an instruction)."""

    agent: str
    act: str  # task, thought, instruction, termination, turn
    target: str | None = None


def parse_role(role: str) -> Role:
    role = role.strip()
    if role == "human":
        return Role(role, TASK)
    matched = _ORCHESTRATOR_ROLE.match(role)
    if matched is None:
        return Role(role, TURN)
    what = matched.group(1).strip()
    if what.startswith("->"):
        return Role(ORCHESTRATOR, INSTRUCTION, what[2:].strip())
    if what == "termination condition":
        return Role(ORCHESTRATOR, TERMINATION)
    return Role(ORCHESTRATOR, THOUGHT)  # "thought", and any other orchestrator note


def agent_of(role: str) -> str:
    """The agent a role names: the orchestrator for each of its roles, else the role itself."""
    return parse_role(role).agent


def participants(record: StepRecord) -> list[str]:
    """The team: as the orchestrator's first plan lists it, else every agent that speaks but the human and it."""
    for step in record.steps:
        listed = _TEAM_LIST.search(step.content) if step.agent == ORCHESTRATOR else None
        if listed:
            names = re.findall(r"^\s*([A-Za-z_][\w-]*):", listed.group(1), re.MULTILINE)
            if names:
                return list(dict.fromkeys(names))
    roles = (parse_role(_role_of(step)) for step in record.steps)
    return list(dict.fromkeys(role.agent for role in roles if role.act == TURN))


def _role_of(step: Step) -> str:
    return str(step.metadata.get("role", step.agent))


class _Run:
    """What the orchestrator knows as the log goes on: its last progress ledger and its stall count."""

    def __init__(self, recorder: Recorder, team: list[str]) -> None:
        self.recorder = recorder
        self.team = team
        self.ledger: dict[str, Any] | None = None
        self.stalls = 0
        self.last_thought = ""
        self.terminated = False

    def others(self, sender: str) -> list[str]:
        return [p for p in self.team if p != sender] or [ORCHESTRATOR]

    def answer(self, key: str, field: str = "answer") -> Any:
        entry = (self.ledger or {}).get(key)
        return entry.get(field) if isinstance(entry, dict) else None

    def message(self, step: Step, role: str, recipients: list[str]) -> None:
        attrs: dict[str, AttributeValue] = {sc.MESSAGE_TYPE: MESSAGE_CLASS, sc.REPLAY_ROLE: role}
        self.recorder.message(step.agent, recipients, step.content, attributes=attrs)

    # -- the orchestrator's thoughts ---------------------------------------------------------------------
    def thought(self, step: Step, role: str) -> None:
        text = step.content
        if text.startswith(_PLAN_PREFIXES):
            facts, plan = _facts_and_plan(text)
            self.recorder.event(
                sc.EVENT_PLAN,
                {sc.ORCHESTRATOR_STALLS: self.stalls},
                content={sc.ORCHESTRATOR_FACTS: facts, sc.ORCHESTRATOR_PLAN: plan},
            )
        elif text.startswith(_STALLED_PREFIX):
            self.stall_event()
            self.recorder.event(sc.EVENT_REPLAN, {sc.ORCHESTRATOR_STALLS: self.stalls})
            self.stalls = 0
        elif text.startswith(_LEDGER_PREFIX):
            self.ledger = _ledger(text)
            stalled = self.answer("is_progress_being_made") is False or self.answer("is_in_loop") is True
            self.stalls = self.stalls + 1 if stalled else max(0, self.stalls - 1)
        self.last_thought = text
        self.message(step, role, self.others(step.agent))

    def stall_event(self) -> None:
        """As the live integration's ``_stall``: the ledger said no progress, or a loop."""
        if self.answer("is_progress_being_made") is False:
            why = "no progress: " + str(self.answer("is_progress_being_made", "reason") or "")
        elif self.answer("is_in_loop") is True:
            why = "in a loop: " + str(self.answer("is_in_loop", "reason") or "")
        else:
            return
        attrs: dict[str, AttributeValue] = {sc.ORCHESTRATOR_STALLS: self.stalls, sc.ORCHESTRATOR_MAX_STALLS: MAX_STALLS}
        self.recorder.event(sc.EVENT_STALL, attrs, content={sc.ORCHESTRATOR_REASON: why})

    # -- instruction = handoff -----------------------------------------------------------------------------
    def instruction(self, step: Step, role: str, target: str) -> None:
        handoff: Handoff | None = self.recorder.start_handoff(ORCHESTRATOR, candidates=self.team, detail=step.content)
        self.message(step, role, [target])
        self.stall_event()
        if handoff is not None:
            attrs: dict[str, AttributeValue] = {}
            stated = self.answer("next_speaker", "reason")
            if stated and self.recorder.config.capture_content:
                attrs[sc.HANDOFF_STATED_REASON] = self.recorder.config.redactor.redact(str(stated))[0]
            handoff.end(target, reason=sc.HANDOFF_PROGRESS_LEDGER, attributes=attrs)

    # -- a participant's turn ----------------------------------------------------------------------------
    def turn(self, step: Step, role: str) -> None:
        turn = self.recorder.start_agent_turn(step.agent)
        try:
            self.message(step, role, self.others(step.agent))
        finally:
            if turn is not None:
                turn.end()

    # -- termination ---------------------------------------------------------------------------------------
    def termination(self, step: Step, role: str) -> None:
        self.message(step, role, self.others(step.agent))
        stated = step.content.strip().splitlines()[0].strip() if step.content.strip() else ""
        if stated.startswith("Max rounds"):
            reason, detail = sc.TERMINATION_MAX_ROUNDS, stated
        elif stated.startswith("Max time"):
            reason, detail = sc.TERMINATION_TIMEOUT, stated
        elif self.last_thought.startswith(_REPLAN_EXCEEDED):
            reason, detail = sc.TERMINATION_CUSTOM, self.last_thought.splitlines()[0].strip()
        elif self.answer("is_request_satisfied") is True:
            # The ledger's own words, so content (as the live integration records them).
            satisfied = str(self.answer("is_request_satisfied", "reason") or stated)
            config = self.recorder.config
            reason = sc.TERMINATION_COMPLETED
            detail = config.redactor.redact(satisfied)[0] if config.capture_content else ""
        else:
            reason, detail = sc.TERMINATION_CUSTOM, stated
        self.recorder.terminate(reason, detail=detail or None, agent=ORCHESTRATOR)
        self.terminated = True

    def inferred_end(self, last: Step) -> None:
        if _PUBLISH_ERROR in last.content:
            detail = f"inferred: the last message ({last.agent}) reports '{_PUBLISH_ERROR}'"
            self.recorder.terminate(sc.TERMINATION_ERROR, detail=detail)
        else:
            detail = "inferred: the log ends with no termination condition"
            self.recorder.terminate(sc.TERMINATION_COMPLETED, detail=detail)


def replay(record: StepRecord, recorder: Recorder, attributes: Mapping[str, AttributeValue]) -> None:
    """One hand-crafted run, in the current (fresh) context, as the module docstring maps it.

    ``attributes`` are the replay's own root attributes (origin, human labels), added to the live ones."""
    team = participants(record)
    root: dict[str, AttributeValue] = {sc.CONVERSATION_TEAM_TYPE: TEAM_TYPE, sc.CONVERSATION_PARTICIPANTS: team}
    root.update(attributes)
    run = _Run(recorder, team)
    with recorder.conversation(TEAM_TYPE, task=record.task, framework=FRAMEWORK, attributes=root):
        for step in record.steps:
            role_text = _role_of(step)
            role = parse_role(role_text)
            if role.act == TASK:
                run.message(step, role_text, run.others(step.agent))
            elif role.act == THOUGHT:
                run.thought(step, role_text)
            elif role.act == INSTRUCTION and role.target is not None:
                run.instruction(step, role_text, role.target)
            elif role.act == TERMINATION:
                run.termination(step, role_text)
            else:
                run.turn(step, role_text)
        if not run.terminated:
            run.inferred_end(record.steps[-1])


def _facts_and_plan(text: str) -> tuple[str, str]:
    """A plan thought's fact sheet (the last one it gives: a new plan gives the initial and the updated) and plan."""
    sheets = list(_FACTS.finditer(text))
    plan_at = text.find(_PLAN)
    if not sheets or plan_at < sheets[-1].end():
        return "", text
    return text[sheets[-1].end() : plan_at].strip(), text[plan_at + len(_PLAN) :].strip()


def _ledger(text: str) -> dict[str, Any] | None:
    """The JSON object of an ``Updated Ledger:`` thought; None when it does not parse (the log is then silent)."""
    body = text[len(_LEDGER_PREFIX) :]
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        parsed = json.loads(body[start : end + 1])
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None
