"""Wrapper factories for AG2 Classic methods: each maps one AG2 call onto one recorder call.

Every wrapper returns the wrapped method's result unchanged and re-raises its exceptions unchanged; only the
spans differ. Wrappers are installed on the classes, so agents created before ``instrument()`` are covered.

Each traced concern is a :class:`_Traced`: ``begin`` (start recording; None means "call through untraced"),
``finish`` and ``fail``. :func:`sync` and :func:`async_` turn one into the wrapt wrapper for the sync and the
async method, so the span lifecycle is written once for both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
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


# -- one lifecycle for sync and async methods -----------------------------------
Args = tuple[Any, ...]
Kwargs = dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Traced:
    begin: Callable[[Any, Args, Kwargs], Any]  # (instance, args, kwargs) -> handle, or None to call through
    finish: Callable[[Any, Any], None]  # (handle, result)
    fail: Callable[[Any, BaseException], None]  # (handle, exception); the exception is re-raised unchanged
    inside: Callable[[], AbstractContextManager[Any]] = nullcontext  # context the wrapped call runs in


def sync(make: Callable[[Recorder], _Traced]) -> Callable[[Recorder], Wrapper]:
    def factory(recorder: Recorder) -> Wrapper:
        traced = make(recorder)

        def wrapper(wrapped: Callable[..., Any], instance: Any, args: Args, kwargs: Kwargs) -> Any:
            handle = traced.begin(instance, args, kwargs) if is_instrumentation_enabled() else None
            if handle is None:
                return wrapped(*args, **kwargs)
            try:
                with traced.inside():
                    result = wrapped(*args, **kwargs)
            except BaseException as exc:
                traced.fail(handle, exc)
                raise
            traced.finish(handle, result)
            return result

        return wrapper

    return factory


def async_(make: Callable[[Recorder], _Traced]) -> Callable[[Recorder], Wrapper]:
    def factory(recorder: Recorder) -> Wrapper:
        traced = make(recorder)

        async def wrapper(wrapped: Callable[..., Awaitable[Any]], instance: Any, args: Args, kwargs: Kwargs) -> Any:
            handle = traced.begin(instance, args, kwargs) if is_instrumentation_enabled() else None
            if handle is None:
                return await wrapped(*args, **kwargs)
            try:
                with traced.inside():
                    result = await wrapped(*args, **kwargs)
            except BaseException as exc:
                traced.fail(handle, exc)
                raise
            traced.finish(handle, result)
            return result

        return wrapper

    return factory


def _never(_: Any, __: Any) -> None:
    """finish/fail of a concern whose begin always returns None (nothing spans the call)."""


# -- conversation roots -------------------------------------------------------
def _roots(recorder: Recorder, opener: Callable[[Recorder, Any, Args, Kwargs], Any]) -> _Traced:
    return _Traced(
        begin=lambda instance, args, kwargs: opener(recorder, instance, args, kwargs),
        finish=lambda opened, _: recorder.end_conversation(opened[0], opened[1]),
        fail=lambda opened, exc: recorder.end_conversation(opened[0], opened[1], exc),
    )


def _chat_root(recorder: Recorder, sender: Any, args: Args, kwargs: Kwargs) -> Any:
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


def _queue_root(recorder: Recorder, sender: Any, args: Args, kwargs: Kwargs) -> Any:
    queue = _arg(args, kwargs, 0, "chat_queue") or []
    first = queue[0] if queue and isinstance(queue[0], dict) else {}
    task = first.get("message")
    return recorder.start_conversation(f"{_name(sender)} chat queue", task=task if not callable(task) else None)


def _pattern_root(recorder: Recorder, _: Any, args: Args, kwargs: Kwargs) -> Any:
    pattern = _arg(args, kwargs, 0, "pattern")
    messages = _arg(args, kwargs, 1, "messages")
    if isinstance(messages, list) and messages:
        task: Any = messages[0].get("content") if isinstance(messages[0], dict) else messages[0]
    else:
        task = messages
    return recorder.start_conversation(
        f"group_chat {type(pattern).__name__}", task=task, max_rounds=_arg(args, kwargs, 2, "max_rounds", 20)
    )


def chat_roots(recorder: Recorder) -> _Traced:
    return _roots(recorder, _chat_root)


def queue_roots(recorder: Recorder) -> _Traced:
    return _roots(recorder, _queue_root)


def pattern_roots(recorder: Recorder) -> _Traced:
    return _roots(recorder, _pattern_root)


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


def messages(recorder: Recorder) -> _Traced:
    def begin(instance: Any, args: Args, kwargs: Kwargs) -> None:
        conv = recorder.current()
        if conv is not None:
            try:
                _record_send(recorder, conv, instance, args, kwargs)
            except Exception:  # recording must never change the conversation
                pass

    return _Traced(begin=begin, finish=_never, fail=_never)


# -- agent turns ----------------------------------------------------------------
def agent_turns(recorder: Recorder) -> _Traced:
    def begin(instance: Any, args: Args, kwargs: Kwargs) -> Any:
        # The manager's reply *is* the group chat; its turns are the members' turns.
        return None if _is_manager(instance) else recorder.start_agent_turn(_name(instance))

    return _Traced(
        begin=begin,
        finish=lambda turn, reply: turn.end(replied=reply is not None),
        fail=lambda turn, exc: turn.fail(exc),
    )


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


def tool_calls(recorder: Recorder) -> _Traced:
    return _Traced(
        begin=lambda _, args, kwargs: _start_tool(recorder, args, kwargs),
        finish=_end_tool,
        fail=lambda call, exc: call.fail(exc),
    )


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


def handoffs(recorder: Recorder) -> _Traced:
    def begin(instance: Any, args: Args, kwargs: Kwargs) -> Any:
        conv = recorder.current()
        if conv is None:
            return None
        handoff = recorder.start_handoff(_name(_arg(args, kwargs, 0, "last_speaker")), candidates=instance.agent_names)
        return None if handoff is None else (conv, instance, handoff)

    def finish(handle: Any, speaker: Any) -> None:
        conv, groupchat, handoff = handle
        handoff.end(_name(speaker) if speaker is not None else None, reason=_handoff_reason(conv, groupchat))

    def fail(handle: Any, exc: BaseException) -> None:
        conv, groupchat, handoff = handle
        _end_failed_selection(recorder, conv, groupchat, handoff, exc)

    # LLM selection runs an internal two-agent chat: machinery, not conversation.
    return _Traced(begin=begin, finish=finish, fail=fail, inside=recorder.suppressed)


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
