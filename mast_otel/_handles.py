"""The handles the recorder returns for what stays open (a conversation, an agent turn, a tool call, a handoff
being decided) and the bookkeeping they carry: message and handoff counters, the agents seen, termination.

Each handle closes its own span, and never raises: a failure while recording is counted (``mast_otel._safety``)
and the program's own exception is re-raised by the caller as the same object.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry.trace import Span, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from . import semconv as sc
from ._content import clean, content_text, record_error, set_input
from ._safety import guarded, record_failure
from ._scope import detach
from .config import CaptureConfig
from .redaction import Redactor

__all__ = ["AgentTurn", "Conversation", "Handoff", "ToolCall", "open_span_scope"]


class Conversation:
    """One MAS run: the root span and the counters the root reports when it ends."""

    __slots__ = (
        "_last_handoff",
        "_last_turn",
        "_lock",
        "_next_message",
        "_pending_reason",
        "agents",
        "broadcasts",
        "handoffs",
        "id",
        "max_rounds",
        "name",
        "span",
        "termination",
        "termination_agent",
        "termination_detail",
    )

    def __init__(self, span: Span, conversation_id: str, name: str, max_rounds: int | None) -> None:
        self.span = span
        self.id = conversation_id
        self.name = name
        self.max_rounds = max_rounds
        self._next_message = 0
        self._lock = threading.Lock()
        self.handoffs = 0
        self.broadcasts = 0
        self.agents: dict[str, None] = {}  # ordered set of the agents seen
        self.termination: str | None = None
        self.termination_detail: str | None = None
        self.termination_agent: str | None = None
        # A framework may learn *why* control moves (an event) before it learns *to whom* (the selection);
        # integrations park the reason here and the next handoff consumes it (under the lock: the event and the
        # selection may run on different threads).
        self._pending_reason: str | None = None
        # For the OpenInference agent graph: who had control last, and the last handoff (source, target).
        self._last_turn: str | None = None
        self._last_handoff: tuple[str, str] | None = None

    def graph_parent(self, agent: str) -> str | None:
        """The agent control came to ``agent`` from: the source of the last handoff to it, else the previous turn's
        agent; None at the start. Approximate under concurrent turns, which only draw the graph, never a record."""
        handed = self._last_handoff
        parent = handed[0] if handed is not None and handed[1] == agent else self._last_turn
        self._last_turn = agent
        return parent if parent != agent else None

    @property
    def pending_handoff_reason(self) -> str | None:
        """The reason parked for the next handoff (None when none is)."""
        return self._pending_reason

    @pending_handoff_reason.setter
    def pending_handoff_reason(self, reason: str | None) -> None:
        with self._lock:
            self._pending_reason = reason

    def take_handoff(self) -> tuple[int, str | None]:
        """Allocate the next handoff's index and take (read and clear) the parked reason, atomically."""
        with self._lock:
            index = self.handoffs
            self.handoffs += 1
            reason, self._pending_reason = self._pending_reason, None
        return index, reason

    @property
    def messages(self) -> int:
        """Messages recorded so far (the next message's index)."""
        return self._next_message

    def _next_index(self) -> int:
        with self._lock:
            index = self._next_message
            self._next_message += 1
        return index

    def _see(self, *names: str) -> None:
        for n in names:
            if not n.startswith("<"):  # routing pseudo-addresses such as MetaGPT's "<all>" are not agents
                self.agents[n] = None

    def count_broadcast(self) -> None:
        """Count a relay of an already-recorded message (see :meth:`Recorder.broadcast_copy`)."""
        with self._lock:
            self.broadcasts += 1


class AgentTurn:
    """An open ``invoke_agent`` span; close with :meth:`end` or :meth:`fail` (or use ``Recorder.agent_turn``)."""

    __slots__ = ("_redactor", "_token", "span")

    def __init__(self, span: Span, token: object | None, redactor: Redactor) -> None:
        self.span = span
        self._token = token
        self._redactor = redactor

    def end(self, replied: bool | None = None, *, end_time: int | None = None) -> None:
        """Close the span; ``end_time`` (ns since the epoch) when the framework reports its own clock."""
        try:
            if replied is not None:
                self.span.set_attribute(sc.TURN_REPLIED, replied)
        except Exception as exc:
            record_failure("recorder.turn.end", exc)
        self._close(end_time)

    def fail(self, exc: BaseException, *, end_time: int | None = None) -> None:
        """Mark the turn failed with the program's exception (which the caller re-raises unchanged) and close it."""
        record_error(self.span, exc, self._redactor)
        self._close(end_time)

    def detach(self) -> None:
        """Restore the context from before the turn while its span stays open; :meth:`end` then only ends it.

        For a turn that spans an async generator: the generator must not leave its context attached in the
        consumer between items, so the integration re-attaches the turn's context around each step itself.
        """
        detach(self._token)
        self._token = None

    def _close(self, end_time: int | None = None) -> None:
        detach(self._token)  # first, and whatever happens next: a leaked context would re-parent the program's spans
        self._token = None
        try:
            self.span.end(end_time=end_time)
        except Exception as exc:
            record_failure("recorder.span.end", exc)


