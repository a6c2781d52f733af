"""One AG2 1.x channel = one mast-otel conversation: what the listener and the middleware share about it.

The hub's listener callbacks and the agents' turns run in different asyncio tasks (a turn runs in the recipient's
client task), so the conversation cannot travel in the context from one to the other. Each channel keeps the
OpenTelemetry context its conversation root lives in; whoever records for that channel attaches it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.context import Context

from mast_otel.recorder import Conversation, Recorder


@dataclass
class ChannelRun:
    """A channel from ``created`` to ``closed``/``expired``; the first message becomes the root's task."""

    channel_id: str
    kind: str  # the manifest type: conversation, discussion, workflow, consulting
    hub: Any
    created_ns: int | None
    opened_in: Context  # the context ``create_channel`` ran in: a channel opened inside a turn is a child
    participant_ids: list[str] = field(default_factory=list)  # in the channel's order
    conversation: Conversation | None = None
    context: Context | None = None  # the conversation root's context, once open
    owns_root: bool = True  # False when the channel joined a conversation its creator already had open
    max_turns: int | None = None
    # What the last substantive envelope says about how the channel will end (AG2 decides at fold time).
    finish: dict[str, Any] | None = None
    finish_sender: str | None = None
    graph_end: str | None = None  # a TerminateTarget / default-target close reason
    turn_failure: str | None = None
    violation: str | None = None

    def name(self, agent_id: str) -> str:
        resolved: str = self.hub.name_for(agent_id)
        return resolved

    has_task: bool = False

    def open_root(self, recorder: Recorder, attributes: dict[str, Any]) -> None:
        """Start the conversation root, dated to the channel's creation, as a child of where it was created."""
        token = otel_context.attach(self.opened_in)
        try:
            opened = recorder.start_conversation(
                self.kind,
                conversation_id=self.channel_id,
                max_rounds=self.max_turns,
                attributes=attributes,
                start_time=self.created_ns,
            )
            if opened is None:  # the creator was inside a conversation at conversation level: join it
                self.owns_root = False
                self.conversation = Recorder.current()
                self.context = otel_context.get_current()
                return
            self.conversation, root_token = opened
            self.context = otel_context.get_current()
            otel_context.detach(root_token)  # type: ignore[arg-type]
        finally:
            otel_context.detach(token)

    @contextmanager
    def recording(self) -> Iterator[None]:
        """Attach this channel's conversation for the recorder calls inside.

        mast-otel's spans stay under their own root even when AG2 stamped a traceparent on the envelope: the
        collector assembles a conversation from the root's subtree, and AG2's spans may go elsewhere or nowhere.
        AG2's spans join this trace instead (``JoiningTracer``).
        """
        token = otel_context.attach(self.context if self.context is not None else self.opened_in)
        try:
            yield
        finally:
            otel_context.detach(token)


class Channels:
    """The open channels of every instrumented hub, by channel id (ids are hub-minted UUID7s, unique)."""

    def __init__(self) -> None:
        self._runs: dict[str, ChannelRun] = {}

    def add(self, run: ChannelRun) -> None:
        self._runs[run.channel_id] = run

    def get(self, channel_id: str | None) -> ChannelRun | None:
        return self._runs.get(channel_id) if channel_id else None

    def pop(self, channel_id: str) -> ChannelRun | None:
        return self._runs.pop(channel_id, None)

    def pop_hub(self, hub: Any) -> list[ChannelRun]:
        """Every channel of ``hub`` still open (the hub is closing: nothing will close them)."""
        runs = [r for r in self._runs.values() if r.hub is hub]
        for r in runs:
            del self._runs[r.channel_id]
        return runs

    def __len__(self) -> int:
        return len(self._runs)
