"""The wrap-and-undo bookkeeping of the integrations that patch framework methods with ``wrapt`` and undo with
OpenTelemetry's ``unwrap`` (CrewAI, LangGraph, MetaGPT).

Each of them wraps ``module.Class.method`` (or a module-level function) in place, must remember which owner object
it patched (``wrap_function_wrapper`` takes names, ``unwrap`` wants the object), and undoes the patches last first
so that a method wrapped twice comes back whole. One object keeps that list so no integration writes it again.

Not for integrations that must restore the exact raw attribute (AG2 Classic, autogen-agentchat): ``unwrap`` puts
back the function a wrapper holds, which turns a ``staticmethod`` into a plain function and leaves an inherited
method set on the subclass; they keep the original attribute themselves.
"""

from __future__ import annotations

import importlib
from typing import Any

from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from mast_otel.integrations.lifecycle import Wrapper

__all__ = ["WrappedMethods"]


class WrappedMethods:
    """The attributes one ``instrument()`` wrapped, in order, so that ``uninstrument()`` unwraps exactly those."""

    def __init__(self) -> None:
        self._wrapped: list[tuple[Any, str]] = []

    def wrap(self, module: str, path: str, wrapper: Wrapper) -> Any:
        """``wrap_function_wrapper(module, path, wrapper)``, remembered; returns the owner that was patched (the class
        of ``"Class.method"``, or the module itself for a module-level function)."""
        wrap_function_wrapper(module, path, wrapper)
        owner_name, _, attr = path.rpartition(".")
        mod = importlib.import_module(module)
        owner = getattr(mod, owner_name) if owner_name else mod
        self._wrapped.append((owner, attr))
        return owner

    def unwrap_all(self) -> None:
        """Undo every ``wrap``, the last first; afterwards there is nothing left to undo."""
        for owner, attr in reversed(self._wrapped):
            unwrap(owner, attr)
        self._wrapped = []
