"""AG2 Classic (the ``autogen`` namespace: ``ag2>=0.9,<1.0``, or ``autogen==0.14.x``).

``AG2Instrumentor().instrument()`` (or ``mast_otel.instrument()``, or ``opentelemetry-instrument``) patches
AG2's classes, so every agent, created before or after, is traced:

============================================  ======================================================
AG2 method                                    recorder call
============================================  ======================================================
``initiate_chat`` / ``a_initiate_chat``       conversation root (a group chat when the recipient is a
                                              ``GroupChatManager``); nested chats become children
``initiate_chats`` / ``a_initiate_chats``     conversation root over a chat queue
``initiate_group_chat`` (+ ``a_``)            conversation root named after the Pattern
``send`` / ``a_send``                         one message span; the manager's broadcast copies are
                                              counted, not recorded as messages
``generate_reply`` / ``a_generate_reply``     agent turn (``invoke_agent``)
``execute_function`` (+ ``a_``)               tool call (``execute_tool``)
``GroupChat.select_speaker`` (+ ``a_``)       handoff, with the reason
``TerminationEvent``, transition events       read as they are built (termination and handoff reasons);
                                              the program's IOStream is never touched
============================================  ======================================================

``ag2>=1.0`` is a different framework (no ``autogen`` module) and is not covered here.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from mast_otel.integrations import recorder_for
from mast_otel.integrations.lifecycle import sync_wrapper
from mast_otel.integrations.patching import Hook, Patches
from mast_otel.recorder import Recorder

from . import _wrappers as w
from ._events import EVENT_CLASSES, events

__all__ = ["HOOKS", "AG2Instrumentor"]

_AGENT = "autogen.agentchat.conversable_agent"
_GROUP = "autogen.agentchat.groupchat"
_PATTERNS = "autogen.agentchat.group.multi_agent_chat"

# The whole coverage list, greppable in one place.
HOOKS: tuple[Hook[Recorder], ...] = (
    Hook(_AGENT, "ConversableAgent.initiate_chat", w.sync(w.chat_roots)),
    Hook(_AGENT, "ConversableAgent.a_initiate_chat", w.async_(w.chat_roots)),
    Hook(_AGENT, "ConversableAgent.initiate_chats", w.sync(w.queue_roots)),
    Hook(_AGENT, "ConversableAgent.a_initiate_chats", w.async_(w.queue_roots)),
    Hook(_AGENT, "ConversableAgent.send", w.sync(w.messages)),
    Hook(_AGENT, "ConversableAgent.a_send", w.async_(w.messages)),
    Hook(_AGENT, "ConversableAgent.generate_reply", w.sync(w.agent_turns)),
    Hook(_AGENT, "ConversableAgent.a_generate_reply", w.async_(w.agent_turns)),
    Hook(_AGENT, "ConversableAgent.execute_function", w.sync(w.tool_calls)),
    Hook(_AGENT, "ConversableAgent.a_execute_function", w.async_(w.tool_calls)),
    Hook(_GROUP, "GroupChat.select_speaker", w.sync(w.handoffs)),
    Hook(_GROUP, "GroupChat.a_select_speaker", w.async_(w.handoffs)),
    Hook(_PATTERNS, "initiate_group_chat", w.sync(w.pattern_roots)),
    Hook(_PATTERNS, "a_initiate_group_chat", w.async_(w.pattern_roots)),
    # Events are read as they are built (termination and transition reasons); the classes inherit __init__.
    # AG2 0.9 has no group-API transition events: optional.
    *(Hook(module, f"{cls}.__init__", lambda r: sync_wrapper(events(r)), optional=cls != "TerminationEvent")
      for module, cls in EVENT_CLASSES),
)
# Modules that re-export the group-API entry points; a program calling them through these names is covered too.
_REEXPORTS = ("autogen.agentchat", "autogen.agentchat.group", "autogen")


class AG2Instrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Spans for AG2 Classic conversations, messages, turns, tool calls, handoffs and termination."""

    _patches: Patches | None = None

    def instrumentation_dependencies(self) -> Collection[str]:
        # The same code ships as "ag2" (<1.0) and as "autogen" (0.14.x); require whichever is installed.
        for dist, spec in (("ag2", "ag2 >= 0.9, < 1.0"), ("autogen", "autogen >= 0.9, < 1.0")):
            try:
                importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
            return (spec,)
        return ("ag2 >= 0.9, < 1.0",)

    def _instrument(self, **kwargs: Any) -> None:
        self._patches = patches = Patches("ag2", "ag2", "autogen")
        if not patches.apply(HOOKS, recorder_for("ag2", kwargs)):
            return
        try:
            _cover_reexports(patches)
        except Exception as exc:  # all or nothing, like a missing hook
            patches.undo()
            patches.missing("(re-exports of the group API)", exc)

    def _uninstrument(self, **kwargs: Any) -> None:
        if self._patches is not None:
            self._patches.undo()


def _cover_reexports(patches: Patches) -> None:
    """Point the modules that re-export a wrapped module-level function at the wrapper too."""
    for hook in HOOKS:
        if "." in hook.path:
            continue
        wrapped_fn = getattr(importlib.import_module(hook.module), hook.path)
        for name in _REEXPORTS:
            reexport = importlib.import_module(name)
            if getattr(reexport, hook.path, None) is getattr(wrapped_fn, "__wrapped__", None):
                patches.patch_value(reexport, hook.path, wrapped_fn)
