"""The hub listener: conversation roots, messages, handoffs and terminations from the hub's own events.

AG2 1.x calls every registered ``HubListener`` after the fact (``Hub._fan_out``, awaited in order, each call
guarded): ``on_channel_event`` for created / closed / expired, ``on_envelope_posted`` after an envelope is in the
write-ahead log, folded and dispatched. So each span is dated by AG2's record (``created_at``, ``closed_at``), not
by when the listener ran.

Each callback's recording runs under :func:`mast_otel._safety.guarded` (kinds ``ag2_1x.channel_event``,
``ag2_1x.message``, ``ag2_1x.handoff``, ...): a failure is counted in ``mast_otel.recording_failures()``, logged
once per kind, and never reaches AG2 (whose own guard would log it as a listener error).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.util.types import AttributeValue

from mast_otel import semconv as sc
from mast_otel._safety import guarded, safe_call
from mast_otel.recorder import Recorder

from ._channels import ChannelRun, Channels
from ._render import MESSAGE_EVENTS, envelope_text, iso_ns
from ._routing import route_after, termination

# Attributes AG2's own telemetry uses, so its spans and ours join on the same values.
AG2_CHANNEL_ID = "ag2.network.channel_id"
AG2_ENVELOPE_ID = "ag2.network.envelope_id"
AG2_CAUSATION_ID = "ag2.network.causation_id"
CONVERSATION_TYPE = "mast.conversation.type"
CONVERSATION_PARTICIPANTS = "mast.conversation.participants"
HUB_CLOSED = "hub closed with the channel open"


class MastHubListener:
    """A ``HubListener`` (structural: AG2 checks no base class) recording one hub's channels."""

    def __init__(self, hub: Any, recorder: Recorder, channels: Channels) -> None:
        self._hub = hub
        self._recorder = recorder
        self._channels = channels

    # -- channels -------------------------------------------------------------------
    async def on_channel_event(self, channel_id: str, kind: str, payload: dict[str, Any]) -> None:
        self._channel_event(channel_id, kind, payload)

    @guarded("ag2_1x.channel_event")
    def _channel_event(self, channel_id: str, kind: str, payload: dict[str, Any]) -> None:
        if kind == "created":
            self._created(channel_id, payload)
        elif kind in ("closed", "expired"):
            self._ended(channel_id, kind, payload)

    def _created(self, channel_id: str, payload: dict[str, Any]) -> None:
        metadata = payload["metadata"]
        ids = [p.agent_id for p in sorted(metadata.participants, key=lambda p: p.order)]
        graph = metadata.knobs.get("graph") if isinstance(metadata.knobs, dict) else None
        max_turns = graph.get("max_turns") if isinstance(graph, dict) else None
        run = ChannelRun(
            channel_id=channel_id,
            kind=str(metadata.manifest.type),
            hub=self._hub,
            created_ns=iso_ns(payload.get("at") or metadata.created_at),
            opened_in=otel_context.get_current(),  # inside the creator's turn when a tool opened it (delegate)
            participant_ids=ids,
            max_turns=max_turns if isinstance(max_turns, int) else None,
        )
        attrs: dict[str, AttributeValue] = {
            AG2_CHANNEL_ID: channel_id,
            CONVERSATION_TYPE: run.kind,
            CONVERSATION_PARTICIPANTS: [run.name(i) for i in ids],
        }
        parent = self._channels.get(metadata.parent_channel_id)
        if parent is not None and parent.conversation is not None and Recorder.current() is None:
            attrs[sc.CONVERSATION_PARENT_ID] = parent.conversation.id
        run.open_root(self._recorder, attrs)
        self._channels.add(run)

    def hub_closed(self) -> None:
        """End the roots of channels the hub leaves open as it closes (else they would never end, nor be judged)."""
        for run in self._channels.pop_hub(self._hub):
            safe_call("ag2_1x.hub_closed", self._end, run, "closed", HUB_CLOSED, None)

    def _ended(self, channel_id: str, kind: str, payload: dict[str, Any]) -> None:
        run = self._channels.pop(channel_id)
        if run is not None:
            self._end(run, kind, str(payload.get("reason") or ""), iso_ns(payload.get("at")))

    def _end(self, run: ChannelRun, kind: str, close_reason: str, at: int | None) -> None:
        if run.conversation is None:
            return
        try:
            reason, detail, agent = termination(run, kind, close_reason)
            with run.recording():
                self._recorder.terminate(reason, detail=detail, agent=agent)
        finally:  # a root left open would never be judged
            if run.owns_root:
                self._recorder.end_conversation(run.conversation, None, end_time=at)

    # -- envelopes ------------------------------------------------------------------
    async def on_envelope_posted(self, envelope: Any, metadata: Any) -> None:
        self._envelope_posted(envelope, metadata)

    @guarded("ag2_1x.envelope")
    def _envelope_posted(self, envelope: Any, metadata: Any) -> None:
        if envelope.event_type not in MESSAGE_EVENTS:
            return  # protocol (invite, ack, opened, closed, task events) and context updates are not messages
        run = self._channels.get(envelope.channel_id)
        if run is None:
            return
        self._message(run, envelope, metadata)
        self._route(run, envelope)  # apart: a message that could not be recorded still moves control

    @guarded("ag2_1x.message")
    def _message(self, run: ChannelRun, envelope: Any, metadata: Any) -> None:
        rec = self._recorder
        if envelope.audience is not None:
            to = [run.name(i) for i in envelope.audience if i != envelope.sender_id]
        else:
            to = [run.name(p.agent_id) for p in metadata.participants if p.agent_id != envelope.sender_id]
        text = envelope_text(envelope.event_type, envelope.event_data)
        attrs: dict[str, AttributeValue] = {AG2_ENVELOPE_ID: envelope.envelope_id}
        if envelope.causation_id:
            attrs[AG2_CAUSATION_ID] = envelope.causation_id
        with run.recording():
            if run.conversation is not None and not run.has_task:
                run.has_task = True
                rec.set_task(run.conversation, text)
            rec.message(
                run.name(envelope.sender_id), to, text, attributes=attrs, timestamp=iso_ns(envelope.created_at)
            )

    @guarded("ag2_1x.handoff")
    def _route(self, run: ChannelRun, envelope: Any) -> None:
        state = self._hub.adapter_state(envelope.channel_id)  # folded: AG2's decision for this envelope
        route = route_after(run, envelope, state)
        if route is None:
            return
        candidates = [run.name(i) for i in run.participant_ids if i != envelope.sender_id]
        with run.recording():
            self._recorder.handoff(
                run.name(envelope.sender_id),
                route.target,
                reason=route.reason,
                candidates=candidates,
                detail=route.detail,
                start_time=iso_ns(envelope.created_at),
            )

    # -- failures -------------------------------------------------------------------
    async def on_turn_failed(self, channel_id: str, agent_id: str, envelope_id: str, exc: BaseException) -> None:
        def note(run: ChannelRun) -> None:
            run.turn_failure = f"{run.name(agent_id)}'s turn raised {type(exc).__name__}"

        self._note(channel_id, note)

    async def on_expectation_fired(self, channel_id: str, expectation: Any, violation: Any) -> None:
        def note(run: ChannelRun) -> None:
            run.violation = f"expectation {getattr(expectation, 'name', expectation)!s} violated"

        self._note(channel_id, note)

    @guarded("ag2_1x.failure_note")
    def _note(self, channel_id: str, note: Callable[[ChannelRun], None]) -> None:
        """Keep what will explain the channel's end (the close event comes later, with only a reason string)."""
        run = self._channels.get(channel_id)
        if run is not None:
            note(run)

    # The rest of the HubListener protocol: nothing to record.
    async def on_envelope_rejected(self, envelope: Any, reason: Any) -> None:
        return None

    async def on_dispatch_failed(self, envelope: Any, recipient_id: str, reason: BaseException) -> None:
        return None

    async def on_agent_event(self, agent_id: str, kind: str, payload: dict[str, Any]) -> None:
        return None

    async def on_task_event(self, task_id: str, kind: str, payload: dict[str, Any]) -> None:
        return None

    async def on_inbox_pressure(self, agent_id: str, pending: int, cap: int) -> None:
        return None
