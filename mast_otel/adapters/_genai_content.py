"""Message content as GenAI-convention frameworks record it, wherever they put it.

Three places, newest first: span attributes (``gen_ai.input.messages`` / ``gen_ai.output.messages``, the parts
format), the ``gen_ai.client.inference.operation.details`` span event holding the same attributes (Strands
Agents with ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``), and the older per-message events
(``gen_ai.user.message`` with ``content``, ``gen_ai.choice`` with ``message``: Strands' default). Google ADK's
legacy schema (v1) keeps its request and response in ``gcp.vertex.agent.llm_request`` / ``llm_response``. An agent
run that records what it was given only in its framework's own namespace (no ``gen_ai.input.messages``: Mastra's
``mastra.agent_run.input``) has it in an attribute whose key's last part is ``input`` (:func:`agent_input_text`).

Event names are the GenAI specification's; the Python conventions package publishes attribute names only, so
they are spelled here. Everything returns "" / no calls for content a framework redacted or never recorded.
"""

from __future__ import annotations

import json
from typing import Any

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord

from ._bounds import json_of
from ._messages import genai_messages, message_text
from ._tree import genai_messages_text, text

__all__ = [
    "Output",
    "agent_input_text",
    "assigned_task",
    "first_user_text",
    "output",
    "requested_calls",
    "tool_responses",
]

OPERATION_DETAILS_EVENT = "gen_ai.client.inference.operation.details"
CHOICE_EVENT = "gen_ai.choice"
USER_MESSAGE_EVENT = "gen_ai.user.message"
ADK_LLM_REQUEST = "gcp.vertex.agent.llm_request"
ADK_LLM_RESPONSE = "gcp.vertex.agent.llm_response"
_REDACTED = frozenset({"[REDACTED]", "<REDACTED>", "REDACTED", "{}", "N/A"})  # placeholders, never content

Output = tuple[str, list[str]]  # (text, names of the tools it calls)


def output(span: SpanRecord) -> Output:
    """An LLM span's answer: its text and the tools it calls."""
    value = span.get(sc.GEN_AI_OUTPUT_MESSAGES)
    if value is None:
        value = _event_attribute(span, OPERATION_DETAILS_EVENT, sc.GEN_AI_OUTPUT_MESSAGES)
    if value is not None:
        content, calls = genai_messages_text(value)
        return content, [text(c.get("name")) for c in calls]
    choices = [e.attributes.get("message") for e in span.events if e.name == CHOICE_EVENT]
    if choices:
        found = [_legacy_message(c) for c in choices]
        return "\n".join(t for t, _ in found if t), [n for _, names in found for n in names]
    return _adk_v1_response(span.get(ADK_LLM_RESPONSE))


_CONTENT_EVENTS = frozenset({OPERATION_DETAILS_EVENT, CHOICE_EVENT, USER_MESSAGE_EVENT})


def records_content(span: SpanRecord) -> bool:
    """The span records message content: the output attribute or a content event (log records joined as events),
    whatever text they hold (this says whether content capture was on, not what was said)."""
    if sc.GEN_AI_OUTPUT_MESSAGES in span.attributes:
        return True
    return any(e.name in _CONTENT_EVENTS for e in span.events)


def first_user_text(span: SpanRecord) -> str:
    """The first user message a span was given ("" when it records none)."""
    value = span.get(sc.GEN_AI_INPUT_MESSAGES)
    if value is None:
        value = _event_attribute(span, OPERATION_DETAILS_EVENT, sc.GEN_AI_INPUT_MESSAGES)
    if value is not None:
        messages = json_of(value)
        for message in messages if isinstance(messages, list) else ():
            if isinstance(message, dict) and message.get("role") == "user":
                content, _ = genai_messages_text(json.dumps([message]))
                if content:
                    return content
        return ""
    for event in span.events:
        if event.name == USER_MESSAGE_EVENT:
            content, _ = _legacy_message(event.attributes.get("content"))
            if content:
                return content
    return _adk_v1_request(span.get(ADK_LLM_REQUEST))


