"""Reading the SDK's span data: what a model call received and said, and the SDK's clock.

The SDK records a model call either as a ``generation`` span (Chat Completions: ``input`` is the message list,
``output`` a list holding the assistant message, or a Responses-API ``Response`` dump when streamed) or as a
``response`` span (Responses API: ``input`` the items, ``response`` the ``Response`` object). Both are filled only
when the run includes sensitive data in traces; otherwise they are None and mast-otel records no content either.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

__all__ = ["ModelCall", "ToolCallRequest", "iso_to_ns", "read_model_call"]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def iso_to_ns(stamp: str | None) -> int | None:
    """The SDK's ISO-8601 timestamps (``started_at`` / ``ended_at``) as ns since the epoch."""
    if not stamp:
        return None
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


@dataclass(frozen=True)
class ToolCallRequest:
    name: str
    arguments: str


@dataclass(frozen=True)
class ModelCall:
    """One model call as the SDK recorded it. ``has_data`` is False when the run keeps content out of traces."""

    has_data: bool
    user_input: str | None = None  # the last user message the model received
    last_input: str | None = None  # the last input item of any role (what a handoff target sees last)
    input_items: int = 0  # input items other than system / developer instructions
    text: str = ""
    tool_calls: tuple[ToolCallRequest, ...] = ()


def read_model_call(span_data: Any) -> ModelCall:
    """Read a ``generation`` or ``response`` span's data (anything else: no data)."""
    kind = getattr(span_data, "type", None)
    if kind == "generation":
        items_in = span_data.input
        outputs = span_data.output
    elif kind == "response":
        items_in = span_data.input
        response = span_data.response
        outputs = [_dump(response)] if response is not None else None
    else:
        return ModelCall(has_data=False)
    if items_in is None and outputs is None:
        return ModelCall(has_data=False)
    user, last, count = _inputs(items_in)
    texts: list[str] = []
    calls: list[ToolCallRequest] = []
    for out in outputs or ():
        _collect_output(_dump(out), texts, calls)
    return ModelCall(True, user, last, count, "\n".join(t for t in texts if t), tuple(calls))


def _dump(obj: Any) -> Any:
    dump = getattr(obj, "model_dump", None)
    return dump() if callable(dump) else obj


def _inputs(items: Any) -> tuple[str | None, str | None, int]:
    """(last user message, last item, number of items) of a model call's input, instructions left out."""
    if items is None:
        return None, None, 0
    if isinstance(items, str):
        return items, items, 1
    user: str | None = None
    last: str | None = None
    count = 0
    for raw in items if isinstance(items, list) else ():
        item = _dump(raw)
        if not isinstance(item, dict):
            continue
        role = item.get("role")
        if role in ("system", "developer"):
            continue
        text = _item_text(item)
        if role == "user":
            user = text
        last = text
        count += 1
    return user, last, count


def _item_text(item: dict[str, Any]) -> str:
    """An input item as text: a message's content, a tool call, a tool's output."""
    content = item.get("content")
    if content is not None:
        return _content_text(content)
    if "output" in item:  # function_call_output (Responses) item
        return _content_text(item["output"])
    if item.get("type") == "function_call":
        return f"{item.get('name')}({item.get('arguments', '')})"
    calls = item.get("tool_calls")
    return json.dumps(calls, default=str) if calls else ""


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [_dump(p) for p in content]
        texts = [str(p.get("text", "")) for p in parts if isinstance(p, dict) and "text" in p]
        if texts:
            return "\n".join(texts)
    return json.dumps(content, default=str, ensure_ascii=False)


def _collect_output(out: Any, texts: list[str], calls: list[ToolCallRequest]) -> None:
    if not isinstance(out, dict):
        return
    if isinstance(out.get("output"), list):  # a Response (responses API, or a streamed chat completion)
        for item in out["output"]:
            _collect_output(_dump(item), texts, calls)
        return
    kind = out.get("type")
    if kind == "function_call":
        calls.append(ToolCallRequest(str(out.get("name")), str(out.get("arguments") or "")))
        return
    if kind == "message" or out.get("role") == "assistant":
        content = out.get("content")
        if content:
            texts.append(_content_text(content))
        for call in out.get("tool_calls") or ():  # Chat Completions message
            fn = call.get("function") or {}
            calls.append(ToolCallRequest(str(fn.get("name")), str(fn.get("arguments") or "")))
