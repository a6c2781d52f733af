"""A picture of one conversation: who spoke to whom, who handed control to whom and why, and where it failed.

A trace view shows a span tree; the failure MAST names lives across messages. This draws the conversation as a
sequence diagram, static SVG with no script and no server:

- the agents as nodes along the top, each with its lifeline;
- every message, in order, as an arrow from its sender to its recipients, labelled with its reference
  (``M3``, the ordinal ``mast.message.index``) and the start of its text;
- every handoff as a numbered, dashed arrow with its reason (``#2 llm_selection``); control ending the run goes
  to an ``end`` column;
- every span a judge cited as evidence in red with its modes, the decisive message with a star, and under the
  diagram the verdict (status, modes with names), the signals and the termination reason.

Every element carries ``data-*`` attributes (span id, index, sender, modes) so a test can check the picture
against the spans. Message text is untrusted: all of it is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, adapt, foreign_units
from mast_otel.collector.report.conversations import _outer_roots, as_modes
from mast_otel.collector.report.otlp import Span
from mast_otel.spans import SpanEvent, SpanRecord, walk_down
from mast_otel.taxonomy import mode

__all__ = ["ConversationPicture", "Event", "picture_of", "pictures_in_trace", "render_svg"]

END = "end"
_COLUMN = 170
_ROW = 30
_TOP = 70
_LEFT = 40
_TEXT_CHARS = 48
_KIND_ORDER = {sc.SPAN_TYPE_HANDOFF: 0, sc.SPAN_TYPE_MESSAGE: 1}


@dataclass(frozen=True, slots=True)
class Event:
    """One row of the diagram: a message or a handoff."""

    kind: str  # sc.SPAN_TYPE_MESSAGE or sc.SPAN_TYPE_HANDOFF
    span_id: str
    index: int  # mast.message.index or mast.handoff.index
    source: str
    targets: tuple[str, ...]
    label: str  # reason (handoff) or message kind
    text: str = ""
    modes: tuple[str, ...] = ()  # failure modes this span is evidence for
    decisive: bool = False


@dataclass(frozen=True, slots=True)
class ConversationPicture:
    trace_id: str
    name: str
    agents: tuple[str, ...]
    events: tuple[Event, ...]
    status: str
    modes: tuple[str, ...]
    termination: str
    signals: tuple[str, ...]

    @property
    def handoffs(self) -> tuple[Event, ...]:
        return tuple(e for e in self.events if e.kind == sc.SPAN_TYPE_HANDOFF)

    @property
    def messages(self) -> tuple[Event, ...]:
        return tuple(e for e in self.events if e.kind == sc.SPAN_TYPE_MESSAGE)


def _int(value: Any, default: int = -1) -> int:
    return value if isinstance(value, int) else default


def _strs(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value)
    return ()


def _evidence(members: Sequence[Span], verdict: Span | None) -> dict[str, tuple[str, ...]]:
    """span id -> modes cited on it (hold mode: on the span itself; passthrough: the verdict span's links)."""
    cited: dict[str, list[str]] = {}
    for s in members:
        for m in as_modes(s.attributes.get(sc.FAILURE_MODE)):
            cited.setdefault(s.span_id, []).append(m)
    if verdict is not None:
        for span_id, link_attrs in verdict.links:
            for m in as_modes(link_attrs.get(sc.FAILURE_MODE)):
                cited.setdefault(span_id, []).append(m)
    return {k: tuple(dict.fromkeys(v)) for k, v in cited.items()}


def picture_of(root: Span, members: Sequence[Span], verdict: Span | None = None) -> ConversationPicture:
    """The picture of the conversation under ``root`` (``members``: its subtree; ``verdict``: passthrough's span)."""
    labels = root.attributes if sc.JUDGE_STATUS in root.attributes else (verdict.attributes if verdict else {})
    evidence = _evidence(members, verdict)
    decisive_index = labels.get(sc.DECISIVE_MESSAGE_INDEX)
    events: list[tuple[tuple[int, int, int], Event]] = []
    for s in members:
        kind = s.attributes.get(sc.MAST_SPAN_TYPE)
        if kind == sc.SPAN_TYPE_MESSAGE:
            index = _int(s.attributes.get(sc.MESSAGE_INDEX))
            sender = str(s.attributes.get(sc.MESSAGE_SENDER) or "?")
            decisive = s.attributes.get(sc.DECISIVE) is True or (decisive_index is not None and index == decisive_index)
            event = Event(
                kind=sc.SPAN_TYPE_MESSAGE, span_id=s.span_id, index=index, source=sender,
                targets=_strs(s.attributes.get(sc.MESSAGE_RECIPIENTS)),
                label=str(s.attributes.get(sc.MESSAGE_KIND) or sc.KIND_MESSAGE),
                text=str(s.attributes.get(sc.MESSAGE_CONTENT) or ""), modes=evidence.get(s.span_id, ()),
                decisive=decisive,
            )  # fmt: skip
        elif kind == sc.SPAN_TYPE_HANDOFF:
            index = _int(s.attributes.get(sc.HANDOFF_INDEX))
            target = str(s.attributes.get(sc.HANDOFF_TO) or "?")
            event = Event(
                kind=sc.SPAN_TYPE_HANDOFF, span_id=s.span_id, index=index,
                source=str(s.attributes.get(sc.HANDOFF_FROM) or "?"),
                targets=(END if target == sc.HANDOFF_TO_TERMINATE else target,),
                label=str(s.attributes.get(sc.HANDOFF_REASON) or ""), modes=evidence.get(s.span_id, ()),
            )  # fmt: skip
        else:
            continue
        events.append(((s.start_ns, _KIND_ORDER[event.kind], index), event))
    ordered = tuple(e for _, e in sorted(events, key=lambda pair: pair[0]))
    agents: dict[str, None] = {}
    for e in ordered:
        for name in (e.source, *e.targets):
            if name != END:
                agents.setdefault(name, None)
    signals = _strs(root.attributes.get(sc.SIGNALS))
    return ConversationPicture(
        trace_id=root.trace_id,
        name=root.name,
        agents=tuple(agents),
        events=ordered,
        status=str(labels.get(sc.JUDGE_STATUS) or "unlabelled"),
        modes=as_modes(labels.get(sc.FAILURE_MODES)),
        termination=str(root.attributes.get(sc.TERMINATION_REASON) or ""),
        signals=signals,
    )


def pictures_in_trace(spans: Sequence[Span], trace_id: str) -> list[ConversationPicture]:
    """A picture per outermost conversation in the trace (a trace may hold several); a trace with no mast-otel
    conversation is drawn from what the adapters make of it, as the judge read it."""
    trace_spans = [s for s in spans if s.trace_id == trace_id]
    verdicts = [s for s in trace_spans if s.attributes.get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_VERDICT]
    roots = _outer_roots(trace_spans)
    if not roots:  # foreign spans no collector labelled
        return _foreign_pictures(trace_spans, verdicts)
    out = []
    for root in roots:
        if root.attributes.get(sc.MAST_SPAN_TYPE) != sc.SPAN_TYPE_CONVERSATION:  # a labelled foreign root
            out.extend(_foreign_pictures(walk_down(trace_spans, root), verdicts))
            continue
        verdict = next((v for v in verdicts if v.parent_span_id == root.span_id), None)
        out.append(picture_of(root, walk_down(trace_spans, root), verdict))
    return out


def _foreign_pictures(trace_spans: Sequence[Span], verdicts: Sequence[Span]) -> list[ConversationPicture]:
    """Spans traced by OpenInference, OpenLLMetry or a framework's own tracing: the adapters' conversation (the
    one the judge read), drawn under the foreign span ids, with the labels the collector put on those spans."""
    by_id = {s.span_id: s for s in trace_spans}
    records = [
        SpanRecord(trace_id=s.trace_id, span_id=s.span_id, parent_span_id=s.parent_span_id, name=s.name,
                   start_ns=s.start_ns, end_ns=max(s.end_ns, s.start_ns), attributes=s.attributes,
                   service_name=s.service, events=tuple(SpanEvent(name, attrs) for name, attrs in s.events),
                   scope_name=s.scope)
        for s in trace_spans
    ]  # fmt: skip
    out = []
    for unit in foreign_units(records):
        adapted = adapt(unit)
        if not isinstance(adapted, Adapted):
            continue
        foreign_root = by_id[adapted.root_span_id]
        members = []
        for r in adapted.records:
            original = by_id.get(adapted.original(r.span_id))
            attrs = dict(r.attributes)
            if original is not None:  # labels land on the foreign span a synthetic one came from
                attrs.update({k: v for k, v in original.attributes.items() if k in _LABEL_KEYS})
            span_id = original.span_id if original is not None else r.span_id
            members.append(Span(trace_id=r.trace_id, span_id=span_id, parent_span_id=r.parent_span_id, name=r.name,
                                attributes=attrs, start_ns=r.start_ns, end_ns=r.end_ns))  # fmt: skip
        root_attrs = {**members[0].attributes, **{k: v for k, v in foreign_root.attributes.items()
                                                  if k.startswith("mast.") and k != sc.MAST_SPAN_TYPE}}  # fmt: skip
        root = Span(trace_id=foreign_root.trace_id, span_id=foreign_root.span_id, parent_span_id=None,
                    name=members[0].name, attributes=root_attrs, start_ns=members[0].start_ns)  # fmt: skip
        verdict = next((v for v in verdicts if v.parent_span_id == foreign_root.span_id), None)
        out.append(picture_of(root, [root, *members[1:]], verdict))
    return out


# What the labeller writes on an evidence or decisive span (the root's labels are taken whole).
_LABEL_KEYS = frozenset({sc.FAILURE_MODE, sc.FAILURE_MODE_NAME, sc.DECISIVE})


# -- SVG ----------------------------------------------------------------------------------
def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _TEXT_CHARS else line[: _TEXT_CHARS - 1] + "…"


def _attr(**values: Any) -> str:
    return " ".join(f'data-{k.replace("_", "-")}="{escape(str(v), quote=True)}"' for k, v in values.items())


def render_svg(picture: ConversationPicture) -> str:
    columns = [*picture.agents, END]
    x: Mapping[str, int] = {name: _LEFT + _COLUMN // 2 + i * _COLUMN for i, name in enumerate(columns)}
    width = _LEFT * 2 + _COLUMN * len(columns)
    footer = 4 + len(picture.modes) + (1 if picture.signals else 0)
    height = _TOP + _ROW * (len(picture.events) + 1) + 20 * footer + 20
    bottom = _TOP + _ROW * len(picture.events) + 10
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'font-family="sans-serif" font-size="12" {_attr(trace_id=picture.trace_id)}>',
        "<defs>"
        '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">'
        '<path d="M0,0 L10,5 L0,10 z" fill="context-stroke"/></marker></defs>',
        f'<text x="{_LEFT}" y="20" font-size="15" font-weight="bold">{escape(picture.name)}</text>',
    ]
    for name in columns:
        cx = x[name]
        fill = "#eeeeee" if name == END else "#dbe8ff"
        out.append(
            f'<g class="agent" {_attr(agent=name)}><rect x="{cx - 70}" y="32" width="140" height="26" rx="13" '
            f'fill="{fill}" stroke="#456"/><text x="{cx}" y="49" text-anchor="middle">{escape(name)}</text>'
            f'<line x1="{cx}" y1="58" x2="{cx}" y2="{bottom}" stroke="#bbb" stroke-dasharray="2,3"/></g>'
        )
    handoff_number = 0
    for row, event in enumerate(picture.events):
        y = _TOP + _ROW * row + 16
        color = "#c0262d" if event.modes else ("#6a3fb5" if event.kind == sc.SPAN_TYPE_HANDOFF else "#334")
        if event.kind == sc.SPAN_TYPE_HANDOFF:
            handoff_number += 1
            caption = f"#{handoff_number} {event.label}"
            data = _attr(span_id=event.span_id, n=handoff_number, index=event.index, source=event.source,
                         target=event.targets[0], reason=event.label, modes=" ".join(event.modes))  # fmt: skip
            dash = ' stroke-dasharray="6,4"'
            out.append(f'<g class="handoff" {data}>')
        else:
            star = "★ " if event.decisive else ""
            caption = f"{star}M{event.index} {_short(event.text)}"
            data = _attr(span_id=event.span_id, index=event.index, source=event.source,
                         targets=" ".join(event.targets), modes=" ".join(event.modes),
                         decisive=str(event.decisive).lower())  # fmt: skip
            dash = ""
            out.append(f'<g class="message" {data}>')
        x0 = x.get(event.source, x[END])
        targets = [t for t in event.targets if t in x] or [event.source]
        for target in targets:
            x1 = x[target]
            if x1 == x0:  # to itself, or to nobody: a small loop
                out.append(f'<path d="M{x0},{y} h24 v10 h-22" fill="none" stroke="{color}" stroke-width="1.5"'
                           f'{dash} marker-end="url(#arrow)"/>')  # fmt: skip
            else:
                out.append(f'<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}" stroke="{color}" stroke-width="1.5"'
                           f'{dash} marker-end="url(#arrow)"/>')  # fmt: skip
        text_x = min(x0, min(x[t] for t in targets)) + 6
        out.append(f'<text x="{text_x}" y="{y - 5}" fill="{color}">{escape(caption)}</text>')
        if event.modes:
            badge = ", ".join(event.modes)
            out.append(f'<text x="{width - _LEFT}" y="{y + 4}" text-anchor="end" fill="#c0262d" '
                       f'font-weight="bold" class="evidence">{escape(badge)}</text>')  # fmt: skip
        out.append("</g>")
    y = bottom + 24
    lines = [f"verdict: {picture.status}" + (f" — {len(picture.modes)} failure mode(s)" if picture.modes else "")]
    lines += [f"{m} {mode(m).name}" for m in picture.modes]
    if picture.signals:
        lines.append("signals (facts, not verdicts): " + ", ".join(picture.signals))
    lines.append(f"termination: {picture.termination or 'not recorded'}")
    lines.append("arrows: messages solid (M = message index), handoffs dashed and numbered; red = cited as evidence")
    for line in lines:
        out.append(f'<text x="{_LEFT}" y="{y}" class="footer">{escape(line)}</text>')
        y += 20
    out.append("</svg>")
    return "\n".join(out)
