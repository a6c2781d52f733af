"""``mast-otel report``: MAST failure modes across stored traces, by mode, category, framework and service.

The MAST paper's per-system breakdown, for your own system: how many conversations show each of the 14 failure
modes, how they split over the three categories, and how that differs between frameworks and services. Printed
as a terminal table; ``--html`` also writes a self-contained page with charts (inline SVG, no network)::

    mast-otel report spans.jsonl                       # OTLP JSON exported by the collector's downstream
    mast-otel report spans.jsonl --html report.html --json report.json
    mast-otel report --store mast-otel-collector.db    # the collector's recent verdicts (read-only)

Inputs, any mix:

- OTLP JSON files: one ``{"resourceSpans": [...]}`` document, or JSON Lines with one per line (what an
  OpenTelemetry Collector ``file`` exporter writes, and what ``mast-otel demo`` saves). Labels are read from the
  conversation root (hold mode) or the ``mast.verdict`` span (passthrough mode, or a root that never arrived),
  evidence from the spans carrying ``mast.failure_mode`` and the verdict span's links.
- ``--store PATH``: the collector's SQLite store, opened read-only while the collector runs. It keeps verdicts
  only for ``tombstone_ttl`` (15 minutes by default) and drops span bodies once exported, so it gives recent
  verdicts by service, without evidence span names; keep an OTLP JSON copy of the labelled spans for history.

A conversation is counted once per mode, whatever the number of evidence spans. "judged" means
``mast.judge.status`` ok, partial or truncated; error and skipped conversations are listed, never counted as
"no failure".
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import sqlite3
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from mast_otel import semconv as sc
from mast_otel.taxonomy import CATEGORIES, MODES, mode

__all__ = [
    "Conversation",
    "Report",
    "conversations_from_spans",
    "load_otlp_json",
    "load_store",
    "register",
    "render_html",
    "render_text",
    "request_to_otlp_json",
    "spans_from_otlp_json",
]

JUDGED = (sc.JUDGE_OK, sc.JUDGE_PARTIAL, sc.JUDGE_TRUNCATED)
UNLABELLED = "unlabelled"  # a conversation no verdict reached
UNKNOWN = "unknown"
CATEGORY_COLOURS = {"FC1": "#4269d0", "FC2": "#efb118", "FC3": "#ff725c"}


# --- spans, as read from OTLP JSON ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Span:
    """The part of an OTLP span the report needs (links included, which :class:`mast_otel.spans.SpanRecord` lacks)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    attributes: Mapping[str, Any]
    service: str | None = None
    links: tuple[tuple[str, Mapping[str, Any]], ...] = ()  # (span id, link attributes), same trace


def _hex_id(value: str | None) -> str:
    """OTLP JSON ids are hex; protobuf's own JSON mapping writes base64. Accept both, return hex."""
    if not value:
        return ""
    text = value.strip()
    if len(text) in (16, 32) and all(c in "0123456789abcdefABCDEF" for c in text):
        return text.lower()
    try:
        return base64.b64decode(text, validate=True).hex()
    except ValueError:
        return text


def _any(value: Mapping[str, Any] | None) -> Any:
    """An OTLP JSON ``AnyValue`` as a plain value (arrays as tuples)."""
    if not value:
        return None
    for key, raw in value.items():
        if key == "stringValue":
            return raw
        if key == "boolValue":
            return bool(raw)
        if key == "intValue":
            return int(raw)
        if key == "doubleValue":
            return float(raw)
        if key == "arrayValue":
            return tuple(_any(v) for v in (raw or {}).get("values", ()))
        if key == "kvlistValue":
            return {kv["key"]: _any(kv.get("value")) for kv in (raw or {}).get("values", ())}
        if key == "bytesValue":
            return _hex_id(raw)
    return None


def _attrs(items: Iterable[Mapping[str, Any]] | None) -> dict[str, Any]:
    return {kv["key"]: _any(kv.get("value")) for kv in items or ()}


