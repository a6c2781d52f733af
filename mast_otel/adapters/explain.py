"""Why a trace was or was not judged: what the readers found in it, and what was missing.

:func:`explain` goes over spans as the collector would (``foreign_units``, then ``adapt``) and says, per run, which
reader read it and what it found (framework, agents, messages and how many carry text, handoffs, tool calls, the
task), or why nothing was judged: no span marks a run, a reader recognised the spans but found no conversation
(one agent), or the run records no content (the switch to turn on). ``mast-otel explain FILE`` prints it; the
collector logs :func:`describe` of every run it reads at debug level.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord

from . import adapt, foreign_units, is_native
from ._conversation import Adapted, NotAConversation
from .mapping import SpanMapping

__all__ = ["Explanation", "describe", "explain"]


@dataclass(frozen=True, slots=True)
class Explanation:
    """One run (or one trace nothing was read in): whether it is judged, by which reader, what was found, and
    what was missing, each as a sentence."""

    trace_id: str
    root_span_id: str | None
    judged: bool
    reader: str | None
    found: dict[str, Any] = field(default_factory=dict)
    missing: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"trace_id": self.trace_id, "root_span_id": self.root_span_id, "judged": self.judged,
                "reader": self.reader, "found": self.found, "missing": list(self.missing)}  # fmt: skip


def describe(found: Adapted | NotAConversation | None) -> str:
    """One line on what a reader made of a run (the collector's debug log)."""
    if found is None:
        return "judged from mast-otel's own spans"
    if isinstance(found, NotAConversation):
        return f"not judged: {found.source} found no multi-agent conversation: {found.reason}"
    facts = _facts(found)
    said = f"{facts['messages']} messages ({facts['messages_with_text']} with text)"
    head = f"read by {found.source} as {found.framework}: {len(facts['agents'])} agents {facts['agents']}, {said}"
    task = "found" if facts["task"] else "none"
    tail = f"{len(facts['handoffs'])} handoffs, {facts['tool_calls']} tool calls, task {task}"
    verdict = f"not judged: {found.no_content}" if found.no_content else "judged"
    return f"{head}, {tail}; {verdict}"


def explain(
    spans: Iterable[SpanRecord], run_keys: Sequence[str] = (), mappings: Sequence[SpanMapping] = ()
) -> list[Explanation]:
    """Every run in ``spans`` as the collector would read it, then every trace in which no run was found."""
    spans = list(spans)
    by_trace: dict[str, list[SpanRecord]] = {}
    for s in spans:
        by_trace.setdefault(s.trace_id, []).append(s)
    out: list[Explanation] = []
    covered: set[str] = set()
    for trace_id, trace_spans in by_trace.items():
        if is_native(trace_spans):
            covered.add(trace_id)
            roots = [s for s in trace_spans if s.span_type == sc.SPAN_TYPE_CONVERSATION]
            out.append(Explanation(trace_id, roots[0].span_id if roots else None, True, "mast-otel",
                                   {"conversation_roots": len(roots)}))  # fmt: skip
    for unit in foreign_units(spans, run_keys, mappings):
        covered.update(s.trace_id for s in unit)
        out.append(_of_unit(unit, adapt(unit, mappings)))
    for trace_id, trace_spans in by_trace.items():
        if trace_id not in covered:
            scopes = sorted({s.scope_name for s in trace_spans if s.scope_name})
            out.append(Explanation(trace_id, None, False, None, {"spans": len(trace_spans), "scopes": scopes},
                                   (_NO_ROOT,)))  # fmt: skip
    return out


_NO_ROOT = (
    "no span marks an agent's or a workflow's run, so the spans pass through unjudged: none carries "
    "gen_ai.operation.name invoke_agent / invoke_workflow, openinference.span.kind AGENT / CHAIN, "
    "traceloop.span.kind workflow, ag2.span.type conversation, ai.operationId of an agent loop or workflow.id; "
    "a schema of the framework's own needs a span mapping (--span-mapping, docs/adapters.md)"
)


def _of_unit(unit: list[SpanRecord], found: Adapted | NotAConversation | None) -> Explanation:
    root = unit[0]
    if found is None:
        return Explanation(root.trace_id, root.span_id, True, "mast-otel")
    if isinstance(found, NotAConversation):
        refused = f"{found.source} found no multi-agent conversation: {found.reason}"
        return Explanation(root.trace_id, root.span_id, False, found.source, {"spans": len(unit)}, (refused,))
    facts = _facts(found)
    missing: list[str] = [found.no_content] if found.no_content else []
    if not facts["task"]:
        missing.append("no span records the user's request (the task)")
    missing += [f"{i.key} of span {i.span_id} left out: {i.reason}" for i in found.ignored]
    traces = sorted({s.trace_id for s in unit})
    if len(traces) > 1:
        facts["traces"] = traces
    return Explanation(root.trace_id, found.root_span_id, found.no_content is None, found.source, facts,
                       tuple(missing))  # fmt: skip


def _facts(found: Adapted) -> dict[str, Any]:
    root = found.records[0]
    messages = found.messages
    said = [m for m in messages if m.get(sc.MESSAGE_CONTENT) not in ("", None, m.get(sc.MESSAGE_TOOL_CALLS))]
    return {
        "framework": found.framework,
        "agents": [str(a) for a in root.get(sc.CONVERSATION_AGENTS) or () if a != "user"],
        "task": bool(root.get(sc.CONVERSATION_TASK)),
        "messages": len(messages),
        "messages_with_text": len(said),
        "handoffs": [[str(h.get(sc.HANDOFF_FROM)), str(h.get(sc.HANDOFF_TO))] for h in found.handoffs],
        "tool_calls": sum(1 for r in found.records if r.span_type == sc.SPAN_TYPE_TOOL_CALL),
    }
