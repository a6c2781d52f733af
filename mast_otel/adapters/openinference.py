"""OpenInference (Arize / Phoenix instrumentors) -> a conversation.

Read: ``openinference.span.kind`` AGENT / CHAIN / TOOL, ``agent.name`` (else ``graph.node.id``, else the span
name's first word), ``graph.node.parent_id`` (the previous speaker, where the instrumentor sets it),
``input.value`` / ``output.value``, ``tool.name``. The root is the outermost AGENT or CHAIN span; a reply is an
AGENT span with no AGENT span under it (an AG2 chat manager or a team span holds its members' replies), sent to
the agent whose span holds it.

What OpenInference cannot provide: handoff reasons (no attribute exists; ``graph.node.parent_id`` gives only
from -> to, and where it is absent the handoffs are read from the order of replies), the termination reason
(at best a serialized result in the root's ``output.value``), and message recipients beyond the enclosing agent.
Content is there only when the instrumentor captures it (``OPENINFERENCE_HIDE_*`` unset).
"""

from __future__ import annotations

import json
from typing import Any

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord

from ._conversation import Adapted, ConversationBuilder, NotAConversation
from ._tree import Tree, text

SOURCE = "openinference"
SPAN_KIND = "openinference.span.kind"
_ROOT_KINDS = ("AGENT", "CHAIN")
_START = "start"  # graph.node.parent_id of the first agent (autogen-agentchat)
_HANDOFF_TOOL = "handoff to "  # the OpenAI Agents SDK's handoff, as a TOOL span (graph.node.parent_id has it too)
_RUNTIME = "<runtime>"  # recipient of a tool call: the framework runs it
_GENERIC = frozenset({"agent", "call_agent"})  # LangGraph span names that say nothing of which agent it is


def recognises(span: SpanRecord) -> bool:
    return SPAN_KIND in span.attributes


def is_root(span: SpanRecord) -> bool:
    return span.get(SPAN_KIND) in _ROOT_KINDS


def agent_name(span: SpanRecord, parent: SpanRecord | None = None) -> str:
    """The agent an AGENT span speaks for: its agent / graph-node attribute, else its name's first word; a
    generically named span (LangGraph's ReAct ``agent`` node) speaks for the graph node that encloses it."""
    for key in ("agent.name", "graph.node.id", "graph.node.name"):
        if span.get(key):
            return text(span.get(key))
    if span.name in _GENERIC and parent is not None:
        return parent.name
    return span.name.split(".", 1)[0].split(" ", 1)[0]


def framework_of(root: SpanRecord, spans: list[SpanRecord]) -> str:
    """The framework, from what its OpenInference instrumentor leaves (no span carries it as such)."""
    if any(k.startswith("ag2.") for s in spans for k in s.attributes):
        return "ag2"
    if root.name == "Agent workflow":  # the OpenAI Agents SDK's default trace name
        return "openai-agents"
    if root.get("team_id") is not None or root.name.endswith(".run_stream"):  # an autogen-agentchat team
        return "autogen-agentchat"
    if root.name == "LangGraph" or "langgraph" in text(root.get("metadata")):
        return "langgraph"
    return next((text(s.get("llm.system")) for s in spans if s.get("llm.system")), "unknown")


