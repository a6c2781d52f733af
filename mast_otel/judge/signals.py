"""Structural signals: facts the spans show without a model, each naming the MAST mode it hints at.

A signal is not a verdict. "The run ended at its round limit" is a fact; whether the agents were *unaware of the
termination conditions* (MAST 1.5) is a judgement that needs a judge. The collector attaches signals to every
conversation as ``mast.signal.*`` attributes and counts them in ``mast_signal_total``, whatever judge runs (or
none); the LLM judge also reads them as hints. :data:`SIGNALS` is the catalogue: every name, the mode it hints at
and its exact definition (docs/judge.md lists them with each one's firing rate on the MAST traces).

``confident`` marks the instances precise enough that the collector always judges such a conversation when it
samples (``judge_fraction``); the weak hints (e.g. "no verification language") fire on most conversations.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from mast_otel import semconv as sc

from .view import ConversationView, Event

__all__ = ["SIGNALS", "Signal", "SignalKind", "compute_signals", "substantive"]

# A substantive message: an agent's own message (not a tool call or result, not a relayed copy) of at least this
# many words and characters, not machine output and not from a system sender. Short acknowledgements ("ok",
# "Continue.", "TERMINATE") repeat legitimately and never count.
MIN_WORDS = 8
MIN_CHARS = 40
NEAR_DUPLICATE = 0.9  # difflib ratio over the words of two messages
MAX_PAIRWISE = 300  # substantive messages compared pairwise; beyond that only exact repeats are checked


class _Keyed:
    """A case-insensitive pattern and the lower-case substrings every match contains (at least one of them).

    ASCII text holding none of them is answered without running the pattern: most messages, and scanning every
    message with every pattern was a sizeable share of the collector's CPU. Non-ASCII text always runs the pattern
    (Unicode case folding can match a key with characters ``str.lower`` does not turn into it).
    """

    __slots__ = ("_keys", "_pattern")

    def __init__(self, pattern: str, keys: tuple[str, ...]) -> None:
        self._pattern = re.compile(pattern, re.IGNORECASE)
        self._keys = keys

    def _may_match(self, text: str) -> bool:
        if not text.isascii():
            return True
        low = text.lower()
        for key in self._keys:  # a loop, not any() over a generator: this runs for every message, many times
            if key in low:
                return True
        return False

    def search(self, text: str) -> re.Match[str] | None:
        return self._pattern.search(text) if self._may_match(text) else None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self._pattern.finditer(text) if self._may_match(text) else iter(())


_MACHINE_OUTPUT = _Keyed(
    r"^\s*(exitcode:|exit code:|traceback \(most recent call last\)|\*{5} (response from calling|suggested tool))",
    ("exitcode:", "exit code:", "traceback", "*****"),
)
_SYSTEM_SENDER = re.compile(r"^(system|environment|env|tool|function)$", re.IGNORECASE)

_LIMIT_REASONS = frozenset(
    {sc.TERMINATION_MAX_ROUNDS, sc.TERMINATION_MAX_TURNS, sc.TERMINATION_MAX_AUTO_REPLIES, sc.TERMINATION_BUDGET}
)
# Not ``idle``: a team with nothing left to do (MetaGPT's normal end) has not stopped early.
_EARLY_REASONS = frozenset(
    {sc.TERMINATION_ERROR, sc.TERMINATION_NO_REPLY, sc.TERMINATION_NO_SPEAKER, sc.TERMINATION_USER_EXIT}
)
_FINAL = _Keyed(r"\\boxed\{|\bTERMINATE\b|final answer|the answer is|answer:\s*\S", ("\\boxed{", "terminate", "answer"))
_VERIFY = _Keyed(
    r"\b(verif\w*|double[- ]check\w*|validat\w*|cross[- ]check\w*|sanity check|re-?check\w*|unit tests?|"
    r"test cases?|assert\w*|pytest|confirm\w*|review\w*)\b",
    ("verif", "check", "validat", "test", "assert", "confirm", "review"),
)
# A verifier signing off: the moment an unchecked approval turns on when nothing was run to back it.
_APPROVAL = _Keyed(
    r"\b(approved?|lgtm|looks (good|correct|right|fine)|(is|are|seems|looks) correct|verified|"
    r"all (tests|checks) pass\w*)\b",
    ("approve", "lgtm", "looks", "correct", "verified", "all"),
)
_NEGATION = re.compile(r"\b(not|cannot|can't|can ?not|don't|won't|never|no|isn't|aren't)\b\W*(\w+\W+){0,2}$",
                       re.IGNORECASE)
_VERIFIER_NAME = re.compile(r"verif|review|test|critic|check|judge|qa\b|inspect", re.IGNORECASE)


_CACHED_NAME = 128  # longer sender names (odd or hostile ones) are searched each time, never kept


def _verifier(sender: str) -> bool:
    """A sender whose name suggests a verifier. Asked once or twice per message of every conversation, about the
    few names a conversation has: the answers for short names are kept."""
    if len(sender) > _CACHED_NAME:
        return _VERIFIER_NAME.search(sender) is not None
    return _short_verifier(sender)


@functools.lru_cache(maxsize=1024)
def _short_verifier(sender: str) -> bool:
    return _VERIFIER_NAME.search(sender) is not None
_RESTART = _Keyed(
    r"\b(let'?s start over|start(ing)? (over|again|from scratch)|restart(ing)? the (task|conversation|process)|"
    r"from the beginning)\b",
    ("start", "from the beginning"),
)


@dataclass(frozen=True, slots=True)
class SignalKind:
    """One entry of the catalogue: a signal's name, the MAST mode it hints at, and exactly what it claims."""

    name: str
    mode_id: str
    definition: str


