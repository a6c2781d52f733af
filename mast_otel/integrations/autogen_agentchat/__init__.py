"""Microsoft autogen-agentchat 0.7 teams (``autogen-agentchat>=0.7,<0.8``; built and tested against 0.7.5).

``AutogenAgentChatInstrumentor().instrument()`` (or ``mast_otel.instrument()``, or ``opentelemetry-instrument``)
patches autogen-agentchat's classes, so every team and agent, created before or after, is traced. The framework
is async only; so is everything here.

=================================================  =============================================================
autogen-agentchat                                  recorder call
=================================================  =============================================================
``BaseGroupChat.run_stream`` (``run`` uses it)     conversation root per team run: task, team type, participants;
                                                   a team inside another team's run is an agent turn there and a
                                                   child conversation; the task messages; cancellation
``ChatAgentContainer._log_message``                a message per chat message of a participant; its events (tool
                                                   call request, thought, streamed chunk) folded into its turn
``trace_invoke_agent_span`` (in the container)     agent turn per participant activation
``AssistantAgent._execute_tool_call``              tool call (handoff tools too) with arguments and result
``BaseGroupChatManager._transition_to_next_...``   handoff opened while the manager selects
``BaseGroupChatManager._log_speaker_selection``    handoff recorded per selected speaker, reason by team type:
                                                   ``round_robin``, ``llm_selection`` (selector's raw answer and
                                                   attempts), ``custom_function``, ``tool_call`` (Swarm),
                                                   ``graph_edge`` (GraphFlow edges and conditions), ...
``SelectorGroupChatManager._mentioned_agents``     the selector LLM's raw answer, once per attempt
``DiGraphEdge.check_condition``                    the graph edges whose condition held
``BaseGroupChatManager.update_message_thread``     messages the manager authors (Magentic-One's ledger, orders)
``MagenticOneOrchestrator._orchestrate_step``      a ledger-driven handoff: ``progress_ledger`` with the ledger's
 / ``extract_json_from_str`` / ``publish_message``  ``next_speaker.reason`` as the stated reason; stalls
``MagenticOneOrchestrator._update_task_ledger``    re-plan and stall events on the root
``MagenticOneOrchestrator._reenter_outer_loop``    facts and plan event on the root
``MagenticOneOrchestrator._prepare_final_answer``  termination ``completed`` (the ledger's reason) / ``max_rounds``
``BaseGroupChatManager._signal_termination``       termination: reason from the stop condition class that fired
 (``_with_error``)                                 (``__call__`` of each ``autogen_agentchat.conditions`` class),
                                                   ``max_turns``, ``graph_complete``; ``error``
``SingleThreadedAgentRuntime._process_send`` /     a runtime the program started itself: a message to a team's
 ``_process_publish``                              agents is processed in that team's run
=================================================  =============================================================
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from mast_otel.integrations import recorder_for
from mast_otel.integrations.lifecycle import async_iterator_wrapper, async_wrapper, sync_wrapper
from mast_otel.integrations.patching import Hook, Patches, Wrapper
from mast_otel.recorder import Recorder

from . import _messages as m
from . import _run as r
from . import _runtime as rt
from . import _selection as s
from . import _termination as t

__all__ = ["HOOKS", "AutogenAgentChatInstrumentor"]

Factory = Callable[[Recorder], Any]

_GC = "autogen_agentchat.teams._group_chat"
_TEAM = f"{_GC}._base_group_chat"
_MANAGER = f"{_GC}._base_group_chat_manager"
_CONTAINER = f"{_GC}._chat_agent_container"
_SELECTOR = f"{_GC}._selector_group_chat"
_GRAPH = f"{_GC}._graph._digraph_group_chat"
_M1 = f"{_GC}._magentic_one._magentic_one_orchestrator"
_ASSISTANT = "autogen_agentchat.agents._assistant_agent"
_RUNTIME = "autogen_core._single_threaded_agent_runtime"


def _hook(module: str, path: str, factory: Factory, lifecycle: Callable[[Any], Wrapper] | None) -> Hook[Recorder]:
    """What ``factory`` records, run by ``lifecycle`` (None: the factory makes the wrapper itself)."""
    if lifecycle is None:
        return Hook(module, path, factory)
    return Hook(module, path, lambda recorder: lifecycle(factory(recorder)))


# The whole coverage list, greppable in one place.
HOOKS: tuple[Hook[Recorder], ...] = (
    _hook(_TEAM, "BaseGroupChat.run_stream", r.team_runs, async_iterator_wrapper),
    _hook(_CONTAINER, "ChatAgentContainer._log_message", m.logged_message, async_wrapper),
    _hook(_CONTAINER, "trace_invoke_agent_span", m.agent_turns, None),  # returns a context manager: _TurnScope
    _hook(_ASSISTANT, "AssistantAgent._execute_tool_call", m.tool_calls, async_wrapper),
    _hook(_MANAGER, "BaseGroupChatManager.update_message_thread", m.manager_thread, async_wrapper),
    _hook(_MANAGER, "BaseGroupChatManager._transition_to_next_speakers", s.transitions, async_wrapper),
    _hook(_MANAGER, "BaseGroupChatManager._log_speaker_selection", s.selected, async_wrapper),
    _hook(_MANAGER, "BaseGroupChatManager._signal_termination", t.signalled_termination, async_wrapper),
    _hook(_MANAGER, "BaseGroupChatManager._signal_termination_with_error", t.signalled_error, async_wrapper),
    _hook(_SELECTOR, "SelectorGroupChatManager._mentioned_agents", s.selector_answers, sync_wrapper),
    _hook(_GRAPH, "DiGraphEdge.check_condition", s.graph_edges, sync_wrapper),
    _hook(_M1, "MagenticOneOrchestrator._orchestrate_step", s.orchestrate_steps, async_wrapper),
    _hook(_M1, "MagenticOneOrchestrator.publish_message", s.orchestrator_publish, async_wrapper),
    _hook(_M1, "MagenticOneOrchestrator._update_task_ledger", s.replans, async_wrapper),
    _hook(_M1, "MagenticOneOrchestrator._reenter_outer_loop", s.outer_loops, async_wrapper),
    _hook(_M1, "MagenticOneOrchestrator._prepare_final_answer", t.final_answer, async_wrapper),
    _hook(_M1, "extract_json_from_str", s.ledgers, sync_wrapper),
    _hook(_RUNTIME, "SingleThreadedAgentRuntime._process_send", rt.processing, async_wrapper),
    _hook(_RUNTIME, "SingleThreadedAgentRuntime._process_publish", rt.processing, async_wrapper),
)


class AutogenAgentChatInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Spans for autogen-agentchat team runs: messages, turns, tool calls, handoffs with reasons, termination."""

    _patches: Patches | None = None

    def instrumentation_dependencies(self) -> Collection[str]:
        return ("autogen-agentchat >= 0.7, < 0.8",)

    def _instrument(self, **kwargs: Any) -> None:
        recorder = recorder_for("autogen-agentchat", kwargs)
        self._patches = patches = Patches("autogen_agentchat", "autogen-agentchat")
        if not patches.apply(HOOKS, recorder):
            return
        try:
            # Every stop-condition class that defines its own __call__: found at instrument time, so not in HOOKS.
            watch = async_wrapper(t.watched_condition(recorder))
            for cls in t.condition_classes(importlib.import_module("autogen_agentchat.conditions")):
                patches.patch(cls, "__call__", watch)
        except Exception as exc:  # all or nothing, like a missing hook
            patches.undo()
            patches.missing("(stop conditions' __call__)", exc)

    def _uninstrument(self, **kwargs: Any) -> None:
        if self._patches is not None:
            self._patches.undo()
