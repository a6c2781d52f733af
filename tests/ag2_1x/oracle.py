"""AG2's own record of a channel, the oracle every test compares spans with: the write-ahead log's substantive
envelopes (sender, audience, text, routing), in WAL order, and the close event's reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ag2.network import EV_CHANNEL_CLOSED, EV_CHANNEL_EXPIRED, EV_PACKET, EV_TEXT


@dataclass(frozen=True)
class WalMessage:
    sender: str
    recipients: tuple[str, ...]
    text: str
    routing: dict[str, Any]
    envelope_id: str


@dataclass(frozen=True)
class WalRecord:
    channel_id: str
    messages: tuple[WalMessage, ...]
    close_kind: str  # ag2.channel.closed / ag2.channel.expired
    close_reason: str

    @property
    def senders(self) -> list[str]:
        return [m.sender for m in self.messages]


async def wal_record(hub: Any, channel_id: str) -> WalRecord:
    metadata = await hub.get_channel(channel_id)
    everyone = [p.agent_id for p in metadata.participants]
    messages, close_kind, close_reason = [], "", ""
    for env in await hub.read_wal(channel_id):
        if env.event_type in (EV_TEXT, EV_PACKET):
            audience = env.audience if env.audience is not None else everyone
            data = env.event_data
            messages.append(
                WalMessage(
                    sender=hub.name_for(env.sender_id),
                    recipients=tuple(hub.name_for(i) for i in audience if i != env.sender_id),
                    text=data.get("text") if env.event_type == EV_TEXT else data.get("body"),
                    routing=dict(data.get("routing") or {}),
                    envelope_id=env.envelope_id,
                )
            )
        elif env.event_type in (EV_CHANNEL_CLOSED, EV_CHANNEL_EXPIRED):
            close_kind, close_reason = env.event_type, env.event_data.get("reason", "")
    return WalRecord(channel_id, tuple(messages), close_kind, close_reason)
