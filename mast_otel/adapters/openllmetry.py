"""OpenLLMetry (Traceloop's ``opentelemetry-instrumentation-langchain``) on LangGraph -> a conversation.

Read: the ``traceloop.span.kind = workflow`` span (``LangGraph.workflow``) as the root, its
``traceloop.entity.input`` for the task; each ``chat`` span's ``gen_ai.output.messages`` as one message, sent by
the top-level graph node its ``traceloop.entity.path`` starts with (``supervisor.supervisor.agent...`` is the
supervisor; ``researcher.call_agent...`` the researcher); ``goto <node>`` spans
(``langgraph.command.goto_node``) as handoffs to that node, from the agent that spoke last; ``execute_tool`` spans
(``gen_ai.tool.name``, ``gen_ai.tool.call.arguments`` / ``.result``) as tool calls.

What it cannot provide: handoff reasons (the goto span's source is the ``tools`` node, not a reason; the
transfer tool's arguments are in its tool call), the way back to a supervisor where no ``goto`` span records it
(read from the order of speakers instead), the termination reason, and recipients (a message goes to the graph).
``invoke_agent <name>`` spans mark agent invocations but hold no content, so they are not read.
"""

from __future__ import annotations

import json
from typing import Any

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord

from ._conversation import Adapted, ConversationBuilder, NotAConversation
from ._evidence import framework_from_scopes
from ._tree import Tree, genai_messages_text, text

SOURCE = "openllmetry"
SPAN_KIND = "traceloop.span.kind"
_PATH = "traceloop.entity.path"
_GOTO = "langgraph.command.goto_node"
_RUNTIME = "<runtime>"
_GRAPH = "graph"  # recipient of a message: the graph routes it


def recognises(span: SpanRecord) -> bool:
    return SPAN_KIND in span.attributes or "traceloop.workflow.name" in span.attributes


def is_root(span: SpanRecord) -> bool:
    return bool(span.get(SPAN_KIND) == "workflow")


def _framework(root: SpanRecord, below: list[SpanRecord]) -> str:
    """The instrumentation scope's framework (never ``gen_ai.provider.name``: a model's vendor, though OpenLLMetry
    writes its framework there on workflow spans); its LangChain instrumentation traces LangGraph too, told by
    the workflow's name; a run with no scope is taken for LangGraph's, the only workflow this adapter reads."""
    found = framework_from_scopes([root, *below])
    if found is None or (found == "langchain" and text(root.get("traceloop.workflow.name")) == "LangGraph"):
        return "langgraph"
    return found


def _agent(span: SpanRecord) -> str:
    """The top-level graph node a span runs in: the first part of its entity path."""
    return text(span.get(_PATH)).split(".", 1)[0]


def adapt(tree: Tree, root: SpanRecord) -> Adapted | NotAConversation:
    below = tree.below(root)
    chats = [s for s in below if s.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_CHAT and _agent(s)]
    chat_ids = {s.span_id for s in chats}  # a set: testing each span against the list was quadratic (issue 23)
    speakers = {_agent(s) for s in chats}
    if len(speakers) < 2:
        return NotAConversation(SOURCE, f"{len(speakers)} agent(s) replied; not a multi-agent conversation")
    conv = ConversationBuilder(SOURCE, _framework(root, below), root)
    task = _task(root.get("traceloop.entity.input"))
    if task:
        conv.message("user", [_agent(chats[0])], task, origin=root)
    previous: str | None = None
    pending: str | None = None  # a goto's target that has not spoken yet
    for span in below:
        op = span.get(sc.GEN_AI_OPERATION_NAME)
        if op == "goto" and span.get(_GOTO):
            target = text(span.get(_GOTO))
            if previous is not None and target not in (previous, pending):
                conv.handoff(previous, target, origin=span)
                pending = target
        elif op == sc.OP_EXECUTE_TOOL:
            conv.tool_call(_agent(span) or "?", text(span.get(sc.GEN_AI_TOOL_NAME)) or span.name,
                           _inputs(span.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS)), text(span.get(sc.GEN_AI_TOOL_CALL_RESULT)),
                           origin=span)  # fmt: skip
        elif span.span_id in chat_ids:
            sender = _agent(span)
            if previous is not None and sender not in (previous, pending):
                conv.handoff(previous, sender, origin=span)
            previous, pending = sender, None
            content, calls = genai_messages_text(span.get(sc.GEN_AI_OUTPUT_MESSAGES))
            names = ", ".join(text(c.get("name")) for c in calls)
            kind = sc.KIND_TOOL_CALL if calls and not content else sc.KIND_MESSAGE
            conv.message(sender, [_RUNTIME] if calls else [_GRAPH], content or names, origin=span, kind=kind,
                         tool_calls=names or None)  # fmt: skip
    return conv.build(task=task, name=text(root.get("traceloop.workflow.name")) or root.name)


def _inputs(value: Any) -> str:
    """A tool's arguments: the ``inputs`` of the serialized call (the rest is LangChain's run metadata)."""
    raw = text(value)
    try:
        parsed = json.loads(raw)
    except ValueError:
        return raw
    inputs = parsed.get("inputs") if isinstance(parsed, dict) else None
    return json.dumps(inputs) if inputs is not None else raw


def _task(value: Any) -> str:
    """The first input message of the workflow (``{"inputs": {"messages": [{"role", "content"}]}}``)."""
    try:
        parsed = json.loads(text(value))
    except ValueError:
        return ""
    inputs = parsed.get("inputs") if isinstance(parsed, dict) else None
    messages = inputs.get("messages") if isinstance(inputs, dict) else None
    if isinstance(messages, list) and messages and isinstance(messages[0], dict):
        return text(messages[0].get("content"))
    return ""
