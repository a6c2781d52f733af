"""The conversation root: one per ``BaseGroupChat.run_stream`` (``run`` goes through it).

``run_stream`` is an async generator, and the team's runtime is started inside its first step: the runtime's task
copies the context of that moment, so the manager and every participant see this run's conversation. The
generator's own context must not leak into the consumer between items (a container relaying a nested team's
messages is such a consumer: it must record them in the *outer* conversation), so the run's context is attached
around each step of the wrapped generator (the ``inside`` of the lifecycle's stream variant,
:func:`mast_otel.integrations.lifecycle.async_iterator_wrapper`) and detached before the item is handed on.

A team that runs inside another team's conversation (a team as a participant) is an agent of the outer team:
it gets an agent turn there, and its conversation is a child of that turn.
"""

from __future__ import annotations

import asyncio
from typing import Any

from opentelemetry import context as otel_context

from mast_otel import semconv as sc
from mast_otel._safety import safe_call
from mast_otel.integrations.lifecycle import Call, Traced
from mast_otel.recorder import AgentTurn, Conversation, Recorder

from ._messages import record_message
from ._runtime import RUNS
from ._state import RUN_KEY, TURN_KEY, RunState, attached, current_turn


def _task_messages(task: Any) -> list[Any]:
    from autogen_agentchat.messages import BaseChatMessage, TextMessage

    if isinstance(task, str):
        # mast-otel's own stand-in for the task the team will wrap itself: given an id, since the default one would
        # be drawn from uuid.uuid4() and shift the program's sequence (mast_otel._ids). The id is never recorded.
        return [TextMessage(content=task, source="user", id="")]
    if isinstance(task, BaseChatMessage):
        return [task]
    if isinstance(task, list):
        return [m for m in task if isinstance(m, BaseChatMessage)]
    return []


class _Run:
    """An open team run: its conversation, the outer turn it may sit in, and the context its steps run in."""

    __slots__ = ("context", "conversation", "outer_turn", "state", "stop_reason", "team_id")

    def __init__(
        self, conversation: Conversation, state: RunState, context: Any, outer_turn: AgentTurn | None, team_id: str
    ):
        self.conversation = conversation
        self.state = state
        self.context = context
        self.outer_turn = outer_turn
        self.team_id = team_id
        self.stop_reason: str | None = None  # TaskResult.stop_reason, once the stream yielded it


def _open(recorder: Recorder, team: Any, task_arg: Any, output_task_messages: bool) -> _Run | None:
    # Everything that reads the team comes first: once the root is open, only context bookkeeping may follow.
    messages = _task_messages(task_arg)
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
    if output_task_messages:
        with attached(context):
            # Guarded on its own: the root is open, so the run is recorded (without its task message) and ended.
            safe_call("autogen_agentchat.run.task", _record_task, recorder, state, messages)
    return run


def _record_task(recorder: Recorder, state: RunState, messages: list[Any]) -> None:
    for message in messages:
        record_message(recorder, state, message, None)


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


def team_runs(recorder: Recorder) -> Traced:
    """``BaseGroupChat.run_stream``: the conversation root, the task messages and how the run ended."""

    def begin(team: Any, call: Call) -> _Run | None:
        return _open(recorder, team, call.get("task"), bool(call.get("output_task_messages", True)))

    def see(run: _Run, item: Any) -> None:
        from autogen_agentchat.base import TaskResult

        if isinstance(item, TaskResult):
            run.stop_reason = item.stop_reason

    return Traced(
        "autogen_agentchat.run",
        begin,
        finish=lambda run, result: _close(recorder, run, run.stop_reason, None),
        fail=lambda run, exc: _close(recorder, run, run.stop_reason, exc),
        inside=lambda run: attached(run.context),
        params=("task", "output_task_messages"),
        see=see,
    )