def adapt(tree: Tree, root: SpanRecord) -> Adapted | NotAConversation:
    below = tree.below(root)
    agents = [s for s in below if s.get(SPAN_KIND) == "AGENT"]
    # The root itself speaks when it is the only agent (one agent answering one request).
    speaking = agents or [s for s in (root,) if s.get(SPAN_KIND) == "AGENT"]
    replies = [s for s in speaking if not any(c.get(SPAN_KIND) == "AGENT" for c in tree.below(s))]
    speakers = {_speaker(tree, s) for s in replies}
    if len(speakers) < 2:
        return NotAConversation(SOURCE, f"{len(speakers)} agent(s) replied; not a multi-agent conversation")
    conv = ConversationBuilder(SOURCE, framework_of(root, [root, *below]), root)
    initiator = agent_name(root) if root.get(SPAN_KIND) == "AGENT" and root.get("agent.name") else "user"
    task = _task(root.get("input.value")) or _first_user_message(below)
    if task:
        first = text(root.get("ag2.recipient.name")) or next((_speaker(tree, s) for s in replies), "")
        conv.message(initiator, [first] if first else [], task, origin=root)
    # An agent span with its reply in output.value (AG2) is one message; otherwise (OpenAI Agents SDK) each of
    # its model calls' answers is one.
    by_output = {
        s.span_id
        for s in replies
        if s.get("output.value") is not None and not any(c.get(SPAN_KIND) == "LLM" for c in tree.below(s))
    }
    names = root.get("participant_names")
    team = [text(n) for n in names] if isinstance(names, (list, tuple)) else []
    previous: str | None = None
    for span in below:
        kind = span.get(SPAN_KIND)
        owner = next((a for a in tree.ancestors(span) if a.get(SPAN_KIND) == "AGENT"), None)
        if kind == "TOOL" and not span.name.startswith(_HANDOFF_TOOL):
            conv.tool_call(_speaker(tree, owner) if owner else "?", text(span.get("tool.name")) or span.name,
                           text(span.get("input.value")), text(span.get("output.value")), origin=span)  # fmt: skip
        elif kind == "LLM" and owner in replies and owner is not None and owner.span_id not in by_output:
            content, calls = _llm_output(span)
            kind_ = sc.KIND_TOOL_CALL if calls and not content else sc.KIND_MESSAGE
            sender = _speaker(tree, owner)
            # A team's (autogen-agentchat) messages go to every other participant; otherwise back to the user.
            to = [p for p in team if p != sender] or [initiator]
            conv.message(sender, [_RUNTIME] if calls else to, content or ", ".join(calls), origin=span, kind=kind_,
                         tool_calls=", ".join(calls) or None)  # fmt: skip
        elif span in replies:
            sender = _speaker(tree, span)
            recipient = text(span.get("ag2.sender.name")) or (_speaker(tree, owner) if owner else initiator)
            recorded = text(span.get("graph.node.parent_id"))
            source = previous if not recorded or recorded == _START else recorded
            if source is not None and source != sender:
                conv.handoff(source, sender, origin=span)
            if span.span_id in by_output:
                conv.message(sender, [recipient], text(span.get("output.value")), origin=span)
            previous = sender
    return conv.build(task=task, name=text(root.name), termination_detail=_stop_reason(root.get("output.value")))


def _speaker(tree: Tree, span: SpanRecord) -> str:
    return agent_name(span, tree.parent(span))


def _stop_reason(value: Any) -> str | None:
    """autogen-agentchat's ``TaskResult.stop_reason``, from the team span's serialized result (a detail only:
    the sentence is the termination condition's, not one of mast-otel's termination reasons)."""
    try:
        parsed = json.loads(text(value))
    except ValueError:
        return None
    reason = parsed.get("stop_reason") if isinstance(parsed, dict) else None
    return reason if isinstance(reason, str) and reason else None


def _llm_output(span: SpanRecord) -> tuple[str, list[str]]:
    """The text and the called tools' names of an LLM span's first output message (flattened attributes)."""
    prefix = "llm.output_messages.0.message."
    content = text(span.get(prefix + "content"))
    calls = []
    for n in range(64):
        name = span.get(f"{prefix}tool_calls.{n}.tool_call.function.name")
        if name is None:
            break
        calls.append(text(name))
    return content, calls


def _first_user_message(spans: list[SpanRecord]) -> str:
    """The first user message a model was sent (the SDK's root carries no input)."""
    for s in spans:
        if s.get(SPAN_KIND) != "LLM":
            continue
        for n in range(64):
            role = s.get(f"llm.input_messages.{n}.message.role")
            if role is None:
                break
            if role == "user":
                return text(s.get(f"llm.input_messages.{n}.message.content"))
    return ""


def _task(value: Any) -> str:
    """The task from the root's ``input.value``: a message dict, a message list, or plain text."""
    raw = text(value)
    try:
        parsed = json.loads(raw)
    except ValueError:
        return raw
    if isinstance(parsed, dict):
        for key in ("message", "task", "input", "content"):
            if isinstance(parsed.get(key), str):
                return str(parsed[key])
        messages = parsed.get("messages")
        if isinstance(messages, list) and messages and isinstance(messages[0], dict):
            first = messages[0]  # {"role", "content"}, or LangChain's {"type", "data": {"content"}}
            data = first.get("data")
            return text(data.get("content") if isinstance(data, dict) else first.get("content"))
    if isinstance(parsed, list) and parsed and isinstance(parsed[0], dict):
        return text(parsed[0].get("content"))
    return raw
