"""Every message shape the conventions and the major instrumentations write, read as one: the GenAI conventions'.

A message list is read from whatever an attribute, an event or a log record holds, and turned into the GenAI
conventions' shape (``{"role", "parts": [...], "name"}``), which is all the readers after it know:

- **parts** ``{"type": "text", "content"}``, ``{"type": "tool_call", "id", "name", "arguments"}``,
  ``{"type": "tool_call_response", "id", "response"}`` (the GenAI conventions) are kept;
- **text** as ``{"type": "text", "text"}`` (OpenAI's content parts, Anthropic's blocks, the AI SDK's and UI
  messages' parts) or a bare ``{"text"}`` block (Bedrock Converse, Strands, Gemini parts);
- **tool calls** as OpenAI's ``tool_calls`` (``{"id", "function": {"name", "arguments"}}``), the AI SDK's
  ``{"type": "tool-call", "toolCallId", "toolName", "input" | "args"}``, Anthropic's
  ``{"type": "tool_use", "id", "name", "input"}``, Bedrock's ``{"toolUse": {...}}`` or its flat
  ``{"type": "toolUse", "toolUseId", "name", "input"}``, Gemini's ``{"function_call" | "functionCall": {...}}``;
- **tool results** as the AI SDK's ``tool-result``, Anthropic's ``tool_result``, Bedrock's ``{"toolResult"}``, an
  OpenAI ``tool`` message (``tool_call_id``, ``content``);
- **the message** as ``{"role", "content"}`` (``content`` text or parts), ``{"role", "parts"}``, LangChain's
  serialized ``{"type": "human" | "ai", "data": {"content"}}``, a single message, or plain text (a message of the
  role the caller gives: a model's answer is the assistant's).

A message's ``name`` (who wrote it, where several agents share a history) is kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ._bounds import NOT_JSON, json_of

__all__ = ["PLACEHOLDERS", "Message", "dumps", "genai_messages", "message_text"]

Message = dict[str, Any]  # a message in the GenAI conventions' shape

# LangChain's serialized message types -> roles.
_LANGCHAIN_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


# What instrumentations write in place of text they were told not to record: no text.
PLACEHOLDERS = frozenset({"__REDACTED__", "[REDACTED]", "<REDACTED>", "REDACTED", "N/A"})


def genai_messages(value: Any, role: str = "assistant") -> list[Message]:
    """The messages ``value`` holds (JSON text, a decoded list or dict, or plain text), in the GenAI shape; []
    when it holds none. Plain text (and a JSON scalar, an answer such as ``42``) is one message of ``role``; a
    placeholder for hidden text is none."""
    if value is None:
        return []
    parsed = json_of(value, NOT_JSON) if isinstance(value, str) else value
    if parsed is NOT_JSON or isinstance(parsed, (int, float)):
        raw = str(value).strip()
        return [_text_message(role, str(value))] if raw and raw not in PLACEHOLDERS else []
    if isinstance(parsed, str):
        return [_text_message(role, parsed)] if parsed.strip() and parsed.strip() not in PLACEHOLDERS else []
    if isinstance(parsed, dict):
        parsed = [parsed] if _is_message(parsed) else []
    if not isinstance(parsed, list):
        return []
    if parsed and not any(isinstance(p, dict) and _is_message(p) for p in parsed):
        parsed = [{"role": role, "content": parsed}]  # a list of blocks: one message's content (Strands' events)
    return [m for m in (_message(item, role) for item in parsed) if m is not None]


def _is_message(value: dict[str, Any]) -> bool:
    return "role" in value or ("type" in value and "data" in value) or "tool_calls" in value


def _text_message(role: str, content: str) -> Message:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def _message(item: Any, role: str) -> Message | None:
    if not isinstance(item, dict):
        return None
    data = item.get("data")
    if isinstance(data, dict) and item.get("type") in _LANGCHAIN_ROLES:  # LangChain's serialized message
        item = {**data, "role": _LANGCHAIN_ROLES[str(item["type"])]}
    found_role = item.get("role") if isinstance(item.get("role"), str) else role
    parts: list[dict[str, Any]] = []
    if isinstance(item.get("parts"), list):
        parts.extend(_parts(item["parts"]))
    content = item.get("content")
    if isinstance(content, str):
        if found_role == "tool" and item.get("tool_call_id"):
            parts.append({"type": "tool_call_response", "id": item["tool_call_id"], "response": content})
        elif content:
            parts.append({"type": "text", "content": content})
    elif isinstance(content, list):
        parts.extend(_parts(content))
    calls = item.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict):
            function: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else call
            parts.append({"type": "tool_call", "id": call.get("id"), "name": function.get("name"),
                          "arguments": function.get("arguments")})  # fmt: skip
    message: Message = {"role": found_role, "parts": parts}
    if isinstance(item.get("name"), str) and item["name"]:
        message["name"] = item["name"]
    return message


def _parts(items: Iterable[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in items:
        if isinstance(part, dict):  # (a bare string is no part in any of these shapes: another writer's mistake)
            found = _part(part)
            if found is not None:
                out.append(found)
    return out


def _part(part: dict[str, Any]) -> dict[str, Any] | None:
    kind = part.get("type")
    if kind in ("text", None) and isinstance(part.get("content"), str):
        return {"type": "text", "content": part["content"]}
    if kind in ("text", None) and isinstance(part.get("text"), str):
        return {"type": "text", "content": part["text"]}
    if kind in ("tool_call", "tool_call_response"):
        return part
    if kind in ("tool-call", "tool_use", "toolUse", "function_call"):
        return _call(part)
    for key in ("toolUse", "function_call", "functionCall"):
        if isinstance(part.get(key), dict):
            return _call(part[key])
    if kind in ("tool-result", "tool_result"):
        return {"type": "tool_call_response", "id": part.get("toolCallId", part.get("tool_use_id")),
                "response": part.get("output", part.get("result", part.get("content")))}  # fmt: skip
    if isinstance(part.get("toolResult"), dict):
        result = part["toolResult"]
        return {"type": "tool_call_response", "id": result.get("toolUseId"), "response": result.get("content")}
    return None


def _call(call: dict[str, Any]) -> dict[str, Any]:
    arguments = next((call[k] for k in ("arguments", "input", "args") if k in call), None)
    return {"type": "tool_call", "id": call.get("toolCallId", call.get("toolUseId", call.get("id"))),
            "name": call.get("toolName", call.get("name")), "arguments": arguments}  # fmt: skip


def message_text(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """The text parts (joined by newlines) and the tool-call parts of messages in the GenAI shape."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for message in messages:
        for part in message.get("parts") or ():
            if part.get("type") == "text" and part.get("content") and str(part["content"]).strip() not in PLACEHOLDERS:
                texts.append(str(part["content"]))
            elif part.get("type") == "tool_call":
                calls.append(part)
    return "\n".join(texts), calls


def dumps(messages: list[Message]) -> str:
    return json.dumps(messages)
