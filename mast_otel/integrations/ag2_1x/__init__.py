"""AG2 1.x (``ag2>=1.0,<2``, the ``ag2`` module; built and tested against 1.2.1). Not AG2 Classic: that is the
``autogen`` module, covered by ``mast_otel.integrations.ag2``; only one of the two is installed at a time.

``AG2V1Instrumentor().instrument()`` (or ``mast_otel.instrument()``, or ``opentelemetry-instrument``) records every
hub created afterwards and every agent registered on one:

=====================================  ========================================================================
AG2 1.x                                recorder call
=====================================  ========================================================================
channel ``created`` .. ``closed`` /    conversation root (``invoke_workflow {type}``: conversation, discussion,
``expired`` (hub listener)             workflow, consulting), ``gen_ai.conversation.id`` = the channel id, the
                                       first message as the task, participants, the graph's ``max_turns``; a
                                       channel opened inside a turn (``delegate``) is a child conversation
``ag2.msg.text`` / ``ag2.packet``      one message span per envelope, dated by the hub's ``created_at``, sender
envelope posted (hub listener)         and recipients by agent name; invites, acks, opened/closed are protocol
packet ``routing`` / folded state      a handoff: ``Handoff`` from a tool (``tool_call``, the stated reason as
                                       detail), a graph transition (``routing``, the rule as detail), discussion
                                       order (``round_robin``)
``Agent.ask`` on a channel             agent turn (outermost middleware); ``execute_tool`` per tool, with
(middleware)                           arguments and result, including the routing tools; ``delegate`` is also
                                       a ``delegation`` handoff
close reason (hub listener)            termination: ``finish`` (Finish reason and summary), ``handoff_terminate``
                                       (graph TerminateTarget), ``max_turns``, ``closed`` (explicit),
                                       ``expired`` (TTL), ``expectation_violated``, ``error`` (a turn raised)
=====================================  ========================================================================

When the hub has AG2's own telemetry on (``Hub(tracer_provider=...)``), its envelope spans (and the turn, LLM and
tool spans AG2 parents on them through the envelope's traceparent) join the conversation's trace; pass
``join_ag2_traces=False`` to ``instrument()`` to leave AG2's traces as AG2 makes them. Hubs created before
``instrument()`` are not recorded; a channel still open when its hub closes ends there (``closed``, detail
"hub closed with the channel open").
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from mast_otel.integrations import recorder_for
from mast_otel.integrations.patching import Hook, Patches

from ._wrappers import Hooks, agent_client_init, hub_close, hub_init

__all__ = ["HOOKS", "AG2V1Instrumentor"]

_HUB = "ag2.network.hub.core"
_AGENT_CLIENT = "ag2.network.client.agent_client"

HOOKS: tuple[Hook[Hooks], ...] = (
    Hook(_HUB, "Hub.__init__", hub_init),
    Hook(_HUB, "Hub.close", hub_close),
    Hook(_AGENT_CLIENT, "AgentClient.__init__", agent_client_init),
)


class AG2V1Instrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Spans for AG2 1.x hub channels: conversations, messages, handoffs with reasons, turns, tools, termination."""

    _hooks: Hooks | None = None
    _patches: Patches | None = None

    def instrumentation_dependencies(self) -> Collection[str]:
        return ("ag2 >= 1.0, < 2",)

    def _instrument(self, **kwargs: Any) -> None:
        hooks = Hooks(recorder_for("ag2", kwargs), join_traces=bool(kwargs.get("join_ag2_traces", True)))
        self._patches = Patches("ag2_1x", "ag2")
        if self._patches.apply(HOOKS, hooks):
            self._hooks = hooks

    def _uninstrument(self, **kwargs: Any) -> None:
        if self._patches is not None:
            self._patches.undo()
        if self._hooks is not None:
            self._hooks.detach_all()
            self._hooks = None
