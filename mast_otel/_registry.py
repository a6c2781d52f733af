"""Which integrations exist, and the post-import hooks that instrument a framework whenever it is imported.

Nothing here raises into the program: ``instrument()``, ``uninstrument()`` and a post-import hook (whose exception
wrapt would pass on out of the program's own ``import`` statement) count and log a failing integration (kinds
``{name}.hook``, ``{name}.instrument``, ``{name}.undo``) and go on with the others.
"""

from __future__ import annotations

import importlib
import sys
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import wrapt
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from mast_otel._safety import record_failure, safe_call


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
        # Every recorder an integration built (mast_otel.integrations.recorder_for), however it was instrumented:
        # by instrument(), by opentelemetry-instrument, by the program calling an instrumentor itself.
        self.recorders: weakref.WeakSet[Any] = weakref.WeakSet()


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
                if integration.module in sys.modules:
                    _instrument(integration)
                continue
            STATE.hooked.add(integration.name)
            # Calls the hook at once when the framework is already imported.
            safe_call(f"{integration.name}.instrument", wrapt.register_post_import_hook, _hook_for(integration),
                      integration.module)  # fmt: skip


def deactivate() -> None:
    with STATE.lock:
        STATE.active = False
        for name, instrumentor in STATE.instrumented.items():
            safe_call(f"{name}.undo", instrumentor.uninstrument)
        STATE.instrumented.clear()


def _hook_for(integration: Integration) -> Any:
    def hook(_module: object) -> None:
        try:
            with STATE.lock:
                if STATE.active:
                    _instrument(integration)
        except Exception as exc:  # never out of the program's import statement
            record_failure(f"{integration.name}.instrument", exc)

    return hook


def _instrument(integration: Integration) -> None:
    """Instrument one framework; a failure leaves it uninstrumented (whatever was patched is undone)."""
    if integration.name in STATE.instrumented:
        return
    try:
        instrumentor = integration.load()
    except Exception as exc:  # the integration's module imports a framework name that is gone
        record_failure(f"{integration.name}.hook", exc)
        return
    try:
        instrumentor.instrument(**STATE.kwargs)
    except Exception as exc:
        record_failure(f"{integration.name}.instrument", exc)
        safe_call(f"{integration.name}.undo", instrumentor._uninstrument)
        return
    STATE.instrumented[integration.name] = instrumentor


def tighten_redaction(redactor: Any) -> int:
    """Add ``redactor``'s patterns and callback to the redactor of every recorder the integrations built, in place
    (open spans and derived configs share it); returns how many redactors grew. A later ``instrument()`` calls
    this, so redaction it is given applies from then on, whoever instrumented first."""
    grown = 0
    with STATE.lock:
        for recorder in list(STATE.recorders):
            live = recorder.config.redactor
            if live is redactor:
                continue
            before = (live.patterns, live.callback)
            live.tighten(redactor.patterns, redactor.callback)
            grown += (live.patterns, live.callback) != before
    return grown
