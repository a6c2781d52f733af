"""Fit a transcript into a token budget while keeping what the failure modes turn on.

Steps, each taken only when the previous one was not enough:

1. **Collapse repeats.** A message repeating an earlier one of the same sender becomes ``<repeat k of n of M3>``:
   the count is what 1.3 (step repetition) and 1.5 (no termination) turn on, not the text again.
2. **Cut long bodies in the middle** to a per-line cap found by bisection, keeping head and tail (intent and
   conclusion), the cut marked with its size. The task line and the first and last turns get twice the cap.
3. **Chunk.** Still too long: split the lines into chunks that each fit; every chunk repeats the task line and
   the termination line for context, and the judge merges the chunks' answers.
4. **Drop the middle.** More chunks than allowed: cut harder, then omit middle lines (marked with the range of
   references omitted), keeping the first and last turns and the termination.

Steps 2-4 lose content, so the plan reports ``truncated`` and the verdict's status says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .tokens import count_tokens, cut_to_tokens
from .transcript import OMITTED, Line

__all__ = ["CompactionPlan", "compact"]

CHUNK_CAP = 400  # per-line token cap before chunking: long enough to keep a message's substance
MIN_CAP = 80  # the hardest cut; below this a message says nothing
PROTECTED_TURNS = 2  # first and last lines kept at twice the cap
_MIN_REPEAT_CHARS = 40


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """What the judge sends: one or more chunks of lines, plus what was done to fit them."""

    chunks: tuple[tuple[Line, ...], ...]
    collapsed: int = 0
    cut: int = 0
    dropped: int = 0
    notes: tuple[str, ...] = field(default=())

    @property
    def truncated(self) -> bool:
        return bool(self.cut or self.dropped or len(self.chunks) > 1)

    def describe(self) -> str:
        return f"collapsed={self.collapsed} cut={self.cut} dropped={self.dropped} chunks={len(self.chunks)}"


def _cost(lines: Sequence[Line]) -> int:
    return sum(count_tokens(line.text()) + 1 for line in lines)


def compact(lines: Sequence[Line], budget: int, *, max_chunks: int = 1) -> CompactionPlan:
    """Fit ``lines`` into chunks of at most ``budget`` tokens each (at most ``max_chunks`` chunks)."""
    lines = tuple(lines)
    if _cost(lines) <= budget:
        return CompactionPlan(chunks=(lines,))
    lines, collapsed = _collapse(lines)
    notes = ["messages marked <repeat k of n of Mx> repeat message Mx verbatim"] if collapsed else []
    if _cost(lines) <= budget:
        return CompactionPlan(chunks=(lines,), collapsed=collapsed, notes=tuple(notes))
    notes.append("'[... N chars cut ...]' marks text cut from the middle of a long message")
    cut_lines, cut = _cut(lines, budget, floor=MIN_CAP if max_chunks <= 1 else CHUNK_CAP)
    if _cost(cut_lines) <= budget:
        return CompactionPlan(chunks=(cut_lines,), collapsed=collapsed, cut=cut, notes=tuple(notes))
    context = tuple(x for x in cut_lines if x.kind in ("root", "end"))
    body = [x for x in cut_lines if x.kind not in ("root", "end")]
    chunk_budget = budget - _cost(context)
    chunks = _split(body, chunk_budget)
    dropped = 0
    if len(chunks) > max_chunks:
        cut_lines, cut = _cut(lines, chunk_budget * max_chunks, floor=MIN_CAP)
        body = [x for x in cut_lines if x.kind not in ("root", "end")]
        allowance = chunk_budget * max_chunks - 40
        while True:  # packing lines into chunks wastes a little per chunk: shrink until they fit
            kept, dropped = _drop_middle(body, allowance)
            chunks = _split(kept, chunk_budget)
            if len(chunks) <= max_chunks:
                break
            allowance = int(allowance * 0.9)
        notes.append("a '[... N lines omitted ...]' line marks turns left out of the middle of the run")
    if len(chunks) > 1:
        notes.append("the run is judged in parts; each part repeats the task line and the termination line")
    head = tuple(x for x in context if x.kind == "root")
    tail = tuple(x for x in context if x.kind == "end")
    return CompactionPlan(
        chunks=tuple((*head, *c, *tail) for c in chunks),
        collapsed=collapsed,
        cut=cut,
        dropped=dropped,
        notes=tuple(notes),
    )


def _collapse(lines: tuple[Line, ...]) -> tuple[tuple[Line, ...], int]:
    groups: dict[tuple[str, str], list[int]] = {}
    for i, line in enumerate(lines):
        key = " ".join(line.body.lower().split())
        if line.kind == "message" and len(key) >= _MIN_REPEAT_CHARS:
            groups.setdefault((line.sender, key), []).append(i)
    out = list(lines)
    collapsed = 0
    for idx in groups.values():
        first = lines[idx[0]].ref
        for k, i in enumerate(idx[1:], start=2):
            out[i] = lines[i].with_body(f"<repeat {k} of {len(idx)} of {first}>")
            collapsed += 1
    return tuple(out), collapsed


def _cut(lines: tuple[Line, ...], budget: int, *, floor: int) -> tuple[tuple[Line, ...], int]:
    """Bisect the largest per-line cap (>= floor) that fits ``budget``; apply it."""
    sizes = [count_tokens(x.body) for x in lines]
    fixed = _cost([x.with_body("") for x in lines])
    protected = _protected(lines)

    def total(cap: int) -> int:
        return fixed + sum(min(s, 2 * cap if i in protected else cap) for i, s in enumerate(sizes))

    lo, hi = floor, max(max(sizes, default=floor), floor)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if total(mid) <= budget else (lo, mid - 1)
    out, cut = [], 0
    for i, (line, size) in enumerate(zip(lines, sizes, strict=True)):
        cap = 2 * lo if i in protected else lo
        if size > cap:
            body, _ = cut_to_tokens(line.body, cap)
            out.append(line.with_body(body))
            cut += 1
        else:
            out.append(line)
    return tuple(out), cut


def _protected(lines: Sequence[Line]) -> set[int]:
    turns = [i for i, x in enumerate(lines) if x.kind not in ("root", "end")]
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
