"""AG2 1.x values as span text and timestamps: envelope bodies, tool results, the hub's ISO clock."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from typing import Any

# Envelope event types (ag2.network.envelope). Only these two carry what an agent said; everything under
# ``ag2.channel.`` / ``ag2.task.`` is protocol (invite, ack, opened, closed), and ``ag2.context.set`` is state.
EV_TEXT = "ag2.msg.text"
EV_PACKET = "ag2.packet"
MESSAGE_EVENTS = frozenset({EV_TEXT, EV_PACKET})


def envelope_text(event_type: str, data: dict[str, Any]) -> str:
    """What the sender said: ``text`` of a text envelope, ``body`` of a workflow packet."""
    key = "text" if event_type == EV_TEXT else "body"
    value = data.get(key)
    if isinstance(value, str):
        return value
    rest = {k: v for k, v in data.items() if k not in ("routing", "context_updates")}
    return json.dumps(rest, default=str, ensure_ascii=False)


def iso_ns(stamp: object) -> int | None:
    """The hub's ``created_at`` / ``closed_at`` (ISO 8601, microseconds) as ns since the epoch; None if absent."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def tool_result_text(result: Any) -> str:
    """A ``ToolResult``'s parts as text; a ``Handoff`` / ``Finish`` returned by a tool as its JSON fields."""
    parts = getattr(result, "parts", None)
    if not parts:
        return "" if result is None else str(result)
    return "\n".join(_part_text(p) for p in parts)


def _part_text(part: Any) -> str:
    content = getattr(part, "content", None)
    if isinstance(content, str):
        return content
    if hasattr(part, "data"):
        data = part.data
        if dataclasses.is_dataclass(data) and not isinstance(data, type):
            data = dataclasses.asdict(data)
        try:
            return json.dumps(data, default=str, ensure_ascii=False)
        except (TypeError, ValueError):
            return repr(data)
    url = getattr(part, "url", None)
    return url if isinstance(url, str) else f"<{type(part).__name__}>"