class ToolCall(AgentTurn):
    """An open ``execute_tool`` span; :meth:`set_result` records the result (content capture permitting)."""

    __slots__ = ("_config",)

    def __init__(self, span: Span, token: object | None, config: CaptureConfig) -> None:
        super().__init__(span, token, config.redactor)
        self._config = config

    @guarded("recorder.tool.set_arguments")
    def set_arguments(self, arguments: Any) -> None:
        """Record the arguments after the call started (a framework may fill them in late); capture permitting."""
        set_input(self.span, sc.GEN_AI_TOOL_CALL_ARGUMENTS, arguments, self._config)

    @guarded("recorder.tool.set_result")
    def set_result(self, result: Any, *, success: bool = True) -> None:
        attrs: dict[str, AttributeValue] = {sc.TOOL_SUCCESS: success}
        if self._config.capture_content:
            text, _, _ = clean(result, self._config.redactor)
            attrs[sc.GEN_AI_TOOL_CALL_RESULT] = text
            if self._config.openinference:
                attrs[sc.OI_OUTPUT_VALUE] = text
        self.span.set_attributes(attrs)
        if not success:
            self.span.set_status(Status(StatusCode.ERROR, "tool reported failure"))


class Handoff:
    """A handoff being decided: opened when selection starts, recorded when the target is known.

    Its span is created by :meth:`end` (or :meth:`fail`) with the start time and parent context of the moment
    selection started, so all its attributes are set in one call; ``span`` is None until then. Nothing runs
    inside a handoff span, so creating it late changes nothing that is exported.
    """

    __slots__ = (
        "_attributes",
        "_capture",
        "_context",
        "_conversation",
        "_redactor",
        "_source",
        "_start",
        "_tracer",
        "detail",
        "span",
    )

    def __init__(
        self,
        tracer: Tracer,
        conversation: Conversation,
        source: str,
        attributes: dict[str, AttributeValue],
        config: CaptureConfig,
    ) -> None:
        self.span: Span | None = None
        self._redactor = config.redactor
        self._capture = config.capture_content
        self._tracer = tracer
        self._conversation = conversation
        self._source = source
        self._attributes = attributes
        self._context = otel_context.get_current()
        self._start = time.time_ns()
        self.detail: str | None = None  # set by ``Recorder.start_handoff``/``end``: cleaned text, content permitting

    def end(
        self,
        target: str | None,
        *,
        reason: str | None = None,
        target_type: str = "agent",
        end_time: int | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
        content: Mapping[str, Any] | None = None,
    ) -> None:
        """Record the handoff to ``target``; ``end_time`` (ns) when the framework reports its own clock;
        ``attributes`` add facts; ``content`` adds text learnt during selection (``mast.handoff.stated_reason``,
        ``mast.handoff.detail``: an LLM's words), recorded only with content capture on, redacted and capped."""
        try:  # inline rather than @guarded: this runs several times per message
            index, pending = self._conversation.take_handoff()
            if reason is None:
                reason = pending or sc.HANDOFF_ROUTING
            name = target if target is not None else sc.HANDOFF_TO_TERMINATE
            self._conversation._last_handoff = (self._source, name)
            attrs = self._attributes
            attrs[sc.HANDOFF_TO] = name
            attrs[sc.HANDOFF_REASON] = reason
            attrs[sc.HANDOFF_INDEX] = index
            if sc.GEN_AI_TRANSFER_MODE in attrs:  # proposal-stage extras, on request (CaptureConfig.proposed_semconv)
                attrs[sc.GEN_AI_TRANSFER_TARGET_NAME] = name
                attrs[sc.GEN_AI_TRANSFER_TARGET_TYPE] = target_type if target is not None else "workflow"
            if self.detail is not None:
                attrs[sc.HANDOFF_DETAIL] = self.detail
            if attributes:
                attrs = {**attrs, **attributes}
            if content and self._capture:
                attrs = {**attrs, **{key: self._redactor.redact(content_text(v))[0] for key, v in content.items()}}
            self._open(sc.handoff_span_name(self._source, name), attrs).end(end_time=end_time)
        except Exception as exc:
            record_failure("recorder.handoff.end", exc)
            return None

    @guarded("recorder.handoff.fail")
    def fail(self, exc: BaseException) -> None:
        self._conversation.pending_handoff_reason = None
        span = self._open(sc.handoff_span_name(self._source, "?"))
        record_error(span, exc, self._redactor)
        span.end()

    def _open(self, name: str, attributes: Mapping[str, AttributeValue] | None = None) -> Span:
        self.span = self._tracer.start_span(
            name, context=self._context, attributes=attributes or self._attributes, start_time=self._start
        )
        return self.span


_OpenSpan = TypeVar("_OpenSpan", bound=AgentTurn)


def open_span_scope(opened: _OpenSpan | None) -> Iterator[_OpenSpan | None]:
    """The body of :meth:`Recorder.agent_turn` and :meth:`Recorder.tool_call` (delegated to with ``yield from``).

    Yields the open span (None when not recording); the program's exception fails it and is re-raised as the same
    object; otherwise the span ends when the block does.
    """
    if opened is None:
        yield None
        return
    try:
        yield opened
    except BaseException as exc:
        opened.fail(exc)
        raise
    opened.end()
