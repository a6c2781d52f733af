"""Wrapper factories for CrewAI 1.x: crew kickoffs, task executions, agent executions, tool runs, max_iter.

Every wrapper returns what CrewAI returns and re-raises what it raises, the same objects; the recording half runs
under :func:`mast_otel.integrations._safe.recording`. The crew being run and the agent whose turn it is travel in
context variables, so nested runs (a coworker executing inside the manager's delegation tool) nest correctly.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from mast_otel import semconv as sc
from mast_otel.integrations._safe import recording
from mast_otel.recorder import AgentTurn, Recorder, ToolCall

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]
_NAME = "crewai"
USER = "user"  # who gave the crew its tasks


@dataclass
class CrewRun:
    """One kickoff: the crew and the agent that finished the last task (sequential handoffs start there)."""

    crew: Any
    last_agent: str | None = None
    last_task: int | None = None


_RUN: ContextVar[CrewRun | None] = ContextVar("mast_otel_crewai_run", default=None)
_AGENT: ContextVar[str | None] = ContextVar("mast_otel_crewai_agent", default=None)


def _bind(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, key: str) -> Any:
    return args[index] if len(args) > index else kwargs.get(key)


def _role(agent: Any) -> str:
    return str(getattr(agent, "role", None) or "agent").strip()


def _tasks_text(crew: Any) -> str:
    tasks = list(getattr(crew, "tasks", None) or [])
    return "\n".join(f"{i + 1}. {getattr(t, 'description', '')}" for i, t in enumerate(tasks))


def _process(crew: Any) -> str:
    process = getattr(crew, "process", None)
    return str(getattr(process, "value", process) or "sequential")


# -- crew kickoffs ---------------------------------------------------------------------------
class _Kickoff:
    """The recording half of one kickoff: the conversation root, and the crew run in context."""

    def __init__(self, recorder: Recorder, crew: Any) -> None:
        self.recorder = recorder
        self.crew = crew
        self.opened: Any = None
        self.run = CrewRun(crew)
        self.token: Any = None

    def begin(self) -> bool:
        name = str(getattr(self.crew, "name", None) or "crew")
        attrs = {sc.CONVERSATION_PROCESS: _process(self.crew)}
        self.opened = self.recorder.start_conversation(name, task=_tasks_text(self.crew), attributes=attrs)
        if self.opened is None:
            return False
        self.token = _RUN.set(self.run)
        return True

    def end(self, exc: BaseException | None) -> None:
        if self.token is not None:
            _RUN.reset(self.token)
        conv, token = self.opened
        if exc is None:
            self.recorder.terminate(sc.TERMINATION_COMPLETED, agent=self.run.last_agent)
        self.recorder.end_conversation(conv, token, exc)


def traced_kickoff(recorder: Recorder) -> Wrapper:
    """``Crew.kickoff`` (``kickoff_async`` runs it in a thread): a conversation root per kickoff."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        kickoff = _Kickoff(recorder, instance)
        began = False
        with recording(_NAME):
            began = kickoff.begin()
        if not began:
            return wrapped(*args, **kwargs)
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            with recording(_NAME):
                kickoff.end(exc)
            raise
        with recording(_NAME):
            kickoff.end(None)
        return result

    return wrapper


def traced_akickoff(recorder: Recorder) -> Wrapper:
    """``Crew.akickoff``, CrewAI's native async kickoff."""

    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        kickoff = _Kickoff(recorder, instance)
        began = False
        with recording(_NAME):
            began = kickoff.begin()
        if not began:
            return await wrapped(*args, **kwargs)
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            with recording(_NAME):
                kickoff.end(exc)
            raise
        with recording(_NAME):
            kickoff.end(None)
        return result

    return wrapper


