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
from collections.abc import Collection
from typing import Any

import wrapt
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from mast_otel.integrations import recorder_for
from mast_otel.integrations.lifecycle import async_iterator_wrapper, async_wrapper, iterator_wrapper, sync_wrapper
from mast_otel.integrations.wrapped_methods import WrappedMethods

from . import _wrappers as w
from ._graph import AGENT_KEY as AGENT_METADATA_KEY

__all__ = ["AGENT_METADATA_KEY", "LangGraphInstrumentor"]

_MAIN = "langgraph.pregel.main"
_RUNNER = "langgraph.pregel._runner"  # run_with_retry is looked up here, as a module global, at each task
_TOOLS = "langgraph.prebuilt.tool_node"

# (module, attribute path, wrapper factory): the whole coverage list, greppable in one place.
_TARGETS: tuple[tuple[str, str, Any], ...] = (
    (_MAIN, "Pregel.stream", lambda r: iterator_wrapper(w.graph_runs(r))),
    (_MAIN, "Pregel.astream", lambda r: async_iterator_wrapper(w.graph_runs(r))),
    (_RUNNER, "run_with_retry", lambda r: sync_wrapper(w.tasks(r))),
    (_RUNNER, "arun_with_retry", lambda r: async_wrapper(w.tasks(r))),
    (_TOOLS, "ToolNode._execute_tool_sync", lambda r: sync_wrapper(w.tool_calls(r))),
    (_TOOLS, "ToolNode._execute_tool_async", lambda r: async_wrapper(w.tool_calls(r))),
)


class LangGraphInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Spans for LangGraph runs, agent nodes, shared-state messages, handoffs, tool calls and termination."""

    _methods: WrappedMethods | None = None

    def instrumentation_dependencies(self) -> Collection[str]:
        return ("langgraph >= 1.0, < 2",)

    def _instrument(self, **kwargs: Any) -> None:
        recorder = recorder_for("langgraph", kwargs)
        self._methods = methods = WrappedMethods()
        self._pending: dict[tuple[str, str], Any] = {}
        self._hooked: set[str] = getattr(self, "_hooked", set())
        for module, path, factory in _TARGETS:
            if module in sys.modules or module != _TOOLS:
                methods.wrap(module, path, factory(recorder))
                continue
            # Not imported yet (graphs without prebuilt agents never import it), and importing it from here can
            # meet a half-imported langgraph.graph: patch it when the program imports it.
            self._pending[(module, path)] = factory(recorder)
            if module not in self._hooked:
                self._hooked.add(module)
                wrapt.register_post_import_hook(self._later(module), module)

    def _later(self, module: str) -> Any:
        def hook(_module: object) -> None:
            # Post-import hooks cannot be unregistered: after uninstrument() nothing is pending and this does nothing.
            for (mod, path), wrapper in list(self._pending.items()):
                if mod == module and self._methods is not None:
                    del self._pending[(mod, path)]
                    self._methods.wrap(mod, path, wrapper)

        return hook

    def _uninstrument(self, **kwargs: Any) -> None:
        self._pending = {}
        if self._methods is not None:
            self._methods.unwrap_all()