def agent_input_text(span: SpanRecord) -> str:
    """The user's request an agent run records in its own attribute of what it was given (``<namespace>.input``,
    ``<namespace>.agent_run.input``: a framework's namespace, no GenAI attribute): plain text, or the first user
    message of a message list (``[{"role": "user", "content": ...}]``, or an object holding ``messages``); ""
    when no such attribute holds either. For the run's root, when no span records the user's input the GenAI
    way."""
    for key, value in span.attributes.items():
        if key.rpartition(".")[2] != "input" or key.startswith("gen_ai.") or not isinstance(value, str):
            continue
        parsed = json_of(value)
        if parsed is None and value.strip() and value.strip() not in _REDACTED:
            return value  # plain text
        if isinstance(parsed, str):
            return parsed
        found = _first_user(parsed.get("messages") if isinstance(parsed, dict) else parsed)
        if found:
            return found
    return ""


def _first_user(messages: Any) -> str:
    """The text of the first user message with text in a message list of any shape :mod:`._messages` reads."""
    for message in genai_messages(messages, "user"):
        if message.get("role") == "user":
            content, _ = message_text([message])
            if content.strip() and content.strip() not in _REDACTED:
                return content
    return ""


def _event_attribute(span: SpanRecord, event: str, key: str) -> Any:
    return next((e.attributes[key] for e in span.events if e.name == event and key in e.attributes), None)


def _legacy_message(value: Any) -> Output:
    """A per-message event's content (Strands' content blocks, an OpenAI-style message, a JSON-encoded string, plain
    text: any shape :mod:`._messages` reads) or ADK's legacy ``Content`` (``{"role", "parts"}`` with ``text`` and
    ``function_call`` parts): its text and the tools it calls."""
    if text(value).strip() in _REDACTED:
        return "", []
    content, calls = genai_messages_text(value)
    return content, [text(c.get("name")) for c in calls]


def _adk_v1_response(value: Any) -> Output:
    parsed = json_of(value)
    return _legacy_message(parsed.get("content")) if isinstance(parsed, dict) else ("", [])


def _adk_v1_request(value: Any) -> str:
    parsed = json_of(value)
    contents = parsed.get("contents") if isinstance(parsed, dict) else None
    for content in contents if isinstance(contents, list) else ():
        if isinstance(content, dict) and content.get("role") == "user":
            found, _ = _legacy_message(content)
            if found:
                return found
    return ""


def assigned_task(span: SpanRecord) -> str:
    """The task a span records it was assigned, in its framework's own namespace (``<namespace>.task.description``:
    CrewAI's task spans under OpenLLMetry, ``crewai.task.description``): the framework's record of the request,
    where the model's first user message is a prompt the framework built around it; "" when none."""
    for key, value in span.attributes.items():
        if key.endswith(".task.description") and not key.startswith("gen_ai.") and isinstance(value, str):
            if value.strip() and value.strip() not in _REDACTED:
                return value
    return ""


def requested_calls(span: SpanRecord) -> list[tuple[str, str, str]]:
    """The tool calls a model answer asks for, as ``gen_ai.output.messages`` records them (``tool_call`` parts):
    (name, call id, arguments as JSON text), in order."""
    parts = _parts(span.get(sc.GEN_AI_OUTPUT_MESSAGES))
    return [(text(p.get("name")), text(p.get("id")), _json_text(p.get("arguments")))
            for p in parts if p.get("type") == "tool_call" and p.get("name")]  # fmt: skip


def tool_responses(span: SpanRecord) -> dict[str, str]:
    """The tool results a model call was sent (``tool_call_response`` parts of ``gen_ai.input.messages``), by id."""
    return {text(p.get("id")): _json_text(p.get("response", p.get("result")))
            for p in _parts(span.get(sc.GEN_AI_INPUT_MESSAGES))
            if p.get("type") == "tool_call_response" and p.get("id")}  # fmt: skip


def _parts(value: Any) -> list[dict[str, Any]]:
    messages = json_of(value) if value is not None else None
    found = [m.get("parts") for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
    return [p for parts in found if isinstance(parts, list) for p in parts if isinstance(p, dict)]


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(value)