# -- tasks -----------------------------------------------------------------------------------
def _consumers(crew: Any, task: Any) -> list[str]:
    """The agents a task's output goes to: later tasks that take it as context (named, or every previous output
    when ``context`` is not given), in task order; none means it goes back to the user."""
    tasks = list(getattr(crew, "tasks", None) or [])
    if task not in tasks:
        return []
    out: list[str] = []
    for later in tasks[tasks.index(task) + 1 :]:
        context = getattr(later, "context", None)
        takes = task in context if isinstance(context, (list, tuple)) else bool(context)
        agent = getattr(later, "agent", None)
        if takes and agent is not None and _role(agent) not in out:
            out.append(_role(agent))
    return out


def _before_task(recorder: Recorder, run: CrewRun, task: Any, agent: Any) -> str:
    role = _role(agent if agent is not None else getattr(task, "agent", None))
    tasks = list(getattr(run.crew, "tasks", None) or [])
    index = tasks.index(task) if task in tasks else None
    candidates = list(dict.fromkeys(_role(a) for a in getattr(run.crew, "agents", None) or []))
    if run.last_agent is None:
        recorder.handoff(USER, role, reason=sc.HANDOFF_INITIAL, candidates=candidates, detail="the crew's first task")
    elif run.last_agent != role:
        detail = f"{_process(run.crew)} task order: task {_ordinal(run.last_task)} -> task {_ordinal(index)}"
        recorder.handoff(run.last_agent, role, reason=sc.HANDOFF_ROUTING, candidates=candidates, detail=detail)
    recorder.message(USER, [role], getattr(task, "description", ""))
    return role


def _ordinal(index: int | None) -> str:
    return "?" if index is None else str(index + 1)


def _after_task(recorder: Recorder, run: CrewRun, task: Any, role: str, output: Any) -> None:
    recorder.message(role, _consumers(run.crew, task) or [USER], getattr(output, "raw", output))
    run.last_agent = role
    tasks = list(getattr(run.crew, "tasks", None) or [])
    run.last_task = tasks.index(task) if task in tasks else None