def spans_from_otlp_json(doc: Mapping[str, Any]) -> Iterator[Span]:
    """Every span of one OTLP JSON document (``{"resourceSpans": [...]}``)."""
    for rs in doc.get("resourceSpans", ()) or ():
        service = _attrs((rs.get("resource") or {}).get("attributes")).get("service.name")
        for ss in rs.get("scopeSpans", ()) or ():
            for s in ss.get("spans", ()) or ():
                yield Span(
                    trace_id=_hex_id(s.get("traceId")),
                    span_id=_hex_id(s.get("spanId")),
                    parent_span_id=_hex_id(s.get("parentSpanId")) or None,
                    name=s.get("name", ""),
                    attributes=_attrs(s.get("attributes")),
                    service=service if isinstance(service, str) else None,
                    links=tuple((_hex_id(link.get("spanId")), _attrs(link.get("attributes"))) for link in
                                s.get("links", ()) or ()),
                )  # fmt: skip


def load_otlp_json(path: str | Path) -> list[Span]:
    """Spans from a file holding one OTLP JSON document or JSON Lines of them."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        docs: list[Any] = [json.loads(text)]
    except json.JSONDecodeError:
        docs = [json.loads(line) for line in text.splitlines() if line.strip()]
    spans: list[Span] = []
    for doc in docs:
        for item in doc if isinstance(doc, list) else [doc]:
            if not isinstance(item, dict) or "resourceSpans" not in item:
                raise ValueError(f"{path}: not OTLP JSON (no resourceSpans)")
            spans.extend(spans_from_otlp_json(item))
    return spans


def request_to_otlp_json(request: Any) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` (or ``TracesData``) protobuf as OTLP JSON, with hex ids as the spec says."""
    from google.protobuf import json_format

    doc: dict[str, Any] = json_format.MessageToDict(request)
    for rs in doc.get("resourceSpans", ()):
        for ss in rs.get("scopeSpans", ()):
            for s in ss.get("spans", ()):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if s.get(key):
                        s[key] = _hex_id(s[key])
                for link in s.get("links", ()):
                    for key in ("traceId", "spanId"):
                        if link.get(key):
                            link[key] = _hex_id(link[key])
    return doc


# --- conversations -------------------------------------------------------------------------------------------------


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

    @property
    def judged(self) -> bool:
        return self.status in JUDGED

    @property
    def failed(self) -> bool:
        return self.judged and bool(self.modes)


