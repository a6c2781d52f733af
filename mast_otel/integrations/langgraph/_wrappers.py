"""Wrappers for LangGraph: graph runs (``Pregel.stream`` / ``astream``), node tasks (``run_with_retry``) and tool
calls (``ToolNode``).

Each is a :class:`mast_otel.integrations.lifecycle.Traced` (the one lifecycle of every integration: the graph runs
through its stream variant), so every wrapper returns what LangGraph returns and re-raises what it raises, the same
objects, and a recording failure is counted in ``mast_otel.recording_failures()``, never raised.

State travels in the OpenTelemetry context, as the recorder's does: a graph run attaches its :class:`Frame` around
each step it takes (``next()`` of the stream), and a node task attaches its :class:`Task` while it runs. LangGraph
copies the context into the threads and asyncio tasks that run nodes, so a subgraph, a tool or a parallel branch
finds the frame and task it belongs to.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.util.types import AttributeValue

from mast_otel import semconv as sc
from mast_otel._safety import safe_call
from mast_otel.integrations.lifecycle import Call, Traced
from mast_otel.recorder import AgentTurn, Conversation, Recorder, ToolCall

from . import _graph as g

_FRAME_KEY = otel_context.create_key("mast-otel-langgraph-frame")
_TASK_KEY = otel_context.create_key("mast-otel-langgraph-task")
_DEFAULT_GRAPH_NAME = "LangGraph"  # what LangGraph calls a graph nobody named


@dataclass
class Run:
    """One top-level graph invocation: the messages already recorded (LangGraph hands the same ones back often)."""

    seen_ids: set[str] = field(default_factory=set)
    seen_objects: dict[int, Any] = field(default_factory=dict)  # id() -> message, kept alive so ids stay unique
    # When a node of any graph first wrote a message (by message id, else by object, kept alive so ids stay unique):
    # a message reaches the shared state only when the agent's whole turn ends, but is placed where it was produced.
    produced: dict[Any, tuple[Any, int]] = field(default_factory=dict)
    last_time: int = 0
    interrupted: str | None = None

    def note_produced(self, messages: list[Any]) -> None:
        now = time.time_ns()
        for message in messages:
            self.produced.setdefault(_key(message), (message, now))

    def placed(self, message: Any) -> int:
        """When to place a message: when it was produced, never before the message recorded before it."""
        produced = self.produced.get(_key(message))
        when = max(produced[1] if produced is not None else time.time_ns(), self.last_time)
        self.last_time = when
        return when

    def is_new(self, message: Any) -> bool:
        msg_id = getattr(message, "id", None)
        return id(message) not in self.seen_objects and (msg_id is None or msg_id not in self.seen_ids)

    def see(self, message: Any) -> None:
        self.seen_objects[id(message)] = message
        msg_id = getattr(message, "id", None)
        if msg_id is not None:
            self.seen_ids.add(msg_id)


def _key(message: Any) -> Any:
    msg_id = getattr(message, "id", None)
    return msg_id if msg_id is not None else id(message)


@dataclass
class Frame:
    """One graph being run (the top-level graph at depth 0, a subgraph deeper) and the agent that ran last in it."""

    graph: Any
    depth: int
    run: Run
    agents: dict[str, str]
    last_agent: str | None = None

    @property
    def fallback_sender(self) -> str:
        name = getattr(self.graph, "name", None)
        return name if isinstance(name, str) and name != _DEFAULT_GRAPH_NAME else ""


@dataclass
class Task:
    """One node execution: its agent (None for plain nodes) and the handoff tools' ``Command``s run inside it."""

    name: str
    agent: str | None
    parent: Task | None
    commands: dict[str, str] = field(default_factory=dict)  # target node -> "tool(args)"


def _current(key: str) -> Any:
    return otel_context.get_value(key)


@contextmanager
def _attached(ctx: Any) -> Iterator[None]:
    token = otel_context.attach(ctx)
    try:
        yield
    finally:
        otel_context.detach(token)


