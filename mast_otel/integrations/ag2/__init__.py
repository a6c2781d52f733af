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

import importlib.metadata
from collections.abc import Callable, Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from wrapt import wrap_function_wrapper

from mast_otel.integrations import recorder_for
from mast_otel.integrations.lifecycle import Wrapper, sync_wrapper
from mast_otel.recorder import Recorder

from . import _wrappers as w
from ._events import EVENT_CLASSES, events

__all__ = ["AG2Instrumentor"]

_AGENT = "autogen.agentchat.conversable_agent"
_GROUP = "autogen.agentchat.groupchat"
_PATTERNS = "autogen.agentchat.group.multi_agent_chat"

# (module, attribute path, wrapper factory): the whole coverage list, greppable in one place.
_TARGETS: tuple[tuple[str, str, Callable[[Recorder], Wrapper]], ...] = (
    (_AGENT, "ConversableAgent.initiate_chat", w.sync(w.chat_roots)),
    (_AGENT, "ConversableAgent.a_initiate_chat", w.async_(w.chat_roots)),
    (_AGENT, "ConversableAgent.initiate_chats", w.sync(w.queue_roots)),
    (_AGENT, "ConversableAgent.a_initiate_chats", w.async_(w.queue_roots)),
    (_AGENT, "ConversableAgent.send", w.sync(w.messages)),
    (_AGENT, "ConversableAgent.a_send", w.async_(w.messages)),
    (_AGENT, "ConversableAgent.generate_reply", w.sync(w.agent_turns)),
    (_AGENT, "ConversableAgent.a_generate_reply", w.async_(w.agent_turns)),
    (_AGENT, "ConversableAgent.execute_function", w.sync(w.tool_calls)),
    (_AGENT, "ConversableAgent.a_execute_function", w.async_(w.tool_calls)),
    (_GROUP, "GroupChat.select_speaker", w.sync(w.handoffs)),
    (_GROUP, "GroupChat.a_select_speaker", w.async_(w.handoffs)),
    (_PATTERNS, "initiate_group_chat", w.sync(w.pattern_roots)),
    (_PATTERNS, "a_initiate_group_chat", w.async_(w.pattern_roots)),
)
_ABSENT = object()
# Modules that re-export the group-API entry points; a program calling them through these names is covered too.
_REEXPORTS = ("autogen.agentchat", "autogen.agentchat.group", "autogen")


class AG2Instrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Spans for AG2 Classic conversations, messages, turns, tool calls, handoffs and termination."""

    _patched: list[tuple[Any, str, Any]]  # (owner, attribute, original object, or _ABSENT: delete on undo)

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
        recorder = recorder_for("ag2", kwargs)
        self._patched = []
        for module, path, factory in _TARGETS:
            owner_path, _, attr = path.rpartition(".")
            mod = importlib.import_module(module)
            owner = getattr(mod, owner_path) if owner_path else mod
            # Keep the exact original (a staticmethod stays a staticmethod): unwrap() would put back the bare function.
            self._patched.append((owner, attr, vars(owner)[attr]))
            wrap_function_wrapper(module, path, factory(recorder))
            if not owner_path:
                wrapped_fn = getattr(mod, attr)
                for name in _REEXPORTS:
                    reexport = importlib.import_module(name)
                    original = getattr(reexport, attr, None)
                    if original is getattr(wrapped_fn, "__wrapped__", None):
                        self._patched.append((reexport, attr, original))
                        setattr(reexport, attr, wrapped_fn)

        event_wrapper = sync_wrapper(events(recorder))
        for module, cls_name in EVENT_CLASSES:
            try:
                owner = getattr(importlib.import_module(module), cls_name)
            except (ImportError, AttributeError):  # an AG2 release without the group API's transition events
                continue
            self._patched.append((owner, "__init__", vars(owner).get("__init__", _ABSENT)))
            wrap_function_wrapper(owner, "__init__", event_wrapper)

    def _uninstrument(self, **kwargs: Any) -> None:
        for owner, attr, original in reversed(getattr(self, "_patched", [])):
            if original is _ABSENT:
                delattr(owner, attr)  # the attribute was inherited: remove the wrapper, not the base's method
            else:
                setattr(owner, attr, original)
        self._patched = []
