"""The framework-neutral recorder: the only code in mast-otel that creates spans in the MAS process.

Every integration maps its framework's events onto these calls, so every framework yields the same span shapes
and the judge reads one transcript format. A home-grown multi-agent system uses it directly::

    from mast_otel import Recorder

    rec = Recorder(framework="my-mas")
    with rec.conversation("triage", task="Fix the failing build") as conv:
        with rec.agent_turn("planner"):
            rec.message("planner", ["coder"], "Run the tests first.")
        rec.handoff("planner", "coder", reason="routing", candidates=["coder", "reviewer"])
        with rec.tool_call("run_tests", arguments={"path": "tests/"}) as call:
            call.set_result("3 failed")
        rec.terminate("completed")

Span tree: ``invoke_workflow {name}`` (root, one per conversation) holds ``invoke_agent {agent}`` turns,
``message a -> b`` spans, ``handoff a -> b`` spans and ``execute_tool {tool}`` spans. Message and handoff spans
are children of whatever is current (the turn that produced them, else the root). The current conversation
travels in the OpenTelemetry context (contextvars), so asyncio tasks and ``contextvars.copy_context()`` threads
keep correct parents.

Recording never changes the program: every public entry point here swallows its own failures (an exception
while recording is counted in ``mast_otel.recording_failures()`` and logged once per kind, see
``mast_otel._safety``), returns what "not recording" returns (None), and re-raises only the program's own
exceptions, as the same object.

Conversations nest the way runs do: a conversation started while an agent's turn is open (a nested chat) is a
child conversation; one started directly at conversation level (a framework's entry point calling another
entry point) joins the conversation already open rather than opening a second root.
"""

from __future__ import annotations

import json
import threading
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, Status, StatusCode, Tracer, TracerProvider
from opentelemetry.util.types import AttributeValue

from . import semconv as sc
from ._ids import new_conversation_id, private_ids
from ._safety import guarded, record_failure
from .config import CaptureConfig
from .redaction import Redactor
from .version import __version__

__all__ = ["AgentTurn", "Conversation", "Handoff", "Recorder", "ToolCall", "content_text"]

_CONVERSATION_KEY = otel_context.create_key("mast-otel-conversation")
_SCOPE_KEY = otel_context.create_key("mast-otel-scope")
_SUPPRESS_KEY = otel_context.create_key("mast-otel-suppress")
_SCOPE_CONVERSATION = "conversation"
_SCOPE_TURN = "turn"
_SCOPE_TOOL = "tool"
_UNSERIALIZABLE = "<unserializable>"


