"""mast-otel's processor stays among the SDK's trace processors, whatever list the program sets, and a program
that switches the SDK's tracing off is told that mast-otel then records nothing.

The SDK documents ``set_trace_processors([...])`` as the way to send its traces elsewhere; it replaces the whole
list, mast-otel's processor included. The hook on ``DefaultTraceProvider.set_processors`` hands the SDK the
program's list with mast-otel's processor appended when it is missing: the program's processors are neither
removed nor wrapped, they stay first and in their order, and a list that already holds mast-otel's processor is
passed as is (so it is never there twice). The list is set in one call, so no span is missed in between.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from mast_otel._safety import record_failure

from ._processor import MastTraceProcessor

__all__ = ["holds", "kept_in_processors", "noticed_disabled", "warn_if_disabled"]

_log = logging.getLogger("mast_otel")
_DISABLE_ENV = "OPENAI_AGENTS_DISABLE_TRACING"
_warned = threading.Event()
Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]


def holds(provider: Any, processor: MastTraceProcessor) -> bool | None:
    """Whether ``provider``'s processor list holds ``processor`` (None: the SDK's internals are not as known)."""
    processors = getattr(getattr(provider, "_multi_processor", None), "_processors", None)
    if not isinstance(processors, tuple):
        return None
    return any(p is processor for p in processors)


def kept_in_processors(processor: MastTraceProcessor) -> Wrapper:
    """The wrapper of ``DefaultTraceProvider.set_processors``: ``processor`` appended to the program's list on the
    provider it is registered with, while it is on."""

    def wrapper(wrapped: Callable[..., Any], provider: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not processor.enabled or provider is not processor.provider or len(args) + len(kwargs) != 1:
            return wrapped(*args, **kwargs)
        given = args[0] if args else kwargs.get("processors")
        if not isinstance(given, (list, tuple)) or any(p is processor for p in given):
            return wrapped(*args, **kwargs)  # not a list we can extend without consuming it, or already held
        return wrapped([*given, processor])

    return wrapper


def noticed_disabled(processor: MastTraceProcessor) -> Wrapper:
    """The wrapper of ``DefaultTraceProvider.set_disabled``: ``set_tracing_disabled(True)`` while mast-otel is on
    is logged once (the SDK then creates no spans, so there is nothing to record)."""

    def wrapper(wrapped: Callable[..., Any], provider: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        result = wrapped(*args, **kwargs)
        try:
            disabled = args[0] if args else kwargs.get("disabled")
            if disabled and processor.enabled and provider is processor.provider:
                _warn("set_tracing_disabled(True)")
        except Exception as exc:
            record_failure("openai_agents.disabled", exc)
        return result

    return wrapper


def warn_if_disabled(provider: Any) -> None:
    """At ``instrument()``: log once if the SDK's tracing is already off (its env variable, or a call before)."""
    if getattr(provider, "_manual_disabled", None) is True:
        _warn("set_tracing_disabled(True)")
    elif getattr(provider, "_manual_disabled", None) is None and os.environ.get(_DISABLE_ENV, "").lower() in (
        "true",
        "1",
    ):
        _warn(f"{_DISABLE_ENV}={os.environ[_DISABLE_ENV]}")


def _warn(how: str) -> None:
    if _warned.is_set():
        return
    _warned.set()
    _log.warning(
        "mast-otel: the OpenAI Agents SDK's tracing is disabled (%s): the SDK creates no spans, so mast-otel records "
        "no OpenAI Agents run until it is enabled again (set_tracing_disabled(False)); logged once",
        how,
    )
