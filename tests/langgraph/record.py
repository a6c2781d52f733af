"""The framework's own record of a LangGraph run, and assertions of the recorded spans against it.

The record: the final ``messages`` state (every message in the shared state, in order, with ``AIMessage.name`` /
``ToolMessage.name`` as LangGraph stamped them) and the ``updates`` stream (which node ran, in order, and what it
added). Nothing here reads mast-otel's own attributes to build the expectation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mast_otel import semconv as sc
from mast_otel.recorder import content_text
from tests.span_query import Spans, attr, parent_id, span_id


@dataclass
class Record:
    final: dict[str, Any] = field(default_factory=dict)
    nodes: list[str] = field(default_factory=list)  # top-level nodes in the order they finished
    added_by: dict[str, str] = field(default_factory=dict)  # message id -> the node whose update added it


def run_streamed(graph: Any, graph_input: Any, config: Any = None) -> Record:
    """Run the graph through ``stream`` with the "updates" and "values" modes; keep LangGraph's own record."""
    record = Record()
    for mode, data in graph.stream(graph_input, config, stream_mode=["updates", "values"]):
        if mode == "values":
            record.final = data
            continue
        for node, update in data.items():
            if node.startswith("__"):
                continue
            record.nodes.append(node)
            for m in (update or {}).get("messages", []) if isinstance(update, dict) else []:
                record.added_by.setdefault(m.id, node)
    return record


def expected_sender(message: Any, node: str | None = None) -> str:
    if message.type == "human":
        return message.name or "user"
    return message.name or node or "?"


def assert_messages_match_state(got: Spans, messages: list[Any], added_by: dict[str, str] | None = None) -> None:
    """One message span per message of the final state, in the same order, with its sender, content and kind."""
    spans = got.messages
    assert [attr(s, sc.MESSAGE_INDEX) for s in spans] == list(range(len(spans)))
    want = [
        (
            expected_sender(m, (added_by or {}).get(m.id)),
            content_text(m.content),
            sc.KIND_TOOL_RESULT if m.type == "tool" else sc.KIND_TOOL_CALL if getattr(m, "tool_calls", None)
            else sc.KIND_MESSAGE,
        )
        for m in messages
    ]  # fmt: skip
    recorded = [(attr(s, sc.MESSAGE_SENDER), attr(s, sc.MESSAGE_CONTENT), attr(s, sc.MESSAGE_KIND)) for s in spans]
    assert recorded == want


def agent_turns(got: Spans) -> list[str]:
    """The agents of the turns directly under the root, in start order."""
    root = span_id(got.root)
    return [attr(t, sc.GEN_AI_AGENT_NAME) for t in got.turns if parent_id(t) == root]


def handoff_pairs(got: Spans) -> list[tuple[str, str, str]]:
    return [(attr(h, sc.HANDOFF_FROM), attr(h, sc.HANDOFF_TO), attr(h, sc.HANDOFF_REASON)) for h in got.handoffs]


def tool_calls_in(messages: list[Any]) -> list[tuple[str, dict[str, Any], str]]:
    """(tool name, arguments, sender) of every tool call the AI messages of the state made, in order."""
    return [(c["name"], c["args"], m.name) for m in messages if m.type == "ai" for c in m.tool_calls]
