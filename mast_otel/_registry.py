"""Which integrations exist, and the post-import hooks that instrument a framework whenever it is imported."""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from typing import Any

import wrapt
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Integration:
    name: str
    module: str  # the framework's top-level module; importing it triggers instrumentation
    instrumentor: str  # "package.module:Class"

    def load(self) -> BaseInstrumentor:
        mod_name, _, cls_name = self.instrumentor.partition(":")
        cls = getattr(importlib.import_module(mod_name), cls_name)
        instance: BaseInstrumentor = cls()
        return instance


INTEGRATIONS: tuple[Integration, ...] = (
    Integration("ag2", "autogen", "mast_otel.integrations.ag2:AG2Instrumentor"),
    Integration("metagpt", "metagpt", "mast_otel.integrations.metagpt:MetaGPTInstrumentor"),
    Integration("openai_agents", "agents", "mast_otel.integrations.openai_agents:OpenAIAgentsInstrumentor"),
    # AG2 1.x: same PyPI name as AG2 Classic, but the `ag2` module (Classic installs only `autogen`).
    Integration("ag2_1x", "ag2", "mast_otel.integrations.ag2_1x:AG2V1Instrumentor"),
    Integration("langgraph", "langgraph.pregel", "mast_otel.integrations.langgraph:LangGraphInstrumentor"),
    Integration("crewai", "crewai", "mast_otel.integrations.crewai:CrewAIInstrumentor"),
    Integration(
        "autogen_agentchat",
        "autogen_agentchat",
        "mast_otel.integrations.autogen_agentchat:AutogenAgentChatInstrumentor",
    ),
)


class _State:
    """Process-wide switch: post-import hooks cannot be unregistered, so they consult this."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.active = False
        self.kwargs: dict[str, Any] = {}
        self.hooked: set[str] = set()
        self.instrumented: dict[str, BaseInstrumentor] = {}


STATE = _State()


def activate(names: set[str] | None, kwargs: dict[str, Any]) -> None:
    with STATE.lock:
        STATE.active = True
        STATE.kwargs = kwargs
        for integration in INTEGRATIONS:
            if names is not None and integration.name not in names:
                continue
            if integration.name in STATE.hooked:
                # Hook already registered; if the framework is loaded, instrument it now.
                import sys

                if integration.module in sys.modules:
                    _instrument(integration)
                continue
            STATE.hooked.add(integration.name)
            wrapt.register_post_import_hook(_hook_for(integration), integration.module)


def deactivate() -> None:
    with STATE.lock:
        STATE.active = False
        for instrumentor in STATE.instrumented.values():
            instrumentor.uninstrument()
        STATE.instrumented.clear()


def _hook_for(integration: Integration) -> Any:
    def hook(_module: object) -> None:
        with STATE.lock:
            if STATE.active:
                _instrument(integration)

    return hook


def _instrument(integration: Integration) -> None:
    if integration.name in STATE.instrumented:
        return
    instrumentor = integration.load()
    instrumentor.instrument(**STATE.kwargs)
    STATE.instrumented[integration.name] = instrumentor
