"""The conversation an adapter hands to the judge: synthetic spans in mast-otel's own shapes, never exported.

An adapter reads a trace written by another instrumentation and calls a :class:`ConversationBuilder` for each
message, handoff and tool call it finds, naming the foreign span each one came from. The result is a list of
:class:`~mast_otel.spans.SpanRecord` shaped exactly like the recorder's (``mast.span.type`` conversation /
message / handoff / tool_call), so the judge's view, transcript and signals read them unchanged, plus the map
from each synthetic span id back to its foreign span: labels and evidence go on the spans the user has.

The synthetic root reuses the foreign root's span id (its labels land on that span); every other synthetic id
is derived from its foreign span's id and its position, so the same trace always yields the same ids.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord

from ._bounds import Ignored

__all__ = ["Adapted", "ConversationBuilder", "NotAConversation"]

# The attribute naming the adapter on the synthetic root and, after judging, on the foreign root.
SOURCE_ATTRIBUTE = sc.MAST_SOURCE
SOURCE_NATIVE = "mast-otel"


@dataclass(frozen=True, slots=True)
class Adapted:
    """A foreign conversation, ready for the judge.

    ``records`` are the synthetic spans (root first); ``origin`` maps each synthetic span id to the foreign
    span it came from (the root maps to itself). ``source`` names the adapter, ``framework`` the framework as
    the adapter saw it.
    """

    source: str
    framework: str
    root_span_id: str
    records: tuple[SpanRecord, ...]
    origin: Mapping[str, str]
    # Why the judge cannot read this conversation (the framework recorded no message content, and which switch
    # turns it on); None when it can. The structure is adapted all the same, for the signals.
    no_content: str | None = None
    # Attribute values left out, past the bounds on what is read (:mod:`._bounds`): the conversation is the one
    # read without them.
    ignored: tuple[Ignored, ...] = ()

    def rerooted(self, root: SpanRecord) -> Adapted:
        """The same conversation labelled on ``root``, a span above the adapter's root: the outermost span the
        collector holds as the unit (OpenLLMetry's ``invoke_agent LangGraph`` above its workflow span), so the
        root's labels land on the span the collector and ``foreign_units`` call the root."""
        old = self.root_span_id
        first = dataclasses.replace(self.records[0], span_id=root.span_id, parent_span_id=None)
        rest = tuple(
            dataclasses.replace(r, parent_span_id=root.span_id) if r.parent_span_id == old else r
            for r in self.records[1:]
        )
        origin = {k: v for k, v in self.origin.items() if k != old}
        origin[root.span_id] = root.span_id
        return dataclasses.replace(self, root_span_id=root.span_id, records=(first, *rest), origin=origin)

    def original(self, span_id: str) -> str:
        """The foreign span a synthetic span id came from (ids the adapter did not make are returned as is)."""
        return self.origin.get(span_id, span_id)

    @property
    def messages(self) -> tuple[SpanRecord, ...]:
        return tuple(r for r in self.records if r.span_type == sc.SPAN_TYPE_MESSAGE)

    @property
    def handoffs(self) -> tuple[SpanRecord, ...]:
        return tuple(r for r in self.records if r.span_type == sc.SPAN_TYPE_HANDOFF)


@dataclass(frozen=True, slots=True)
class NotAConversation:
    """The adapter recognised its source but found no multi-agent conversation (one LLM call, one agent)."""

    source: str
    reason: str
    ignored: tuple[Ignored, ...] = ()  # attribute values left out, past the bounds on what is read


@dataclass
class ConversationBuilder:
    """Collects one foreign conversation's events in order and builds the synthetic records."""

    source: str
    framework: str
    root: SpanRecord  # the foreign root: the outermost agent / workflow span
    _records: list[SpanRecord] = field(default_factory=list)
    _origin: dict[str, str] = field(default_factory=dict)
    _clock: int = 0
    _messages: int = 0
    _handoffs: int = 0
    _agents: dict[str, None] = field(default_factory=dict)
    _senders: set[str] = field(default_factory=set)

    def _add(self, origin: SpanRecord, name: str, attrs: dict[str, Any], *, error: bool = False) -> SpanRecord:
        n = len(self._records)
        span_id = hashlib.blake2b(f"{origin.span_id}/{n}".encode(), digest_size=8).hexdigest()
        # Strictly increasing start times keep the adapter's order whatever the foreign clocks say.
        self._clock = max(self._clock + 1, origin.start_ns)
        record = SpanRecord(
            trace_id=self.root.trace_id, span_id=span_id, parent_span_id=self.root.span_id, name=name,
            start_ns=self._clock, end_ns=max(self._clock, origin.end_ns), attributes=attrs, error=error,
            service_name=origin.service_name,
        )  # fmt: skip
        self._records.append(record)
        self._origin[span_id] = origin.span_id
        return record

    def message(
        self,
        sender: str,
        recipients: Sequence[str],
        content: str,
        *,
        origin: SpanRecord,
        kind: str = sc.KIND_MESSAGE,
        tool_calls: str | None = None,
    ) -> None:
        """A message ``sender`` sent to ``recipients`` (in the order the adapter calls this)."""
        attrs: dict[str, Any] = {
            sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_MESSAGE,
            sc.MESSAGE_SENDER: sender,
            sc.MESSAGE_RECIPIENTS: tuple(recipients),
            sc.MESSAGE_INDEX: self._messages,
            sc.MESSAGE_KIND: kind,
            sc.MESSAGE_CONTENT: content,
        }
        if tool_calls:
            attrs[sc.MESSAGE_TOOL_CALLS] = tool_calls
        self._messages += 1
        self._agents[sender] = None
        self._senders.add(sender)
        self._add(origin, sc.message_span_name(sender, recipients[0] if recipients else "*"), attrs)

    def handoff(self, source: str, target: str, *, origin: SpanRecord, reason: str | None = None,
                detail: str | None = None) -> None:  # fmt: skip
        """The turn passed from ``source`` to ``target``; ``reason`` only when the foreign source records one."""
        attrs: dict[str, Any] = {
            sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_HANDOFF,
            sc.HANDOFF_FROM: source,
            sc.HANDOFF_TO: target,
            sc.HANDOFF_INDEX: self._handoffs,
        }
        if reason:
            attrs[sc.HANDOFF_REASON] = reason
        if detail:
            attrs[sc.HANDOFF_DETAIL] = detail
        self._handoffs += 1
        self._add(origin, sc.handoff_span_name(source, target), attrs)

    def tool_call(self, agent: str, tool: str, arguments: str, result: str, *, origin: SpanRecord) -> None:
        """An executed tool call with its result (an error on the foreign span marks it failed)."""
        attrs: dict[str, Any] = {
            sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_TOOL_CALL,
            sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
            sc.GEN_AI_AGENT_NAME: agent,
            sc.GEN_AI_TOOL_NAME: tool,
            sc.GEN_AI_TOOL_CALL_ARGUMENTS: arguments,
            sc.GEN_AI_TOOL_CALL_RESULT: result,
            sc.TOOL_SUCCESS: not origin.error,
        }
        self._add(origin, sc.tool_span_name(tool), attrs, error=origin.error)

    def agent(self, name: str) -> None:
        """An agent that took part (even if it never sent a message the source recorded)."""
        self._agents[name] = None

    @property
    def senders(self) -> set[str]:
        """Everyone who sent a message so far (the task's sender included)."""
        return set(self._senders)

    @property
    def message_count(self) -> int:
        return self._messages

    def build(
        self,
        *,
        task: str = "",
        name: str = "",
        termination: str | None = None,
        termination_detail: str | None = None,
        rounds: int | None = None,
        no_content: str | None = None,
    ) -> Adapted:
        """The synthetic root (same span id as the foreign root) followed by the events, in order."""
        attrs: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_WORKFLOW,
            sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_CONVERSATION,
            sc.MAST_FRAMEWORK: sc.framework_name(self.framework),
            SOURCE_ATTRIBUTE: self.source,
            sc.GEN_AI_CONVERSATION_ID: str(self.root.get(sc.GEN_AI_CONVERSATION_ID) or self.root.span_id),
            sc.CONVERSATION_AGENTS: tuple(self._agents),
            sc.CONVERSATION_HANDOFFS: self._handoffs,
        }
        if name:
            attrs[sc.GEN_AI_WORKFLOW_NAME] = name
        if task:
            attrs[sc.CONVERSATION_TASK] = task
        if termination:
            attrs[sc.TERMINATION_REASON] = termination
        if termination_detail:
            attrs[sc.TERMINATION_DETAIL] = termination_detail
        if rounds is not None:
            attrs[sc.CONVERSATION_ROUNDS] = rounds
        root = SpanRecord(
            trace_id=self.root.trace_id, span_id=self.root.span_id, parent_span_id=None,
            name=sc.workflow_span_name(name or self.framework), start_ns=self.root.start_ns,
            end_ns=self.root.end_ns, attributes=attrs, error=self.root.error, service_name=self.root.service_name,
        )  # fmt: skip
        origin = {self.root.span_id: self.root.span_id, **self._origin}
        return Adapted(self.source, self.framework, self.root.span_id, (root, *self._records), origin, no_content)
