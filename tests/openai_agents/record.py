"""The oracle: the SDK's own record of a run (``RunResult.new_items``, ``last_agent``, ``RunHooks`` callbacks),
compared one to one with the spans mast-otel exported for that run's conversation."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from mast_otel import semconv as sc
from tests.span_query import Spans, SpanSet, attr, parent_id, span_id


def _raw(item: Any, key: str) -> Any:
    raw = item.raw_item
    return raw.get(key) if isinstance(raw, dict) else getattr(raw, key, None)


class Conversation(SpanSet):
    """The spans of one conversation (one SDK run), by ``gen_ai.conversation.id``."""

    def __init__(self, spans: Spans, root: ReadableSpan) -> None:
        self.root = root
        self.id = attr(root, sc.GEN_AI_CONVERSATION_ID)
        super().__init__(s for s in spans.all if attr(s, sc.GEN_AI_CONVERSATION_ID) == self.id)
        self._by_id = {span_id(s): s for s in spans.all}

    def tools(self, tool_type: str = "function") -> list[ReadableSpan]:
        return [s for s in self.of_type(sc.SPAN_TYPE_TOOL_CALL) if attr(s, sc.GEN_AI_TOOL_TYPE) == tool_type]

    def turn_of(self, span: ReadableSpan) -> str | None:
        """The agent whose turn encloses ``span``."""
        parent = self._by_id.get(parent_id(span))  # type: ignore[arg-type]
        while parent is not None and attr(parent, sc.MAST_SPAN_TYPE) != sc.SPAN_TYPE_AGENT_TURN:
            parent = self._by_id.get(parent_id(parent))  # type: ignore[arg-type]
        return attr(parent, sc.GEN_AI_AGENT_NAME) if parent is not None else None

    def outputs(self) -> list[tuple[str, str]]:
        """Agent output messages (not tool calls, not what a handed-to agent received): (agent, text)."""
        return [
            (attr(m, sc.MESSAGE_SENDER), attr(m, sc.MESSAGE_CONTENT))
            for m in self.messages
            if attr(m, sc.MESSAGE_KIND) == sc.KIND_MESSAGE and self.turn_of(m) == attr(m, sc.MESSAGE_SENDER)
        ]


def assert_matches_sdk(conv: Conversation, items: list[Any], last_agent: str, hooks: Any | None = None) -> None:
    """Every handoff, tool call, tool output and message item of the run has its span, in the same order."""
    from agents import ItemHelpers

    handoffs = [h for h in conv.handoffs if attr(h, sc.HANDOFF_REASON) == sc.HANDOFF_TOOL_CALL]
    want_handoffs = [(i.source_agent.name, i.target_agent.name) for i in items if i.type == "handoff_output_item"]
    assert [(attr(h, sc.HANDOFF_FROM), attr(h, sc.HANDOFF_TO)) for h in handoffs] == want_handoffs
    want_transfer = [f"{_raw(i, 'name')}({_raw(i, 'arguments')})" for i in items if i.type == "handoff_call_item"]
    assert [attr(h, sc.HANDOFF_DETAIL) for h in handoffs] == want_transfer

    tools = conv.tools()
    want_tools = [(i.agent.name, _raw(i, "name"), _raw(i, "arguments")) for i in items if i.type == "tool_call_item"]
    got_tools = [(conv.turn_of(t), attr(t, sc.GEN_AI_TOOL_NAME), attr(t, sc.GEN_AI_TOOL_CALL_ARGUMENTS)) for t in tools]
    assert got_tools == want_tools
    want_results = [str(i.output) for i in items if i.type == "tool_call_output_item"]
    assert [attr(t, sc.GEN_AI_TOOL_CALL_RESULT) for t in tools] == want_results

    # Every model call that asked for a tool or a transfer is a tool_call message naming exactly those calls.
    asked = [_raw(i, "name") for i in items if i.type in ("tool_call_item", "handoff_call_item")]
    said = [
        call
        for m in conv.messages
        if attr(m, sc.MESSAGE_KIND) == sc.KIND_TOOL_CALL
        for call in _call_names(attr(m, sc.MESSAGE_TOOL_CALLS))
    ]
    assert said == asked

    want_outputs = [
        (i.agent.name, ItemHelpers.text_message_output(i)) for i in items if i.type == "message_output_item"
    ]
    assert conv.outputs() == want_outputs

    assert attr(conv.root, sc.TERMINATION_AGENT) == last_agent
    if hooks is not None:
        assert [attr(t, sc.GEN_AI_AGENT_NAME) for t in conv.turns] == [a for (a,) in hooks.of("agent_start")]
        assert [(attr(h, sc.HANDOFF_FROM), attr(h, sc.HANDOFF_TO)) for h in handoffs] == hooks.of("handoff")
        assert [(conv.turn_of(t), attr(t, sc.GEN_AI_TOOL_NAME)) for t in tools] == hooks.of("tool_start")

    # The transcript order (start time, then message index) is the order the messages were recorded in.
    ordered = sorted(conv.messages, key=lambda m: (m.start_time, attr(m, sc.MESSAGE_INDEX)))
    assert [attr(m, sc.MESSAGE_INDEX) for m in ordered] == list(range(len(ordered)))


def _call_names(raw: Any) -> list[str]:
    import json

    return [c["name"] for c in json.loads(raw)] if raw else []