# -- graph runs --------------------------------------------------------------------------
class _GraphRun:
    """The recording half of one ``stream``/``astream`` call, shared by the sync and async iterators."""

    def __init__(self, recorder: Recorder, graph: Any, input: Any, config: Any) -> None:
        self.recorder = recorder
        self.graph = graph
        self.input = input
        self.config = config or {}
        self.conversation: Conversation | None = None
        self.frame: Frame | None = None
        self.context: Any = None

    def begin(self) -> None:
        outer: Frame | None = _current(_FRAME_KEY)
        agents = g.graph_agents(self.graph)
        if outer is not None:  # a subgraph, or a graph a node calls: part of the run already open
            self.frame = Frame(self.graph, outer.depth + 1, outer.run, agents)
            self.context = otel_context.set_value(_FRAME_KEY, self.frame)
            return
        self.frame = Frame(self.graph, 0, Run(), agents)
        attrs: dict[str, AttributeValue] = {}
        thread_id = (self.config.get("configurable") or {}).get("thread_id")
        if thread_id is not None:
            attrs[sc.CONVERSATION_THREAD_ID] = str(thread_id)
        name = getattr(self.graph, "name", None) or _DEFAULT_GRAPH_NAME
        opened = self.recorder.start_conversation(name, task=g.task_text(self.input), attributes=attrs)
        token = None
        if opened is not None:
            self.conversation, token = opened
        try:
            self.context = otel_context.set_value(_FRAME_KEY, self.frame)
            # Guarded on its own: the conversation is open, so a failure here must still leave a handle to end it.
            safe_call("langgraph.stream.input", self._record_input, list(dict.fromkeys(agents.values())) or [name])
        finally:
            if token is not None:
                otel_context.detach(token)  # type: ignore[arg-type]

    def _record_input(self, audience: list[str]) -> None:
        for message in g.input_messages(self.input):
            self.recorder.message(g.sender_of(message, None, g.USER), audience, message.content)

    def observe(self, chunk: Any) -> None:
        """Spot an interrupt in what the graph streams (``invoke`` always streams "updates", which carry it)."""
        if self.frame is None or self.frame.depth or self.frame.run.interrupted is not None:
            return
        parts = chunk if isinstance(chunk, tuple) else (chunk,)
        for part in parts:
            if isinstance(part, dict) and "__interrupt__" in part:
                self.frame.run.interrupted = str(part["__interrupt__"])

    def finish(self, exc: BaseException | None) -> None:
        if self.conversation is None or self.frame is None:
            return
        with _attached(self.context):
            # Guarded on its own: the root must end (and be judged) even when its termination cannot be recorded.
            safe_call("langgraph.stream.terminate", self._terminate, exc)
        self.recorder.end_conversation(self.conversation, None, exc)

    def _terminate(self, exc: BaseException | None) -> None:
        from langgraph.errors import GraphRecursionError

        frame = self.frame
        assert frame is not None  # finish() checked
        run = frame.run
        if isinstance(exc, GraphRecursionError):
            limit = self.config.get("recursion_limit")
            if limit is None:  # LangGraph's default: its error message names it
                found = re.search(r"[Rr]ecursion limit of (\d+)", str(exc))
                limit = found.group(1) if found else "default"
            detail = f"recursion_limit={limit}"
            self.recorder.terminate(sc.TERMINATION_MAX_TURNS, detail=detail, agent=frame.last_agent)
        elif exc is None and run.interrupted is not None:
            self.recorder.terminate(sc.TERMINATION_HUMAN_INPUT, detail=run.interrupted, agent=frame.last_agent)
        elif exc is None:
            self.recorder.terminate(sc.TERMINATION_COMPLETED, agent=frame.last_agent)


def graph_runs(recorder: Recorder) -> Traced:
    """``Pregel.stream`` / ``astream`` (``invoke`` / ``ainvoke`` run through them): a conversation root per
    top-level run; the graph's frame is attached around each step the stream takes."""

    def begin(graph: Any, call: Call) -> _GraphRun:
        run = _GraphRun(recorder, graph, call.get("input"), call.get("config"))
        run.begin()
        return run

    return Traced(
        "langgraph.stream",
        begin,
        finish=lambda run, result: run.finish(None),
        fail=lambda run, exc: run.finish(None if isinstance(exc, GeneratorExit) else exc),  # closed early: ended
        inside=lambda run: _attached(run.context) if run.context is not None else None,
        params=("input", "config"),
        see=lambda run, chunk: run.observe(chunk),
    )


