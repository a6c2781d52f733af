"""Messages, agent turns and tool calls: what the participants of a team say and do.

A team's thread holds chat messages (``BaseChatMessage``: text, multimodal, handoff, tool-call summary, stop) and
agent events (``BaseAgentEvent``: tool call request and execution, thought, streamed chunk, ...). Only chat
messages become message spans; an event is folded into the turn that produced it (a tool call span, the next
message's ``tool_calls`` or thought, a chunk count), so the message spans are exactly the chat messages of
``TaskResult.messages``, in order.

Where messages are seen: a participant's container logs each message of its agent (``_log_message``) inside the
agent's turn, before the manager puts it in the team's output; the manager logs the task and, for Magentic-One,
its own instructions (``update_message_thread``). Both happen in the order the output stream yields them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from mast_otel import semconv as sc
from mast_otel._safety import record_failure, safe_call
from mast_otel.integrations.lifecycle import Call, Traced, Wrapper
from mast_otel.recorder import Recorder, ToolCall

from ._state import TURN_KEY, RunState, TurnState, current_run, current_turn


def record_message(recorder: Recorder, run: RunState, message: Any, turn: TurnState | None) -> None:
    """One chat message as a message span; a turn's pending tool calls and thoughts ride on it."""
    from autogen_agentchat.messages import HandoffMessage, ToolCallSummaryMessage

    sender = str(message.source)
    recipients = [p for p in run.participants if p != sender] or [run.manager_name]
    attrs: dict[str, Any] = {sc.MESSAGE_TYPE: type(message).__name__}
    tool_calls = None
    if turn is not None and turn.agent == sender:
        tool_calls, turn.tool_calls = turn.tool_calls or None, []
        if turn.thoughts and recorder.config.capture_content:
            attrs[sc.MESSAGE_THOUGHT] = recorder.config.redactor.redact("\n".join(turn.thoughts))[0]
        turn.thoughts = []
    if isinstance(message, HandoffMessage):
        recipients = [message.target]
    kind = sc.KIND_TOOL_RESULT if isinstance(message, ToolCallSummaryMessage) else sc.KIND_MESSAGE
    recorder.message(sender, recipients, message.to_text(), kind=kind, tool_calls=tool_calls, attributes=attrs)


def _fold_event(event: Any, turn: TurnState | None) -> None:
    """An agent event is part of its turn, never a message of its own."""
    from autogen_agentchat.messages import ModelClientStreamingChunkEvent, ThoughtEvent, ToolCallRequestEvent

    if turn is None:
        return
    if isinstance(event, ToolCallRequestEvent):
        turn.tool_calls.extend({"id": c.id, "name": c.name, "arguments": c.arguments} for c in event.content)
    elif isinstance(event, ThoughtEvent):
        turn.thoughts.append(event.content)
    elif isinstance(event, ModelClientStreamingChunkEvent):
        turn.chunks += 1


def logged_message(recorder: Recorder) -> Traced:
    """``ChatAgentContainer._log_message(message)``: every message and event of a participant, in order."""
    from autogen_agentchat.messages import BaseChatMessage

    def begin(_: Any, call: Call) -> None:
        run = current_run()
        if run is None:
            return
        message = call.get("message")
        if isinstance(message, BaseChatMessage):
            record_message(recorder, run, message, current_turn())
        else:
            _fold_event(message, current_turn())

    return Traced("autogen_agentchat.message", begin, params=("message",))


def manager_thread(recorder: Recorder) -> Traced:
    """``BaseGroupChatManager.update_message_thread``: messages the manager itself authors (Magentic-One's
    task ledger, instructions and final answer). Participants' messages were recorded when their agent logged
    them, and the task when the run started."""
    from autogen_agentchat.messages import BaseChatMessage

    def begin(_: Any, call: Call) -> None:
        run = current_run()
        if run is None:
            return
        for message in call.get("messages", ()):
            if isinstance(message, BaseChatMessage) and message.source == run.manager_name:
                record_message(recorder, run, message, None)

    return Traced("autogen_agentchat.manager_message", begin, params=("messages",))


class _TurnScope:
    """autogen's ``trace_invoke_agent_span`` context manager with an agent turn inside it.

    Not a wrapped call but a context manager the container enters, so not a ``Traced``: its recording halves are
    guarded the same way, under the kinds ``autogen_agentchat.turn.begin`` / ``.finish``."""

    __slots__ = ("_inner", "_name", "_recorder", "_state", "_token")

    def __init__(self, recorder: Recorder, inner: Any, name: str) -> None:
        self._recorder = recorder
        self._inner = inner
        self._name = name
        self._state: TurnState | None = None
        self._token: object | None = None

    def __enter__(self) -> Any:
        entered = self._inner.__enter__()
        try:
            turn = self._recorder.start_agent_turn(self._name)
            if turn is not None:
                self._state = TurnState(self._name, turn)
                self._token = otel_context.attach(otel_context.set_value(TURN_KEY, self._state))
        except Exception as exc:
            record_failure("autogen_agentchat.turn.begin", exc)
        return entered

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> Any:
        state = self._state
        if state is not None:
            try:
                if self._token is not None:
                    otel_context.detach(self._token)  # type: ignore[arg-type]
                if state.chunks:
                    state.turn.span.set_attribute(sc.TURN_STREAM_CHUNKS, state.chunks)
                if exc is not None:
                    state.turn.fail(exc)
                else:
                    state.turn.end()
            except Exception as failure:
                record_failure("autogen_agentchat.turn.finish", failure)
        return self._inner.__exit__(exc_type, exc, tb)


def agent_turns(recorder: Recorder) -> Wrapper:
    """``trace_invoke_agent_span`` as the container calls it: one agent turn per participant activation."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
        inner = wrapped(*args, **kwargs)
        if current_run() is None or not is_instrumentation_enabled():
            return inner
        name = args[0] if args else kwargs.get("agent_name", "agent")
        return _TurnScope(recorder, inner, str(name))

    return wrapper


def tool_calls(recorder: Recorder) -> Traced:
    """``AssistantAgent._execute_tool_call``: one tool call (handoff tools included) with arguments and result."""

    def begin(_: Any, call: Call) -> ToolCall | None:
        if current_run() is None:
            return None
        request = call.get("tool_call")
        return recorder.start_tool_call(request.name, arguments=request.arguments, call_id=request.id)

    def finish(tool_call: ToolCall, result: Any) -> None:
        # Guarded on its own: the span is open and must end even if the result cannot be read.
        safe_call("autogen_agentchat.tool.result", _set_result, tool_call, result)
        tool_call.end()

    return Traced(
        "autogen_agentchat.tool", begin, finish=finish, fail=lambda c, exc: c.fail(exc), params=("tool_call",)
    )


def _set_result(tool_call: ToolCall, result: Any) -> None:
    executed = result[1]
    tool_call.set_result(executed.content, success=not executed.is_error)
