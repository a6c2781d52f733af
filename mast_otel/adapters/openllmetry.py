"""OpenLLMetry (Traceloop's ``opentelemetry-instrumentation-langchain``) on LangGraph -> a conversation.

Read: the ``traceloop.span.kind = workflow`` span (``LangGraph.workflow``) as the root, its
``traceloop.entity.input`` for the task; each ``chat`` span's ``gen_ai.output.messages`` as one message, sent by
the top-level graph node its ``traceloop.entity.path`` starts with (``supervisor.supervisor.agent...`` is the
supervisor; ``researcher.call_agent...`` the researcher); ``goto <node>`` spans
(``langgraph.command.goto_node``) as handoffs to that node, from the agent that spoke last; ``execute_tool`` spans
(``gen_ai.tool.name``, ``gen_ai.tool.call.arguments`` / ``.result``) as tool calls, except a transfer tool's
(``_evidence.transfer``: ``transfer_to_researcher``), whose handoff the ``goto`` span records: the turn passing on,
no use of a tool (as the graph's own history has it: langgraph_openllmetry/supervisor).

What it cannot provide: handoff reasons (the goto span's source is the ``tools`` node, not a reason; the
transfer tool's arguments are in its tool call), the way back to a supervisor where no ``goto`` span records it
(read from the order of speakers instead), the termination reason, and recipients (a message goes to the graph).
``invoke_agent <name>`` spans mark agent invocations but hold no content, so they are not read.

A run whose model calls carry no entity path (OpenLLMetry's instrumentor of a framework that is no graph, with its
OpenAI instrumentor writing the ``chat`` spans: Agno teams) is read by the same loop from other evidence (a graph's
run keeps its handoffs on the ``goto`` spans, its task from the graph input):

- **the speaker of a model call** is the nearest span at or above it that names an agent: ``gen_ai.agent.name``
  (an ``agent`` span), else a ``<namespace>.team.name`` attribute (a team whose leader answers as the team, its
  ``workflow`` span naming no agent otherwise);
- **a tool call** is a ``traceloop.span.kind=tool`` span as well as an ``execute_tool`` one: its name from
  ``gen_ai.tool.name`` (else ``traceloop.entity.name``), arguments and result from ``traceloop.entity.input`` /
  ``.output`` where the GenAI attributes are missing;
- **a transfer, handoff or delegation tool** (``_evidence.transfer``: ``delegate_task_to_member`` with
  ``member_id``) is a handoff from its caller to the agent its arguments name, with its reason, not a tool call;
- **the task** is the root's ``traceloop.entity.input`` as plain text where it is no serialized graph input.
"""

from __future__ import annotations

import json
from typing import Any

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord

from ._bounds import NOT_JSON, json_of
from ._conversation import Adapted, ConversationBuilder, NotAConversation
from ._evidence import arguments, framework_of_run, name_or_none, transfer
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
    writes its framework there on workflow spans), LangGraph's on a LangGraph graph
    (:func:`._evidence.framework_of_run`); a run with no scope is taken for LangGraph's, the only workflow this
    adapter reads."""
    return framework_of_run(root, below) or "langgraph"


def _agent(span: SpanRecord) -> str:
    """The top-level graph node a span runs in: the first part of its entity path."""
    return text(span.get(_PATH)).split(".", 1)[0]


def _names_agent(span: SpanRecord) -> str | None:
    """The agent a span is the run of: ``gen_ai.agent.name``, else a ``<namespace>.team.name`` attribute."""
    named = name_or_none(span.get(sc.GEN_AI_AGENT_NAME))
    if named:
        return named
    return next((n for k, v in span.attributes.items() if k.endswith(".team.name") and (n := name_or_none(v))), None)


def _speakers(tree: Tree, spans: list[SpanRecord]) -> dict[str, str]:
    """Each span's agent: the nearest span at or above it that names an agent (none: not in the map)."""
    above = tree.nearest(lambda s: _names_agent(s) is not None)
    out: dict[str, str] = {}
    for s in spans:
        node = s if _names_agent(s) else above.get(s.span_id)
        found = _names_agent(node) if node is not None else None
        if found:
            out[s.span_id] = found
    return out


