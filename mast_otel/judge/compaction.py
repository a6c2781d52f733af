"""Fit a transcript into a token budget, in one call whenever possible, keeping what the failure modes turn on.

Steps, each taken only when the previous ones were not enough. Steps 1-3 remove what cannot be evidence; every
line keeps its reference, so every message stays citable:

1. **Collapse repeats.** A message repeating an earlier one of the same sender becomes ``<repeat k of n of M3>``
   (the count is what 1.3 step repetition and 1.5 turn on, not the text again); a tool output identical to an
   earlier one becomes ``<same output as T2>``; a handoff identical to an earlier one (same agents, reason and
   candidates) becomes ``handoff as H1``.
2. **Drop boilerplate.** A text line (>= 20 characters) that recurs in at least three messages or tool outputs
   (a system preamble, a fixed instruction, a banner) is kept where it first appears and replaced elsewhere by
   ``[N repeated lines]``.
3. **Trim machine output.** Tool results, tool-result messages and fenced blocks inside messages (code, logs)
   keep their head and tail (what was run, how it ended); the middle of long output (logs, listings, pages, long
   code) is cut, the cut marked with its size.
4. **Cut long messages in the middle** to a per-line cap found by bisection (head and tail: intent and
   conclusion), the task line and the first and last turns at twice the cap: one call still sees the whole run.
5. **Chunk** only when even the hardest cut does not fit: the hard-cut lines are split into as few parts as
   possible (each part repeats the fixed text of the prompt); each part after the first opens with a digest of the
   parts before it (who did what, tools run, repeats so far, the last message), so modes that span parts stay
   judgeable.
6. **Drop the middle** when more parts than allowed would be needed: the first and last turns and the
   termination are kept, the gap marked with the range of references omitted.

Steps 3-6 lose content, so the plan reports ``truncated`` and the verdict's status says so.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from mast_otel import semconv as sc

from .tokens import count_tokens, cut_to_tokens
from .transcript import DIGEST, OMITTED, Line

__all__ = ["CompactionPlan", "compact", "digest"]

MIN_CAP = 60  # the hardest per-message cut (one call, or before dropping lines): first and last sentences
TOOL_CAP = 160  # tokens of a tool output kept (head and tail) once compaction is needed
LONG_MESSAGE_CAP = 200  # in a long run (see compact's clean_above), a message keeps this many tokens, head and tail
DIGEST_TOKENS = 500  # the most a part's digest of the parts before it may cost
PROTECTED_TURNS = 2  # first and last lines kept at twice the cap
BOILERPLATE_MIN_CHARS = 20
BOILERPLATE_MIN_LINES = 3  # a text line recurring in this many events is boilerplate
_MIN_REPEAT_CHARS = 40
_CONTEXT = ("root", "end")


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """What the judge sends: one or more chunks of lines, plus what was done to fit them."""

    chunks: tuple[tuple[Line, ...], ...]
    collapsed: int = 0
    boilerplate: int = 0  # text lines dropped as boilerplate
    trimmed: int = 0  # tool outputs cut in the middle
    cut: int = 0
    dropped: int = 0
    notes: tuple[str, ...] = field(default=())

    @property
    def truncated(self) -> bool:
        return bool(self.trimmed or self.cut or self.dropped or len(self.chunks) > 1)

    def describe(self) -> str:
        return (f"collapsed={self.collapsed} boilerplate={self.boilerplate} trimmed={self.trimmed} cut={self.cut} "
                f"dropped={self.dropped} chunks={len(self.chunks)}")  # fmt: skip


def _cost(lines: Sequence[Line]) -> int:
    return sum(count_tokens(line.text()) + 1 for line in lines)


def compact(lines: Sequence[Line], budget: int, *, max_chunks: int = 1, clean_above: int | None = None) -> (
        CompactionPlan):  # fmt: skip
    """Fit ``lines`` into one chunk of at most ``budget`` tokens if at all possible, else into at most
    ``max_chunks`` chunks, each within ``budget`` including its digest.

    ``clean_above``: a transcript longer than this many tokens gets steps 1-3 (what cannot be evidence) even when
    it fits the budget: on long runs they are most of the judge's cost. None: only when over budget.
    """
    lines = tuple(lines)
    size = _cost(lines)
    if size <= budget and (clean_above is None or size <= clean_above):
        return CompactionPlan(chunks=(lines,))
    clean = clean_above is not None and size > clean_above
    notes: list[str] = []
    lines, collapsed = _collapse(lines)
    if collapsed:
        notes.append("<repeat k of n of Mx> repeats message Mx verbatim; <same output as Tx> repeats Tx's output; "
                     "'handoff as Hx' repeats handoff Hx")
    stats = {"collapsed": collapsed}
    if _cost(lines) <= budget and not clean:
        return CompactionPlan(chunks=(lines,), notes=tuple(notes), **stats)
    lines, stats["boilerplate"] = _drop_boilerplate(lines)
    if stats["boilerplate"]:
        notes.append("'[N repeated lines]' marks lines shown where they first appear (boilerplate)")
    if _cost(lines) <= budget and not clean:
        return CompactionPlan(chunks=(lines,), notes=tuple(notes), **stats)
    lines, stats["trimmed"] = _trim_tool_output(lines)
    if clean:  # a long run: no single message may dominate it
        lines, stats["cut"] = _cap_messages(lines, LONG_MESSAGE_CAP)
    notes.append("'[... N chars cut ...]' marks text cut from the middle of a long message or tool output")
    if _cost(lines) <= budget:
        return CompactionPlan(chunks=(lines,), notes=tuple(notes), **stats)
    one_call, stats["cut"] = _cut(lines, budget, floor=MIN_CAP)
    if _cost(one_call) <= budget:
        return CompactionPlan(chunks=(one_call,), notes=tuple(notes), **stats)
    return _chunked(lines, budget, max_chunks, notes, stats)


def _chunked(lines: tuple[Line, ...], budget: int, max_chunks: int, notes: list[str], stats: dict[str, int]) -> (
        CompactionPlan):  # fmt: skip
    context = tuple(x for x in lines if x.kind in _CONTEXT)
    head = tuple(x for x in context if x.kind == "root")
    tail = tuple(x for x in context if x.kind == "end")
    later_head = _restated_task(lines, head)
    chunk_budget = (budget - _cost(context) - max(0, _cost(later_head) - _cost(head))
                    - (DIGEST_TOKENS if max_chunks > 1 else 0))  # fmt: skip
    # As few parts as possible: each part repeats the fixed text of the prompt.
    hard, stats["cut"] = _cut(lines, chunk_budget, floor=MIN_CAP)
    body = [x for x in hard if x.kind not in _CONTEXT]
    chunks = _split(body, chunk_budget)
    dropped = 0
    if len(chunks) > max_chunks:
        hard, stats["cut"] = _cut(lines, chunk_budget * max_chunks, floor=MIN_CAP)
        body = [x for x in hard if x.kind not in _CONTEXT]
        allowance = chunk_budget * max_chunks - 40
        while True:  # packing lines into chunks wastes a little per chunk: shrink until they fit
            kept, dropped = _drop_middle(body, allowance)
            chunks = _split(kept, chunk_budget)
            if len(chunks) <= max_chunks:
                break
            allowance = int(allowance * 0.9)
        notes.append("a '[... N lines omitted ...]' line marks turns left out of the middle of the run")
    if len(chunks) > 1:
        notes.append("the run is judged in parts; each part repeats the task and termination lines, and every part "
                     "after the first opens with a [D] digest of the parts before it (not citable)")  # fmt: skip
    out = []
    for i, chunk in enumerate(chunks):
        before = [x for c in chunks[:i] for x in c]
        opening = (digest(before, i),) if i else ()
        out.append((*(later_head if i else head), *opening, *chunk, *tail))
    return CompactionPlan(chunks=tuple(out), dropped=dropped, notes=tuple(notes), **stats)


def _restated_task(lines: Sequence[Line], head: tuple[Line, ...]) -> tuple[Line, ...]:
    """The root line for parts after the first. When the task line only points at the opening message (see
    :func:`~.transcript.build_transcript`), a later part does not show that message: it gets the task's text
    back (cut like a protected turn), so every part knows what the run was for."""
    opening = next((x for x in lines if x.kind == sc.SPAN_TYPE_MESSAGE), None)
    if not head or opening is None or head[0].body != f"(the opening message {opening.ref})":
        return head
    task, _ = cut_to_tokens(opening.body, 2 * MIN_CAP)
    return (head[0].with_body(f"{task} (the opening message {opening.ref}, shown in part 1)"),)


def _collapse(lines: tuple[Line, ...]) -> tuple[tuple[Line, ...], int]:
    groups: dict[tuple[str, str], list[int]] = {}
    outputs: dict[str, int] = {}
    handoffs: dict[str, str] = {}
    out = list(lines)
    collapsed = 0
    for i, line in enumerate(lines):
        if line.kind == sc.SPAN_TYPE_HANDOFF:  # the same routine handoff again: say so, keep the reference
            first_ref = handoffs.setdefault(line.head, line.ref)
            if first_ref != line.ref:
                out[i] = Line(line.ref, line.span_id, f"handoff as {first_ref}", kind=line.kind, sender=line.sender)
                collapsed += 1
            continue
        key = " ".join(line.body.lower().split())
        if len(key) < _MIN_REPEAT_CHARS:
            continue
        if _is_output(line):  # the same tool output again, whoever relays it (a tool run's arguments stay)
            args, sep, result = line.body.rpartition("result: ") if line.kind == sc.SPAN_TYPE_TOOL_CALL else (
                "", "", line.body)  # fmt: skip
            key = " ".join(result.lower().split())
            if len(key) < _MIN_REPEAT_CHARS:
                continue
            first = outputs.setdefault(key, i)
            if first != i:
                out[i] = line.with_body(f"{args}{sep}<same output as {lines[first].ref}>")
                collapsed += 1
            continue
        if line.kind == sc.SPAN_TYPE_MESSAGE:
            groups.setdefault((line.sender, key), []).append(i)
    for idx in groups.values():
        first_ref = lines[idx[0]].ref
        for k, i in enumerate(idx[1:], start=2):
            out[i] = lines[i].with_body(f"<repeat {k} of {len(idx)} of {first_ref}>")
            collapsed += 1
    return tuple(out), collapsed


def _is_output(line: Line) -> bool:
    return line.kind == sc.SPAN_TYPE_TOOL_CALL or line.role == sc.KIND_TOOL_RESULT


def _drop_boilerplate(lines: tuple[Line, ...]) -> tuple[tuple[Line, ...], int]:
    """Text lines recurring in >= BOILERPLATE_MIN_LINES events: kept at the first, replaced elsewhere."""
    seen_in: Counter[str] = Counter()
    for line in lines:
        if line.kind in _CONTEXT:
            continue
        seen_in.update({t.strip() for t in line.body.splitlines() if len(t.strip()) >= BOILERPLATE_MIN_CHARS})
    common = {t for t, n in seen_in.items() if n >= BOILERPLATE_MIN_LINES}
    if not common:
        return lines, 0
    shown: set[str] = set()
    out, dropped = [], 0
    for line in lines:
        if line.kind in _CONTEXT:
            out.append(line)
            continue
        kept: list[str] = []
        run = 0
        for text in line.body.splitlines():
            key = text.strip()
            if key in common and key in shown:
                run += 1
                continue
            if key in common:
                shown.add(key)
            if run:
                kept.append(f"[{run} repeated lines]")
                dropped, run = dropped + run, 0
            kept.append(text)
        if run:
            kept.append(f"[{run} repeated lines]")
            dropped += run
        out.append(line.with_body("\n".join(kept)) if len(kept) != len(line.body.splitlines()) else line)
    return tuple(out), dropped


_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)


def _trim_tool_output(lines: tuple[Line, ...]) -> tuple[tuple[Line, ...], int]:
    """Tool output keeps TOOL_CAP tokens (head and tail); so does each fenced block (code, logs) in a message."""
    out, trimmed = [], 0
    for line in lines:
        if _is_output(line):
            body, cut = cut_to_tokens(line.body, TOOL_CAP)
        elif "```" in line.body:
            body, cut = _trim_blocks(line.body)
        else:
            body, cut = line.body, False
        out.append(line.with_body(body) if cut else line)
        trimmed += cut
    return tuple(out), trimmed


def _cap_messages(lines: tuple[Line, ...], cap: int) -> tuple[tuple[Line, ...], int]:
    sizes = [count_tokens(x.body) for x in lines]
    return _apply_cap(lines, sizes, _protected(lines), cap)


def _trim_blocks(text: str) -> tuple[str, bool]:
    changed = False

    def trim(m: re.Match[str]) -> str:
        nonlocal changed
        inner, cut = cut_to_tokens(m.group(1), TOOL_CAP)
        changed = changed or cut
        return m.group(0).replace(m.group(1), inner) if cut else m.group(0)

    return _FENCE.sub(trim, text), changed


def _cut(lines: tuple[Line, ...], budget: int, *, floor: int) -> tuple[tuple[Line, ...], int]:
    """The largest per-line cap (>= floor) whose cut fits ``budget``, found by bisection on an estimate and then
    checked on the rendered lines (continuation markers make a body cost more than its own tokens)."""
    sizes = [count_tokens(x.body) for x in lines]
    fixed = _cost([x.with_body("") for x in lines])
    protected = _protected(lines)

    def total(cap: int) -> int:
        return fixed + sum(min(s, 2 * cap if i in protected else cap) for i, s in enumerate(sizes))

    target = budget
    while True:
        lo, hi = floor, max(max(sizes, default=floor), floor)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if total(mid) <= target else (lo, mid - 1)
        out, cut = _apply_cap(lines, sizes, protected, lo)
        if lo == floor or _cost(out) <= budget:
            return out, cut
        target = int(target * 0.9)


def _apply_cap(lines: tuple[Line, ...], sizes: list[int], protected: set[int], cap: int) -> (
        tuple[tuple[Line, ...], int]):  # fmt: skip
    out, cut = [], 0
    for i, (line, size) in enumerate(zip(lines, sizes, strict=True)):
        limit = 2 * cap if i in protected else cap
        if size > limit:
            body, _ = cut_to_tokens(line.body, limit)
            out.append(line.with_body(body))
            cut += 1
        else:
            out.append(line)
    return tuple(out), cut


def _protected(lines: Sequence[Line]) -> set[int]:
    turns = [i for i, x in enumerate(lines) if x.kind not in _CONTEXT]
    keep = set(turns[:PROTECTED_TURNS] + turns[-PROTECTED_TURNS:])
    return keep | {i for i, x in enumerate(lines) if x.kind == "root"}


def _split(lines: Sequence[Line], budget: int) -> list[tuple[Line, ...]]:
    chunks: list[tuple[Line, ...]] = []
    current: list[Line] = []
    used = 0
    for line in lines:
        cost = count_tokens(line.text()) + 1
        if current and used + cost > budget:
            chunks.append(tuple(current))
            current, used = [], 0
        current.append(line)
        used += cost
    if current or not chunks:
        chunks.append(tuple(current))
    return chunks


def digest(before: Sequence[Line], parts: int) -> Line:
    """A compact account of the parts already judged: who did what, tools run, repeats so far, the last message.

    Not citable (no reference): it only lets a later part see step repetition, loss of history or a reset that
    spans parts. Bounded by DIGEST_TOKENS.
    """
    refs: dict[str, list[str]] = {}
    tools: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    repeats: list[str] = []
    for x in before:
        if x.kind == sc.SPAN_TYPE_MESSAGE:
            refs.setdefault(x.sender, []).append(x.ref)
            if x.body.startswith("<repeat "):
                repeats.append(f"{x.ref} {x.body.strip('<>')}")
        elif x.kind == sc.SPAN_TYPE_TOOL_CALL:
            name = x.head.removeprefix("tool ").split(" (")[0]
            tools[name] += 1
            failed[name] += "(failed)" in x.head
    who = "; ".join(f"{a} {len(r)} messages ({r[0]}..{r[-1]})" for a, r in refs.items())
    ran = ", ".join(f"{t} x{n}" + (f" ({failed[t]} failed)" if failed[t] else "") for t, n in tools.most_common(8))
    last = next((x for x in reversed(before) if x.kind == sc.SPAN_TYPE_MESSAGE), None)
    parts_text = "part 1" if parts == 1 else f"parts 1-{parts}"
    text = f"[D] digest of {parts_text} (already judged; not citable): agents: {who or 'none'}"
    if ran:
        text += f"; tools run: {ran}"
    if repeats:
        text += f"; repeats so far: {len(repeats)} ({', '.join(repeats[-6:])})"
    if last is not None:
        said, _ = cut_to_tokens(" ".join(last.body.split()), 80)
        text += f"; last message {last.ref} {last.head}: {said}"
    text, _ = cut_to_tokens(text, DIGEST_TOKENS - 10)
    return Line("", "", text, kind=DIGEST)


def _drop_middle(lines: list[Line], budget: int) -> tuple[list[Line], int]:
    """Keep lines alternately from the head and the tail until the budget is spent; mark the gap."""
    costs = [count_tokens(x.text()) + 1 for x in lines]
    lo, hi, used = 0, len(lines) - 1, 0
    head: list[Line] = []
    tail: list[Line] = []
    take_head = True
    while lo <= hi:
        i = lo if take_head else hi
        if used + costs[i] > budget:
            break
        used += costs[i]
        if take_head:
            head.append(lines[lo])
            lo += 1
        else:
            tail.insert(0, lines[hi])
            hi -= 1
        take_head = not take_head
    dropped = hi - lo + 1
    if dropped <= 0:
        return lines, 0
    gap = Line("", "", f"[... {dropped} lines omitted: {lines[lo].ref} to {lines[hi].ref} ...]", kind=OMITTED)
    return [*head, gap, *tail], dropped
