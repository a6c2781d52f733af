"""The trace processor: the SDK's spans, as they start and end, mapped onto recorder calls.

The SDK calls every registered processor synchronously from the code that starts or finishes a span, so each
callback knows the SDK span's parent (``parent_id``, from the SDK's own context tracking) and nothing else.
mast-otel therefore keeps one node per open SDK span, holding the OpenTelemetry context that node's children
are recorded in. Recorder calls run inside a private copy of that context (``contextvars.Context.run``), and a
span the recorder opens is closed in the same copy, so nothing is attached to the program's own context: the
SDK's run, the user's spans and other processors see exactly what they would without mast-otel.

One module of about 430 lines on purpose: the node table and the eight span-type mappings share that table and
its context rule; split apart, a reader would have to hold the rule across files to check any one mapping.
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any

from mast_otel import semconv as sc
from mast_otel._safety import guarded, safe_call
from mast_otel.recorder import AgentTurn, Conversation, Handoff, Recorder, ToolCall

from ._content import ModelCall, ToolCallRequest, iso_to_ns, read_model_call

__all__ = ["MastTraceProcessor"]

_MAX_TURNS_ERROR = "Max turns exceeded"
_TRIPWIRE_ERROR = "Guardrail tripwire triggered"
_USER = "user"
# Tool calls and transfer calls are executed by the SDK's runner, not by another agent.
_RUNTIME = "<runtime>"


class SDKSpanError(Exception):
    """An error the SDK attached to one of its spans (the SDK hands processors its message, not the exception)."""


class _Run:
    """One SDK run (``Runner.run`` / ``run_sync`` / ``run_streamed``): its conversation and what was learnt."""

    __slots__ = (
        "conv",
        "delegated_by",
        "error",
        "handed",
        "has_data",
        "input_recorded",
        "last_agent",
        "owned",
        "termination",
        "token",
    )

    def __init__(self, conv: Conversation, token: object | None, owned: bool, delegated_by: _Node | None) -> None:
        self.conv = conv
        self.token = token
        self.owned = owned  # False when the run joined a conversation the program had open
        self.delegated_by = delegated_by  # the tool call that ran this run (an agent used as a tool)
        self.last_agent: str | None = None
        self.input_recorded = False
        self.has_data: bool | None = None  # does the run put content in its traces? Known after one model call
        # (from, to, transfer arguments): the target's first model call shows what it got
        self.handed: tuple[str, str, str | None] | None = None
        self.termination: tuple[str, str | None] | None = None
        self.error: str | None = None  # the latest error no later model call recovered from


class _Node:
    """An open SDK span that mast-otel records: the context its children are recorded in."""

    __slots__ = ("agent", "ctx", "last_calls", "obj", "run", "sdk")

    def __init__(self, ctx: contextvars.Context, run: _Run, agent: str | None, obj: Any, sdk: Any) -> None:
        self.ctx = ctx
        self.run = run
        self.agent = agent  # the agent whose turn this is (None at run level)
        self.obj = obj  # the recorder object to close at span end
        self.sdk = sdk  # the SDK span data (an agent's handoffs and tools are filled in after it starts)
        self.last_calls: tuple[ToolCallRequest, ...] = ()  # the agent's latest model call's tool calls


class MastTraceProcessor:
    """An OpenAI Agents SDK ``TracingProcessor`` (registered with ``add_trace_processor``) feeding the recorder.

    ``recorder`` records content per mast-otel's settings; ``quiet`` is the same recorder with content capture
    off, used for runs whose SDK settings keep content out of traces (``trace_include_sensitive_data=False``).
    """

    def __init__(self, recorder: Recorder, quiet: Recorder) -> None:
        self._rec = recorder
        self._quiet = quiet
        self._nodes: dict[str, _Node] = {}
        self._trace_runs: dict[str, _Node] = {}  # runs opened from a trace (task spans turned off)
        self._trace_names: dict[str, str] = {}
        self._lock = threading.Lock()
        self.enabled = True
        self.provider: Any = None  # the SDK trace provider this processor is registered with

    def configure(self, recorder: Recorder, quiet: Recorder) -> None:
        self._rec, self._quiet = recorder, quiet
        self.enabled = True

    @property
    def open_entries(self) -> int:
        """SDK spans and traces this processor holds state for (they are forgotten when they end)."""
        with self._lock:
            return len(self._nodes) + len(self._trace_runs) + len(self._trace_names)

    def forget_open(self) -> None:
        """Drop the state of every open span and trace: called when this processor was out of the SDK's list and
        may have missed their ends (their spans are then never ended, so never exported)."""
        with self._lock:
            self._nodes.clear()
            self._trace_runs.clear()
            self._trace_names.clear()

    # -- TracingProcessor ------------------------------------------------------------------
    # The SDK calls these from the program's own code: each is guarded (mast_otel._safety), so a recording failure
    # is counted under its callback's kind, logged once, and never raised into the run.
    @guarded("openai_agents.on_trace_start")
    def on_trace_start(self, trace: Any) -> None:
        if self.enabled:
            self._trace_start(trace)

    @guarded("openai_agents.on_trace_end")
    def on_trace_end(self, trace: Any) -> None:
        self._trace_end(trace)

    @guarded("openai_agents.on_span_start")
    def on_span_start(self, span: Any) -> None:
        if self.enabled:
            self._span_start(span)

    @guarded("openai_agents.on_span_end")
    def on_span_end(self, span: Any) -> None:
        self._span_end(span)

    def shutdown(self) -> None:
        """Nothing buffered here: the OpenTelemetry provider exports (and shuts down) mast-otel's spans."""

    def force_flush(self) -> None:
        """Nothing buffered here (see :meth:`shutdown`)."""

    # -- plumbing ---------------------------------------------------------------------------
    def _put(self, key: str, node: _Node) -> None:
        with self._lock:
            self._nodes[key] = node

    def _pop(self, key: str) -> _Node | None:
        with self._lock:
            return self._nodes.pop(key, None)

    def _parent(self, span: Any) -> _Node | None:
        parent_id = span.parent_id
        if parent_id is None:
            return None
        with self._lock:
            return self._nodes.get(parent_id)

    def _recorder(self, run: _Run) -> Recorder:
        return self._quiet if run.has_data is False else self._rec

    # -- traces: a run's root when the SDK's task spans are turned off ------------------------
    def _trace_start(self, trace: Any) -> None:
        with self._lock:
            self._trace_names[trace.trace_id] = trace.name

    def _trace_end(self, trace: Any) -> None:
        with self._lock:
            self._trace_names.pop(trace.trace_id, None)
            node = self._trace_runs.pop(trace.trace_id, None)
        if node is not None:
            self._finish_run(node, None)

    def _trace_run(self, span: Any) -> _Node | None:
        with self._lock:
            node = self._trace_runs.get(span.trace_id)
            name = self._trace_names.get(span.trace_id)
        if node is not None or name is None:
            return node
        node = self._open_run(name, None, iso_to_ns(span.started_at))
        if node is not None:
            with self._lock:
                self._trace_runs[span.trace_id] = node
        return node

    # -- spans ------------------------------------------------------------------------------
    def _span_start(self, span: Any) -> None:
        with self._lock:
            if span.span_id in self._nodes:  # handed the same span twice (registered twice): record it once
                return
        data = span.span_data
        kind = data.type
        parent = self._parent(span)
        start = iso_to_ns(span.started_at)
        if kind == "task":
            node = self._open_run(data.name, parent, start)
        elif kind == "agent":
            if parent is None:
                parent = self._trace_run(span)
            node = self._open_agent(data, parent, start) if parent is not None else None
        elif parent is None:
            return
        elif kind in ("function", "guardrail"):
            node = self._open_tool(parent, data, start)
        elif kind == "handoff":
            handoff, transfer = self._open_handoff(parent, data, start)
            node = _Node(parent.ctx, parent.run, parent.agent, handoff, data) if handoff is not None else None
            if node is not None and transfer is not None:
                node.last_calls = (transfer,)
        else:  # turn, generation, response, custom, MCP listing ...: recorded through their parent
            node = parent
        if node is not None:
            self._put(span.span_id, node)

    def _span_end(self, span: Any) -> None:
        node = self._pop(span.span_id)
        if node is None:
            return
        data = span.span_data
        kind = data.type
        end = iso_to_ns(span.ended_at)
        error = span.error
        if kind == "task":
            self._finish_run(node, end)
        elif kind == "agent":
            self._finish_agent(node, error, end)
        elif kind == "function":
            self._finish_tool(node, data, error, end)
        elif kind == "guardrail":
            self._finish_guardrail(node, data, end)
        elif kind == "handoff":
            self._finish_handoff(node, data, end)
        elif kind in ("generation", "response"):
            self._model_call(node, span, error)

    # -- runs -------------------------------------------------------------------------------
    def _open_run(self, name: str, parent: _Node | None, start: int | None) -> _Node | None:
        ctx = parent.ctx.copy() if parent is not None else contextvars.copy_context()
        rec = self._rec if parent is None else self._recorder(parent.run)
        opened = ctx.run(rec.start_conversation, name, start_time=start)
        if opened is None:
            conv = ctx.run(Recorder.current)
            if conv is None:
                return None  # recording is suppressed where the run started
            run = _Run(conv, None, False, None)
        else:
            delegated_by = parent if parent is not None and isinstance(parent.obj, ToolCall) else None
            run = _Run(opened[0], opened[1], True, delegated_by)
        if parent is not None:
            run.has_data = parent.run.has_data
        return _Node(ctx, run, None, None, None)

    def _finish_run(self, node: _Node, end: int | None) -> None:
        run = node.run
        rec = self._recorder(run)
        if run.termination is not None:
            reason, detail = run.termination
        elif run.error is not None:
            reason, detail = sc.TERMINATION_ERROR, run.error
        else:
            reason, detail = sc.TERMINATION_COMPLETED, None
        # Guarded on its own: the root must end (and be judged) even when its termination cannot be recorded.
        safe_call("openai_agents.terminate", node.ctx.run, rec.terminate, reason, detail, run.last_agent)
        if run.owned:
            node.ctx.run(rec.end_conversation, run.conv, run.token, end_time=end)

    # -- agents -----------------------------------------------------------------------------
    def _open_agent(self, data: Any, parent: _Node, start: int | None) -> _Node | None:
        run = parent.run
        rec = self._recorder(run)
        name = str(data.name)
        outer = run.delegated_by
        if outer is not None and run.last_agent is None and outer.agent is not None:
            # An agent used as a tool: the calling agent delegates to this run's first agent.
            handoff = outer.ctx.copy().run(rec.start_handoff, outer.agent, candidates=[name], start_time=start)
            if handoff is not None:
                handoff.end(name, reason=sc.HANDOFF_DELEGATION, end_time=start)
        run.last_agent = name
        ctx = parent.ctx.copy()
        turn = ctx.run(rec.start_agent_turn, name, start_time=start)
        if turn is None:
            return None
        return _Node(ctx, run, name, turn, data)

    def _finish_agent(self, node: _Node, error: Any, end: int | None) -> None:
        run, turn = node.run, node.obj
        message = _error_message(error)
        failure: BaseException | None = None
        if message == _MAX_TURNS_ERROR:
            limit = _error_data(error).get("max_turns")
            run.termination = (sc.TERMINATION_MAX_TURNS, f"max_turns={limit}" if limit is not None else None)
        elif message == _TRIPWIRE_ERROR:
            if run.termination is None or run.termination[0] != sc.TERMINATION_GUARDRAIL:
                guardrail = _error_data(error).get("guardrail")
                run.termination = (sc.TERMINATION_GUARDRAIL, f"guardrail {guardrail}: tripwire triggered")
        elif message is not None:
            run.error = message
            failure = SDKSpanError(message)
        if isinstance(turn, AgentTurn):
            if failure is not None:
                node.ctx.run(turn.fail, failure, end_time=end)
            else:
                node.ctx.run(turn.end, end_time=end)

    # -- model calls: messages ----------------------------------------------------------------
    def _model_call(self, node: _Node, span: Any, error: Any) -> None:
        run = node.run
        agent = node.agent
        if agent is None:
            return
        call = read_model_call(span.span_data)
        if run.has_data is None:
            run.has_data = call.has_data
        rec = self._rec if call.has_data else self._quiet
        start, end = iso_to_ns(span.started_at), iso_to_ns(span.ended_at)
        ctx = node.ctx.copy()
        if not run.input_recorded:
            run.input_recorded = True
            outer = run.delegated_by
            sender = outer.agent if outer is not None and outer.agent else _USER
            ctx.run(rec.message, sender, [agent], call.user_input, timestamp=start)
            if call.user_input is not None:
                rec.set_task(run.conv, call.user_input)
        elif run.handed is not None and run.handed[1] == agent:
            ctx.run(rec.message, run.handed[0], [agent], _received(call, run.handed[2]), timestamp=start)
        run.handed = None
        message = _error_message(error)
        if message is not None:
            run.error = message
            return
        run.error = None
        node.last_calls = call.tool_calls
        if not call.has_data:
            ctx.run(rec.message, agent, [], None, timestamp=end)
        elif call.tool_calls:
            calls = [{"name": c.name, "arguments": c.arguments} for c in call.tool_calls]
            ctx.run(rec.message, agent, [_RUNTIME], call.text, kind=sc.KIND_TOOL_CALL, tool_calls=calls, timestamp=end)
        else:
            outer = run.delegated_by
            recipient = outer.agent if outer is not None and outer.agent else _USER
            ctx.run(rec.message, agent, [recipient], call.text, timestamp=end)

    # -- tools and guardrails ------------------------------------------------------------------
    def _open_tool(self, parent: _Node, data: Any, start: int | None) -> _Node | None:
        """A function tool, or a guardrail check (recorded as a tool call of type ``guardrail``)."""
        tool_type = sc.TOOL_TYPE_GUARDRAIL if data.type == "guardrail" else "function"
        ctx = parent.ctx.copy()  # the recorder makes the tool span current in this copy: its children nest in it
        rec = self._recorder(parent.run)
        call = ctx.run(rec.start_tool_call, str(data.name), start_time=start, tool_type=tool_type)
        return _Node(ctx, parent.run, parent.agent, call, data) if call is not None else None

    def _finish_tool(self, node: _Node, data: Any, error: Any, end: int | None) -> None:
        call = node.obj
        if not isinstance(call, ToolCall):
            return
        call.set_arguments(data.input)
        message = _error_message(error)
        result = data.output
        if result is None and message is not None:
            result = _error_data(error).get("error", message)
        if message is not None:
            node.run.error = message
        call.set_result(result, success=message is None)
        node.ctx.run(call.end, end_time=end)

    def _finish_guardrail(self, node: _Node, data: Any, end: int | None) -> None:
        call = node.obj
        if not isinstance(call, ToolCall):
            return
        triggered = bool(data.triggered)
        call.span.set_attribute(sc.GUARDRAIL_TRIGGERED, triggered)
        call.set_result("tripwire triggered" if triggered else "passed", success=not triggered)
        if triggered:
            node.run.termination = (sc.TERMINATION_GUARDRAIL, f"guardrail {data.name}: tripwire triggered")
        node.ctx.run(call.end, end_time=end)

    # -- handoffs -----------------------------------------------------------------------------
    def _open_handoff(
        self, parent: _Node, data: Any, start: int | None
    ) -> tuple[Handoff | None, ToolCallRequest | None]:
        """The handoff, and the LLM's transfer call that asked for it (the first call that is no function tool)."""
        source = str(data.from_agent or parent.agent or "?")
        sdk = parent.sdk
        candidates = [str(h) for h in (getattr(sdk, "handoffs", None) or ())]
        tools = set(getattr(sdk, "tools", None) or ())
        transfers = [c for c in parent.last_calls if c.name not in tools]
        detail = f"{transfers[0].name}({transfers[0].arguments})" if transfers else None
        rec = self._recorder(parent.run)
        handoff: Handoff | None = parent.ctx.copy().run(
            rec.start_handoff, source, candidates=candidates, detail=detail, start_time=start
        )
        return handoff, transfers[0] if transfers else None

    def _finish_handoff(self, node: _Node, data: Any, end: int | None) -> None:
        handoff = node.obj
        if not isinstance(handoff, Handoff):
            return
        target = str(data.to_agent) if data.to_agent is not None else None
        handoff.end(target, reason=sc.HANDOFF_TOOL_CALL, end_time=end)
        if target is not None and data.from_agent is not None:
            arguments = node.last_calls[0].arguments if node.last_calls else None
            node.run.handed = (str(data.from_agent), target, arguments)


def _received(call: ModelCall, arguments: str | None) -> str | None:
    """What an agent that took control received (after any input filter): the history handed over, the LLM's
    transfer arguments, and the request it now handles (the last user message, else the last item). Said as a
    hand-over, not as the request itself: the SDK passes the history, no one sends the request again (a resend
    would read as a conversation reset)."""
    if not call.has_data:
        return None
    request = call.user_input if call.user_input is not None else call.last_input
    passed = f"; transfer arguments {arguments}" if arguments and arguments.strip() not in ("", "{}") else ""
    return f"[handed over: {call.input_items} items of conversation history{passed}; the request] {request or ''}"


def _error_message(error: Any) -> str | None:
    if not error:
        return None
    if isinstance(error, dict):
        message = error.get("message")
        return str(message) if message is not None else "error"
    return str(error)


def _error_data(error: Any) -> dict[str, Any]:
    data = error.get("data") if isinstance(error, dict) else None
    return data if isinstance(data, dict) else {}