def traced_execute_core(recorder: Recorder) -> Wrapper:
    """``Task._execute_core``: the handoff to the task's agent (task order), its assignment and its output."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        run = _RUN.get()
        if run is None or not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        role = None
        with recording(_NAME):
            role = _before_task(recorder, run, instance, _bind(args, kwargs, 0, "agent"))
        result = wrapped(*args, **kwargs)
        if role is not None:
            with recording(_NAME):
                _after_task(recorder, run, instance, role, result)
        return result

    return wrapper


def traced_aexecute_core(recorder: Recorder) -> Wrapper:
    """``Task._aexecute_core``, the async twin."""

    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        run = _RUN.get()
        if run is None or not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        role = None
        with recording(_NAME):
            role = _before_task(recorder, run, instance, _bind(args, kwargs, 0, "agent"))
        result = await wrapped(*args, **kwargs)
        if role is not None:
            with recording(_NAME):
                _after_task(recorder, run, instance, role, result)
        return result

    return wrapper


# -- agent turns -------------------------------------------------------------------------------
def traced_execute_task(recorder: Recorder) -> Wrapper:
    """``Agent.execute_task``: an agent turn (a coworker's turn nests inside the delegating tool call)."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if _RUN.get() is None or not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        turn: AgentTurn | None = None
        with recording(_NAME):
            turn = recorder.start_agent_turn(_role(instance))
        token = _AGENT.set(_role(instance))
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            _AGENT.reset(token)
            if turn is not None:
                with recording(_NAME):
                    turn.fail(exc)
            raise
        _AGENT.reset(token)
        if turn is not None:
            with recording(_NAME):
                turn.end(replied=True)
        return result

    return wrapper


def traced_aexecute_task(recorder: Recorder) -> Wrapper:
    """``Agent.aexecute_task``."""

    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if _RUN.get() is None or not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        turn: AgentTurn | None = None
        with recording(_NAME):
            turn = recorder.start_agent_turn(_role(instance))
        token = _AGENT.set(_role(instance))
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            _AGENT.reset(token)
            if turn is not None:
                with recording(_NAME):
                    turn.fail(exc)
            raise
        _AGENT.reset(token)
        if turn is not None:
            with recording(_NAME):
                turn.end(replied=True)
        return result

    return wrapper


# -- tools, delegation -------------------------------------------------------------------------
class _ToolRun:
    """One tool run; for CrewAI's coworker tools (delegate work, ask question), also the delegation around it."""

    def __init__(self, recorder: Recorder, tool: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.recorder = recorder
        self.tool = tool
        self.arguments: Any = dict(kwargs) if kwargs or not args else list(args)
        self.call: ToolCall | None = None
        self.manager: str | None = None
        self.coworker: str | None = None

    def begin(self) -> None:
        name = str(getattr(self.tool, "name", None) or type(self.tool).__name__)
        self.call = self.recorder.start_tool_call(name, arguments=self.arguments)
        coworker = self._coworker()
        if coworker is None:
            return
        self.manager, self.coworker = _AGENT.get() or "manager", coworker
        kwargs = self.arguments if isinstance(self.arguments, dict) else {}
        roles = [_role(a) for a in getattr(self.tool, "agents", None) or []]
        detail = f"{name}({json.dumps(kwargs, default=str, ensure_ascii=False, sort_keys=True)})"
        self.recorder.handoff(self.manager, coworker, reason=sc.HANDOFF_DELEGATION, candidates=roles, detail=detail)
        request = kwargs.get("task") or kwargs.get("question") or ""
        context = kwargs.get("context")
        self.recorder.message(self.manager, [coworker], f"{request}\n\nContext: {context}" if context else request)

    def _coworker(self) -> str | None:
        """The coworker a delegation tool names, as CrewAI matches it (role, case and spaces ignored)."""
        from crewai.tools.agent_tools.base_agent_tools import BaseAgentTool

        if not isinstance(self.tool, BaseAgentTool) or not isinstance(self.arguments, dict):
            return None
        wanted = str(self.arguments.get("coworker") or "").casefold().strip().strip('"')
        for agent in getattr(self.tool, "agents", None) or []:
            if _role(agent).casefold() == wanted:
                return _role(agent)
        return None  # CrewAI answers with an error string: no delegation happened

    def end(self, result: Any) -> None:
        if self.coworker is not None and self.manager is not None:
            self.recorder.message(self.coworker, [self.manager], result)
            self.recorder.handoff(self.coworker, self.manager, reason=sc.HANDOFF_TOOL_RETURN, detail="answer returned")
        if self.call is not None:
            self.call.set_result(result)
            self.call.end()

    def fail(self, exc: BaseException) -> None:
        if self.call is not None:
            self.call.fail(exc)


def traced_tool_run(recorder: Recorder) -> Wrapper:
    """``BaseTool.run`` / ``Tool.run``: CrewAI binds ``tool.run`` for native tool calls and runs it for ReAct ones."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if _RUN.get() is None or not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        run = _ToolRun(recorder, instance, args, kwargs)
        with recording(_NAME):
            run.begin()
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            with recording(_NAME):
                run.fail(exc)
            raise
        with recording(_NAME):
            run.end(result)
        return result

    return wrapper


def traced_tool_arun(recorder: Recorder) -> Wrapper:
    """``BaseTool.arun`` / ``Tool.arun``."""

    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if _RUN.get() is None or not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        run = _ToolRun(recorder, instance, args, kwargs)
        with recording(_NAME):
            run.begin()
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            with recording(_NAME):
                run.fail(exc)
            raise
        with recording(_NAME):
            run.end(result)
        return result

    return wrapper


# -- limits --------------------------------------------------------------------------------------
def watched_max_iterations(recorder: Recorder) -> Wrapper:
    """``handle_max_iterations_exceeded``: an agent ran out of ``max_iter`` and CrewAI forces its final answer."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if _RUN.get() is not None and is_instrumentation_enabled():
            with recording(_NAME):
                agent = _AGENT.get()
                detail = f"{agent or 'an agent'} reached max_iter; CrewAI forced a final answer"
                recorder.terminate(sc.TERMINATION_MAX_TURNS, detail=detail, agent=agent)
        return wrapped(*args, **kwargs)

    return wrapper
