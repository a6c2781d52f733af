"""One conversation's spans, sorted into the events a judge reasons about: messages, handoffs, tool calls, turns.

Both the transcript renderer and the structural signals read this view, so they agree on order and on which span
is which. Only ``mast.span.type`` decides a span's role (never its name), because that attribute is what the
recorder guarantees for every framework.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord, conversation_roots, subtree

__all__ = ["ConversationView", "Event", "build_view"]


@dataclass(frozen=True, slots=True)
class Event:
    """A message, handoff, tool call or failed turn, in conversation order; ``kind`` is the span type."""

    kind: str  # sc.SPAN_TYPE_MESSAGE / HANDOFF / TOOL_CALL / AGENT_TURN
    span: SpanRecord

    def attr(self, key: str, default: Any = None) -> Any:
        return self.span.attributes.get(key, default)

    @property
    def text(self) -> str:
        """The content the event carries (message text, or tool arguments + result)."""
        if self.kind == sc.SPAN_TYPE_MESSAGE:
            return _s(self.attr(sc.MESSAGE_CONTENT))
        if self.kind == sc.SPAN_TYPE_TOOL_CALL:
            return _s(self.attr(sc.GEN_AI_TOOL_CALL_ARGUMENTS)) + "\n" + _s(self.attr(sc.GEN_AI_TOOL_CALL_RESULT))
        return ""

    @property
    def sender(self) -> str:
        if self.kind == sc.SPAN_TYPE_MESSAGE:
            return _s(self.attr(sc.MESSAGE_SENDER)) or "?"
        if self.kind == sc.SPAN_TYPE_HANDOFF:
            return _s(self.attr(sc.HANDOFF_FROM)) or "?"
        return _s(self.attr(sc.GEN_AI_AGENT_NAME)) or "?"

    @property
    def message_kind(self) -> str:
        return _s(self.attr(sc.MESSAGE_KIND)) or sc.KIND_MESSAGE


@dataclass(frozen=True, slots=True)
class ConversationView:
    """The root span plus its events in order. ``root`` is None only for spans with no recorder root."""

    root: SpanRecord | None
    events: tuple[Event, ...]
    agents: tuple[str, ...] = field(default=())

    @property
    def messages(self) -> tuple[Event, ...]:
        return tuple(e for e in self.events if e.kind == sc.SPAN_TYPE_MESSAGE)

    @property
    def handoffs(self) -> tuple[Event, ...]:
        return tuple(e for e in self.events if e.kind == sc.SPAN_TYPE_HANDOFF)

    @property
    def tools(self) -> tuple[Event, ...]:
        return tuple(e for e in self.events if e.kind == sc.SPAN_TYPE_TOOL_CALL)

    def root_attr(self, key: str, default: Any = None) -> Any:
        return self.root.attributes.get(key, default) if self.root is not None else default

    @property
    def termination(self) -> str | None:
        value = self.root_attr(sc.TERMINATION_REASON)
        return value if isinstance(value, str) else None

    @property
    def task(self) -> str:
        return _s(self.root_attr(sc.CONVERSATION_TASK))


def build_view(spans: Sequence[SpanRecord]) -> ConversationView:
    """Sort one conversation's spans into a view; with several roots, the first outermost one is used."""
    roots = conversation_roots(spans)
    root = roots[0] if roots else None
    ordered = subtree(spans, root) if root is not None else sorted(spans, key=lambda s: s.start_ns)
    events: list[Event] = []
    for s in ordered:
        kind = s.span_type
        if kind in (sc.SPAN_TYPE_MESSAGE, sc.SPAN_TYPE_HANDOFF, sc.SPAN_TYPE_TOOL_CALL):
            events.append(Event(kind, s))
        elif kind == sc.SPAN_TYPE_AGENT_TURN and s.error:
            events.append(Event(kind, s))  # a failed turn is evidence (an error cut the run short)
    agents: dict[str, None] = {}
    for e in events:
        if e.kind == sc.SPAN_TYPE_MESSAGE:
            agents[e.sender] = None
            for r in e.attr(sc.MESSAGE_RECIPIENTS, ()) or ():
                agents[str(r)] = None
    return ConversationView(root=root, events=tuple(events), agents=tuple(agents))


def _s(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)
