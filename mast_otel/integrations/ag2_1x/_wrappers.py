"""The two class-level hooks: AG2 1.x has no "every hub" or "every agent" registry, so the constructors are it.

``Hub.__init__`` registers the listener on the new hub (``Hub.register_listener``, public) and, when AG2's own
envelope telemetry is on, makes its envelope spans children of the channel's conversation; ``AgentClient.__init__``
(what ``hub.register(agent)`` builds) inserts the middleware into the registered agent (``insert_middleware``,
public). Everything else goes through those public seams.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from opentelemetry import trace

from mast_otel._safety import record_failure
from mast_otel.recorder import Recorder

from ._channels import Channels
from ._listener import AG2_CHANNEL_ID, MastHubListener
from ._middleware import MastMiddlewareFactory, Switch

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]


class JoiningTracer:
    """Stands in for the tracer of AG2's ``EnvelopeTracer``: an envelope span on a recorded channel becomes a
    child of the conversation root instead of a new trace, so AG2's envelope, turn, LLM and tool spans (which
    follow the traceparent AG2 stamps on the envelope) and mast-otel's spans form one trace per conversation.
    AG2 keeps its ``triggered_by`` / ``in_channel`` links; on a channel not recorded nothing changes."""

    def __init__(self, inner: Any, channels: Channels) -> None:
        self._inner = inner
        self._channels = channels

    def start_span(self, name: str, *args: Any, **kwargs: Any) -> Any:
        attributes = kwargs.get("attributes") or {}
        run = self._channels.get(attributes.get(AG2_CHANNEL_ID))
        if run is not None and run.conversation is not None and not args:
            kwargs["context"] = trace.set_span_in_context(run.conversation.span)
        return self._inner.start_span(name, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class Hooks:
    """The state ``instrument()`` creates and ``uninstrument()`` undoes: hubs and agents it touched."""

    def __init__(self, recorder: Recorder, *, join_traces: bool) -> None:
        self.recorder = recorder
        self.join_traces = join_traces
        self.channels = Channels()
        self.switch = Switch()
        self.hubs: weakref.WeakKeyDictionary[Any, MastHubListener] = weakref.WeakKeyDictionary()
        self.agents: weakref.WeakKeyDictionary[Any, MastMiddlewareFactory] = weakref.WeakKeyDictionary()

    def attach_hub(self, hub: Any) -> None:
        if hub in self.hubs:
            return
        listener = MastHubListener(hub, self.recorder, self.channels)
        hub.register_listener(listener)
        self.hubs[hub] = listener
        envelope_tracer = getattr(hub, "_envelope_tracer", None)
        if self.join_traces and envelope_tracer is not None and hasattr(envelope_tracer, "_tracer"):
            envelope_tracer._tracer = JoiningTracer(envelope_tracer._tracer, self.channels)

    def attach_agent(self, agent: Any) -> None:
        if agent is None or agent in self.agents or not hasattr(agent, "insert_middleware"):
            return
        factory = MastMiddlewareFactory(str(agent.name), self.recorder, self.channels, self.switch)
        agent.insert_middleware(factory)
        self.agents[agent] = factory

    def detach_all(self) -> None:
        self.switch.on = False  # middleware that cannot be removed below passes through from now on
        for hub, listener in list(self.hubs.items()):
            hub.unregister_listener(listener)
            envelope_tracer: Any = getattr(hub, "_envelope_tracer", None)
            joined = getattr(envelope_tracer, "_tracer", None)
            if isinstance(joined, JoiningTracer):
                envelope_tracer._tracer = joined._inner
        for agent, factory in list(self.agents.items()):
            chain = getattr(agent, "_middleware", None)
            if isinstance(chain, list) and factory in chain:
                chain.remove(factory)
        self.hubs.clear()
        self.agents.clear()


def hub_init(hooks: Hooks) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        result = wrapped(*args, **kwargs)
        try:
            hooks.attach_hub(instance)
        except Exception as exc:
            record_failure("ag2_1x.hub", exc)
        return result

    return wrapper


def hub_close(hooks: Hooks) -> Wrapper:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            return await wrapped(*args, **kwargs)
        finally:
            listener = hooks.hubs.get(instance)
            if listener is not None:
                listener.hub_closed()

    return wrapper


def agent_client_init(hooks: Hooks) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        result = wrapped(*args, **kwargs)
        try:
            hooks.attach_agent(getattr(instance, "_agent", None) or kwargs.get("agent"))
        except Exception as exc:
            record_failure("ag2_1x.agent", exc)
        return result

    return wrapper