def _as_modes(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return tuple(str(v).strip() for v in items if str(v).strip())


def _outer_roots(spans: Sequence[Span]) -> list[Span]:
    by_id = {s.span_id: s for s in spans}
    roots = []
    for s in spans:
        if s.attributes.get(sc.GEN_AI_OPERATION_NAME) != sc.OP_INVOKE_WORKFLOW:
            continue
        parent, nested, hops = by_id.get(s.parent_span_id or ""), False, 0
        while parent is not None and hops < 10_000:
            if parent.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_WORKFLOW:
                nested = True
                break
            parent, hops = by_id.get(parent.parent_span_id or ""), hops + 1
        if not nested:
            roots.append(s)
    return roots


def _subtree(spans: Sequence[Span], root: Span) -> list[Span]:
    children: dict[str | None, list[Span]] = {}
    for s in spans:
        children.setdefault(s.parent_span_id, []).append(s)
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(children.get(node.span_id, ()))
    return out


def _conversation(root: Span | None, verdict: Span | None, members: Sequence[Span], by_id: Mapping[str, Span]) -> (
        Conversation):  # fmt: skip
    labels = root.attributes if root is not None and sc.JUDGE_STATUS in root.attributes else None
    if labels is None and verdict is not None:
        labels = verdict.attributes
    labels = labels or {}
    status = str(labels.get(sc.JUDGE_STATUS) or UNLABELLED)
    modes = _as_modes(labels.get(sc.FAILURE_MODES)) if status in JUDGED else ()
    evidence: dict[str, list[str]] = {}
    for s in members:
        for m in _as_modes(s.attributes.get(sc.FAILURE_MODE)):
            evidence.setdefault(m, []).append(s.name)
    if verdict is not None:  # passthrough: the evidence is named by the verdict span's links
        for span_id, link_attrs in verdict.links:
            target = by_id.get(span_id)
            for m in _as_modes(link_attrs.get(sc.FAILURE_MODE)):
                names = evidence.setdefault(m, [])
                name = target.name if target is not None else f"span {span_id}"
                if name not in names or target is None:
                    names.append(name)
    anchor = root or verdict
    assert anchor is not None
    framework = (root.attributes.get(sc.MAST_FRAMEWORK) if root is not None else None) or UNKNOWN
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
            out.append(_conversation(root, verdict, _subtree(trace_spans, root), by_id))
        for verdict in verdicts:  # a verdict whose root never arrived (hold mode, partial conversation)
            if verdict.span_id not in used:
                out.append(_conversation(None, verdict, trace_spans, by_id))
    return out


# --- the collector's store -----------------------------------------------------------------------------------------

# Where each store layout keeps its verdicts (the store is the collector's internal detail and has changed once;
# a table that is missing is skipped). Columns: trace_id (bytes), conversation key, verdict JSON.
_VERDICT_QUERIES = (
    "SELECT trace_id, unit, verdict FROM tomb WHERE unit IS NOT NULL AND verdict IS NOT NULL ORDER BY at",
    "SELECT trace_id, unit, verdict FROM unit WHERE verdict IS NOT NULL ORDER BY released",
)


def _store_service(db: sqlite3.Connection, trace_id: bytes, unit: str) -> str | None:
    """service.name of the resource the conversation's spans arrived with, where the layout links the two."""
    try:
        from opentelemetry.proto.resource.v1.resource_pb2 import Resource
    except ImportError:  # the collector extra is not installed: no service names
        return None
    try:
        row = db.execute(
            "SELECT e.resource FROM span s JOIN envelope e ON e.id = s.envelope WHERE s.trace_id = ? AND s.unit = ?"
            " LIMIT 1",
            (trace_id, unit),
        ).fetchone()
    except sqlite3.OperationalError:  # a layout without span -> resource links
        return None
    if row is None:
        return None
    for kv in Resource.FromString(bytes(row[0])).attributes:
        if kv.key == "service.name":
            return str(kv.value.string_value)
    return None


def _verdict_modes(verdict: Mapping[str, Any]) -> tuple[str, ...]:
    found = []
    for m in verdict.get("modes") or ():
        mode_id = m.get("mode_id") if isinstance(m, Mapping) else m
        if mode_id:
            found.append(str(mode_id))
    if not found:
        found = list(_as_modes(verdict.get("failure_modes")))
    return tuple(dict.fromkeys(found))


def _verdict_rows(db: sqlite3.Connection) -> list[tuple[bytes, str, str]]:
    rows: dict[tuple[bytes, str], str] = {}
    for query in _VERDICT_QUERIES:
        try:
            found = db.execute(query).fetchall()
        except sqlite3.OperationalError:  # no such table in this layout
            continue
        for trace_id, unit, text in found:
            rows.setdefault((bytes(trace_id), str(unit)), text)
    return [(t, u, v) for (t, u), v in rows.items()]


def _stored_conversation(db: sqlite3.Connection, trace_id: bytes, unit: str, text: str) -> Conversation | None:
    try:
        verdict = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(verdict, Mapping):
        return None
    status = str(verdict.get("status") or UNLABELLED)
    extra = verdict.get("extra")
    extra = extra if isinstance(extra, Mapping) else {}
    framework = verdict.get("framework") or extra.get("framework") or UNKNOWN
    service = verdict.get("service") or extra.get("service") or _store_service(db, trace_id, unit) or UNKNOWN
    completed = verdict.get("task_completed")
    return Conversation(
        trace_id=trace_id.hex(),
        name=str(verdict.get("name") or extra.get("name") or unit),
        service=str(service),
        framework=str(framework),
        status=status,
        source=verdict.get("source"),
        modes=_verdict_modes(verdict) if status in JUDGED else (),
        task_completed=completed if isinstance(completed, bool) else None,
        summary=str(verdict.get("summary") or ""),
        status_reason=str(verdict.get("status_reason") or ""),
    )


def load_store(path: str | Path) -> list[Conversation]:
    """Verdicts the collector's SQLite store still remembers, opened read-only (safe while the collector runs)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such store")
    db = sqlite3.connect(f"file:{quote(str(p.resolve()))}?mode=ro", uri=True)
    try:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables & {"tomb", "unit"}:
            raise ValueError(f"{p}: not a mast-otel collector store (no verdict table among {sorted(tables)})")
        found = (_stored_conversation(db, t, u, v) for t, u, v in _verdict_rows(db))
        return [c for c in found if c is not None]
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{p}: not a mast-otel collector store ({exc})") from None
    finally:
        db.close()


# --- the report ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Report:
    """Counts over a set of conversations (each conversation counted once per mode)."""

    conversations: tuple[Conversation, ...]

    @property
    def judged(self) -> list[Conversation]:
        return [c for c in self.conversations if c.judged]

    @property
    def failed(self) -> list[Conversation]:
        return [c for c in self.conversations if c.failed]

    def statuses(self) -> Counter[str]:
        return Counter(c.status for c in self.conversations)

    def by_mode(self, where: Mapping[str, str] | None = None) -> Counter[str]:
        """Conversations per mode id, optionally only those whose ``framework``/``service`` match ``where``."""
        counts: Counter[str] = Counter()
        for c in self.judged:
            if where and any(getattr(c, k) != v for k, v in where.items()):
                continue
            counts.update(set(c.modes))
        return counts

    def by_category(self) -> Counter[str]:
        """Conversations with at least one mode in each category."""
        counts: Counter[str] = Counter()
        for c in self.judged:
            counts.update({_category(m) for m in c.modes})
        return counts

    def groups(self, key: str) -> list[str]:
        """The framework or service values present, most conversations first."""
        return [k for k, _ in Counter(getattr(c, key) for c in self.conversations).most_common()]

    def judged_in(self, key: str, value: str) -> int:
        return sum(1 for c in self.judged if getattr(c, key) == value)

    def to_json(self) -> dict[str, Any]:
        return {
            "conversations": len(self.conversations),
            "judged": len(self.judged),
            "failed": len(self.failed),
            "statuses": dict(self.statuses()),
            "by_mode": {m.id: self.by_mode()[m.id] for m in MODES},
            "by_category": {c.id: self.by_category()[c.id] for c in CATEGORIES},
            "by_framework": {f: dict(self.by_mode({"framework": f})) for f in self.groups("framework")},
            "by_service": {s: dict(self.by_mode({"service": s})) for s in self.groups("service")},
            "failed_conversations": [
                {"trace_id": c.trace_id, "name": c.name, "service": c.service, "framework": c.framework,
                 "status": c.status, "source": c.source, "modes": list(c.modes),
                 "evidence": {m: list(v) for m, v in c.evidence.items()}}
                for c in self.failed
            ],
        }  # fmt: skip


def _category(mode_id: str) -> str:
    try:
        return mode(mode_id).category.id
    except KeyError:
        return UNKNOWN


def _mode_name(mode_id: str) -> str:
    try:
        return mode(mode_id).name
    except KeyError:
        return "(unknown mode)"


def _pct(n: int, total: int) -> str:
    return f"{100.0 * n / total:.0f}%" if total else "-"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(h) for h in header], *[[str(v) for v in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def jaeger_tag(mode_id: str) -> str:
    return f"{sc.fm_attribute(mode_id)}=true"


def traceql(mode_id: str) -> str:
    return f"{{ span.{sc.fm_attribute(mode_id)} = true }}"


def render_text(report: Report, *, width_groups: int = 6) -> str:
    """The terminal report: totals, modes by category, modes by framework and by service, failed conversations."""
    judged = len(report.judged)
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(report.statuses().items()))
    out = [
        f"{len(report.conversations)} conversations ({statuses}); {judged} judged, {len(report.failed)} with at "
        f"least one MAST failure mode ({_pct(len(report.failed), judged)} of judged).",
        "",
    ]
    by_mode, by_cat = report.by_mode(), report.by_category()
    total_labels = sum(by_mode.values())
    rows: list[list[object]] = []
    for cat in CATEGORIES:
        rows.append([cat.id, cat.name, by_cat[cat.id], _pct(by_cat[cat.id], judged),
                     _pct(sum(by_mode[m.id] for m in MODES if m.category == cat), total_labels)])  # fmt: skip
        for m in MODES:
            if m.category == cat:
                rows.append([f"  {m.id}", m.name, by_mode[m.id], _pct(by_mode[m.id], judged),
                             _pct(by_mode[m.id], total_labels)])  # fmt: skip
    extra = sorted(set(by_mode) - {m.id for m in MODES})
    rows.extend([[f"  {m}", "(unknown mode)", by_mode[m], _pct(by_mode[m], judged), _pct(by_mode[m], total_labels)]
                 for m in extra])  # fmt: skip
    out.append(_table(["mode", "name", "conversations", "% of judged", "% of labels"], rows))
    for key in ("framework", "service"):
        groups = report.groups(key)[:width_groups]
        if not groups:
            continue
        header = ["mode", *(f"{g} (n={report.judged_in(key, g)})" for g in groups)]
        counts = {g: report.by_mode({key: g}) for g in groups}
        grows = [[m.id, *(counts[g][m.id] for g in groups)] for m in MODES if any(counts[g][m.id] for g in groups)]
        out += ["", f"By {key}:", _table(header, grows) if grows else "  (no failure modes)"]
    if report.failed:
        out += ["", "Conversations with failure modes:"]
        frows = [[c.trace_id, c.name[:40], c.framework, c.source or "-", ",".join(c.modes)] for c in report.failed]
        out.append(_table(["trace id", "conversation", "framework", "source", "modes"], frows))
    problems = [c for c in report.conversations if c.status in (sc.JUDGE_ERROR, sc.JUDGE_SKIPPED, UNLABELLED)]
    if problems:
        out += ["", f"Not judged: {len(problems)} conversation(s) (error, skipped or no verdict): "
                    + ", ".join(sorted({c.trace_id[:8] for c in problems})[:10])]  # fmt: skip
    return "\n".join(out) + "\n"


# --- HTML ----------------------------------------------------------------------------------------------------------


def _svg_mode_bars(report: Report) -> str:
    """One horizontal bar per mode (conversations), coloured by category: the paper's Figure 1 for this system."""
    judged = max(len(report.judged), 1)
    counts = report.by_mode()
    top = max([*counts.values(), 1])
    bar_w, label_w, row_h = 420, 300, 22
    height = row_h * len(MODES) + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 120}" height="{height}" '
             'role="img" aria-label="conversations per MAST failure mode">']  # fmt: skip
    for i, m in enumerate(MODES):
        y = 10 + i * row_h
        n = counts[m.id]
        w = round(bar_w * n / top)
        colour = CATEGORY_COLOURS.get(m.category.id, "#888")
        parts.append(
            f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end">{html.escape(m.id)} {html.escape(m.name)}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{w}" height="{row_h - 6}" fill="{colour}">'
            f"<title>{n} conversations</title></rect>"
            f'<text x="{label_w + w + 6}" y="{y + 15}">{n} ({_pct(n, judged)})</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _svg_group_stacks(report: Report, key: str) -> str:
    """Per framework (or service): the share of its mode labels in each category, as one stacked bar."""
    groups = report.groups(key)[:12]
    bar_w, label_w, row_h = 420, 180, 24
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 180}" '
             f'height="{row_h * len(groups) + 20}" role="img" aria-label="categories by {key}">']  # fmt: skip
    for i, g in enumerate(groups):
        y = 10 + i * row_h
        counts = report.by_mode({key: g})
        per_cat = Counter[str]()
        for mode_id, n in counts.items():
            per_cat[_category(mode_id)] += n
        total = sum(per_cat.values())
        parts.append(f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end">{html.escape(g)}</text>')
        x = float(label_w)
        for cat in CATEGORIES:
            if not total or not per_cat[cat.id]:
                continue
            w = bar_w * per_cat[cat.id] / total
            parts.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" '
                         f'fill="{CATEGORY_COLOURS[cat.id]}"><title>{cat.id} {html.escape(cat.name)}: '
                         f"{per_cat[cat.id]} labels</title></rect>")  # fmt: skip
            x += w
        judged = report.judged_in(key, g)
        parts.append(f'<text x="{label_w + bar_w + 8}" y="{y + 16}">{total} labels, {judged} judged</text>')
    parts.append("</svg>")
    return "".join(parts)


