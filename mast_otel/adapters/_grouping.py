"""One run written as several traces: which units of different traces are one conversation, and the root that
holds them.

Some frameworks start a trace for every message they publish: Semantic Kernel's agent runtime writes each message
(``create``, ``send``, ``publish``, ``process``) as a trace of its own, so every agent's turn is in another trace.
What ties such traces together, read here as evidence (:func:`evidence`):

- **span links**: a span that links to a span of another trace. SK links each message's ``send``, ``publish`` and
  ``process`` to the span that created it, in the sender's trace; OTel messaging conventions do the same.
- **a conversation or session id**: the same ``gen_ai.conversation.id`` (GenAI conventions) or ``session.id``
  (OpenInference) on spans of both traces.

Evidence ties traces, whichever of their spans carries it (SK's links are on the runtime spans above an agent's
turn, outside the unit). Units are only ever joined across traces: a trace that holds several units (a later run
left under a finished root is its own, :func:`mast_otel.adapters.foreign_units`) is joined to nothing.

Joined units have no common root: :func:`joined_root` makes one (never exported; the labels go to the first
unit's root), in the convention the first unit's root is written in, so the adapter that reads that convention
reads the joined run as it reads a workflow of agents.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord

__all__ = ["GROUP_KEYS", "evidence", "evidence_of", "group", "joined_root"]

# Attributes whose value names a conversation across traces.
GROUP_KEYS = (sc.GEN_AI_CONVERSATION_ID, sc.OI_SESSION_ID)


def evidence(span: SpanRecord) -> list[str]:
    """What ties ``span``'s trace to others: ``trace:<id>`` per link to another trace, ``<key>=<value>`` per group
    key it carries."""

    def get(key: str) -> str | None:
        value = span.get(key)
        return value if isinstance(value, str) else None

    return evidence_of(span.trace_id, (trace for trace, _ in span.links), get)


def evidence_of(trace_id: str, linked: Iterable[str], get: Callable[[str], str | None]) -> list[str]:
    """:func:`evidence` from a span's trace id (hex), the trace ids (hex) its links name and its attributes
    (``get``: key -> string value or None); the collector's ingest reads a span undecoded through this."""
    keys = [f"trace:{trace}" for trace in linked if trace != trace_id]
    for key in GROUP_KEYS:
        value = get(key)
        if value:
            keys.append(f"{key}={value}")
    return keys


def group(units: Sequence[list[SpanRecord]], spans: Iterable[SpanRecord]) -> list[list[SpanRecord]]:
    """``units`` (each within one trace), with the units of the traces that the evidence on ``spans`` ties together
    merged into one, in the order of each group's first unit. Evidence ties traces; a trace holding several units
    (a later run left under a finished root) is tied to none, its units stay apart. Linear in the spans."""
    index: dict[str, int] = {}  # a trace id or a group key -> its node
    parent: list[int] = []

    def node(key: str) -> int:
        found = index.get(key)
        if found is None:
            found = index[key] = len(parent)
            parent.append(found)
        return found

    def find(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for s in spans:
        for key in evidence(s):
            parent[find(node(key))] = find(node(f"trace:{s.trace_id}"))
    per_trace: dict[str, int] = {}
    for unit in units:
        if unit:
            per_trace[unit[0].trace_id] = per_trace.get(unit[0].trace_id, 0) + 1
    merged: dict[object, list[SpanRecord]] = {}
    for position, unit in enumerate(units):
        trace = unit[0].trace_id if unit else ""
        key = f"trace:{trace}"
        joined = per_trace.get(trace) == 1 and key in index
        merged.setdefault(find(index[key]) if joined else ("apart", position), []).extend(unit)
    return list(merged.values())


def joined_root(roots: Sequence[SpanRecord], marker: Mapping[str, str]) -> SpanRecord:
    """A root above ``roots`` (the outermost roots of several traces, start order): the first root's trace,
    resource and scope (the framework is read from it), from the first start to the last end, with ``marker``
    (the attribute its convention roots a workflow with)."""
    first = roots[0]
    span_id = f"{int(first.span_id, 16) ^ 0x6A6F696E65640000:016x}"  # not a real span's id: never exported
    return SpanRecord(
        trace_id=first.trace_id, span_id=span_id, parent_span_id=None, name="joined run",
        start_ns=min(r.start_ns for r in roots), end_ns=max(r.end_ns for r in roots), attributes=dict(marker),
        service_name=first.service_name, scope_name=first.scope_name,
    )  # fmt: skip
