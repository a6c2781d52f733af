"""Adapter outputs pinned against what the framework itself recorded, for the paths the shared fixture test does
not reach: AG2's built-in tool calls, the tree walks the adapters share, and the edges of each adapter's input
(a refusal's reason, a long message list, a recorded previous speaker that differs from the speaking order)."""

from __future__ import annotations

import dataclasses
import json
import random

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, Tree, adapt, foreign_units
from mast_otel.spans import SpanRecord
from tests.adapters._fixtures import fixture, handoffs, messages


def test_ag2_tool_calls_are_the_calls_the_group_made() -> None:
    """AG2's built-in tracing on a group whose researcher's model asks for a tool and whose executor runs it:
    the conversation has the group's messages and speaker order, the request is a tool-call message naming the
    tool, and the executed call carries the executor, the model's arguments and the result AG2 returned."""
    spans, oracle = fixture("ag2_builtin_tools")
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted) and adapted.source == "ag2-builtin"
    assert messages(adapted.records) == oracle["messages"]
    assert handoffs(adapted.records) == oracle["handoffs"]
    requests = [(str(m.get(sc.MESSAGE_SENDER)), str(m.get(sc.MESSAGE_TOOL_CALLS))) for m in adapted.messages
                if m.get(sc.MESSAGE_KIND) == sc.KIND_TOOL_CALL]  # fmt: skip
    assert requests == oracle["tool_calls"]
    assert all(
        m.get(sc.MESSAGE_TOOL_CALLS) is None for m in adapted.messages if m.get(sc.MESSAGE_KIND) != sc.KIND_TOOL_CALL
    )
    calls = [r for r in adapted.records if r.span_type == sc.SPAN_TYPE_TOOL_CALL]
    assert [(str(c.get(sc.GEN_AI_TOOL_NAME)), str(c.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS))) for c in calls] == oracle[
        "tool_arguments"
    ]
    assert [(str(c.get(sc.GEN_AI_AGENT_NAME)), str(c.get(sc.GEN_AI_TOOL_CALL_RESULT))) for c in calls] == oracle[
        "tool_results"
    ]
    assert all(c.get(sc.TOOL_SUCCESS) is True and not c.error for c in calls)
    # Each event's evidence is the AG2 span it was read from: the tool call its execute_tool span.
    by_id = {s.span_id: s for s in spans}
    assert [by_id[adapted.original(c.span_id)].name for c in calls] == [
        f"execute_tool {t}" for t, _ in oracle["tool_arguments"]
    ]


def _random_trace(rnd: random.Random) -> list[SpanRecord]:
    """A trace as a collector may receive it: parents that arrive or not (a dangling parent id), clocks skewed
    between services (a child may start before its parent), and a leaf span delivered twice (an exporter's retry)."""
    spans: list[SpanRecord] = []
    for n in range(rnd.randint(1, 12)):
        pick = rnd.random()
        parent = None if pick < 0.2 or not spans else "dead0000000000ff" if pick < 0.3 else rnd.choice(spans).span_id
        spans.append(SpanRecord("t" * 32, f"{n + 1:016x}", parent, f"s{n}", rnd.randint(0, 50), 100, {}))
    parents = {s.parent_span_id for s in spans}
    leaves = [s for s in spans if s.span_id not in parents]
    if rnd.random() < 0.5:
        spans.append(rnd.choice(leaves))
    rnd.shuffle(spans)
    return spans


def _chain(span: SpanRecord, by_id: dict[str, SpanRecord]) -> list[SpanRecord]:
    """The span's ancestors, nearest first, followed by parent ids (the definition the walks must agree with)."""
    out = []
    while span.parent_span_id in by_id:
        span = by_id[span.parent_span_id]
        out.append(span)
    return out


