"""CrewAI 1.x (``crewai>=1.0,<2``; built and tested against 1.15.30).

``CrewAIInstrumentor().instrument()`` (or ``mast_otel.instrument()``, or ``opentelemetry-instrument``) patches
CrewAI's classes, so every crew, task, agent and tool, created before or after, is traced:

==========================================  ====================================================================
CrewAI                                      recorder call
==========================================  ====================================================================
``Crew.kickoff`` / ``akickoff``             conversation root per kickoff (``kickoff_async`` runs ``kickoff``
                                            in a thread), the numbered task descriptions as the task,
                                            ``mast.conversation.process``; termination ``completed``, ``error``,
                                            or ``max_turns`` when an agent ran out of ``max_iter``
``Task._execute_core`` / ``_aexecute_...``  a handoff to the task's agent when it differs from the previous
                                            task's (reason ``routing``, detail the task order; the first task:
                                            ``initial_agent`` from ``user``), the assignment as a message
                                            ``user -> agent``, the output as a message to the agents of the
                                            tasks that take it as context (else to ``user``)
``Agent.execute_task`` / ``aexecute_task``  agent turn (``invoke_agent {role}``)
``BaseTool.run`` / ``Tool.run`` (+ arun)    tool call; for CrewAI's coworker tools ("Delegate work to
                                            coworker", "Ask question to coworker") also a ``delegation`` handoff
                                            manager -> coworker (the tool's arguments as detail), the request as
                                            a message, the coworker's turn nested inside, its answer as a message
                                            back and a ``tool_return`` handoff
``handle_max_iterations_exceeded``          notes ``max_turns`` (the agent's answer was forced)
==========================================  ====================================================================

Why not CrewAI's event bus: it runs synchronous handlers on a worker thread after the event (``emit`` submits
them to a thread pool), so a handler cannot open a span that the agent's own work nests in, and handlers of
consecutive events may run out of order. The hooks above are the methods that emit those events.

CrewAI's anonymous telemetry uses its own private TracerProvider, never the global one: mast-otel neither sees
nor changes it. ``CREWAI_DISABLE_TELEMETRY=true`` turns it off; ``OTEL_SDK_DISABLED=true`` turns it off too, but
also turns off the OpenTelemetry SDK, and with it mast-otel's spans.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from mast_otel.integrations import recorder_for
from mast_otel.integrations.lifecycle import async_wrapper, sync_wrapper
from mast_otel.integrations.patching import Hook, Patches
from mast_otel.recorder import Recorder

from . import _wrappers as w

__all__ = ["HOOKS", "CrewAIInstrumentor"]

_CREW = "crewai.crew"
_TASK = "crewai.task"
_AGENT = "crewai.agent.core"
_TOOL = "crewai.tools.base_tool"
_EXECUTOR = "crewai.agents.agent_executor"  # imports handle_max_iterations_exceeded by name

# The whole coverage list, greppable in one place.
HOOKS: tuple[Hook[Recorder], ...] = (
    Hook(_CREW, "Crew.kickoff", lambda r: sync_wrapper(w.kickoffs(r))),
    Hook(_CREW, "Crew.akickoff", lambda r: async_wrapper(w.kickoffs(r))),
    Hook(_TASK, "Task._execute_core", lambda r: sync_wrapper(w.tasks(r))),
    Hook(_TASK, "Task._aexecute_core", lambda r: async_wrapper(w.tasks(r))),
    Hook(_AGENT, "Agent.execute_task", lambda r: sync_wrapper(w.agent_turns(r))),
    Hook(_AGENT, "Agent.aexecute_task", lambda r: async_wrapper(w.agent_turns(r))),
    Hook(_TOOL, "BaseTool.run", lambda r: sync_wrapper(w.tool_runs(r))),
    Hook(_TOOL, "BaseTool.arun", lambda r: async_wrapper(w.tool_runs(r))),
    Hook(_TOOL, "Tool.run", lambda r: sync_wrapper(w.tool_runs(r))),
    Hook(_TOOL, "Tool.arun", lambda r: async_wrapper(w.tool_runs(r))),
    Hook(_EXECUTOR, "handle_max_iterations_exceeded", lambda r: sync_wrapper(w.max_iterations(r))),
)


class CrewAIInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Spans for CrewAI kickoffs, agent executions, task outputs, task-order and delegation handoffs, tools."""

    _patches: Patches | None = None

    def instrumentation_dependencies(self) -> Collection[str]:
        return ("crewai >= 1.0, < 2",)

    def _instrument(self, **kwargs: Any) -> None:
        self._patches = Patches("crewai")
        self._patches.apply(HOOKS, recorder_for("crewai", kwargs))

    def _uninstrument(self, **kwargs: Any) -> None:
        if self._patches is not None:
            self._patches.undo()
