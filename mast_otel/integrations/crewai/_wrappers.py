"""Hooks for CrewAI 1.x: crew kickoffs, task executions, agent executions, tool runs, max_iter.

Each is a :class:`mast_otel.integrations.lifecycle.Traced` (the one lifecycle of every integration, for the sync
and async method): the wrapped call returns what CrewAI returns and raises what it raises, the same objects, and a
recording failure is counted in ``mast_otel.recording_failures()``, never raised. The
crew being run and the agent whose turn it is travel in context variables, so nested runs (a coworker executing
inside the manager's delegation tool) nest correctly.
"""

from __future__ import annotations

import json
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any

from mast_otel import semconv as sc
from mast_otel._safety import safe_call
from mast_otel.integrations.lifecycle import Call, Traced
from mast_otel.recorder import AgentTurn, Recorder, ToolCall

USER = "user"  # who gave the crew its tasks


@dataclass
class CrewRun:
    """One kickoff: the crew and the agent that finished the last task (sequential handoffs start there)."""

    crew: Any
    last_agent: str | None = None
    last_task: int | None = None


_RUN: ContextVar[CrewRun | None] = ContextVar("mast_otel_crewai_run", default=None)
_AGENT: ContextVar[str | None] = ContextVar("mast_otel_crewai_agent", default=None)


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
        if exc is None:  # guarded on its own: the root must end (and leave the program's context) regardless
            safe_call("crewai.kickoff.terminate", self._completed)
        self.recorder.end_conversation(conv, token, exc)

    def _completed(self) -> None:
        self.recorder.terminate(sc.TERMINATION_COMPLETED, agent=self.run.last_agent)


def kickoffs(recorder: Recorder) -> Traced:
    """``Crew.kickoff`` / ``akickoff`` (``kickoff_async`` runs ``kickoff`` in a thread): a root per kickoff."""

    def begin(crew: Any, _: Call) -> _Kickoff | None:
        kickoff = _Kickoff(recorder, crew)
        return kickoff if kickoff.begin() else None

    return Traced("crewai.kickoff", begin, finish=lambda k, result: k.end(None), fail=lambda k, exc: k.end(exc))


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


def tasks(recorder: Recorder) -> Traced:
    """``Task._execute_core`` / ``_aexecute_core``: the handoff to the task's agent (task order), its assignment
    and its output."""

    def begin(task: Any, call: Call) -> tuple[CrewRun, Any, str] | None:
        run = _RUN.get()
        if run is None:
            return None
        return run, task, _before_task(recorder, run, task, call.get("agent"))

    def finish(handle: tuple[CrewRun, Any, str], output: Any) -> None:
        run, task, role = handle
        _after_task(recorder, run, task, role, output)

    return Traced("crewai.task", begin, finish=finish, params=("agent",))


# -- agent turns -------------------------------------------------------------------------------
def agent_turns(recorder: Recorder) -> Traced:
    """``Agent.execute_task`` / ``aexecute_task``: an agent turn (a coworker's nests in the delegating tool call)."""

    def begin(agent: Any, _: Call) -> tuple[AgentTurn | None, Token[Any]] | None:
        if _RUN.get() is None:
            return None
        return recorder.start_agent_turn(_role(agent)), _AGENT.set(_role(agent))

    def finish(handle: tuple[AgentTurn | None, Token[Any]], result: Any) -> None:
        turn, token = handle
        _AGENT.reset(token)
        if turn is not None:
            turn.end(replied=True)

    def fail(handle: tuple[AgentTurn | None, Token[Any]], exc: BaseException) -> None:
        turn, token = handle
        _AGENT.reset(token)
        if turn is not None:
            turn.fail(exc)

    return Traced("crewai.agent", begin, finish=finish, fail=fail)


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
        # Guarded on its own: the tool call is open, so a failure here must still leave a handle to end it.
        safe_call("crewai.tool.delegation", self._delegate, name)

    def _delegate(self, name: str) -> None:
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


def tool_runs(recorder: Recorder) -> Traced:
    """``BaseTool.run`` / ``Tool.run`` (and ``arun``): CrewAI binds ``tool.run`` for native tool calls and runs it
    for ReAct ones."""

    def begin(tool: Any, call: Call) -> _ToolRun | None:
        if _RUN.get() is None:
            return None
        run = _ToolRun(recorder, tool, call.args, call.kwargs)  # a tool's own arguments: ``run(*args, **kwargs)``
        run.begin()
        return run

    return Traced("crewai.tool", begin, finish=lambda run, result: run.end(result), fail=lambda run, exc: run.fail(exc))


# -- limits --------------------------------------------------------------------------------------
def max_iterations(recorder: Recorder) -> Traced:
    """``handle_max_iterations_exceeded``: an agent ran out of ``max_iter`` and CrewAI forces its final answer."""

    def begin(_: Any, __: Call) -> None:
        if _RUN.get() is not None:
            agent = _AGENT.get()
            detail = f"{agent or 'an agent'} reached max_iter; CrewAI forced a final answer"
            recorder.terminate(sc.TERMINATION_MAX_TURNS, detail=detail, agent=agent)
        return None  # nothing to close: the call itself runs untraced

    return Traced("crewai.max_iterations", begin)
