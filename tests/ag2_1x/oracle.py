"""AG2's own record of a channel, the oracle every test compares spans with: the write-ahead log's substantive
envelopes (sender, audience, text, routing), in WAL order, and the close event's reason."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ag2.network import EV_CHANNEL_CLOSED, EV_CHANNEL_EXPIRED, EV_PACKET, EV_TEXT
from opentelemetry.sdk.trace import ReadableSpan

from mast_otel import semconv as sc
from tests.span_query import attr


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
    participants: tuple[str, ...]  # in the channel's order (``Participant.order``)
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
            routing = dict(data.get("routing") or {})
            if routing.get("target"):
                routing["target"] = hub.name_for(routing["target"])  # ids differ from run to run, names do not
            messages.append(
                WalMessage(
                    sender=hub.name_for(env.sender_id),
                    recipients=tuple(hub.name_for(i) for i in audience if i != env.sender_id),
                    text=data.get("text") if env.event_type == EV_TEXT else data.get("body"),
                    routing=routing,
                    envelope_id=env.envelope_id,
                )
            )
        elif env.event_type in (EV_CHANNEL_CLOSED, EV_CHANNEL_EXPIRED):
            close_kind, close_reason = env.event_type, env.event_data.get("reason", "")
    order = tuple(hub.name_for(p.agent_id) for p in sorted(metadata.participants, key=lambda p: p.order))
    return WalRecord(channel_id, order, tuple(messages), close_kind, close_reason)


async def recorded_run(exporter: Any, scenario: Any, *args: Any, **kwargs: Any) -> tuple[WalRecord, list[ReadableSpan]]:
    """Run ``scenario(hub, ...)`` on a fresh hub; AG2's record of its channel and every span exported."""
    from tests.ag2_1x.scenarios import open_hub

    hub = await open_hub()
    channel_id = await scenario(hub, *args, **kwargs)
    record = await wal_record(hub, channel_id)
    await hub.close()
    return record, list(exporter.get_finished_spans())


# -- the comparisons --------------------------------------------------------------------------------------------


def of_conversation(spans: Sequence[ReadableSpan], channel_id: str, span_type: str) -> list[ReadableSpan]:
    """One conversation's spans of one type (``gen_ai.conversation.id`` is the channel id), in recorded order."""
    found = [
        s for s in spans if attr(s, sc.GEN_AI_CONVERSATION_ID) == channel_id and attr(s, sc.MAST_SPAN_TYPE) == span_type
    ]
    order = {sc.SPAN_TYPE_MESSAGE: sc.MESSAGE_INDEX, sc.SPAN_TYPE_HANDOFF: sc.HANDOFF_INDEX}.get(span_type)
    return sorted(found, key=lambda s: attr(s, order) if order else s.start_time or 0)


def root_of(spans: Sequence[ReadableSpan], channel_id: str) -> ReadableSpan:
    (root,) = of_conversation(spans, channel_id, sc.SPAN_TYPE_CONVERSATION)
    return root


def assert_messages_match(spans: Sequence[ReadableSpan], record: WalRecord) -> list[ReadableSpan]:
    """Every substantive envelope is one message span, in WAL order, with its sender, recipients and text."""
    messages = of_conversation(spans, record.channel_id, sc.SPAN_TYPE_MESSAGE)
    got = [
        (attr(m, sc.MESSAGE_SENDER), tuple(attr(m, sc.MESSAGE_RECIPIENTS)), attr(m, sc.MESSAGE_CONTENT))
        for m in messages
    ]
    assert got == [(w.sender, w.recipients, w.text) for w in record.messages]
    assert [attr(m, sc.MESSAGE_INDEX) for m in messages] == list(range(len(record.messages)))
    assert [attr(m, "ag2.network.envelope_id") for m in messages] == [w.envelope_id for w in record.messages]
    starts = [m.start_time for m in messages]
    assert starts == sorted(starts), "message spans are dated in WAL order"
    return messages


def handoffs_of(spans: Sequence[ReadableSpan], channel_id: str) -> list[tuple[str, str, str, str | None]]:
    """(from, to, reason, detail) of each handoff span of the conversation, in order."""
    return [
        (attr(h, sc.HANDOFF_FROM), attr(h, sc.HANDOFF_TO), attr(h, sc.HANDOFF_REASON), attr(h, sc.HANDOFF_DETAIL))
        for h in of_conversation(spans, channel_id, sc.SPAN_TYPE_HANDOFF)
    ]


def assert_turn_handoffs(spans: Sequence[ReadableSpan], record: WalRecord) -> None:
    """Each handoff names the agent who spoke next in the WAL (AG2's turn gate enforced it) and follows the
    message that caused it; a ``Handoff`` returned by a tool is ``tool_call`` with the routing entry's tool and
    stated reason as detail, any other move a graph ``routing`` one."""
    handoffs = handoffs_of(spans, record.channel_id)
    expected = []
    for before, after in zip(record.messages, record.messages[1:], strict=False):
        r = before.routing
        if r.get("kind") == "handoff" and r.get("target"):
            expected.append((before.sender, after.sender, sc.HANDOFF_TOOL_CALL, f"{r['tool']}: {r['reason']}"))
        else:
            expected.append((before.sender, after.sender, sc.HANDOFF_ROUTING))
    assert [h[:3] if h[2] == sc.HANDOFF_ROUTING else h for h in handoffs[: len(expected)]] == expected
