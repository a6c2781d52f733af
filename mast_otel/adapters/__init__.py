"""Adapters: conversations recorded by other instrumentations, turned into the spans the judge reads.

Each source has one small, pure module (spans in, conversation out) whose docstring says which fields its
source cannot provide. :func:`adapt` picks the adapter for one conversation's spans:

- the spans hold a mast-otel recorder root -> ``None``: mast-otel's own spans are judged, the foreign ones
  beside them are ignored (a run traced twice is judged once, from mast-otel's spans);
- an adapter recognises its source and finds its root -> :class:`Adapted` (synthetic spans in mast-otel's
  shapes, never exported, plus the map back to the foreign spans), or :class:`NotAConversation` when there is no
  multi-agent conversation (one LLM call, one agent, a web request): such spans are never judged;
- an adapter recognises some spans but finds no root among them (one OpenInference LLM span inside a LangGraph
  run traced by OpenLLMetry), or its root holds no conversation (one OpenInference CHAIN span under a tool of a
  framework that writes GenAI spans) -> the next adapter tries; when none adapts, the first refusal stands.

A run that begins after another run's root has ended is not part of it (:meth:`Tree.below`), even when the
instrumentation left it under that root (a context still attached on the thread): it is its own conversation
(:func:`foreign_units` gives it its own unit).

A run its framework wrote as several traces (a trace per message) is one conversation when evidence ties the
traces: span links, a run id the user declares, or a shared history (:mod:`._grouping`, which says what each id
means: a conversation or session id names a session, and ties no runs). Given spans of
several traces whose roots are in different traces, :func:`adapt` reads them under one root made for them.

A mast-otel root is recognised by mast-otel's own marker (``mast.span.type=conversation``), never by
``gen_ai.operation.name``: another framework's ``invoke_workflow`` (Google ADK's root) is foreign, and the GenAI
adapter reads it.

:func:`root_candidate` is the per-span test the collector's ingest uses to hold a foreign trace until it is
whole; it reads one attribute or two, so it costs nothing measurable on the receive path.

The adapters import the span record and the conventions only: nothing of the collector, the judge or the
integrations (data flows collector -> adapters -> judge).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord

from . import ag2_builtin, ai_sdk, genai, openinference, openllmetry
from ._bounds import (
    IGNORE_REASONS,
    MAX_VALUE_CHARS,
    MAX_VALUE_DEPTH,
    TOO_DEEP,
    TOO_LARGE,
    Ignored,
    Screened,
    json_of,
    screen,
)
from ._conversation import SOURCE_ATTRIBUTE, SOURCE_NATIVE, Adapted, ConversationBuilder, NotAConversation
from ._grouping import (
    ANSWER_ATTRIBUTES,
    ASSISTANT_MESSAGE_EVENT,
    HistoryTies,
    evidence,
    evidence_of,
    group,
    history_key,
    joined_root,
    runs_of,
)
from ._tree import Tree
from .mapping import MappingError, SpanMapping, load_mappings, parse_mappings, readers

__all__ = [
    "ANSWER_ATTRIBUTES",
    "ASSISTANT_MESSAGE_EVENT",
    "IGNORE_REASONS",
    "MAX_VALUE_CHARS",
    "MAX_VALUE_DEPTH",
    "ROOT_CANDIDATE_KEYS",
    "ROOT_CANDIDATE_NAMES",
    "SOURCE_ATTRIBUTE",
    "SOURCE_NATIVE",
    "TOO_DEEP",
    "TOO_LARGE",
    "Adapted",
    "ConversationBuilder",
    "HistoryTies",
    "Ignored",
    "MappingError",
    "NotAConversation",
    "Screened",
    "SpanMapping",
    "Tree",
    "adapt",
    "evidence",
    "evidence_of",
    "foreign_units",
    "history_key",
    "json_of",
    "load_mappings",
    "parse_mappings",
    "root_candidate",
    "runs_of",
    "screen",
]

# (name, recognises a span of this source, is a conversation root candidate, adapt) in priority order: AG2's
# built-in tracing first (it carries the framework's own names), then the instrumentation libraries, and the plain
# GenAI conventions last: OpenLLMetry and AG2 write gen_ai.* attributes too, inside their own structure.
_ADAPTERS = (
    (ag2_builtin.SOURCE, ag2_builtin.recognises, ag2_builtin.is_root, ag2_builtin.adapt),
    (openinference.SOURCE, openinference.recognises, openinference.is_root, openinference.adapt),
    (openllmetry.SOURCE, openllmetry.recognises, openllmetry.is_root, openllmetry.adapt),
    # (the AI SDK's ai.* spans: its model calls carry gen_ai.* attributes too, never the operation's name)
    (ai_sdk.SOURCE, ai_sdk.recognises, ai_sdk.is_root, ai_sdk.adapt),
    (genai.SOURCE, genai.recognises, genai.is_root, genai.adapt),
)

# The attribute each convention roots a workflow of agents with: the root made for a run written as several
# traces (_grouping.joined_root) carries its first root's convention's.
_WORKFLOW_MARKERS: dict[str, dict[str, str]] = {
    ag2_builtin.SOURCE: {ag2_builtin.SPAN_TYPE: "multi_conversation"},
    openinference.SOURCE: {openinference.SPAN_KIND: "CHAIN"},
    openllmetry.SOURCE: {openllmetry.SPAN_KIND: "workflow"},
    ai_sdk.SOURCE: {ai_sdk.OPERATION_ID: "ai.generateText"},
    genai.SOURCE: {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_WORKFLOW},
}

# Attribute values that mark a span as the possible root of a foreign conversation (ingest's test); None: any
# value. Kept in step with the adapters' is_root (tests/adapters/test_selection.py).
_CANDIDATES: tuple[tuple[str, frozenset[str] | None], ...] = (
    (ag2_builtin.SPAN_TYPE, frozenset({"conversation", "multi_conversation"})),
    (openinference.SPAN_KIND, frozenset({"AGENT", "CHAIN"})),
    (openllmetry.SPAN_KIND, frozenset({"workflow"})),
    (ai_sdk.OPERATION_ID, ai_sdk.ROOT_OPERATIONS),
    (sc.GEN_AI_OPERATION_NAME, genai.ROOT_OPERATIONS),
    (genai.WORKFLOW_ID, None),
)


# The attribute keys root_candidate reads: a span with none of them is never a candidate (ingest's fast path).
ROOT_CANDIDATE_KEYS: tuple[str, ...] = tuple(key for key, _ in _CANDIDATES)


# (instrumentation scope, span name) pairs that mark a root candidate with no attribute to tell it by (Google
# ADK's legacy ``invocation``), as bytes: ingest reads both undecoded. A name alone marks nothing: any program may
# call a span ``invocation``, and holding it would delay its trace by up to max_trace_age.
ROOT_CANDIDATE_NAMES: frozenset[tuple[bytes, bytes]] = frozenset(
    (scope.encode(), name.encode()) for scope, name in genai.ROOT_NAMES
)


def root_candidate(
    get: Callable[[str], str | None], name: str = "", scope: str | None = None,
    mappings: Sequence[SpanMapping] = (),
) -> bool:  # fmt: skip
    """Whether a span (read through ``get``: attribute key -> string value or None; its name and its
    instrumentation scope's name) may root a foreign conversation, so the collector holds it and its subtree as
    one unit instead of passing them through; an agent's run in the user's ``mappings`` may too."""
    if (scope, name) in genai.ROOT_NAMES:
        return True
    if any(m.kind_of(get, scope) == "agent" for m in mappings):
        return True
    for key, values in _CANDIDATES:
        value = get(key)
        if value is not None and (values is None or value in values):
            return True
    return False


_NATIVE_TYPES = frozenset({
    sc.SPAN_TYPE_CONVERSATION, sc.SPAN_TYPE_AGENT_TURN, sc.SPAN_TYPE_MESSAGE, sc.SPAN_TYPE_HANDOFF,
    sc.SPAN_TYPE_TOOL_CALL,
})  # fmt: skip


def is_native(spans: Iterable[SpanRecord]) -> bool:
    """The spans hold mast-otel recorder spans: a root, or the turns and messages of a conversation whose root has
    not arrived (judged partial as they are). They carry OpenInference kinds too; they are never adapted."""
    return any(s.span_type in _NATIVE_TYPES for s in spans)


def adapt(spans: Sequence[SpanRecord], mappings: Sequence[SpanMapping] = ()) -> Adapted | NotAConversation | None:
    """One conversation's spans -> the adapted conversation, a refusal, or None (mast-otel's own spans). The spans
    are read within the bounds of :mod:`._bounds`: an attribute value too deep or too large is left out, and the
    result lists it (``ignored``). The user's ``mappings`` (:mod:`.mapping`) are tried before the built-in
    readers."""
    if is_native(spans):
        return None
    screened = screen(spans)
    found = _adapt(screened.spans, mappings)
    return dataclasses.replace(found, ignored=screened.ignored) if screened.ignored else found


def _adapt(spans: Sequence[SpanRecord], mappings: Sequence[SpanMapping]) -> Adapted | NotAConversation:
    tree = Tree(spans)
    refused: NotAConversation | None = None
    for source, recognises, is_root, convert in (*readers(mappings), *_ADAPTERS):
        if not any(recognises(s) for s in tree.spans):
            continue
        roots = tree.outermost(is_root)
        if not roots:
            refused = refused or NotAConversation(source, "no agent or workflow span to root a conversation")
            continue
        if len(roots) > 1:  # one run in pieces (several traces, or sibling runs tied by evidence): under one root
            roots = sorted(roots, key=lambda r: (r.start_ns, r.span_id))  # the first labelled, as the collector does
            joined = joined_root(roots, _WORKFLOW_MARKERS.get(source, _WORKFLOW_MARKERS[genai.SOURCE]))
            spans_under = [dataclasses.replace(s, parent_span_id=joined.span_id) if s in roots else s
                           for s in tree.spans]  # fmt: skip
            adapted = convert(Tree([joined, *spans_under]), joined)
            if isinstance(adapted, Adapted):
                return adapted.rerooted(roots[0])
            refused = refused or adapted
            continue
        adapted = convert(tree, roots[0])
        if isinstance(adapted, NotAConversation):
            # Its root holds no conversation (one OpenInference CHAIN span under a tool of a framework that writes
            # GenAI spans, say): the spans another instrumentation wrote may hold one in another convention. The
            # spans of the refused root's own scope were read (AG2's and OpenLLMetry's carry gen_ai.* as well):
            # the refusal stands for them.
            refused = refused or adapted
            read = roots[0].scope_name
            rest = [s for s in tree.spans if s.scope_name != read] if read else []
            if len(rest) == len(tree.spans) or not rest:
                break
            tree = Tree(rest)
            continue
        # The collector holds the unit from the outermost candidate, which may sit above this root.
        held = [a for a in tree.ancestors(roots[0]) if _held_as_root(a, mappings)]
        return adapted.rerooted(held[-1]) if held else adapted
    # Spans held by a root candidate that no adapter reads (a span named like ADK's legacy root, say): never
    # judged as if they were mast-otel's.
    return refused or NotAConversation("unknown", "no adapter recognises these spans")


def foreign_units(
    spans: Iterable[SpanRecord], run_keys: Sequence[str] = (), mappings: Sequence[SpanMapping] = ()
) -> list[list[SpanRecord]]:
    """What the collector would judge as foreign units, for files: per trace with no mast-otel root, each
    outermost root candidate and the spans under it (start order); then the units of different traces that
    evidence ties together (:mod:`._grouping`) as one."""
    by_trace: dict[str, list[SpanRecord]] = {}
    for s in spans:
        by_trace.setdefault(s.trace_id, []).append(s)
    units: list[list[SpanRecord]] = []
    for trace_spans in by_trace.values():
        if is_native(trace_spans):
            continue
        # A run left under another run's root after that root ended is not part of it: what remains once the
        # outermost roots' runs are taken is searched again, until no root is left.
        rest = trace_spans
        while rest:
            tree = Tree(rest)
            taken: set[str] = set()
            for root in tree.outermost(lambda s: _held_as_root(s, mappings)):
                unit = [root, *tree.below(root)]
                units.append(unit)
                taken.update(s.span_id for s in unit)
            if not taken:
                break
            # (the spans left have lost the parent that was taken: they are the later runs' roots and subtrees)
            below_taken = _below_taken(tree, taken)
            rest = [s for s in rest if s.span_id not in taken and below_taken[s.span_id]]
    # A run written as several traces: the units of different traces that links, a declared run id or a shared
    # history tie together are one.
    foreign = [s for trace_spans in by_trace.values() if not is_native(trace_spans) for s in trace_spans]
    return group(units, foreign, run_keys)


def _below_taken(tree: Tree, taken: set[str]) -> dict[str, bool]:
    """For each span id, whether a taken span is above it (a later run under an earlier run's root), in one pass."""
    out: dict[str, bool] = {}
    for s in tree.top_down():
        parent = s.parent_span_id
        out[s.span_id] = bool(parent) and (parent in taken or out.get(str(parent), False))
    return out


def _held_as_root(span: SpanRecord, mappings: Sequence[SpanMapping] = ()) -> bool:
    def get(key: str) -> str | None:
        value = span.get(key)
        return value if isinstance(value, str) else None

    return root_candidate(get, span.name, span.scope_name, mappings)
