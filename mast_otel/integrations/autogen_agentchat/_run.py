"""The conversation root: one per ``BaseGroupChat.run_stream`` (``run`` goes through it).

``run_stream`` is an async generator, and the team's runtime is started inside its first step: the runtime's task
copies the context of that moment, so the manager and every participant see this run's conversation. The
generator's own context must not leak into the consumer between items (a container relaying a nested team's
messages is such a consumer: it must record them in the *outer* conversation), so the run's context is attached
around each step of the wrapped generator and detached before the item is handed on.

A team that runs inside another team's conversation (a team as a participant) is an agent of the outer team:
it gets an agent turn there, and its conversation is a child of that turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from mast_otel import semconv as sc
from mast_otel.recorder import AgentTurn, Conversation, Recorder

from ._messages import record_message
from ._runtime import RUNS
from ._state import FAILURES, RUN_KEY, TURN_KEY, RunState, current_turn

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]


def _task_messages(task: Any) -> list[Any]:
    from autogen_agentchat.messages import BaseChatMessage, TextMessage

    if isinstance(task, str):
        return [TextMessage(content=task, source="user")]
    if isinstance(task, BaseChatMessage):
        return [task]
    if isinstance(task, list):
        return [m for m in task if isinstance(m, BaseChatMessage)]
    return []


class _Run:
    """An open team run: its conversation, the outer turn it may sit in, and the context its steps run in."""

    __slots__ = ("context", "conversation", "outer_turn", "state", "team_id")

    def __init__(
        self, conversation: Conversation, state: RunState, context: Any, outer_turn: AgentTurn | None, team_id: str
    ):
        self.conversation = conversation
        self.state = state
        self.context = context
        self.outer_turn = outer_turn
        self.team_id = team_id


def _open(recorder: Recorder, team: Any, kwargs: dict[str, Any]) -> _Run | None:
    # Everything that reads the team comes first: once the root is open, only context bookkeeping may follow.
    messages = _task_messages(kwargs.get("task"))
    participants = tuple(str(getattr(p, "name", p)) for p in getattr(team, "_participants", ()))
    team_type = type(team).__name__
    name = str(team.name)
    manager = str(team._group_chat_manager_name)
    team_id = str(team._team_id)
    task = "\n".join(m.to_text() for m in messages) or None
    attrs = {sc.CONVERSATION_TEAM_TYPE: team_type, sc.CONVERSATION_PARTICIPANTS: list(participants)}
    outer_turn = None
    if Recorder.current() is not None and current_turn() is None:
        outer_turn = recorder.start_agent_turn(name)  # a team as a participant: its turn in the outer team
    opened = recorder.start_conversation(name, task=task, attributes=attrs)
    if opened is None:
        if outer_turn is not None:
            outer_turn.end()
        return None
    conversation, token = opened
    state = RunState(conversation, team_type, manager, participants)
    context = otel_context.set_value(TURN_KEY, None, otel_context.set_value(RUN_KEY, state))
    state.context = context
    RUNS[team_id] = state  # for a runtime the program started itself (see _runtime)
    otel_context.detach(token)  # type: ignore[arg-type]
    if outer_turn is not None:
        outer_turn.detach()
    run = _Run(conversation, state, context, outer_turn, team_id)
    if kwargs.get("output_task_messages", True):
        attached = otel_context.attach(context)
        try:
            for message in messages:
                record_message(recorder, state, message, None)
        except Exception:
            FAILURES.record("message")  # the root is open: the run is recorded without its task message
        finally:
            otel_context.detach(attached)
    return run


def _settle(conversation: Conversation, reason: str, detail: str | None) -> None:
    if conversation.termination is None:
        conversation.termination = reason
        conversation.termination_detail = detail


def _close(recorder: Recorder, run: _Run, stop_reason: str | None, exc: BaseException | None) -> None:
    if RUNS.get(run.team_id) is run.state:
        del RUNS[run.team_id]
    conversation = run.conversation
    if isinstance(exc, (asyncio.CancelledError, GeneratorExit)):
        detail = "the caller closed the stream" if isinstance(exc, GeneratorExit) else "the run was cancelled"
        _settle(conversation, sc.TERMINATION_CANCELLED, detail)
        # Cancelling is how a caller stops a run, not a fault of the run: no error status on the root.
        exc = None
    elif exc is None and conversation.termination is None:
        _settle(conversation, sc.TERMINATION_CUSTOM, stop_reason)
    recorder.end_conversation(conversation, None, exc)
    if run.outer_turn is not None:
        if exc is not None:
            run.outer_turn.fail(exc)
        else:
            run.outer_turn.end()


def team_runs(recorder: Recorder) -> Wrapper:
    """``BaseGroupChat.run_stream``: the conversation root, the task messages and how the run ended."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
        if not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        return _traced(recorder, wrapped(*args, **kwargs), instance, kwargs)

    return wrapper


async def _traced(recorder: Recorder, stream: Any, team: Any, kwargs: dict[str, Any]) -> AsyncGenerator[Any, None]:
    from autogen_agentchat.base import TaskResult

    try:
        run = _open(recorder, team, kwargs)
    except Exception:
        FAILURES.record("team run")
        run = None
    if run is None:
        try:
            async for item in stream:
                yield item
        finally:
            await stream.aclose()
        return
    stop_reason: str | None = None
    try:
        while True:
            token = otel_context.attach(run.context)
            try:
                item = await stream.__anext__()
            except StopAsyncIteration:
                break
            finally:
                otel_context.detach(token)
            if isinstance(item, TaskResult):
                stop_reason = item.stop_reason
            yield item
    except BaseException as exc:
        try:
            if isinstance(exc, GeneratorExit):
                await _aclose(stream, run.context)
        finally:
            _safe_close(recorder, run, stop_reason, exc)
        raise
    _safe_close(recorder, run, stop_reason, None)


async def _aclose(stream: Any, context: Any) -> None:
    token = otel_context.attach(context)
    try:
        await stream.aclose()
    finally:
        otel_context.detach(token)


def _safe_close(recorder: Recorder, run: _Run, stop_reason: str | None, exc: BaseException | None) -> None:
    try:
        _close(recorder, run, stop_reason, exc)
    except Exception:
        FAILURES.record("team run end")
