"""Conversations: the unit the report counts, rebuilt from a trace's spans.

A conversation is an outermost mast-otel root (``mast.span.type=conversation``), or a foreign root the collector
labelled (``mast.source``), and its subtree. Its labels come from the root (hold mode) or
from the ``mast.verdict`` span (passthrough mode, or a root that never arrived), and its evidence from spans carrying
``mast.failure_mode`` and the verdict span's links. The store reader builds the same :class:`Conversation` from a
stored verdict, so both inputs aggregate alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mast_otel import semconv as sc
from mast_otel.collector.report.otlp import Span
from mast_otel.spans import walk_down

__all__ = ["JUDGED", "UNKNOWN", "UNLABELLED", "Conversation", "as_modes", "conversations_from_spans"]

JUDGED = (sc.JUDGE_OK, sc.JUDGE_PARTIAL, sc.JUDGE_TRUNCATED)
UNLABELLED = "unlabelled"  # a conversation no verdict reached
UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Conversation:
    """One judged unit: its labels and, per mode, the names of the spans cited as evidence."""

    trace_id: str
    name: str
    service: str
    framework: str
    status: str  # mast.judge.status, or "unlabelled"
    source: str | None = None  # mast.label.source
    modes: tuple[str, ...] = ()
    evidence: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # mode -> span names
    task_completed: bool | None = None
    summary: str = ""
    root_span_id: str | None = None
    status_reason: str = ""  # mast.judge.status_reason: why error, skipped, truncated or partial
    signals: tuple[str, ...] = ()  # mast.signals: structural signals (facts, not verdicts), whatever the status
    signal_spans: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # signal -> names of spans it marks

    @property
    def judged(self) -> bool:
        return self.status in JUDGED

    @property
    def failed(self) -> bool:
        return self.judged and bool(self.modes)


def as_modes(value: Any) -> tuple[str, ...]:
    """Mode ids from a label attribute, which may be a list or a comma-separated string."""
    if value is None:
        return ()
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return tuple(str(v).strip() for v in items if str(v).strip())


def _is_root(span: Span) -> bool:
    """A recorder root, or the root of a conversation another instrumentation recorded (labelled: mast.source)."""
    # mast-otel's own marker, not gen_ai.operation.name: another framework's invoke_workflow (Google ADK) counts
    # only once the collector labelled it (mast.source).
    attrs = span.attributes
    return attrs.get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_CONVERSATION or sc.MAST_SOURCE in attrs


def _outer_roots(spans: Sequence[Span]) -> list[Span]:
    by_id = {s.span_id: s for s in spans}
    roots = []
    for s in spans:
        if not _is_root(s):
            continue
        parent, nested, hops = by_id.get(s.parent_span_id or ""), False, 0
        while parent is not None and hops < 10_000:
            if _is_root(parent):
                nested = True
                break
            parent, hops = by_id.get(parent.parent_span_id or ""), hops + 1
        if not nested:
            roots.append(s)
    return roots


def _conversation(root: Span | None, verdict: Span | None, members: Sequence[Span], by_id: Mapping[str, Span]) -> (
        Conversation):  # fmt: skip
    labels = root.attributes if root is not None and sc.JUDGE_STATUS in root.attributes else None
    if labels is None and verdict is not None:
        labels = verdict.attributes
    labels = labels or {}
    status = str(labels.get(sc.JUDGE_STATUS) or UNLABELLED)
    modes = as_modes(labels.get(sc.FAILURE_MODES)) if status in JUDGED else ()
    evidence: dict[str, list[str]] = {}
    for s in members:
        for m in as_modes(s.attributes.get(sc.FAILURE_MODE)):
            evidence.setdefault(m, []).append(s.name)
    if verdict is not None:  # passthrough: the evidence is named by the verdict span's links
        for span_id, link_attrs in verdict.links:
            target = by_id.get(span_id)
            for m in as_modes(link_attrs.get(sc.FAILURE_MODE)):
                names = evidence.setdefault(m, [])
                name = target.name if target is not None else f"span {span_id}"
                if name not in names or target is None:
                    names.append(name)
    signals = as_modes(labels.get(sc.SIGNALS))
    signal_spans = {
        name: tuple(dict.fromkeys(s.name for s in members if s.attributes.get(sc.signal_attribute(name)) is True
                                  and s is not root))
        for name in signals
    }  # fmt: skip
    anchor = root or verdict
    assert anchor is not None
    found = root.attributes.get(sc.MAST_FRAMEWORK) if root is not None else None
    framework = sc.framework_name(found) if isinstance(found, str) and found.strip() else UNKNOWN
    completed = labels.get(sc.TASK_COMPLETED)
    return Conversation(
        trace_id=anchor.trace_id,
        name=root.name if root is not None else "(conversation root missing)",
        service=anchor.service or UNKNOWN,
        framework=str(framework),
        status=status,
        source=labels.get(sc.LABEL_SOURCE),
        modes=modes,
        evidence={m: tuple(dict.fromkeys(evidence.get(m, ()))) for m in modes},
        task_completed=completed if isinstance(completed, bool) else None,
        summary=str(labels.get(sc.VERDICT_SUMMARY) or ""),
        root_span_id=root.span_id if root is not None else None,
        status_reason=str(labels.get(sc.JUDGE_STATUS_REASON) or ""),
        signals=signals,
        signal_spans=signal_spans,
    )


def conversations_from_spans(spans: Iterable[Span]) -> list[Conversation]:
    """Group spans by trace, find each outermost conversation root and its verdict (on the root or a verdict span)."""
    traces: dict[str, list[Span]] = {}
    for s in spans:
        traces.setdefault(s.trace_id, []).append(s)
    out: list[Conversation] = []
    for trace_spans in traces.values():
        by_id = {s.span_id: s for s in trace_spans}
        verdicts = [s for s in trace_spans if s.attributes.get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_VERDICT]
        used: set[str] = set()
        for root in _outer_roots(trace_spans):
            conv_id = root.attributes.get(sc.GEN_AI_CONVERSATION_ID)
            verdict = next(
                (v for v in verdicts if v.parent_span_id == root.span_id
                 or (conv_id is not None and v.attributes.get(sc.GEN_AI_CONVERSATION_ID) == conv_id)),
                None,
            )  # fmt: skip
            if verdict is not None:
                used.add(verdict.span_id)
            out.append(_conversation(root, verdict, walk_down(trace_spans, root), by_id))
        for verdict in verdicts:  # a verdict whose root never arrived (hold mode, partial conversation)
            if verdict.span_id not in used:
                out.append(_conversation(None, verdict, trace_spans, by_id))
    return out