def content_text(content: Any) -> str:
    """Render message content (a string, a list of multimodal parts, a dict, ...) as text for a span."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        texts = [str(p.get("text", "")) for p in content if p.get("type") == "text"]
        if len(texts) == len(content):
            return "\n".join(texts)
    try:
        return json.dumps(content, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        return _UNSERIALIZABLE


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
        _record_error(self.span, exc, self._redactor)
        self._close(end_time)

    def detach(self) -> None:
        """Restore the context from before the turn while its span stays open; :meth:`end` then only ends it.

        For a turn that spans an async generator: the generator must not leave its context attached in the
        consumer between items, so the integration re-attaches the turn's context around each step itself.
        """
        _detach(self._token)
        self._token = None

    def _close(self, end_time: int | None = None) -> None:
        _detach(self._token)  # first, and whatever happens next: a leaked context would re-parent the program's spans
        self._token = None
        try:
            self.span.end(end_time=end_time)
        except Exception as exc:
            record_failure("recorder.span.end", exc)


class ToolCall(AgentTurn):
    """An open ``execute_tool`` span; :meth:`set_result` records the result (content capture permitting)."""

    __slots__ = ("_recorder",)

    def __init__(self, span: Span, token: object | None, recorder: Recorder) -> None:
        super().__init__(span, token, recorder.config.redactor)
        self._recorder = recorder

    @guarded("recorder.tool.set_arguments")
    def set_arguments(self, arguments: Any) -> None:
        """Record the arguments after the call started (a framework may fill them in late); capture permitting."""
        self._recorder._set_input(self.span, sc.GEN_AI_TOOL_CALL_ARGUMENTS, arguments)

    @guarded("recorder.tool.set_result")
    def set_result(self, result: Any, *, success: bool = True) -> None:
        attrs: dict[str, AttributeValue] = {sc.TOOL_SUCCESS: success}
        if self._recorder.config.capture_content:
            text, _, _ = self._recorder._clean(result)
            attrs[sc.GEN_AI_TOOL_CALL_RESULT] = text
            if self._recorder.config.openinference:
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
        _record_error(span, exc, self._redactor)
        span.end()

    def _open(self, name: str, attributes: Mapping[str, AttributeValue] | None = None) -> Span:
        self.span = self._tracer.start_span(
            name, context=self._context, attributes=attributes or self._attributes, start_time=self._start
        )
        return self.span


class Recorder:
    """Creates mast-otel spans. Cheap to construct; integrations build one in ``_instrument``.

    ``tracer_provider`` defaults to the global one; ``config`` to :meth:`CaptureConfig.from_env`;
    ``framework`` is written on every conversation root as ``mast.framework``.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        config: CaptureConfig | None = None,
        framework: str = "custom",
    ) -> None:
        self.tracer: Tracer = private_ids(
            trace.get_tracer(sc.SCOPE_NAME, __version__, tracer_provider=tracer_provider, schema_url=sc.SCHEMA_URL)
        )
        self.config = config if config is not None else CaptureConfig.from_env()
        self.framework = framework

    # -- context ------------------------------------------------------------
    @staticmethod
    def current(*, include_suppressed: bool = False) -> Conversation | None:
        """The conversation open in the current context, or None.

        Also None while recording is suppressed, unless ``include_suppressed``: a framework's internal machinery
        may still need to tell the enclosing conversation *why* something happens.
        """
        ctx = otel_context.get_current()  # once: this runs several times per message
        if not include_suppressed and ctx.get(_SUPPRESS_KEY):
            return None
        conv = ctx.get(_CONVERSATION_KEY)
        return conv if isinstance(conv, Conversation) else None

    @staticmethod
    def suppressed() -> AbstractContextManager[None]:
        """Record nothing inside: for a framework's internal machinery (e.g. an LLM speaker-selection chat)."""
        return _Suppressed()

    # -- conversation ---------------------------------------------------------
    @guarded("recorder.start_conversation")
    def start_conversation(
        self,
        name: str,
        *,
        task: Any = None,
        conversation_id: str | None = None,
        max_rounds: int | None = None,
        framework: str | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
        start_time: int | None = None,
    ) -> tuple[Conversation, object | None] | None:
        """Open a conversation root, or return None when one is already open at conversation level (join).

        Returns the conversation and a token for :meth:`end_conversation`. Prefer :meth:`conversation`.
        ``start_time`` (ns since the epoch, like every ``start_time``/``end_time``/``timestamp`` here) is for
        integrations that receive the framework's own clock (the OpenAI Agents SDK's trace processors); by
        default a span starts and ends when the call is made.
        """
        if otel_context.get_value(_SUPPRESS_KEY):
            return None
        outer = otel_context.get_value(_CONVERSATION_KEY)
        if isinstance(outer, Conversation) and otel_context.get_value(_SCOPE_KEY) == _SCOPE_CONVERSATION:
            if max_rounds is not None and outer.max_rounds is None:
                outer.max_rounds = max_rounds
            return None
        conv_id = conversation_id or new_conversation_id()  # never uuid4(): see mast_otel._ids
        attrs: dict[str, AttributeValue] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_WORKFLOW,
            sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_CONVERSATION,
            sc.GEN_AI_CONVERSATION_ID: conv_id,
            sc.GEN_AI_WORKFLOW_NAME: name,
            sc.MAST_FRAMEWORK: framework or self.framework,
        }
        if isinstance(outer, Conversation):
            attrs[sc.CONVERSATION_PARENT_ID] = outer.id
        if max_rounds is not None:
            attrs[sc.CONVERSATION_MAX_ROUNDS] = max_rounds
        if task is not None and self.config.capture_content:
            attrs[sc.CONVERSATION_TASK] = self._clean(task)[0]
        if self.config.openinference:
            attrs[sc.OI_SPAN_KIND] = sc.OI_KIND_CHAIN
            if sc.CONVERSATION_TASK in attrs:
                attrs[sc.OI_INPUT_VALUE] = attrs[sc.CONVERSATION_TASK]
        if attributes:
            attrs.update(attributes)
        span = self.tracer.start_span(sc.workflow_span_name(name), attributes=attrs, start_time=start_time)
        conv = Conversation(span, conv_id, name, max_rounds)
        return conv, _attach_scope(span, _SCOPE_CONVERSATION, otel_context.set_value(_CONVERSATION_KEY, conv))

    @guarded("recorder.set_task")
    def set_task(self, conv: Conversation, task: Any) -> None:
        """Set the task on an open root, for frameworks that learn the run's input after the run started.

        Content capture and redaction apply as for ``task=`` of :meth:`start_conversation`.
        """
        self._set_input(conv.span, sc.CONVERSATION_TASK, task)

    @guarded("recorder.end_conversation")
    def end_conversation(
        self,
        conv: Conversation,
        token: object | None,
        exc: BaseException | None = None,
        *,
        end_time: int | None = None,
    ) -> None:
        """Close a root opened by :meth:`start_conversation`, writing termination and counters on it."""
        try:
            if exc is not None:
                _record_error(conv.span, exc, self.config.redactor)
                if conv.termination is None or conv.termination == sc.TERMINATION_COMPLETED:
                    conv.termination = sc.TERMINATION_ERROR
                    conv.termination_detail = f"{type(exc).__name__}: {_safe_text(exc, self.config.redactor)}"
            attrs: dict[str, AttributeValue] = {
                sc.TERMINATION_REASON: conv.termination or sc.TERMINATION_COMPLETED,
                sc.CONVERSATION_ROUNDS: conv.messages,
                sc.CONVERSATION_HANDOFFS: conv.handoffs,
                sc.CONVERSATION_AGENTS: list(conv.agents),
            }
            if conv.broadcasts:
                attrs[sc.CONVERSATION_BROADCASTS] = conv.broadcasts
            if conv.termination_detail:
                attrs[sc.TERMINATION_DETAIL] = conv.termination_detail
            if conv.termination_agent:
                attrs[sc.TERMINATION_AGENT] = conv.termination_agent
            if conv.max_rounds is not None:
                attrs[sc.CONVERSATION_MAX_ROUNDS] = conv.max_rounds
            conv.span.set_attributes(attrs)
        finally:
            _detach(token)
            conv.span.end(end_time=end_time)

    @contextmanager
    def conversation(
        self,
        name: str,
        *,
        task: Any = None,
        conversation_id: str | None = None,
        max_rounds: int | None = None,
        framework: str | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
    ) -> Iterator[Conversation | None]:
        """A conversation root for the ``with`` block; yields the open conversation (None if suppressed)."""
        opened = self.start_conversation(
            name,
            task=task,
            conversation_id=conversation_id,
            max_rounds=max_rounds,
            framework=framework,
            attributes=attributes,
        )
        if opened is None:
            yield self.current()
            return
        conv, token = opened
        try:
            yield conv
        except BaseException as exc:
            self.end_conversation(conv, token, exc)
            raise
        self.end_conversation(conv, token)

    @guarded("recorder.terminate")
    def terminate(self, reason: str, detail: str | None = None, agent: str | None = None) -> None:
        """Record why the current conversation ended; the first reason recorded wins (the root cause)."""
        conv = self.current()
        if conv is None or conv.termination is not None:
            return
        conv.termination = reason
        conv.termination_detail = detail
        conv.termination_agent = agent

    @guarded("recorder.event")
    def event(
        self,
        name: str,
        attributes: Mapping[str, AttributeValue] | None = None,
        *,
        content: Mapping[str, Any] | None = None,
    ) -> None:
        """Add a span event to the current conversation's root (an orchestrator's stall, re-plan, plan update).

        ``content`` values are message-like text: recorded only with content capture on, redacted and capped.
        """
        conv = self.current()
        if conv is None:
            return
        attrs: dict[str, AttributeValue] = dict(attributes or {})
        if content and self.config.capture_content:
            for key, value in content.items():
                attrs[key] = self._clean(value)[0]
        conv.span.add_event(name, attributes=attrs)

    # -- agent turns ------------------------------------------------------------
    def start_agent_turn(self, agent: str, *, start_time: int | None = None) -> AgentTurn | None:
        try:  # inline rather than @guarded: this runs several times per message
            conv = self.current()
            if conv is None:
                return None
            conv._see(agent)
            attrs: dict[str, AttributeValue] = {
                sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
                sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_AGENT_TURN,
                sc.GEN_AI_AGENT_NAME: agent,
                sc.GEN_AI_CONVERSATION_ID: conv.id,
            }
            if self.config.openinference:
                # The agent graph viewers draw: a node per agent, its parent the agent control came from.
                attrs[sc.OI_SPAN_KIND] = sc.OI_KIND_AGENT
                attrs[sc.OI_AGENT_NAME] = attrs[sc.OI_GRAPH_NODE_ID] = attrs[sc.OI_GRAPH_NODE_NAME] = agent
                parent = conv.graph_parent(agent)
                if parent is not None:
                    attrs[sc.OI_GRAPH_NODE_PARENT_ID] = parent
            span = self.tracer.start_span(sc.agent_span_name(agent), attributes=attrs, start_time=start_time)
            return AgentTurn(span, _attach_scope(span, _SCOPE_TURN), self.config.redactor)
        except Exception as exc:
            record_failure("recorder.start_agent_turn", exc)
            return None

    @contextmanager
    def agent_turn(self, agent: str) -> Iterator[AgentTurn | None]:
        yield from _open_span_scope(self.start_agent_turn(agent))

    # -- messages ---------------------------------------------------------------
    def message(
        self,
        sender: str,
        recipients: Sequence[str] | str,
        content: Any,
        *,
        kind: str = sc.KIND_MESSAGE,
        tool_calls: Any = None,
        broadcast_to: Sequence[str] | None = None,
        cause: str | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
        timestamp: int | None = None,
    ) -> int | None:
        """Record one message as a zero-length span; returns its index in the conversation (None if not recording).

        ``kind`` is one of ``semconv.MESSAGE_KINDS``. A relay of a message already recorded (a group manager's
        copy to every member) should not be recorded again: pass its audience as ``broadcast_to`` on the original,
        or call :meth:`broadcast_copy` to count it.
        """
        try:  # inline rather than @guarded: this runs several times per message
            conv = self.current()
            if conv is None:
                return None
            if isinstance(recipients, str):
                recipients = [recipients]
            index = conv._next_index()
            conv._see(sender, *recipients)
            attrs: dict[str, AttributeValue] = {
                sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_MESSAGE,
                sc.GEN_AI_CONVERSATION_ID: conv.id,
                sc.MESSAGE_SENDER: sender,
                sc.MESSAGE_RECIPIENTS: list(recipients),
                sc.MESSAGE_INDEX: index,
                sc.MESSAGE_KIND: kind,
            }
            if broadcast_to:
                attrs[sc.MESSAGE_BROADCAST_TO] = list(broadcast_to)
            if cause is not None:
                attrs[sc.MESSAGE_CAUSE] = cause
            if self.config.capture_content:
                text, redacted, truncated = self._clean(content)
                attrs[sc.MESSAGE_CONTENT] = text
                if redacted:
                    attrs[sc.MESSAGE_REDACTED] = True
                if truncated:
                    attrs[sc.MESSAGE_TRUNCATED] = True
                if tool_calls:
                    attrs[sc.MESSAGE_TOOL_CALLS] = self._clean(tool_calls)[0]
            if self.config.openinference:
                attrs[sc.OI_SPAN_KIND] = sc.OI_KIND_CHAIN
                if sc.MESSAGE_CONTENT in attrs:
                    attrs[sc.OI_OUTPUT_VALUE] = attrs[sc.MESSAGE_CONTENT]
            if attributes:
                attrs.update(attributes)
            first = recipients[0] if recipients else "*"
            span = self.tracer.start_span(sc.message_span_name(sender, first), attributes=attrs, start_time=timestamp)
            span.end(end_time=timestamp)
            return index
        except Exception as exc:
            record_failure("recorder.message", exc)
            return None

    @guarded("recorder.broadcast_copy")
    def broadcast_copy(self) -> None:
        """Count a relay of an already-recorded message (no span: it is not a new message)."""
        conv = self.current()
        if conv is not None:
            conv.count_broadcast()

    # -- handoffs ---------------------------------------------------------------
    def start_handoff(
        self,
        source: str,
        *,
        candidates: Sequence[str] = (),
        detail: Any = None,
        start_time: int | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
    ) -> Handoff | None:
        """Open a handoff when selection of the next agent starts; end it with the target (that records its span).

        ``detail`` is what the selection said beyond its reason (e.g. the arguments of the LLM's transfer tool
        call); it is content, so it is captured and redacted like a message.
        """
        try:  # inline rather than @guarded: this runs several times per message
            conv = self.current()
            if conv is None:
                return None
            attrs: dict[str, AttributeValue] = {
                sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_HANDOFF,
                sc.GEN_AI_CONVERSATION_ID: conv.id,
                sc.HANDOFF_FROM: source,
                sc.HANDOFF_CANDIDATES: list(candidates),
            }
            if self.config.proposed_semconv:
                attrs[sc.GEN_AI_TRANSFER_MODE] = "pass_control"
            if self.config.openinference:
                attrs[sc.OI_SPAN_KIND] = sc.OI_KIND_DECISION
            if attributes:  # facts the integration knows about this handoff (e.g. mast.handoff.synthetic)
                attrs.update(attributes)
            handoff = Handoff(self.tracer, conv, source, attrs, self.config)
            if start_time is not None:
                handoff._start = start_time
            if detail is not None and self.config.capture_content:
                handoff.detail = self._clean(detail)[0]
            return handoff
        except Exception as exc:
            record_failure("recorder.start_handoff", exc)
            return None

    @guarded("recorder.handoff")
    def handoff(
        self,
        source: str,
        target: str | None,
        *,
        reason: str | None = None,
        candidates: Sequence[str] = (),
        detail: Any = None,
        start_time: int | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
    ) -> None:
        """Record a handoff whose target is already known (``target=None`` means "end the conversation").

        ``detail`` is the framework's own words for why (a stated reason, the graph condition that fired), content
        like a message; ``start_time`` (ns since the epoch) dates it by the framework's record.
        """
        h = self.start_handoff(
            source, candidates=candidates, detail=detail, start_time=start_time, attributes=attributes
        )
        if h is not None:
            h.end(target, reason=reason)

    # -- tools ------------------------------------------------------------------
    @guarded("recorder.start_tool_call")
    def start_tool_call(
        self,
        name: str,
        *,
        arguments: Any = None,
        call_id: str | None = None,
        start_time: int | None = None,
        tool_type: str = "function",
    ) -> ToolCall | None:
        conv = self.current()
        if conv is None:
            return None
        attrs: dict[str, AttributeValue] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
            sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_TOOL_CALL,
            sc.GEN_AI_CONVERSATION_ID: conv.id,
            sc.GEN_AI_TOOL_NAME: name,
            sc.GEN_AI_TOOL_TYPE: tool_type,
        }
        if call_id:
            attrs[sc.GEN_AI_TOOL_CALL_ID] = call_id
        if arguments is not None and self.config.capture_content:
            attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = self._clean(arguments)[0]
        if self.config.openinference:
            attrs[sc.OI_SPAN_KIND] = sc.OI_KIND_TOOL
            attrs[sc.OI_TOOL_NAME] = name
            if sc.GEN_AI_TOOL_CALL_ARGUMENTS in attrs:
                attrs[sc.OI_INPUT_VALUE] = attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS]
        span = self.tracer.start_span(sc.tool_span_name(name), attributes=attrs, start_time=start_time)
        return ToolCall(span, _attach_scope(span, _SCOPE_TOOL), self)

    @contextmanager
    def tool_call(self, name: str, *, arguments: Any = None, call_id: str | None = None) -> Iterator[ToolCall | None]:
        yield from _open_span_scope(self.start_tool_call(name, arguments=arguments, call_id=call_id))

    # -- content ----------------------------------------------------------------
    def _clean(self, content: Any) -> tuple[str, bool, bool]:
        return self.config.redactor.redact(content_text(content))

    def _set_input(self, span: Span, key: str, value: Any) -> None:
        """Write ``value`` learnt after ``span`` started (a task, tool arguments) under ``key`` and as OpenInference's
        input, cleaned like any content; nothing when it is None or content capture is off."""
        if value is not None and self.config.capture_content:
            text = self._clean(value)[0]
            span.set_attribute(key, text)
            if self.config.openinference:
                span.set_attribute(sc.OI_INPUT_VALUE, text)