def _is_tool(span: SpanRecord) -> bool:
    return bool(span.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_EXECUTE_TOOL or span.get(SPAN_KIND) == "tool")


def adapt(tree: Tree, root: SpanRecord) -> Adapted | NotAConversation:
    below = tree.below(root)
    # The model calls run in graph nodes (entity paths): each speaks for its node, goto spans hand off, and the
    # invoke_agent spans are not read; else each speaks for the agent span above it.
    graph = any(_agent(s) for s in below if s.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_CHAT)
    speaker: dict[str, str]
    if graph:
        speaker = {s.span_id: found for s in below if (found := _agent(s))}
    else:
        speaker = _speakers(Tree([root, *below]), below)  # (an agent span above the root is not of the run)
    chats = [s for s in below if s.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_CHAT and s.span_id in speaker]
    chat_ids = {s.span_id for s in chats}  # a set: testing each span against the list was quadratic (issue 23)
    speakers = {speaker[s.span_id] for s in chats}
    if len(speakers) < 2:
        return NotAConversation(SOURCE, f"{len(speakers)} agent(s) replied; not a multi-agent conversation")
    conv = ConversationBuilder(SOURCE, _framework(root, below), root)
    task = _task(root.get("traceloop.entity.input"), plain=not graph)
    if task:
        conv.message("user", [speaker[chats[0].span_id]], task, origin=root)
    previous: str | None = None
    pending: str | None = None  # a goto's (or a transfer tool's) target that has not spoken yet
    for span in below:
        op = span.get(sc.GEN_AI_OPERATION_NAME)
        if op == "goto" and span.get(_GOTO):
            target = text(span.get(_GOTO))
            if previous is not None and target not in (previous, pending):
                conv.handoff(previous, target, origin=span)
                pending = target
        elif _is_tool(span):
            entity = "" if op == sc.OP_EXECUTE_TOOL else text(span.get("traceloop.entity.name"))
            name = text(span.get(sc.GEN_AI_TOOL_NAME)) or entity or span.name
            raw = span.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS) or span.get("traceloop.entity.input")
            caller = speaker.get(span.span_id)
            handed = transfer(name, arguments(raw), speakers)
            if handed is not None and graph:
                continue  # a graph's transfer: its goto span hands the turn over; the call is no tool's use
            if handed is not None:  # a delegation: the turn passes to the agent it names, with its reason
                to, reason = handed
                if caller is not None and to is not None and to not in (caller, pending):
                    conv.handoff(caller, to, reason=reason, origin=span)
                    pending = to
                continue
            result = span.get(sc.GEN_AI_TOOL_CALL_RESULT) or span.get("traceloop.entity.output")
            conv.tool_call(caller or "?", name, _inputs(raw), text(result), origin=span)
        elif span.span_id in chat_ids:
            sender = speaker[span.span_id]
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
    parsed = json_of(raw)
    inputs = parsed.get("inputs") if isinstance(parsed, dict) else None
    return json.dumps(inputs) if inputs is not None else raw


def _task(value: Any, *, plain: bool = False) -> str:
    """The first input message of the workflow (``{"inputs": {"messages": [{"role", "content"}]}}``); with
    ``plain`` (a run that is no graph), an input that is no JSON is the request itself, as plain text."""
    parsed = json_of(text(value), NOT_JSON)
    if parsed is NOT_JSON:
        return text(value).strip() if plain else ""
    inputs = parsed.get("inputs") if isinstance(parsed, dict) else None
    messages = inputs.get("messages") if isinstance(inputs, dict) else None
    if isinstance(messages, list) and messages and isinstance(messages[0], dict):
        return text(messages[0].get("content"))
    return ""