def test_tree_walks_agree_with_the_parent_chain() -> None:
    """Tree (exported with the adapters) answers every walk in one pass over a parent-first order; on traces with
    skewed clocks, missing parents and a span delivered twice, each answer equals the one read off each span's
    parent chain: which agent a span acts for, which spans hold an agent, the outermost roots, a root's subtree."""
    rnd = random.Random(24)
    for _ in range(400):
        spans = _random_trace(rnd)
        chosen = {s.span_id for s in spans if rnd.random() < 0.4}

        def match(span: SpanRecord, chosen: set[str] = chosen) -> bool:
            return span.span_id in chosen

        tree = Tree(spans)
        by_id = {s.span_id: s for s in spans}
        order = [s.span_id for s in tree.top_down()]
        assert sorted(order) == sorted(by_id)  # every span once
        for s in spans:
            if s.parent_span_id in by_id:
                assert order.index(s.parent_span_id) < order.index(s.span_id)  # each after its parent
            assert tree.parent(s) is by_id.get(s.parent_span_id or "")
            assert tree.ancestors(s) == _chain(s, by_id)
        nearest = tree.nearest(match)
        assert nearest == {s.span_id: next((a for a in _chain(s, by_id) if match(a)), None) for s in spans}
        holders = {a.span_id for s in spans if match(s) for a in _chain(s, by_id)}
        dangling = {s.parent_span_id for s in spans if s.parent_span_id and s.parent_span_id not in by_id}
        held = tree.holding(match)
        assert held - dangling == holders
        assert held & dangling == {
            a.parent_span_id for s in spans if match(s) for a in [s, *_chain(s, by_id)] if a.parent_span_id in dangling
        }
        starts = sorted(spans, key=lambda s: (s.start_ns, s.span_id))
        outer = [s for s in starts if match(s) and not any(match(a) for a in _chain(s, by_id))]
        assert tree.outermost(match) == outer
        for root in spans:
            assert tree.below(root) == [s for s in starts if root in _chain(s, by_id)]


def test_a_span_with_no_id_does_not_hide_the_conversation_root() -> None:
    """Malformed OTLP can carry a span with an empty id; a root candidate of that kind beside the AG2 conversation
    (started after it) left the conversation's own root out of the outermost spans, so it was never judged."""
    spans, oracle = fixture("ag2_builtin_tools")
    root = next(s for s in spans if s.parent_span_id is None)
    stray = dataclasses.replace(root, span_id="", start_ns=root.end_ns + 1, end_ns=root.end_ns + 2)
    assert Tree([*spans, stray]).outermost(lambda s: s.parent_span_id is None) == [root, stray]
    units = foreign_units([*spans, stray])
    assert [unit[0] for unit in units] == [root, stray]
    adapted = adapt(units[0])
    assert isinstance(adapted, Adapted) and messages(adapted.records) == oracle["messages"]


def _replaced(spans: list[SpanRecord], name: str, **attributes: object) -> list[SpanRecord]:
    """The spans with the named span's attributes updated (what another version of the framework might write)."""
    return [dataclasses.replace(s, attributes={**s.attributes, **attributes}) if s.name == name else s for s in spans]


def test_a_reply_is_the_text_parts_of_its_output_messages_in_order() -> None:
    """GenAI output messages (AG2's ``gen_ai.output.messages``) may hold several text parts, reasoning parts (the
    model's thinking, not what it said) and entries another writer got wrong: the message is the text parts,
    joined line by line in order, and nothing else."""
    spans, _ = fixture("ag2_builtin_tools")
    output = [
        "not a message",
        {"role": "assistant", "parts": [
            {"type": "reasoning", "content": "The user wants a report."},
            "not a part",
            {"type": "text", "content": "Report: 42."},
            {"type": "text", "content": ""},
            {"type": "text", "content": "TERMINATE"},
        ]},
    ]  # fmt: skip
    adapted = adapt(_replaced(spans, "invoke_agent writer", **{sc.GEN_AI_OUTPUT_MESSAGES: json.dumps(output)}))
    assert isinstance(adapted, Adapted)
    assert messages(adapted.records)[-1] == ("writer", "Report: 42.\nTERMINATE")


def test_a_numeric_tool_result_is_kept_as_its_text() -> None:
    """An attribute may be a number (OpenTelemetry allows int values): a tool that returned 42 reads as "42"."""
    spans, _ = fixture("ag2_builtin_tools")
    adapted = adapt(_replaced(spans, "execute_tool lookup", **{sc.GEN_AI_TOOL_CALL_RESULT: 42}))
    assert isinstance(adapted, Adapted)
    (call,) = [r for r in adapted.records if r.span_type == sc.SPAN_TYPE_TOOL_CALL]
    assert call.get(sc.GEN_AI_TOOL_CALL_RESULT) == "42"