def _html_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(report: Report, *, title: str = "MAST failure modes") -> str:
    """A self-contained HTML page: totals, charts (inline SVG), the tables of the text report, failed conversations."""
    judged = len(report.judged)
    by_mode, by_cat = report.by_mode(), report.by_category()
    legend = " ".join(
        f'<span class="key" style="background:{CATEGORY_COLOURS[c.id]}"></span>{c.id} {html.escape(c.name)}'
        for c in CATEGORIES
    )
    mode_rows = [[m.id, m.name, m.category.id, by_mode[m.id], _pct(by_mode[m.id], judged), jaeger_tag(m.id),
                  traceql(m.id)] for m in MODES]  # fmt: skip
    cat_rows = [[c.id, c.name, by_cat[c.id], _pct(by_cat[c.id], judged)] for c in CATEGORIES]
    sections = []
    for key in ("framework", "service"):
        groups = report.groups(key)[:12]
        counts = {g: report.by_mode({key: g}) for g in groups}
        rows = [[m.id, *(counts[g][m.id] for g in groups)] for m in MODES]
        sections.append(
            f"<h2>By {key}</h2>{_svg_group_stacks(report, key)}"
            + _html_table(["mode", *(f"{g} (n={report.judged_in(key, g)})" for g in groups)], rows)
        )
    failed_rows = [
        [c.trace_id, c.name, c.service, c.framework, c.source or "-",
         "; ".join(f"{m}: {', '.join(c.evidence.get(m, ())) or '-'}" for m in c.modes)]
        for c in report.failed
    ]  # fmt: skip
    statuses = ", ".join(f"{html.escape(k)} {v}" for k, v in sorted(report.statuses().items()))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }}