class _Suppressed:
    """``Recorder.suppressed()``: a plain class, cheaper than a generator context manager on every selection."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = otel_context.attach(otel_context.set_value(_SUPPRESS_KEY, True))

    def __exit__(self, *exc_info: object) -> None:
        _detach(self._token)


_OpenSpan = TypeVar("_OpenSpan", bound=AgentTurn)


def _open_span_scope(opened: _OpenSpan | None) -> Iterator[_OpenSpan | None]:
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


def _attach_scope(span: Span, scope: str, context: Context | None = None) -> object:
    """Make ``span`` current in ``context`` (default: the current one), marked as opening ``scope`` (what a
    conversation started inside it joins or nests under); returns the token to detach."""
    return otel_context.attach(trace.set_span_in_context(span, otel_context.set_value(_SCOPE_KEY, scope, context)))


def _record_error(span: Span, exc: BaseException, redactor: Redactor) -> None:
    """Mark the span failed with the program's exception; never raises, never touches ``exc``.

    The exception's text is redacted like content (errors quote keys and payloads). ``str(exc)`` is the
    program's code and may itself raise: the span then says so, and the program still gets its own exception.
    """
    try:
        message = _safe_text(exc, redactor)
        try:
            stack = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        except Exception:
            stack = "".join(traceback.format_tb(exc.__traceback__))
        stack = redactor.redact(stack)[0]
        attrs: dict[str, AttributeValue] = {
            "exception.type": type(exc).__qualname__,
            "exception.message": message,
            "exception.stacktrace": stack,
        }
        span.add_event("exception", attrs)
        span.set_attribute(sc.ERROR_TYPE, type(exc).__qualname__)
        span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {message}"))
    except Exception as failure:
        record_failure("recorder.record_error", failure)


def _safe_text(exc: BaseException, redactor: Redactor) -> str:
    try:
        text = str(exc)
    except Exception:
        return f"<{type(exc).__qualname__}: str() raised>"
    return redactor.redact(text)[0]


def _detach(token: object | None) -> None:
    if token is None:
        return
    try:
        otel_context.detach(token)  # type: ignore[arg-type]
    except Exception:  # a token from another context (cancelled async generator): nothing left to restore
        pass