# -- node tasks ----------------------------------------------------------------------------
class _TaskRun:
    """The recording half of one node task: an agent turn around an agent node, then its messages and handoffs."""

    def __init__(self, recorder: Recorder, frame: Frame, task: Any) -> None:
        self.recorder = recorder
        self.frame = frame
        self.task = task
        self.turn: AgentTurn | None = None
        self.state: Task | None = None
        self.token: object | None = None

    def begin(self) -> None:
        task = self.task
        agent = None if task.name == g.START else g.task_agent(task)
        if agent is not None:
            self.turn = self.recorder.start_agent_turn(agent)
        self.state = Task(task.name, agent, _current(_TASK_KEY))
        self.token = otel_context.attach(otel_context.set_value(_TASK_KEY, self.state))

    def end(self, exc: BaseException | None) -> None:
        from langgraph.errors import GraphBubbleUp, GraphInterrupt

        state = self.state
        if self.token is not None:
            otel_context.detach(self.token)  # type: ignore[arg-type]
            self.token = None
        try:
            if state is not None and state.parent is not None:
                # A handoff tool runs in a task of the agent's own graph; the handoff happens one graph up.
                state.parent.commands.update(state.commands)
            if isinstance(exc, GraphInterrupt):
                self._interrupted(exc)
            elif exc is None and state is not None:
                if self.frame.depth:
                    self.frame.run.note_produced(g.written_messages(self.task.writes))
                if self.frame.depth == 0 and self.task.name != g.START:
                    self._record_messages(state)
                self._record_handoffs(state)
                if state.agent is not None:
                    self.frame.last_agent = state.agent
        finally:
            if self.turn is not None:
                if exc is None or isinstance(exc, GraphBubbleUp):
                    self.turn.end()  # an interrupt or a Command for a parent graph is control flow, not failure
                else:
                    self.turn.fail(exc)

    def _interrupted(self, exc: BaseException) -> None:
        run = self.frame.run
        if run.interrupted is None:
            run.interrupted = str(exc.args[0]) if exc.args else "interrupt"
        agent = self.state.agent if self.state is not None else None
        agent = agent or self.frame.last_agent
        self.recorder.terminate(sc.TERMINATION_HUMAN_INPUT, detail=run.interrupted, agent=agent)

    def _record_messages(self, state: Task) -> None:
        run = self.frame.run
        for message in g.messages_in(self.task.input):
            run.see(message)  # the state the node started from: not new
        agents = list(dict.fromkeys(self.frame.agents.values()))
        fallback = self.frame.fallback_sender or self.task.name
        for message in g.written_messages(self.task.writes):
            if not run.is_new(message):
                continue
            run.see(message)
            sender = g.sender_of(message, state.agent, fallback)
            calls = g.tool_calls_of(message)
            if calls:
                recipients = [str(c.get("name")) for c in calls]
            elif getattr(message, "type", None) == "tool":
                recipients = [state.agent or fallback]
            else:
                recipients = [a for a in agents if a != sender] or [g.USER]
            self.recorder.message(
                sender,
                recipients,
                message.content,
                kind=g.kind_of(message),
                tool_calls=calls,
                timestamp=run.placed(message),
            )

    def _record_handoffs(self, state: Task) -> None:
        frame = self.frame
        if self.task.name == g.START and frame.depth:
            return  # a subgraph's entry repeats the decision its parent graph already recorded
        for node in g.targets(self.task.writes):
            target = frame.agents.get(node)
            if target is None:
                continue
            source = state.agent or frame.last_agent
            if source == target:
                continue
            attributes: dict[str, AttributeValue] = {}
            if node in state.commands:
                reason, detail = sc.HANDOFF_TOOL_CALL, state.commands[node]
            else:
                reason, detail = g.routing_detail(frame.graph, self.task.name, node)
                back = [m for m in g.written_messages(self.task.writes) if g.is_handoff_back(m)]
                if back:
                    names = [c.get("name") for m in back for c in g.tool_calls_of(m)]
                    detail = f"{', '.join(map(str, names))}: added by langgraph-supervisor, not a model decision"
                    attributes[sc.HANDOFF_SYNTHETIC] = True
            if source is None:
                source, reason = g.USER, sc.HANDOFF_INITIAL
            self.recorder.handoff(
                source,
                target,
                reason=reason,
                candidates=list(dict.fromkeys(frame.agents.values())),
                detail=detail,
                attributes=attributes,
            )


def tasks(recorder: Recorder) -> Traced:
    """``langgraph.pregel._runner.run_with_retry`` / ``arun_with_retry``: every node execution of every graph."""

    def begin(_: Any, call: Call) -> _TaskRun | None:
        frame: Frame | None = _current(_FRAME_KEY)
        if frame is None:
            return None
        run = _TaskRun(recorder, frame, call.get("task"))
        run.begin()
        return run

    return Traced(
        "langgraph.task",
        begin,
        finish=lambda run, result: run.end(None),
        fail=lambda run, exc: run.end(exc),
        params=("task",),
    )


# -- tools ---------------------------------------------------------------------------------
def tool_calls(recorder: Recorder) -> Traced:
    """``ToolNode._execute_tool_sync`` / ``_async``: one tool call (the request holds the model's call, before
    LangGraph injects state into the arguments)."""

    def begin(_: Any, bound: Call) -> tuple[ToolCall, dict[str, Any]] | None:
        if _current(_FRAME_KEY) is None:
            return None
        request = bound.get("request")
        tool_call = dict(getattr(request, "tool_call", None) or {})
        name, arguments = str(tool_call.get("name")), tool_call.get("args")
        call = recorder.start_tool_call(name, arguments=arguments, call_id=tool_call.get("id"))
        return (call, tool_call) if call is not None else None

    def finish(handle: tuple[ToolCall, dict[str, Any]], result: Any) -> None:
        call, tool_call = handle
        gotos = g.command_targets(result)
        task: Task | None = _current(_TASK_KEY)
        if task is not None:
            for node in gotos:
                task.commands[node] = g.describe_call(str(tool_call.get("name")), tool_call.get("args"))
        results = result if isinstance(result, list) else [result]
        texts = [getattr(r, "content", None) for r in results if getattr(r, "type", None) == "tool"]
        failed = any(getattr(r, "status", None) == "error" for r in results)
        if gotos:
            texts.append(f"Command(goto={gotos})")
        call.set_result(texts[0] if len(texts) == 1 else texts, success=not failed)
        call.end()

    def fail(handle: tuple[ToolCall, dict[str, Any]], exc: BaseException) -> None:
        from langgraph.errors import GraphBubbleUp

        call, _ = handle
        if isinstance(exc, GraphBubbleUp):
            call.end()  # an interrupt or a Command for a parent graph: control flow, not failure
        else:
            call.fail(exc)

    return Traced("langgraph.tool", begin, finish=finish, fail=fail, params=("request",))
