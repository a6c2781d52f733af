"""AG2 Classic's built-in tracing (``autogen.opentelemetry``, GenAI conventions) -> a conversation.

What AG2 records (``ag2.span.type`` on every span): a ``conversation <initiator>`` root with the task in
``gen_ai.input.messages``; one ``invoke_agent <name>`` span per reply, nested under the agent that asked for it
(a group chat's members under ``invoke_agent chat_manager``), with the reply in ``gen_ai.output.messages``;
``execute_tool`` spans with arguments and result; and, when the group chat is instrumented with
``instrument_pattern``, a ``speaker_selection`` span per LLM-selected turn naming the selected speaker and the
candidates (with the selector's internal chat under it, which is not part of the conversation).

What it cannot provide: the reason a speaker was chosen (round robin, LLM selection, a condition: only the
choice is recorded), the termination reason (the max-round limit or a termination message leave no trace),
and messages that are not an agent's reply (e.g. a nested chat's internal traffic without its own root).
Handoffs are taken from ``speaker_selection`` spans when present, else from the order in which agents replied.
"""

from __future__ import annotations

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord

from ._conversation import Adapted, ConversationBuilder, NotAConversation
from ._tree import Tree, genai_messages_text, text

SOURCE = "ag2-builtin"
FRAMEWORK = "ag2"
SPAN_TYPE = "ag2.span.type"
_ROOT_TYPES = ("conversation", "multi_conversation")
_SELECTED = "ag2.speaker_selection.selected"


def recognises(span: SpanRecord) -> bool:
    return SPAN_TYPE in span.attributes


def adapt(tree: Tree, root: SpanRecord) -> Adapted | NotAConversation:
    # An LLM speaker selection runs an internal chat (checking_agent, speaker_selection_agent) under its span:
    # the selector's scratch work, not the group's conversation; only its choice counts.
    selection = tree.nearest(_is_selection)  # one pass: linear in the spans
    below = [s for s in tree.below(root) if selection.get(s.span_id) is None]
    agents = [s for s in below if s.get(SPAN_TYPE) == "agent"]
    # A reply is an agent span with no agent span under it (a manager's span holds its members' replies). (The
    # root never speaks: it is a conversation span, is_root's test.)
    holding = tree.holding(_is_agent)
    replies = [s for s in agents if s.span_id not in holding]
    reply_ids = {s.span_id for s in replies}
    owners = tree.nearest(_is_agent)
    speakers = {text(s.get(sc.GEN_AI_AGENT_NAME)) for s in replies}
    if len(speakers) < 2:
        return NotAConversation(SOURCE, f"{len(speakers)} agent(s) replied; not a multi-agent conversation")
    conv = ConversationBuilder(SOURCE, FRAMEWORK, root)
    initiator = text(root.get(sc.GEN_AI_AGENT_NAME)) or "user"
    task, _ = genai_messages_text(root.get(sc.GEN_AI_INPUT_MESSAGES))
    top = next((s for s in agents if tree.parent(s) is root), None)
    if task:
        first = text(top.get(sc.GEN_AI_AGENT_NAME)) if top is not None else ""
        conv.message(initiator, [first] if first else [], task, origin=root)
    previous: str | None = None
    for span in below:
        kind = span.get(SPAN_TYPE)
        if kind == "speaker_selection" and span.get(_SELECTED):
            target = text(span.get(_SELECTED))
            conv.handoff(previous or initiator, target, origin=span,
                         detail=text(span.get("ag2.speaker_selection.candidates")) or None)  # fmt: skip
            previous = target
        elif kind == "tool":
            owner = owners.get(span.span_id)
            conv.tool_call(text(owner.get(sc.GEN_AI_AGENT_NAME)) if owner else "?",
                           text(span.get(sc.GEN_AI_TOOL_NAME)), text(span.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS)),
                           text(span.get(sc.GEN_AI_TOOL_CALL_RESULT)), origin=span)  # fmt: skip
        elif span.span_id in reply_ids:
            sender = text(span.get(sc.GEN_AI_AGENT_NAME))
            parent = owners.get(span.span_id)
            recipient = text(parent.get(sc.GEN_AI_AGENT_NAME)) if parent is not None else initiator
            if previous is not None and previous != sender:  # (a speaker_selection span set previous already)
                conv.handoff(previous, sender, origin=span)
            content, calls = genai_messages_text(span.get(sc.GEN_AI_OUTPUT_MESSAGES))
            kind_ = sc.KIND_TOOL_CALL if calls and not content else sc.KIND_MESSAGE
            conv.message(sender, [recipient], content, origin=span, kind=kind_,
                         tool_calls=",".join(text(c.get("name")) for c in calls) or None)  # fmt: skip
            previous = sender
    return conv.build(task=task, name=text(root.name))


def _is_agent(span: SpanRecord) -> bool:
    return bool(span.get(SPAN_TYPE) == "agent")


def _is_selection(span: SpanRecord) -> bool:
    return bool(span.get(SPAN_TYPE) == "speaker_selection")


def is_root(span: SpanRecord) -> bool:
    return span.get(SPAN_TYPE) in _ROOT_TYPES
