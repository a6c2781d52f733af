"""Structural signals: what the spans say about MAST modes without asking an LLM.

Each detector looks at shape, not meaning: repeated content (1.3), a round/turn limit ending the run (1.5), a
conversation that restarts from its first message (2.1), a run cut short by an error or a silent agent (3.1), no
verifier and no verification language (3.2). They are cheap and deterministic, so they are computed for every
conversation: handed to the LLM judge as hints (never as verdicts) and, when no LLM is configured, labelled on
their own by :class:`mast_otel.judge.rules.RulesJudge`. ``confident`` marks the signals precise enough to label
without an LLM; the others are hints only.
"""

from __future__ import annotations

import difflib
import re
from collections import defaultdict
from dataclasses import dataclass

from mast_otel import semconv as sc

from .view import ConversationView, Event

__all__ = ["Signal", "compute_signals"]

# Short contents ("9", "ok", "Continue.") repeat legitimately; only longer ones count as repeated work.
MIN_REPEAT_CHARS = 40
NEAR_DUPLICATE = 0.9  # difflib ratio over the words of two messages
MAX_PAIRWISE = 300  # messages compared pairwise; beyond that only exact repeats are checked

_LIMIT_REASONS = frozenset(
    {sc.TERMINATION_MAX_ROUNDS, sc.TERMINATION_MAX_TURNS, sc.TERMINATION_MAX_AUTO_REPLIES, sc.TERMINATION_BUDGET}
)
_EARLY_REASONS = frozenset(
    {sc.TERMINATION_ERROR, sc.TERMINATION_NO_REPLY, sc.TERMINATION_NO_SPEAKER, sc.TERMINATION_USER_EXIT,
     sc.TERMINATION_IDLE}
)  # fmt: skip
_FINAL = re.compile(r"\\boxed\{|\bTERMINATE\b|final answer|the answer is|answer:\s*\S", re.IGNORECASE)
_VERIFY = re.compile(
    r"\b(verif\w*|double[- ]check\w*|validat\w*|cross[- ]check\w*|sanity check|re-?check\w*|unit tests?|"
    r"test cases?|assert\w*|pytest|confirm\w*|review\w*)\b",
    re.IGNORECASE,
)
# A verifier signing off: the moment 3.2 turns on when nothing was run to back it.
_APPROVAL = re.compile(
    r"\b(approved?|lgtm|looks (good|correct|right|fine)|(is|are|seems|looks) correct|verified|"
    r"all (tests|checks) pass\w*)\b",
    re.IGNORECASE,
)
_VERIFIER_NAME = re.compile(r"verif|review|test|critic|check|judge|qa\b|inspect", re.IGNORECASE)
_RESTART = re.compile(
    r"\b(let'?s start over|start(ing)? (over|again|from scratch)|restart(ing)? the (task|conversation|process)|"
    r"from the beginning)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Signal:
    """One structural observation pointing at a mode, with the spans it was seen on."""

    mode_id: str
    name: str  # e.g. "repeated_content"
    detail: str  # one line, fit for a prompt hint and a label reason
    evidence_span_ids: tuple[str, ...] = ()
    confident: bool = False  # precise enough to label without an LLM


def compute_signals(view: ConversationView) -> list[Signal]:
    """Every signal the spans support, in taxonomy order."""
    found: list[Signal] = []
    for detector in (_repetition, _limit_hit, _reset, _early_stop, _no_verification, _unchecked_approval):
        found.extend(detector(view))
    return sorted(found, key=lambda s: s.mode_id)


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _similar(a: list[str], b: list[str]) -> bool:
    """Near-duplicate word sequences: cheap length and vocabulary filters first, then a diff ratio."""
    if min(len(a), len(b)) < 0.8 * max(len(a), len(b)):
        return False
    sa, sb = set(a), set(b)
    if len(sa & sb) < 0.6 * len(sa | sb):
        return False
    return difflib.SequenceMatcher(None, a[:400], b[:400], autojunk=False).ratio() >= NEAR_DUPLICATE


def _repetition(view: ConversationView) -> list[Signal]:
    """1.3: the same (or nearly the same) substantial content sent again by the same agent."""
    msgs = [m for m in view.messages if m.message_kind != sc.KIND_BROADCAST]
    groups: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for m in msgs:
        text = _norm(m.text)
        if len(text) >= MIN_REPEAT_CHARS:
            groups[(m.sender, text)].append(m)
    repeats = [g for g in groups.values() if len(g) > 1]
    seen = {m.span.span_id for g in repeats for m in g}
    near: list[tuple[Event, Event]] = []
    candidates = [m for m in msgs if len(_norm(m.text)) >= MIN_REPEAT_CHARS and m.span.span_id not in seen]
    if len(candidates) <= MAX_PAIRWISE:
        words = [(m, _norm(m.text).split()) for m in candidates]
        for i, (a, wa) in enumerate(words):
            for b, wb in words[i + 1 :]:
                if a.sender == b.sender and _similar(wa, wb):
                    near.append((a, b))
    if not repeats and not near:
        return []
    ids = [m.span.span_id for g in repeats for m in g] + [e.span.span_id for p in near for e in p]
    copies = sum(len(g) - 1 for g in repeats) + len(near)
    return [
        Signal("1.3", "repeated_content", f"{copies} message(s) repeat earlier content of the same agent",
               tuple(dict.fromkeys(ids)), confident=copies >= 2)
    ]  # fmt: skip


def _final_answer_index(view: ConversationView) -> int | None:
    for i, m in enumerate(view.messages):
        if m.message_kind == sc.KIND_MESSAGE and _FINAL.search(m.text):
            return i
    return None


def _limit_hit(view: ConversationView) -> list[Signal]:
    """1.5: a round/turn/auto-reply limit ended the run, or it went on long after a final answer."""
    reason = view.termination
    rounds, max_rounds = view.root_attr(sc.CONVERSATION_ROUNDS), view.root_attr(sc.CONVERSATION_MAX_ROUNDS)
    at_limit = isinstance(rounds, int) and isinstance(max_rounds, int) and max_rounds > 0 and rounds >= max_rounds
    msgs = view.messages
    root_id = (view.root.span_id,) if view.root is not None else ()
    tail_ids = tuple(m.span.span_id for m in msgs[-2:])
    final = _final_answer_index(view)
    if reason in _LIMIT_REASONS or at_limit:
        why = f"the run ended by {reason or 'hitting max_rounds'}"
        why += " without a final answer" if final is None else " after a final answer had already been given"
        return [Signal("1.5", "limit_hit", why, root_id + tail_ids, confident=True)]
    if final is not None and len(msgs) - final - 1 >= 4:
        extra = len(msgs) - final - 1
        ids = (msgs[final].span.span_id, *tail_ids)
        return [Signal("1.5", "continued_after_answer", f"{extra} messages followed the first final answer", ids)]
    return []


def _reset(view: ConversationView) -> list[Signal]:
    """2.1: the opening message is sent again mid-run, or an agent announces a restart."""
    msgs = view.messages
    if len(msgs) < 3:
        return []
    first = _norm(msgs[0].text)
    # A resend only counts after different work happened; a loop of identical messages is 1.3, not a reset.
    progressed = False
    hits = []
    for m in msgs[1:]:
        same = len(first) >= MIN_REPEAT_CHARS and _norm(m.text) == first
        if same and progressed:
            hits.append(m)
        progressed = progressed or not same
    if len(hits) == 1:  # sent again once: a restart; sent again and again is a loop (1.3), not a reset
        ids = (msgs[0].span.span_id, *(m.span.span_id for m in hits))
        return [Signal("2.1", "task_resent", "the opening message is sent again mid-conversation", ids, True)]
    said = [m for m in msgs[1:] if _RESTART.search(m.text)]
    if said:
        return [Signal("2.1", "restart_language", "an agent announces starting over", (said[0].span.span_id,))]
    return []


def _early_stop(view: ConversationView) -> list[Signal]:
    """3.1: an error or a silent agent ended the run, or it stopped right after an unanswered tool call."""
    msgs = view.messages
    root_id = (view.root.span_id,) if view.root is not None else ()
    reason = view.termination
    if reason in _EARLY_REASONS:
        ids = root_id + tuple(e.span.span_id for e in view.events if e.span.error)[:3]
        return [Signal("3.1", "stopped_early", f"the run ended by {reason}", ids, confident=reason == "error")]
    if msgs and msgs[-1].message_kind == sc.KIND_TOOL_CALL:
        return [Signal("3.1", "dangling_tool_call", "the run ended on a tool call whose result never came",
                       (msgs[-1].span.span_id, *root_id))]  # fmt: skip
    if 0 < len(msgs) <= 2 and _final_answer_index(view) is None:
        return [Signal("3.1", "too_short", f"only {len(msgs)} message(s) and no final answer",
                       tuple(m.span.span_id for m in msgs))]  # fmt: skip
    return []


def _no_verification(view: ConversationView) -> list[Signal]:
    """3.2 hint: no agent with a verifier role spoke and no message uses verification language."""
    msgs = view.messages
    if not msgs:
        return []
    speakers = {m.sender for m in msgs}
    if any(_VERIFIER_NAME.search(a) for a in speakers):
        return []
    # The opening message is the task; asking for checks is not doing them.
    if any(_VERIFY.search(m.text) for m in msgs[1:]):
        return []
    ids = tuple(m.span.span_id for m in msgs[-1:])
    return [Signal("3.2", "no_verifier", "no verifier role and no verification language after the task", ids)]


def _unchecked_approval(view: ConversationView) -> list[Signal]:
    """3.2: a verifier approves another agent's result with no tool call or tool result since that result.

    Approval with nothing executed between the answer and the sign-off is a check that was never done; an
    approval after a tool ran (tests, code execution) is left to the LLM judge (it may be 3.3, or fine).
    """
    events = view.events
    for i, approval in enumerate(events):
        if approval.kind != sc.SPAN_TYPE_MESSAGE or not _VERIFIER_NAME.search(approval.sender):
            continue
        if not _APPROVAL.search(approval.text):
            continue
        answer_at = next(
            (j for j in range(i - 1, -1, -1) if events[j].kind == sc.SPAN_TYPE_MESSAGE
             and events[j].sender != approval.sender and events[j].message_kind == sc.KIND_MESSAGE),
            None,
        )  # fmt: skip
        if answer_at is None or answer_at == 0:  # approving the task itself is not approving a result
            continue
        between = events[answer_at + 1 : i]
        if any(e.kind == sc.SPAN_TYPE_TOOL_CALL or e.message_kind != sc.KIND_MESSAGE for e in between):
            continue
        answer = events[answer_at]
        detail = f"{approval.sender} approved {answer.sender}'s result without running any check"
        return [Signal("3.2", "unchecked_approval", detail, (approval.span.span_id, answer.span.span_id), True)]
    return []
