"""Traced concerns for AG2 Classic methods: each maps one AG2 call onto one recorder call.

Each is a :class:`~mast_otel.integrations.lifecycle.Traced` (``begin`` / ``finish`` / ``fail``), turned into the
wrapt wrapper for the sync or the async method by :func:`sync` / :func:`async_`; the lifecycle module guarantees
the program's result and exceptions pass through unchanged and that a recording failure is counted, never raised.
Arguments are read by parameter name (``call.get("recipient")``) against AG2's own signatures; a method whose
signature lacks a name read here is left unrecorded (see ``Traced.params``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mast_otel import semconv as sc
from mast_otel.integrations.lifecycle import Call, Traced, Wrapper, async_wrapper, sync_wrapper
from mast_otel.recorder import Conversation, Recorder

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


def _is_manager(agent: Any) -> bool:
    return hasattr(agent, "groupchat") and hasattr(agent, "run_chat")


def sync(make: Callable[[Recorder], Traced]) -> Callable[[Recorder], Wrapper]:
    return lambda recorder: sync_wrapper(make(recorder))


def async_(make: Callable[[Recorder], Traced]) -> Callable[[Recorder], Wrapper]:
    return lambda recorder: async_wrapper(make(recorder))


# -- conversation roots -------------------------------------------------------
def _roots(
    recorder: Recorder, name: str, opener: Callable[[Recorder, Any, Call], Any], params: tuple[str, ...]
) -> Traced:
    return Traced(
        name,
        begin=lambda instance, call: opener(recorder, instance, call),
        finish=lambda opened, _: recorder.end_conversation(opened[0], opened[1]),
        fail=lambda opened, exc: recorder.end_conversation(opened[0], opened[1], exc),
        params=params,
    )


def _chat_root(recorder: Recorder, sender: Any, call: Call) -> Any:
    recipient = call.get("recipient")
    message = call.get("message")
    if _is_manager(recipient):
        name = _name(recipient)
        max_rounds = getattr(recipient.groupchat, "max_round", None)
    else:
        name = f"{_name(sender)} -> {_name(recipient)}"
        max_rounds = call.get("max_turns")
    task = message if not callable(message) else None
    return recorder.start_conversation(name, task=task, max_rounds=max_rounds)


def _queue_root(recorder: Recorder, sender: Any, call: Call) -> Any:
    queue = call.get("chat_queue") or []
    first = queue[0] if queue and isinstance(queue[0], dict) else {}
    task = first.get("message")
    return recorder.start_conversation(f"{_name(sender)} chat queue", task=task if not callable(task) else None)


def _pattern_root(recorder: Recorder, _: Any, call: Call) -> Any:
    pattern = call.get("pattern")
    messages = call.get("messages")
    if isinstance(messages, list) and messages:
        task: Any = messages[0].get("content") if isinstance(messages[0], dict) else messages[0]
    else:
        task = messages
    return recorder.start_conversation(
        f"group_chat {type(pattern).__name__}", task=task, max_rounds=call.get("max_rounds")
    )


def chat_roots(recorder: Recorder) -> Traced:
    return _roots(recorder, "ag2.initiate_chat", _chat_root, ("recipient", "message", "max_turns"))


def queue_roots(recorder: Recorder) -> Traced:
    return _roots(recorder, "ag2.initiate_chats", _queue_root, ("chat_queue",))


def pattern_roots(recorder: Recorder) -> Traced:
    return _roots(recorder, "ag2.initiate_group_chat", _pattern_root, ("pattern", "messages", "max_rounds"))


# -- messages -----------------------------------------------------------------
def _record_send(recorder: Recorder, conv: Conversation, sender: Any, call: Call) -> None:
    if _is_manager(sender) and call.get("request_reply") is False:
        # The manager relaying the speaker's message to every member: not a new message. Two of every three
        # sends in a group chat are these, so they are counted on the conversation already in hand.
        conv.count_broadcast()
        return
    message = call.get("message")
    recipient = call.get("recipient")
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


def messages(recorder: Recorder) -> Traced:
    def begin(instance: Any, call: Call) -> None:
        conv = recorder.current()
        if conv is not None:
            _record_send(recorder, conv, instance, call)

    return Traced("ag2.send", begin=begin, params=("message", "recipient", "request_reply"))


# -- agent turns ----------------------------------------------------------------
def agent_turns(recorder: Recorder) -> Traced:
    def begin(instance: Any, call: Call) -> Any:
        # The manager's reply *is* the group chat; its turns are the members' turns.
        return None if _is_manager(instance) else recorder.start_agent_turn(_name(instance))

    return Traced(
        "ag2.generate_reply",
        begin=begin,
        finish=lambda turn, reply: turn.end(replied=reply is not None),
        fail=lambda turn, exc: turn.fail(exc),
    )


# -- tools ----------------------------------------------------------------------
def _start_tool(recorder: Recorder, call: Call) -> Any:
    func_call = call.get("func_call") or {}
    name = func_call.get("name") if isinstance(func_call, dict) else None
    return recorder.start_tool_call(
        str(name or "unknown"),
        arguments=func_call.get("arguments") if isinstance(func_call, dict) else None,
        call_id=call.get("call_id"),
    )


def _end_tool(call: Any, result: Any) -> None:
    success, payload = result if isinstance(result, tuple) and len(result) == 2 else (True, result)
    content = payload.get("content") if isinstance(payload, dict) else payload
    call.set_result(content, success=bool(success))
    call.end()


def tool_calls(recorder: Recorder) -> Traced:
    return Traced(
        "ag2.execute_function",
        begin=lambda _, call: _start_tool(recorder, call),
        finish=_end_tool,
        fail=lambda call, exc: call.fail(exc),
        params=("func_call", "call_id"),
    )


# -- handoffs -------------------------------------------------------------------
def _handoff_reason(conv: Conversation, groupchat: Any) -> str | None:
    """The reason AG2 chose the next speaker; None means "the transition event parked on the conversation"."""
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
        return None  # Handoff.end takes it, atomically with the handoff's index
    if last.get("role") == "tool":
        return sc.HANDOFF_TOOL_RETURN
    return sc.HANDOFF_AFTER_WORK


def _is_no_speaker(exc: BaseException) -> bool:
    return type(exc).__name__ == "NoEligibleSpeakerError"


# Selection methods that never run a chat of their own: nothing inside them to keep out of the conversation.
_NO_INTERNAL_CHAT = frozenset(("round_robin", "random", "manual"))


def handoffs(recorder: Recorder) -> Traced:
    def begin(instance: Any, call: Call) -> Any:
        conv = recorder.current()
        if conv is None:
            return None
        handoff = recorder.start_handoff(_name(call.get("last_speaker")), candidates=instance.agent_names)
        if handoff is None:
            return None
        method = instance.speaker_selection_method
        internal_chat = not (isinstance(method, str) and method.lower() in _NO_INTERNAL_CHAT)
        return conv, instance, handoff, internal_chat

    def finish(handle: Any, speaker: Any) -> None:
        conv, groupchat, handoff, _ = handle
        handoff.end(_name(speaker) if speaker is not None else None, reason=_handoff_reason(conv, groupchat))

    def fail(handle: Any, exc: BaseException) -> None:
        conv, groupchat, handoff, _ = handle
        _end_failed_selection(recorder, conv, groupchat, handoff, exc)

    def inside(handle: Any) -> Any:
        # LLM selection (and a custom function or the group API) may run an internal chat: machinery, not
        # conversation, so it runs suppressed. A static method runs none: no context switch to pay for.
        return recorder.suppressed() if handle[3] else None

    return Traced("ag2.select_speaker", begin=begin, finish=finish, fail=fail, inside=inside, params=("last_speaker",))


def _end_failed_selection(
    recorder: Recorder, conv: Conversation, groupchat: Any, handoff: Any, exc: BaseException
) -> None:
    if _is_no_speaker(exc):
        # A selection that names nobody ends the chat on purpose (the group API's TerminateTarget, or a custom
        # function returning None): a handoff to "terminate", not an error.
        reason = _handoff_reason(conv, groupchat)
        if reason is None:
            reason = conv.pending_handoff_reason or sc.HANDOFF_ROUTING
        handoff.end(None, reason=reason)
        if not isinstance(groupchat.speaker_selection_method, str):
            recorder.terminate(sc.TERMINATION_HANDOFF, detail=f"{reason} handoff to terminate")
        return
    handoff.fail(exc)
