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

This module is the public API, the :class:`Recorder` (one method per span kind); its parts live beside it:
``_scope`` (the conversation and scope in the OpenTelemetry context), ``_content`` (text onto spans: rendered,
redacted, capped), ``_handles`` (what stays open: ``Conversation``, ``AgentTurn``, ``ToolCall``, ``Handoff``, and
their counters; re-exported here). It is longer than 400 lines because it is one class: splitting the API across
mixins would make a reader open three files to see what an integration can call.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, Tracer, TracerProvider
from opentelemetry.util.types import AttributeValue

from . import semconv as sc
from ._content import clean, content_text, record_error, safe_text, set_input
from ._handles import AgentTurn, Conversation, Handoff, ToolCall, open_span_scope
from ._ids import new_conversation_id, private_ids
from ._safety import guarded, record_failure
from ._scope import (
    CONVERSATION_KEY,
    SCOPE_CONVERSATION,
    SCOPE_KEY,
    SCOPE_TOOL,
    SCOPE_TURN,
    SUPPRESS_KEY,
    Suppressed,
    attach_scope,
    detach,
)
from .config import CaptureConfig
from .version import __version__

__all__ = ["AgentTurn", "Conversation", "Handoff", "Recorder", "ToolCall", "content_text"]


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
        if not include_suppressed and ctx.get(SUPPRESS_KEY):
            return None
        conv = ctx.get(CONVERSATION_KEY)
        return conv if isinstance(conv, Conversation) else None

    @staticmethod
    def suppressed() -> AbstractContextManager[None]:
        """Record nothing inside: for a framework's internal machinery (e.g. an LLM speaker-selection chat)."""
        return Suppressed()

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
        if otel_context.get_value(SUPPRESS_KEY):
            return None
        outer = otel_context.get_value(CONVERSATION_KEY)
        if isinstance(outer, Conversation) and otel_context.get_value(SCOPE_KEY) == SCOPE_CONVERSATION:
            if max_rounds is not None and outer.max_rounds is None:
                outer.max_rounds = max_rounds
            return None
        conv_id = conversation_id or new_conversation_id()  # never uuid4(): see mast_otel._ids
        attrs: dict[str, AttributeValue] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_WORKFLOW,
            sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_CONVERSATION,
            sc.GEN_AI_CONVERSATION_ID: conv_id,
            sc.GEN_AI_WORKFLOW_NAME: name,
            sc.MAST_FRAMEWORK: sc.framework_name(framework or self.framework),
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
        return conv, attach_scope(span, SCOPE_CONVERSATION, otel_context.set_value(CONVERSATION_KEY, conv))

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
                record_error(conv.span, exc, self.config.redactor)
                if conv.termination is None or conv.termination == sc.TERMINATION_COMPLETED:
                    conv.termination = sc.TERMINATION_ERROR
                    conv.termination_detail = f"{type(exc).__name__}: {safe_text(exc, self.config.redactor)}"
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
            detach(token)
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
            return AgentTurn(span, attach_scope(span, SCOPE_TURN), self.config.redactor)
        except Exception as exc:
            record_failure("recorder.start_agent_turn", exc)
            return None

    @contextmanager
    def agent_turn(self, agent: str) -> Iterator[AgentTurn | None]:
        yield from open_span_scope(self.start_agent_turn(agent))

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
        return ToolCall(span, attach_scope(span, SCOPE_TOOL), self.config)

    @contextmanager
    def tool_call(self, name: str, *, arguments: Any = None, call_id: str | None = None) -> Iterator[ToolCall | None]:
        yield from open_span_scope(self.start_tool_call(name, arguments=arguments, call_id=call_id))

    # -- content ----------------------------------------------------------------
    def _clean(self, content: Any) -> tuple[str, bool, bool]:
        return clean(content, self.config.redactor)

    def _set_input(self, span: Span, key: str, value: Any) -> None:
        set_input(span, key, value, self.config)
