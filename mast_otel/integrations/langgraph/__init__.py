"""LangGraph 1.x (``langgraph>=1.0,<2``; built and tested against 1.2.24 with ``langgraph-supervisor`` 0.0.31 and
``langgraph-swarm`` 0.1.0).

``LangGraphInstrumentor().instrument()`` (or ``mast_otel.instrument()``, or ``opentelemetry-instrument``) patches
LangGraph's classes, so every graph, compiled before or after, is traced:

=================================================  ================================================================
LangGraph                                          recorder call
=================================================  ================================================================
``Pregel.stream`` / ``astream`` (``invoke`` and    conversation root per top-level run, named after the graph, with
``ainvoke`` run through them)                      the last human input message as the task, the ``thread_id``, and
                                                   one message span per input message (sender ``user``);
                                                   termination: ``completed`` (the graph reached ``__end__``),
                                                   ``max_turns`` (``GraphRecursionError``, with the recursion limit),
                                                   ``human_input`` (an interrupt) or ``error``
``pregel._runner.run_with_retry`` / ``arun_...``   every node execution: an agent turn around an *agent node*; at
                                                   the top level, one message span per message the node adds to
                                                   the shared state; a handoff per agent it sends control to
``ToolNode._execute_tool_sync`` / ``_async``       tool call, with the model's arguments (before state injection)
=================================================  ================================================================

Agent nodes: a node that runs a graph (a ``create_react_agent`` / ``create_agent`` graph, a supervisor or swarm
member, any compiled subgraph, also when a node function calls it), or any node marked with node metadata
``{"mast_otel.agent": True}`` (or the agent's name as the value); ``{"mast_otel.agent": False}`` unmarks one.

Messages: a message's sender is ``AIMessage.name`` (set by named agents, the supervisor and the swarm), else the
agent whose turn it is; a tool message's sender is the tool. Messages kept inside an agent's own graph (a
supervisor member's intermediate steps with ``output_mode="last_message"``) are not in the shared state and are
not message spans; their tool calls still are tool spans, inside the member's turn.

Handoffs (``mast.handoff.reason``): ``tool_call`` when a handoff tool's ``Command(goto=...)`` moved control (the
tool and its arguments as ``mast.handoff.detail``); ``routing`` for edges, conditional edges and a node's own
``Command``; ``initial_agent`` for the first agent of a run. langgraph-supervisor's "transfer back to supervisor"
is ``routing`` with ``mast.handoff.synthetic=true``: the library adds it, no model decides it.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Sequence
from typing import Any

import wrapt
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from mast_otel._safety import record_failure
from mast_otel.integrations import recorder_for
from mast_otel.integrations.lifecycle import async_iterator_wrapper, async_wrapper, iterator_wrapper, sync_wrapper
from mast_otel.integrations.patching import Hook, Patches
from mast_otel.recorder import Recorder

from . import _wrappers as w
from ._graph import AGENT_KEY as AGENT_METADATA_KEY

__all__ = ["AGENT_METADATA_KEY", "HOOKS", "LATER", "LangGraphInstrumentor"]

_MAIN = "langgraph.pregel.main"
_RUNNER = "langgraph.pregel._runner"  # run_with_retry is looked up here, as a module global, at each task
_TOOLS = "langgraph.prebuilt.tool_node"
# Not imported yet by graphs without prebuilt agents, and importing it from langgraph.pregel's post-import hook can
# meet a half-imported langgraph.graph: its hooks are applied when the program imports it.
LATER = _TOOLS

# The whole coverage list, greppable in one place.
HOOKS: tuple[Hook[Recorder], ...] = (
    Hook(_MAIN, "Pregel.stream", lambda r: iterator_wrapper(w.graph_runs(r))),
    Hook(_MAIN, "Pregel.astream", lambda r: async_iterator_wrapper(w.graph_runs(r))),
    Hook(_RUNNER, "run_with_retry", lambda r: sync_wrapper(w.tasks(r))),
    Hook(_RUNNER, "arun_with_retry", lambda r: async_wrapper(w.tasks(r))),
    Hook(_TOOLS, "ToolNode._execute_tool_sync", lambda r: sync_wrapper(w.tool_calls(r))),
    Hook(_TOOLS, "ToolNode._execute_tool_async", lambda r: async_wrapper(w.tool_calls(r))),
)


class LangGraphInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Spans for LangGraph runs, agent nodes, shared-state messages, handoffs, tool calls and termination."""

    _patches: Patches | None = None
    # What is left to patch when LATER is imported: (patches, hooks, recorder); None after uninstrument().
    _pending: tuple[Patches, Sequence[Hook[Recorder]], Recorder] | None = None
    _hooked = False

    def instrumentation_dependencies(self) -> Collection[str]:
        return ("langgraph >= 1.0, < 2",)

    def _instrument(self, **kwargs: Any) -> None:
        recorder = recorder_for("langgraph", kwargs)
        self._patches = patches = Patches("langgraph")
        later = [h for h in HOOKS if h.module == LATER and LATER not in sys.modules]
        if not patches.apply([h for h in HOOKS if h not in later], recorder) or not later:
            return
        self._pending = (patches, later, recorder)
        if not self._hooked:
            self._hooked = True
            wrapt.register_post_import_hook(self._apply_pending, LATER)

    def _apply_pending(self, _module: object) -> None:
        """Patch LATER's hooks, all or none: a missing one unpatches the whole framework. Runs inside the program's
        import statement, so nothing leaves it. Post-import hooks cannot be unregistered: after uninstrument()
        nothing is pending and this does nothing."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        patches, hooks, recorder = pending
        try:
            if not patches.apply(hooks, recorder):
                patches.undo()
        except Exception as exc:
            patches.undo()
            record_failure("langgraph.hook", exc)

    def _uninstrument(self, **kwargs: Any) -> None:
        self._pending = None
        if self._patches is not None:
            self._patches.undo()
