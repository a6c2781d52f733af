"""Traced concerns for MetaGPT 0.8 methods: each maps one MetaGPT call onto recorder calls.

Each is a :class:`~mast_otel.integrations.lifecycle.Traced` run by the shared sync/async lifecycle, so the
program's results and exceptions pass through unchanged and a recording failure is counted, never raised.
Wrappers are installed on the classes (and on subclasses that override them, see ``Overrides``), so roles,
environments and teams created before ``instrument()`` are covered. Every ``begin`` sets its context state
(``RUN``, ``ROLE_RUN``, ...) last, so a failure part-way leaves nothing behind for ``finish`` to undo.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry import context as otel_context

from mast_otel import semconv as sc
from mast_otel._safety import safe_call
from mast_otel.integrations.lifecycle import Call, Traced, async_wrapper, sync_wrapper
from mast_otel.recorder import AgentTurn, Recorder

from . import _routing as r
from ._state import ACTING, PUBLISHING, ROLE_RUN, RUN, Overrides, RoleRun, Run, Wrapper

Factory = Callable[[Recorder, Overrides], Wrapper]

_NO_MONEY = "NoMoneyException"  # metagpt.utils.common: raised by Team._check_balance over budget


def _as_int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


# -- conversation roots and termination -------------------------------------------------
def _settle(recorder: Recorder, run: Run, failed_silently: bool = False) -> BaseException | None:
    """Record why the run ended; returns the exception to put on the root (None for a clean or budget stop)."""
    if run.budget is not None:
        recorder.terminate(sc.TERMINATION_BUDGET, detail=str(run.budget))
        return None
    if run.error is not None:
        return run.error
    if failed_silently:
        recorder.terminate(sc.TERMINATION_ERROR, detail="the run raised; MetaGPT logged and swallowed the exception")
        return None
    busy = r.busy_roles(run.env)
    if not busy:
        recorder.terminate(sc.TERMINATION_IDLE, detail=f"every role idle after {run.rounds} of {run.n_round} rounds")
    elif run.rounds >= run.n_round:
        detail = f"all {run.n_round} rounds used; roles not idle: {', '.join(busy)}"
        recorder.terminate(sc.TERMINATION_MAX_ROUNDS, detail=detail)
    return None


def _open_root(recorder: Recorder, name: str, env: Any, n_round: int, task: Any = None) -> Any:
    opened = recorder.start_conversation(name, task=task, max_rounds=n_round)
    if opened is None:
        return None
    run = Run(env, n_round)
    return opened, run, RUN.set(run)


def _close_root(recorder: Recorder, handle: Any, result: Any, team: bool) -> None:
    (conv, token), run, run_token = handle
    RUN.reset(run_token)
    # Team.run returns the history; None means its serialize_decorator swallowed an exception.
    recorder.end_conversation(conv, token, _settle(recorder, run, failed_silently=team and result is None))


def _fail_root(recorder: Recorder, handle: Any, exc: BaseException) -> None:
    (conv, token), run, run_token = handle
    RUN.reset(run_token)
    if run.budget is not None:
        recorder.terminate(sc.TERMINATION_BUDGET, detail=str(run.budget))
    recorder.end_conversation(conv, token, run.error or exc)


def traced_team_run(recorder: Recorder, overrides: Overrides) -> Wrapper:
    def begin(team: Any, call: Call) -> Any:
        env = getattr(team, "env", None)
        overrides.cover_env(env)
        n_round = _as_int(call.get("n_round"), 3)
        idea = call.get("idea") or getattr(team, "idea", "")
        return _open_root(recorder, type(team).__name__, env, n_round, task=idea or None)

    return async_wrapper(
        Traced(
            "metagpt.team_run",
            begin=begin,
            finish=lambda handle, result: _close_root(recorder, handle, result, team=True),
            fail=lambda handle, exc: _fail_root(recorder, handle, exc),
            params=("n_round", "idea"),
        )
    )


def watched_check_balance(recorder: Recorder, overrides: Overrides) -> Wrapper:
    def begin(team: Any, call: Call) -> Any:
        run = RUN.get()
        return run if run is not None and run.env is getattr(team, "env", None) else None

    def fail(run: Run, exc: BaseException) -> None:
        if not isinstance(exc, Exception):
            return
        if type(exc).__name__ == _NO_MONEY:
            run.budget = exc
        else:
            run.fail(exc)

    return sync_wrapper(Traced("metagpt.check_balance", begin=begin, fail=fail))


def traced_env_run(recorder: Recorder, overrides: Overrides) -> Wrapper:
    def begin(env: Any, call: Call) -> Any:
        k = _as_int(call.get("k"), 1)
        run = RUN.get()
        if run is not None and run.env is env:
            # One round (or k) of a run whose root is already open (Team.run): count it, note a failure.
            if run.in_env_run:
                return None
            run.rounds += k
            run.in_env_run = True
            return run
        overrides.cover_env(env)
        handle = _open_root(recorder, type(env).__name__, env, k)
        if handle is not None:
            handle[1].rounds = k
            handle[1].in_env_run = True
        return handle

    def finish(handle: Any, result: Any) -> None:
        if isinstance(handle, Run):
            handle.in_env_run = False
        else:
            _close_root(recorder, handle, result, team=False)

    def fail(handle: Any, exc: BaseException) -> None:
        if isinstance(handle, Run):
            handle.fail(exc)
            handle.in_env_run = False
        else:
            _fail_root(recorder, handle, exc)

    return async_wrapper(Traced("metagpt.env_run", begin=begin, finish=finish, fail=fail, params=("k",)))


# -- agent turns ------------------------------------------------------------------------
def _end_role_run(handle: tuple[RoleRun, Any], _: Any) -> None:
    role_run, token = handle
    role_run.close()
    ROLE_RUN.reset(token)


def traced_role_run(recorder: Recorder, overrides: Overrides) -> Wrapper:
    def begin(role: Any, call: Call) -> Any:
        current = ROLE_RUN.get()
        if (current is not None and current.role is role) or recorder.current() is None:
            return None
        overrides.cover(type(role))
        role_run = RoleRun(role)
        return role_run, ROLE_RUN.set(role_run)

    return async_wrapper(Traced("metagpt.role_run", begin=begin, finish=_end_role_run, fail=_end_role_run))


def traced_think(recorder: Recorder, overrides: Overrides) -> Wrapper:
    def begin(role: Any, call: Call) -> Any:
        role_run = ROLE_RUN.get()
        if role_run is None or role_run.role is not role or role_run.turn is None:
            return None
        # Choosing the next action is not part of the previous action's turn, but that turn must stay open: when
        # _think finds nothing more to do, Role.run publishes the previous action's message next.
        return otel_context.attach(role_run.base)

    def end(token: Any, _: Any) -> None:
        otel_context.detach(token)

    return async_wrapper(Traced("metagpt.think", begin=begin, finish=end, fail=end))


def _start_turn(recorder: Recorder, role: Any) -> AgentTurn | None:
    turn = recorder.start_agent_turn(r.role_name(role))
    if turn is not None and turn.span.is_recording():
        todo = getattr(getattr(role, "rc", None), "todo", None)
        if todo is not None:
            name = getattr(todo, "name", None)
            turn.span.set_attribute(sc.TURN_ACTION, name if isinstance(name, str) and name else type(todo).__name__)
    return turn


def _note_failure(role: Any, exc: BaseException) -> None:
    run = RUN.get()
    if run is not None and run.env is getattr(getattr(role, "rc", None), "env", None):
        run.fail(exc)


def traced_act(recorder: Recorder, overrides: Overrides) -> Wrapper:
    def begin(role: Any, call: Call) -> Any:
        if ACTING.get() is role or recorder.current() is None:
            return None
        role_run = ROLE_RUN.get()
        own = role_run is not None and role_run.role is role
        if role_run is not None and own:
            role_run.close()
        turn = _start_turn(recorder, role)
        if turn is None:
            return None
        return role, turn, role_run if own else None, ACTING.set(role)

    def finish(handle: Any, message: Any) -> None:
        _, turn, role_run, acting = handle
        ACTING.reset(acting)
        if role_run is not None:
            # Left open and current (this coroutine shares the role task's context): Role.run publishes the
            # message next, and the message and its handoffs belong to this turn.
            role_run.turn = turn
        else:
            turn.end(replied=message is not None)

    def fail(handle: Any, exc: BaseException) -> None:
        role, turn, _, acting = handle
        ACTING.reset(acting)
        turn.fail(exc)
        _note_failure(role, exc)

    return async_wrapper(Traced("metagpt.act", begin=begin, finish=finish, fail=fail))


# -- messages and handoffs ----------------------------------------------------------------
def _record_publish(recorder: Recorder, env: Any, message: Any) -> None:
    role_run = ROLE_RUN.get()
    publisher = None
    if role_run is not None and getattr(getattr(role_run.role, "rc", None), "env", None) is env:
        publisher = role_run.role
    sender, sender_role = r.resolve_sender(message, env, publisher)
    send_to = getattr(message, "send_to", None) or {r.ROUTE_TO_ALL}
    delivered, takers = r.route(message, env, sender_role)
    audience = [r.role_name(role) for role in delivered]
    cause = getattr(message, "cause_by", None)
    recorder.message(
        sender,
        r.recipients(send_to, env),
        getattr(message, "content", None),
        cause=cause if isinstance(cause, str) and cause else None,
        broadcast_to=audience if r.ROUTE_TO_ALL in send_to and audience else None,
    )
    for role in takers:
        recorder.handoff(sender, r.role_name(role), reason=sc.HANDOFF_ROUTING, candidates=audience)


def traced_publish_message(recorder: Recorder, overrides: Overrides) -> Wrapper:
    def begin(env: Any, call: Call) -> Any:
        if PUBLISHING.get() is env or recorder.current() is None:
            return None
        message = call.get("message")
        if message is not None:
            safe_call("metagpt.publish_message.record", _record_publish, recorder, env, message)
        return PUBLISHING.set(env)

    def end(token: Any, _: Any) -> None:
        PUBLISHING.reset(token)

    return sync_wrapper(Traced("metagpt.publish_message", begin=begin, finish=end, fail=end, params=("message",)))
