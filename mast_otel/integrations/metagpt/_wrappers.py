"""Wrapper factories for MetaGPT 0.8 methods: each maps one MetaGPT call onto recorder calls.

Every wrapper returns the wrapped method's result unchanged and re-raises its exceptions unchanged; only the
spans differ. Wrappers are installed on the classes (and on subclasses that override them, see ``Overrides``),
so roles, environments and teams created before ``instrument()`` are covered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from mast_otel import semconv as sc
from mast_otel.recorder import AgentTurn, Recorder

from . import _routing as r
from ._state import ACTING, PUBLISHING, ROLE_RUN, RUN, Overrides, RoleRun, Run, Wrapper

Factory = Callable[[Recorder, Overrides], Wrapper]
AsyncWrapped = Callable[..., Awaitable[Any]]

# The action a turn performs. Not in semconv yet; picked up from there under this name once it is.
_NO_MONEY = "NoMoneyException"  # metagpt.utils.common: raised by Team._check_balance over budget


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, key: str, default: Any = None) -> Any:
    if len(args) > index:
        return args[index]
    return kwargs.get(key, default)


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


def traced_team_run(recorder: Recorder, overrides: Overrides) -> Wrapper:
    async def wrapper(wrapped: AsyncWrapped, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        env = getattr(instance, "env", None)
        overrides.cover_env(env)
        n_round = _as_int(_arg(args, kwargs, 0, "n_round", 3), 3)
        idea = _arg(args, kwargs, 1, "idea", "") or getattr(instance, "idea", "")
        opened = recorder.start_conversation(type(instance).__name__, task=idea or None, max_rounds=n_round)
        if opened is None:
            return await wrapped(*args, **kwargs)
        conv, token = opened
        run = Run(env, n_round)
        run_token = RUN.set(run)
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            RUN.reset(run_token)
            if run.budget is not None:
                recorder.terminate(sc.TERMINATION_BUDGET, detail=str(run.budget))
            recorder.end_conversation(conv, token, run.error or exc)
            raise
        RUN.reset(run_token)
        # Team.run returns the history; None means its serialize_decorator swallowed an exception.
        recorder.end_conversation(conv, token, _settle(recorder, run, failed_silently=result is None))
        return result

    return wrapper


def watched_check_balance(recorder: Recorder, overrides: Overrides) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            return wrapped(*args, **kwargs)
        except Exception as exc:
            run = RUN.get()
            if run is not None and run.env is getattr(instance, "env", None):
                if type(exc).__name__ == _NO_MONEY:
                    run.budget = exc
                else:
                    run.fail(exc)
            raise

    return wrapper


def traced_env_run(recorder: Recorder, overrides: Overrides) -> Wrapper:
    async def wrapper(wrapped: AsyncWrapped, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        k = _as_int(_arg(args, kwargs, 0, "k", 1), 1)
        run = RUN.get()
        if run is not None and run.env is instance:
            # One round (or k) of a run whose root is already open (Team.run): count it, note a failure.
            if run.in_env_run:
                return await wrapped(*args, **kwargs)
            run.rounds += k
            run.in_env_run = True
            try:
                return await wrapped(*args, **kwargs)
            except BaseException as exc:
                run.fail(exc)
                raise
            finally:
                run.in_env_run = False
        overrides.cover_env(instance)
        opened = recorder.start_conversation(type(instance).__name__, max_rounds=k)
        if opened is None:
            return await wrapped(*args, **kwargs)
        conv, token = opened
        run = Run(instance, k)
        run.rounds = k
        run.in_env_run = True
        run_token = RUN.set(run)
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            RUN.reset(run_token)
            recorder.end_conversation(conv, token, run.error or exc)
            raise
        RUN.reset(run_token)
        recorder.end_conversation(conv, token, _settle(recorder, run))
        return result

    return wrapper


# -- agent turns ------------------------------------------------------------------------
def traced_role_run(recorder: Recorder, overrides: Overrides) -> Wrapper:
    async def wrapper(wrapped: AsyncWrapped, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        current = ROLE_RUN.get()
        if (current is not None and current.role is instance) or recorder.current() is None:
            return await wrapped(*args, **kwargs)
        if not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        overrides.cover(type(instance))
        role_run = RoleRun(instance)
        token = ROLE_RUN.set(role_run)
        try:
            return await wrapped(*args, **kwargs)
        finally:
            role_run.close()
            ROLE_RUN.reset(token)

    return wrapper


def traced_think(recorder: Recorder, overrides: Overrides) -> Wrapper:
    async def wrapper(wrapped: AsyncWrapped, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        role_run = ROLE_RUN.get()
        if role_run is None or role_run.role is not instance or role_run.turn is None:
            return await wrapped(*args, **kwargs)
        # Choosing the next action is not part of the previous action's turn, but that turn must stay open: when
        # _think finds nothing more to do, Role.run publishes the previous action's message next.
        token = otel_context.attach(role_run.base)
        try:
            return await wrapped(*args, **kwargs)
        finally:
            otel_context.detach(token)

    return wrapper


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
    async def wrapper(wrapped: AsyncWrapped, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if ACTING.get() is instance or recorder.current() is None or not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        role_run = ROLE_RUN.get()
        own = role_run is not None and role_run.role is instance
        if role_run is not None and own:
            role_run.close()
        turn = _start_turn(recorder, instance)
        if turn is None:
            return await wrapped(*args, **kwargs)
        acting = ACTING.set(instance)
        try:
            message = await wrapped(*args, **kwargs)
        except BaseException as exc:
            ACTING.reset(acting)
            turn.fail(exc)
            _note_failure(instance, exc)
            raise
        ACTING.reset(acting)
        if role_run is not None and own:
            # Left open and current (this coroutine shares the role task's context): Role.run publishes the
            # message next, and the message and its handoffs belong to this turn.
            role_run.turn = turn
        else:
            turn.end(replied=message is not None)
        return message

    return wrapper


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
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if PUBLISHING.get() is instance or recorder.current() is None or not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        message = _arg(args, kwargs, 0, "message")
        if message is not None:
            try:
                _record_publish(recorder, instance, message)
            except Exception:  # recording must never change the run
                pass
        token = PUBLISHING.set(instance)
        try:
            return wrapped(*args, **kwargs)
        finally:
            PUBLISHING.reset(token)

    return wrapper
