"""Wrapper factories for AG2 Classic methods: each maps one AG2 call onto one recorder call.

Every wrapper returns the wrapped method's result unchanged and re-raises its exceptions unchanged; only the
spans differ. Wrappers are installed on the classes, so agents created before ``instrument()`` are covered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from mast_otel import semconv as sc
from mast_otel.recorder import Conversation, Recorder

from ._events import TappedStream

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]

# speaker_selection_method strings -> handoff reason
_STATIC_REASONS = {
    "round_robin": sc.HANDOFF_ROUND_ROBIN,
    "random": sc.HANDOFF_RANDOM,
    "manual": sc.HANDOFF_MANUAL,
    "auto": sc.HANDOFF_LLM_SELECTION,
}
# The group API (Patterns, handoffs) installs a closure of this name as the selection method.
_GROUP_API_TRANSITION = "group_transition"


def _name(agent: Any) -> str:
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) else type(agent).__name__


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, key: str, default: Any = None) -> Any:
    if len(args) > index:
        return args[index]
    return kwargs.get(key, default)


def _is_manager(agent: Any) -> bool:
    return hasattr(agent, "groupchat") and hasattr(agent, "run_chat")


# -- conversation roots -------------------------------------------------------
def _chat_root(recorder: Recorder, sender: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    recipient = _arg(args, kwargs, 0, "recipient")
    message = kwargs.get("message")
    if _is_manager(recipient):
        name = _name(recipient)
        max_rounds = getattr(recipient.groupchat, "max_round", None)
    else:
        name = f"{_name(sender)} -> {_name(recipient)}"
        max_rounds = kwargs.get("max_turns")
    task = message if not callable(message) else None
    return recorder.start_conversation(name, task=task, max_rounds=max_rounds)


def traced_initiate_chat(recorder: Recorder) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        opened = _chat_root(recorder, instance, args, kwargs)
        if opened is None:
            return wrapped(*args, **kwargs)
        conv, token = opened
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            recorder.end_conversation(conv, token, exc)
            raise
        recorder.end_conversation(conv, token)
        return result

    return wrapper


def traced_a_initiate_chat(recorder: Recorder) -> Wrapper:
    async def wrapper(
        wrapped: Callable[..., Awaitable[Any]], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        opened = _chat_root(recorder, instance, args, kwargs)
        if opened is None:
            return await wrapped(*args, **kwargs)
        conv, token = opened
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            recorder.end_conversation(conv, token, exc)
            raise
        recorder.end_conversation(conv, token)
        return result

    return wrapper


def _queue_root(recorder: Recorder, sender: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    queue = _arg(args, kwargs, 0, "chat_queue") or []
    first = queue[0] if queue and isinstance(queue[0], dict) else {}
    task = first.get("message")
    return recorder.start_conversation(
        f"{_name(sender)} chat queue", task=task if not callable(task) else None, max_rounds=None
    )


def traced_initiate_chats(recorder: Recorder) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        opened = _queue_root(recorder, instance, args, kwargs)
        if opened is None:
            return wrapped(*args, **kwargs)
        conv, token = opened
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            recorder.end_conversation(conv, token, exc)
            raise
        recorder.end_conversation(conv, token)
        return result

    return wrapper


def traced_a_initiate_chats(recorder: Recorder) -> Wrapper:
    async def wrapper(
        wrapped: Callable[..., Awaitable[Any]], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        opened = _queue_root(recorder, instance, args, kwargs)
        if opened is None:
            return await wrapped(*args, **kwargs)
        conv, token = opened
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            recorder.end_conversation(conv, token, exc)
            raise
        recorder.end_conversation(conv, token)
        return result

    return wrapper


def _pattern_root(recorder: Recorder, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    pattern = _arg(args, kwargs, 0, "pattern")
    messages = _arg(args, kwargs, 1, "messages")
    if isinstance(messages, list) and messages:
        task: Any = messages[0].get("content") if isinstance(messages[0], dict) else messages[0]
    else:
        task = messages
    return recorder.start_conversation(
        f"group_chat {type(pattern).__name__}", task=task, max_rounds=_arg(args, kwargs, 2, "max_rounds", 20)
    )


def traced_initiate_group_chat(recorder: Recorder) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        opened = _pattern_root(recorder, args, kwargs)
        if opened is None:
            return wrapped(*args, **kwargs)
        conv, token = opened
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            recorder.end_conversation(conv, token, exc)
            raise
        recorder.end_conversation(conv, token)
        return result

    return wrapper


def traced_a_initiate_group_chat(recorder: Recorder) -> Wrapper:
    async def wrapper(
        wrapped: Callable[..., Awaitable[Any]], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        opened = _pattern_root(recorder, args, kwargs)
        if opened is None:
            return await wrapped(*args, **kwargs)
        conv, token = opened
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            recorder.end_conversation(conv, token, exc)
            raise
        recorder.end_conversation(conv, token)
        return result

    return wrapper


# -- messages -----------------------------------------------------------------
def _record_send(
    recorder: Recorder, conv: Conversation, sender: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    if _arg(args, kwargs, 2, "request_reply") is False and _is_manager(sender):
        # The manager relaying the speaker's message to every member: not a new message. Two of every three
        # sends in a group chat are these, so they are counted on the conversation already in hand.
        conv.count_broadcast()
        return
    message = _arg(args, kwargs, 0, "message")
    recipient = _arg(args, kwargs, 1, "recipient")
    kind = sc.KIND_MESSAGE
    tool_calls = None
    content = message
    if isinstance(message, dict):
        content = message.get("content")
        tool_calls = message.get("tool_calls") or message.get("function_call")
        if tool_calls:
            kind = sc.KIND_TOOL_CALL
        elif message.get("role") in ("tool", "function") or "tool_responses" in message:
            kind = sc.KIND_TOOL_RESULT
    broadcast_to = None
    if _is_manager(recipient):
        broadcast_to = [a.name for a in recipient.groupchat.agents if a is not sender]
    recorder.message(
        _name(sender),
        [_name(recipient)],
        content,
        kind=kind,
        tool_calls=tool_calls,
        broadcast_to=broadcast_to,
    )


def traced_send(recorder: Recorder) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        conv = recorder.current()
        if conv is not None and is_instrumentation_enabled():
            try:
                _record_send(recorder, conv, instance, args, kwargs)
            except Exception:  # recording must never change the conversation
                pass
        return wrapped(*args, **kwargs)

    return wrapper


def traced_a_send(recorder: Recorder) -> Wrapper:
    async def wrapper(
        wrapped: Callable[..., Awaitable[Any]], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        conv = recorder.current()
        if conv is not None and is_instrumentation_enabled():
            try:
                _record_send(recorder, conv, instance, args, kwargs)
            except Exception:
                pass
        return await wrapped(*args, **kwargs)

    return wrapper


# -- agent turns ----------------------------------------------------------------
def traced_generate_reply(recorder: Recorder) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # The manager's reply *is* the group chat; its turns are the members' turns.
        if _is_manager(instance) or not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        turn = recorder.start_agent_turn(_name(instance))
        if turn is None:
            return wrapped(*args, **kwargs)
        try:
            reply = wrapped(*args, **kwargs)
        except BaseException as exc:
            turn.fail(exc)
            raise
        turn.end(replied=reply is not None)
        return reply

    return wrapper


def traced_a_generate_reply(recorder: Recorder) -> Wrapper:
    async def wrapper(
        wrapped: Callable[..., Awaitable[Any]], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if _is_manager(instance) or not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        turn = recorder.start_agent_turn(_name(instance))
        if turn is None:
            return await wrapped(*args, **kwargs)
        try:
            reply = await wrapped(*args, **kwargs)
        except BaseException as exc:
            turn.fail(exc)
            raise
        turn.end(replied=reply is not None)
        return reply

    return wrapper


# -- tools ----------------------------------------------------------------------
def _start_tool(recorder: Recorder, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    func_call = _arg(args, kwargs, 0, "func_call") or {}
    name = func_call.get("name") if isinstance(func_call, dict) else None
    return recorder.start_tool_call(
        str(name or "unknown"),
        arguments=func_call.get("arguments") if isinstance(func_call, dict) else None,
        call_id=_arg(args, kwargs, 1, "call_id"),
    )


def _end_tool(call: Any, result: Any) -> None:
    success, payload = result if isinstance(result, tuple) and len(result) == 2 else (True, result)
    content = payload.get("content") if isinstance(payload, dict) else payload
    call.set_result(content, success=bool(success))
    call.end()


def traced_execute_function(recorder: Recorder) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call = _start_tool(recorder, args, kwargs) if is_instrumentation_enabled() else None
        if call is None:
            return wrapped(*args, **kwargs)
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            call.fail(exc)
            raise
        _end_tool(call, result)
        return result

    return wrapper


def traced_a_execute_function(recorder: Recorder) -> Wrapper:
    async def wrapper(
        wrapped: Callable[..., Awaitable[Any]], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        call = _start_tool(recorder, args, kwargs) if is_instrumentation_enabled() else None
        if call is None:
            return await wrapped(*args, **kwargs)
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            call.fail(exc)
            raise
        _end_tool(call, result)
        return result

    return wrapper


# -- handoffs -------------------------------------------------------------------
def _handoff_reason(conv: Conversation, groupchat: Any) -> str:
    method = groupchat.speaker_selection_method
    if isinstance(method, str):
        return _STATIC_REASONS.get(method.lower(), sc.HANDOFF_ROUTING)
    if getattr(method, "__name__", "") != _GROUP_API_TRANSITION:
        return sc.HANDOFF_CUSTOM
    # The group API decides in group_utils.determine_next_agent; replay its order of precedence.
    if conv.handoffs == 0:
        return sc.HANDOFF_INITIAL
    last = groupchat.messages[-1] if groupchat.messages else {}
    if "tool_calls" in last:
        return sc.HANDOFF_TOOL_CALL
    if conv.pending_handoff_reason is not None:
        return conv.pending_handoff_reason
    if last.get("role") == "tool":
        return sc.HANDOFF_TOOL_RETURN
    return sc.HANDOFF_AFTER_WORK


def _is_no_speaker(exc: BaseException) -> bool:
    return type(exc).__name__ == "NoEligibleSpeakerError"


def traced_select_speaker(recorder: Recorder) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        conv = recorder.current()
        if conv is None or not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        handoff = recorder.start_handoff(_name(_arg(args, kwargs, 0, "last_speaker")), candidates=instance.agent_names)
        if handoff is None:
            return wrapped(*args, **kwargs)
        try:
            # LLM selection runs an internal two-agent chat: machinery, not conversation.
            with recorder.suppressed():
                speaker = wrapped(*args, **kwargs)
        except BaseException as exc:
            _end_failed_selection(recorder, conv, instance, handoff, exc)
            raise
        handoff.end(_name(speaker) if speaker is not None else None, reason=_handoff_reason(conv, instance))
        return speaker

    return wrapper


def traced_a_select_speaker(recorder: Recorder) -> Wrapper:
    async def wrapper(
        wrapped: Callable[..., Awaitable[Any]], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        conv = recorder.current()
        if conv is None or not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        handoff = recorder.start_handoff(_name(_arg(args, kwargs, 0, "last_speaker")), candidates=instance.agent_names)
        if handoff is None:
            return await wrapped(*args, **kwargs)
        try:
            with recorder.suppressed():
                speaker = await wrapped(*args, **kwargs)
        except BaseException as exc:
            _end_failed_selection(recorder, conv, instance, handoff, exc)
            raise
        handoff.end(_name(speaker) if speaker is not None else None, reason=_handoff_reason(conv, instance))
        return speaker

    return wrapper


def _end_failed_selection(
    recorder: Recorder, conv: Conversation, groupchat: Any, handoff: Any, exc: BaseException
) -> None:
    if _is_no_speaker(exc):
        # A selection that names nobody ends the chat on purpose (the group API's TerminateTarget, or a custom
        # function returning None): a handoff to "terminate", not an error.
        reason = _handoff_reason(conv, groupchat)
        handoff.end(None, reason=reason)
        if not isinstance(groupchat.speaker_selection_method, str):
            recorder.terminate(sc.TERMINATION_HANDOFF, detail=f"{reason} handoff to terminate")
        return
    handoff.fail(exc)


# -- event stream -------------------------------------------------------------
def tapped_get_default(recorder: Recorder) -> Wrapper:
    # AG2 asks for the default stream several times per message: reuse the tap of the stream seen last.
    last: list[tuple[Any, TappedStream] | None] = [None]

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        stream = wrapped(*args, **kwargs)
        seen = last[0]
        if seen is not None and seen[0] is stream:
            return seen[1]
        if isinstance(stream, TappedStream):
            return stream
        tap = TappedStream(stream, recorder)
        last[0] = (stream, tap)
        return tap

    return wrapper
