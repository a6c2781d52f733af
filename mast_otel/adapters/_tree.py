"""Reading a foreign trace: children by parent, subtrees, outermost spans, and message text in either convention."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from mast_otel.spans import SpanRecord

from ._messages import genai_messages, message_text


class Tree:
    """One trace's spans indexed by parent; every walk is in start order."""

    def __init__(self, spans: Iterable[SpanRecord]) -> None:
        self.spans = sorted(spans, key=lambda s: (s.start_ns, s.span_id))
        self.by_id = {s.span_id: s for s in self.spans}
        self.children: dict[str | None, list[SpanRecord]] = {}
        for s in self.spans:
            self.children.setdefault(s.parent_span_id, []).append(s)

    def parent(self, span: SpanRecord) -> SpanRecord | None:
        return self.by_id.get(span.parent_span_id) if span.parent_span_id else None

    def ancestors(self, span: SpanRecord) -> list[SpanRecord]:
        out: list[SpanRecord] = []
        node = self.parent(span)
        while node is not None and node not in out:
            out.append(node)
            node = self.parent(node)
        return out

    def top_down(self) -> list[SpanRecord]:
        """Every span, each after its parent (spans on a cycle in bad data last): the order the one-pass walks
        below use, so that no walk costs more than the number of spans."""
        out: list[SpanRecord] = []
        seen: set[str] = set()
        queue = [s for s in self.spans if s.parent_span_id not in self.by_id]
        while queue:
            node = queue.pop()
            if node.span_id in seen:
                continue
            seen.add(node.span_id)
            out.append(node)
            queue.extend(self.children.get(node.span_id, ()))
        out.extend(s for s in self.spans if s.span_id not in seen)
        return out

    def nearest(self, match: Callable[[SpanRecord], bool]) -> dict[str, SpanRecord | None]:
        """For each span id, its nearest strict ancestor that matches (None: none does), in one pass."""
        out: dict[str, SpanRecord | None] = {}
        for s in self.top_down():
            parent = self.parent(s)
            out[s.span_id] = None if parent is None else parent if match(parent) else out.get(parent.span_id)
        return out

    def holding(self, match: Callable[[SpanRecord], bool]) -> set[str]:
        """The ids of the spans with a matching span somewhere below them, in one pass."""
        out: set[str] = set()
        for s in reversed(self.top_down()):
            if (match(s) or s.span_id in out) and s.parent_span_id:
                out.add(s.parent_span_id)
        return out

    def outermost(self, match: Callable[[SpanRecord], bool]) -> list[SpanRecord]:
        """Spans that match with no matching ancestor, in start order."""
        matched = {s.span_id for s in self.spans if match(s)}
        if not matched:
            return []
        covered: dict[str, bool] = {}  # span id -> it or an ancestor matches
        out: set[str] = set()
        for s in self.top_down():
            # (a root's lookup must not hit a span whose id is empty: malformed OTLP hid the real root behind it)
            above = covered.get(s.parent_span_id, False) if s.parent_span_id else False
            covered[s.span_id] = above or s.span_id in matched
            if s.span_id in matched and not above:
                out.add(s.span_id)
        return [s for s in self.spans if s.span_id in out]

    def below(self, root: SpanRecord) -> list[SpanRecord]:
        """Every span under ``root`` (not ``root`` itself) that belongs to its run, each id once, in start order.

        A span that starts after ``root`` has ended begins another run, with everything under it: an
        instrumentation that leaves its context attached on the thread parents the next run's spans on a root
        that has finished. (Bad data can make a span its own parent, or deliver it twice: without the ids seen,
        that walk never ended.)"""
        out: list[SpanRecord] = []
        seen = {root.span_id}
        ended = root.end_ns if root.end_ns > root.start_ns else None
        stack = list(self.children.get(root.span_id, ()))
        while stack:
            node = stack.pop()
            if node.span_id in seen or (ended is not None and node.start_ns > ended):
                continue
            seen.add(node.span_id)
            out.append(node)
            stack.extend(self.children.get(node.span_id, ()))
        return sorted(out, key=lambda s: (s.start_ns, s.span_id))


def text(value: Any) -> str:
    """An attribute as text ("" when absent)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def genai_messages_text(value: Any) -> tuple[str, list[dict[str, Any]]]:
    """The text and the tool-call parts of a message list in any shape :mod:`._messages` reads (the GenAI
    conventions' ``gen_ai.input.messages`` / ``gen_ai.output.messages`` first of all)."""
    return message_text(genai_messages(value))
