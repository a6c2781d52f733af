"""Adapter outputs pinned against what the framework itself recorded, for the paths the shared fixture test does
not reach: AG2's built-in tool calls, the tree walks the adapters share, and the edges of each adapter's input
(a refusal's reason, a long message list, a recorded previous speaker that differs from the speaking order)."""

from __future__ import annotations

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, adapt
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