th {{ background: #f3f3f3; }} svg text {{ font: 12px system-ui, sans-serif; }}
.key {{ display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; }}
code {{ background: #f3f3f3; padding: 0 3px; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<p>{len(report.conversations)} conversations ({statuses}); {judged} judged;
<b>{len(report.failed)}</b> with at least one MAST failure mode ({_pct(len(report.failed), judged)} of judged).
Taxonomy: Cemri et al., "Why Do Multi-Agent LLM Systems Fail?" (2025).</p>
<h2>Conversations per failure mode</h2><p>{legend}</p>
{_svg_mode_bars(report)}
{_html_table(["mode", "name", "category", "conversations", "% of judged", "Jaeger tag", "TraceQL"], mode_rows)}
<h2>By category</h2>
{_html_table(["category", "name", "conversations with a mode in it", "% of judged"], cat_rows)}
{"".join(sections)}
<h2>Conversations with failure modes</h2>
{_html_table(["trace id", "conversation", "service", "framework", "source", "modes: evidence spans"], failed_rows)}
</body></html>
"""


# --- command line --------------------------------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    """Add ``report`` to the ``mast-otel`` subcommands."""
    parser = subparsers.add_parser(
        "report",
        help="failure modes across stored traces, by mode, category, framework and service",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    parser.add_argument("files", nargs="*", metavar="FILE", help="OTLP JSON file (one document or JSON Lines)")
    parser.add_argument("--store", metavar="PATH", help="the collector's SQLite store (read-only)")
    parser.add_argument("--html", metavar="FILE", help="also write an HTML page with charts")
    parser.add_argument("--json", metavar="FILE", help="also write the counts as JSON")
    parser.add_argument("--title", default="MAST failure modes", help="title of the HTML page")
    parser.set_defaults(func=run)


def load(files: Sequence[str], store: str | None) -> Report:
    conversations: list[Conversation] = []
    spans: list[Span] = []
    for f in files:
        spans.extend(load_otlp_json(f))
    conversations.extend(conversations_from_spans(spans))
    if store:
        conversations.extend(load_store(store))
    return Report(tuple(conversations))


def run(args: argparse.Namespace) -> int:
    if not args.files and not args.store:
        print("mast-otel report: give OTLP JSON files and/or --store PATH", file=sys.stderr)
        return 2
    try:
        report = load(args.files, args.store)
    except (OSError, ValueError) as exc:
        print(f"mast-otel report: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(render_text(report))
    if args.html:
        Path(args.html).write_text(render_html(report, title=args.title), encoding="utf-8")
        print(f"HTML report: {args.html}")
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=2), encoding="utf-8")
        print(f"JSON report: {args.json}")
    return 0
