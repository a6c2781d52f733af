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
    """A message, handoff, tool call or failed turn, in conversation order; ``kind`` is the span type.

    ``text``, ``sender`` and ``message_kind`` are worked out once, when the event is made: every structural signal
    reads them, several times each, for every conversation the collector releases.
    """

    kind: str  # sc.SPAN_TYPE_MESSAGE / HANDOFF / TOOL_CALL / AGENT_TURN
    span: SpanRecord
    text: str = field(init=False, repr=False, compare=False)  # the content (message text, or tool args + result)
    sender: str = field(init=False, repr=False, compare=False)
    message_kind: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        kind, attrs = self.kind, self.span.attributes
        if kind == sc.SPAN_TYPE_MESSAGE:
            text = _s(attrs.get(sc.MESSAGE_CONTENT))
            sender = _s(attrs.get(sc.MESSAGE_SENDER)) or "?"
        elif kind == sc.SPAN_TYPE_TOOL_CALL:
            text = _s(attrs.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS)) + "\n" + _s(attrs.get(sc.GEN_AI_TOOL_CALL_RESULT))
            sender = _s(attrs.get(sc.GEN_AI_AGENT_NAME)) or "?"
        else:
            text = ""
            sender = _s(attrs.get(sc.HANDOFF_FROM if kind == sc.SPAN_TYPE_HANDOFF else sc.GEN_AI_AGENT_NAME)) or "?"
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "sender", sender)
        object.__setattr__(self, "message_kind", _s(attrs.get(sc.MESSAGE_KIND)) or sc.KIND_MESSAGE)

    def attr(self, key: str, default: Any = None) -> Any:
        return self.span.attributes.get(key, default)


@dataclass(frozen=True, slots=True)
class ConversationView:
    """The root span plus its events in order. ``root`` is None only for spans with no recorder root."""

    root: SpanRecord | None
    events: tuple[Event, ...]
    agents: tuple[str, ...] = field(default=())
    messages: tuple[Event, ...] = field(init=False, repr=False, compare=False)  # read by every signal: kept

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", tuple(e for e in self.events if e.kind == sc.SPAN_TYPE_MESSAGE))

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