SIGNALS: dict[str, SignalKind] = {
    k.name: k
    for k in (
        SignalKind("repeated_message", "1.3", "One agent sent the same substantive message (exactly, or with a word "
                   f"diff ratio >= {NEAR_DUPLICATE}) more than once. Substantive: kind message (not a tool call or "
                   f"result, not a relayed copy), >= {MIN_WORDS} words and >= {MIN_CHARS} characters, not machine "
                   "output (exit codes, tracebacks, tool banners), not from a system sender."),
        SignalKind("round_limit", "1.5", "The run was ended by a round, turn, auto-reply or budget limit "
                   "(mast.termination.reason), or, when no reason was recorded, its message count reached "
                   "mast.conversation.max_rounds."),
        SignalKind("continued_after_answer", "1.5", "At least 4 messages followed the first message that reads as a "
                   "final answer (\\boxed{}, 'final answer', 'the answer is', TERMINATE), and no limit ended the run."),
        SignalKind("task_resent", "2.1", "The opening message was sent again exactly once, after different messages "
                   "had been exchanged (sent again and again is a loop: repeated_message)."),
        SignalKind("restart_announced", "2.1", "An agent's message says it starts over ('start over', 'from "
                   "scratch', 'restart the task', ...)."),
        SignalKind("stopped_early", "3.1", "The run was ended by an error, an agent that gave no reply, no "
                   "eligible next speaker, or the user exiting (mast.termination.reason; not idle: nothing left to "
                   "do is a normal end)."),
        SignalKind("dangling_tool_call", "3.1", "The last message of the run is a tool call whose result never "
                   "came."),
        SignalKind("too_short", "3.1", "The run has one or two messages and none reads as a final answer."),
        SignalKind("no_verification", "3.2", "No agent whose name suggests a verifier (verify, review, test, critic, "
                   "check, judge, QA, inspect) spoke, and no message after the task uses verification language."),
        SignalKind("unchecked_approval", "3.2", "A verifier-named agent approved another agent's result ('approved', "
                   "'LGTM', 'looks correct', 'all tests pass', ...; not negated: 'cannot approve' is no approval) "
                   "with no tool call and no tool result between the result and the approval."),
    )
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Signal:
    """One structural fact seen in a conversation, with the spans it was seen on."""

    mode_id: str  # the MAST mode it hints at, never a verdict
    name: str  # a key of SIGNALS
    detail: str  # one line: what exactly was seen (counts, reasons)
    evidence_span_ids: tuple[str, ...] = ()
    confident: bool = False  # precise enough to force judging when sampling


def _signal(name: str, detail: str, ids: tuple[str, ...], confident: bool = False) -> Signal:
    return Signal(SIGNALS[name].mode_id, name, detail, tuple(dict.fromkeys(ids)), confident)


def compute_signals(view: ConversationView) -> list[Signal]:
    """Every signal the spans support, in taxonomy order."""
    found: list[Signal] = []
    for detector in (_repetition, _limit_hit, _reset, _early_stop, _no_verification, _unchecked_approval):
        found.extend(detector(view))
    return sorted(found, key=lambda s: s.mode_id)


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def substantive(event: Event) -> bool:
    """An agent's own message with enough content to count as work (see ``repeated_message``)."""
    if event.kind != sc.SPAN_TYPE_MESSAGE or event.message_kind != sc.KIND_MESSAGE:
        return False
    text = event.text.strip()
    if len(text) < MIN_CHARS or len(text.split()) < MIN_WORDS:
        return False
    return not (_MACHINE_OUTPUT.search(text) or _SYSTEM_SENDER.match(event.sender))


def _similar(a: list[str], b: list[str]) -> bool:
    """Near-duplicate word sequences: cheap length and vocabulary filters first, then a diff ratio."""
    if min(len(a), len(b)) < 0.8 * max(len(a), len(b)):
        return False
    sa, sb = set(a), set(b)
    if len(sa & sb) < 0.6 * len(sa | sb):
        return False
    return difflib.SequenceMatcher(None, a[:400], b[:400], autojunk=False).ratio() >= NEAR_DUPLICATE


def _repetition(view: ConversationView) -> list[Signal]:
    msgs = [m for m in view.messages if substantive(m)]
    groups: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for m in msgs:
        groups[(m.sender, _norm(m.text))].append(m)
    repeats = [g for g in groups.values() if len(g) > 1]
    seen = {m.span.span_id for g in repeats for m in g}
    near: list[tuple[Event, Event]] = []
    candidates = [m for m in msgs if m.span.span_id not in seen]
    if len(candidates) <= MAX_PAIRWISE:
        words = [(m, _norm(m.text).split()) for m in candidates]
        for i, (a, wa) in enumerate(words):
            for b, wb in words[i + 1 :]:
                if a.sender == b.sender and _similar(wa, wb):
                    near.append((a, b))
    if not repeats and not near:
        return []
    ids = tuple(m.span.span_id for g in repeats for m in g) + tuple(e.span.span_id for p in near for e in p)
    copies = sum(len(g) - 1 for g in repeats) + len(near)
    agents = sorted({g[0].sender for g in repeats} | {a.sender for a, _ in near})
    detail = f"{copies} substantive message(s) repeat an earlier message of the same agent ({', '.join(agents)})"
    return [_signal("repeated_message", detail, ids, confident=copies >= 2)]


def _final_answer_index(view: ConversationView) -> int | None:
    for i, m in enumerate(view.messages):
        if m.message_kind == sc.KIND_MESSAGE and _FINAL.search(m.text):
            return i
    return None


def _limit_hit(view: ConversationView) -> list[Signal]:
    reason = view.termination
    rounds, max_rounds = view.root_attr(sc.CONVERSATION_ROUNDS), view.root_attr(sc.CONVERSATION_MAX_ROUNDS)
    # Only without a recorded reason: a framework's own stop reason is the fact (MetaGPT's max_rounds counts rounds,
    # mast.conversation.rounds counts messages, several per round).
    at_limit = (reason is None and isinstance(rounds, int) and isinstance(max_rounds, int) and max_rounds > 0
                and rounds >= max_rounds)  # fmt: skip
    msgs = view.messages
    root_id = (view.root.span_id,) if view.root is not None else ()
    tail_ids = tuple(m.span.span_id for m in msgs[-2:])
    final = _final_answer_index(view)
    if reason in _LIMIT_REASONS or at_limit:
        why = f"the run ended by {reason or 'reaching max_rounds'}"
        if isinstance(max_rounds, int) and max_rounds > 0:
            why += f" (max_rounds {max_rounds})"
        why += "; no message read as a final answer" if final is None else "; a final answer had been given"
        return [_signal("round_limit", why, root_id + tail_ids, confident=True)]
    if final is not None and len(msgs) - final - 1 >= 4:
        extra = len(msgs) - final - 1
        return [_signal("continued_after_answer", f"{extra} messages followed the first final answer",
                        (msgs[final].span.span_id, *tail_ids))]  # fmt: skip
    return []


def _reset(view: ConversationView) -> list[Signal]:
    msgs = view.messages
    if len(msgs) < 3:
        return []
    first = _norm(msgs[0].text)
    # A resend only counts after different work happened; a loop of identical messages is repetition, not a reset.
    progressed = False
    hits = []
    for m in msgs[1:]:
        same = len(first) >= MIN_CHARS and _norm(m.text) == first
        if same and progressed:
            hits.append(m)
        progressed = progressed or not same
    if len(hits) == 1:
        ids = (msgs[0].span.span_id, hits[0].span.span_id)
        return [_signal("task_resent", "the opening message was sent again mid-conversation", ids, True)]
    said = [m for m in msgs[1:] if m.message_kind == sc.KIND_MESSAGE and _RESTART.search(m.text)]
    if said:
        return [_signal("restart_announced", f"{said[0].sender} announces starting over", (said[0].span.span_id,))]
    return []


def _early_stop(view: ConversationView) -> list[Signal]:
    msgs = view.messages
    root_id = (view.root.span_id,) if view.root is not None else ()
    reason = view.termination
    if reason in _EARLY_REASONS:
        ids = root_id + tuple(e.span.span_id for e in view.events if e.span.error)[:3]
        return [_signal("stopped_early", f"the run ended by {reason}", ids, confident=reason == sc.TERMINATION_ERROR)]
    if msgs and msgs[-1].message_kind == sc.KIND_TOOL_CALL:
        return [_signal("dangling_tool_call", "the run ended on a tool call whose result never came",
                        (msgs[-1].span.span_id, *root_id))]  # fmt: skip
    if 0 < len(msgs) <= 2 and _final_answer_index(view) is None:
        return [_signal("too_short", f"only {len(msgs)} message(s) and no final answer",
                        tuple(m.span.span_id for m in msgs))]  # fmt: skip
    return []


def _no_verification(view: ConversationView) -> list[Signal]:
    msgs = view.messages
    if not msgs:
        return []
    if any(_verifier(m.sender) for m in msgs):
        return []
    if any(_VERIFY.search(m.text) for m in msgs[1:]):  # the opening message is the task: asking is not checking
        return []
    return [_signal("no_verification", "no verifier role and no verification language after the task",
                    (msgs[-1].span.span_id,))]  # fmt: skip


def _approves(text: str) -> bool:
    """An approval phrase not negated by the few words before it ("I cannot approve this" is a rejection)."""
    return any(not _NEGATION.search(text[max(0, m.start() - 30) : m.start()]) for m in _APPROVAL.finditer(text))


def _unchecked_approval(view: ConversationView) -> list[Signal]:
    """Approval with nothing executed between the answer and the sign-off is a check that was never run; an
    approval after a tool ran (tests, code execution) is left to the judge (it may be 3.3, or fine)."""
    events = view.events
    for i, approval in enumerate(events):
        if approval.kind != sc.SPAN_TYPE_MESSAGE or not _verifier(approval.sender):
            continue
        if not _approves(approval.text):
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
        detail = f"{approval.sender} approved {answer.sender}'s result with no tool run in between"
        return [_signal("unchecked_approval", detail, (approval.span.span_id, answer.span.span_id), True)]
    return []
