"""The one span lifecycle every integration wraps a framework method with, sync and async, failure-isolated.

An integration describes what it records around one framework method as a :class:`Traced`:

- ``begin(instance, call)`` starts recording and returns a handle, or None for "call through, record nothing".
  ``call`` reads the method's arguments *by parameter name* (:meth:`Call.get`), bound against the method's own
  signature, so a framework release that reorders parameters cannot make mast-otel record the wrong value.
- ``finish(handle, result)`` and ``fail(handle, exc)`` end the recording (``exc`` is re-raised unchanged).
- ``inside(handle)`` returns a context the wrapped call runs in (e.g. ``Recorder.suppressed()``), or None.
- ``params``: the parameter names ``begin`` reads. A method whose signature lacks one is not recorded at all (it
  fails closed: a warning once, the call goes through untouched).
- ``see(handle, item)``: for a method returning a stream (:func:`iterator_wrapper`, :func:`async_iterator_wrapper`),
  called with each item the stream yields; ``inside`` is then entered around each step of the stream.

:func:`sync_wrapper` / :func:`async_wrapper` turn it into a ``wrapt`` wrapper. They guarantee, for every
integration built on them, that instrumentation never changes the program: the wrapped method is called exactly
once with the program's own arguments; its result is returned as is; its exception is re-raised as the same
object; an ``Exception`` raised by ``begin``, ``finish``, ``fail`` or ``inside`` is counted under
``{name}.begin`` (etc.) in ``mast_otel.recording_failures()``, logged once, and otherwise ignored.

Usage in a new integration::

    from mast_otel.integrations.lifecycle import Call, Traced, async_wrapper, sync_wrapper

    def turns(recorder: Recorder) -> Traced:
        return Traced(
            "myfw.run",
            begin=lambda agent, call: recorder.start_agent_turn(call.get("agent_name")),
            finish=lambda turn, result: turn.end(replied=result is not None),
            fail=lambda turn, exc: turn.fail(exc),
            params=("agent_name",),
        )

    HOOKS = (Hook("myfw.agent", "Agent.run", lambda recorder: sync_wrapper(turns(recorder))),)  # patching.py
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY

from mast_otel._safety import record_failure

__all__ = ["Call", "Params", "Traced", "Wrapper", "async_iterator_wrapper", "async_wrapper", "iterator_wrapper",
           "sync_wrapper"]  # fmt: skip

_log = logging.getLogger("mast_otel")

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]
_EMPTY = inspect.Parameter.empty
# opentelemetry.instrumentation.utils' older spelling of the suppression key, which it still honours.
_SUPPRESS_INSTRUMENTATION_KEY_PLAIN = "suppress_instrumentation"


class SignatureMismatch(Exception):
    """A wrapped method's signature no longer has a parameter the integration reads."""


class Params:
    """Where each parameter of one function arrives: its position (if it can be positional) and its default.

    Built once per function from ``inspect.signature``; reading an argument is then two dict lookups.
    """

    __slots__ = ("defaults", "names", "positions")

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.positions: dict[str, int] = {}
        self.defaults: dict[str, Any] = {}
        self.names: set[str] = set()
        positional = True
        for index, p in enumerate(_signature(fn).parameters.values()):
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                positional = positional and p.kind is not p.VAR_POSITIONAL
                continue
            self.names.add(p.name)
            if positional and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                self.positions[p.name] = index
            if p.default is not _EMPTY:
                self.defaults[p.name] = p.default

    def get(self, args: tuple[Any, ...], kwargs: dict[str, Any], name: str, default: Any = None) -> Any:
        if name in kwargs:
            return kwargs[name]
        position = self.positions.get(name)
        if position is not None and position < len(args):
            return args[position]
        return self.defaults.get(name, default)


class Call:
    """One call's arguments, read by parameter name (see :class:`Params`)."""

    __slots__ = ("args", "kwargs", "params")

    def __init__(self, params: Params, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.params = params
        self.args = args
        self.kwargs = kwargs

    def get(self, name: str, default: Any = None) -> Any:
        """The argument bound to parameter ``name`` (its signature default, else ``default``, when not passed)."""
        return self.params.get(self.args, self.kwargs, name, default)


def _never(_: Any, __: Any) -> None:
    """finish/fail of a concern whose begin records everything itself and returns None."""


@dataclass(frozen=True, slots=True)
class Traced:
    name: str  # the failure kind prefix, e.g. "ag2.send"
    begin: Callable[[Any, Call], Any]  # (instance, call) -> handle, or None to call through
    finish: Callable[[Any, Any], None] = _never  # (handle, result)
    fail: Callable[[Any, BaseException], None] = _never  # (handle, exception); the exception is re-raised unchanged
    inside: Callable[[Any], AbstractContextManager[Any] | None] | None = None  # (handle) -> context for the call
    params: tuple[str, ...] = ()  # parameter names begin reads
    see: Callable[[Any, Any], None] = _never  # (handle, item) for each item a wrapped stream yields
    _signatures: dict[Any, Params | None] = field(default_factory=dict, compare=False, repr=False)

    def params_for(self, wrapped: Callable[..., Any]) -> Params | None:
        """The wrapped function's parameters, or None (record nothing) when it lacks one of ``params``."""
        key = getattr(wrapped, "__func__", wrapped)  # a bound method is a new object per access
        try:
            return self._signatures[key]
        except KeyError:
            pass
        params: Params | None
        try:
            params = Params(wrapped)
            missing = [n for n in self.params if n not in params.names]
            if missing:
                raise SignatureMismatch(f"{_qualname(wrapped)} has no parameter {', '.join(missing)}")
        except (SignatureMismatch, TypeError, ValueError) as exc:
            _log.warning("mast-otel: not recording %s: %s (a framework version this integration does not know)",
                         self.name, exc)  # fmt: skip
            record_failure(f"{self.name}.signature", exc)
            params = None
        self._signatures[key] = params
        return params

    def start(self, wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``begin``, guarded: None when not recording, when the signature does not fit, or when it raised."""
        try:
            if _suppressed():
                return None
            params = self.params_for(wrapped)
            if params is None:
                return None
            return self.begin(instance, Call(params, args, kwargs))
        except Exception as exc:
            record_failure(f"{self.name}.begin", exc)
            return None

    def enter(self, handle: Any) -> AbstractContextManager[Any] | None:
        """Enter ``inside(handle)``, guarded: None when there is none or it could not be entered."""
        if self.inside is None:
            return None
        try:
            cm = self.inside(handle)
            if cm is None:
                return None
            cm.__enter__()
        except Exception as exc:
            record_failure(f"{self.name}.inside", exc)
            return None
        return cm

    def leave(self, cm: AbstractContextManager[Any] | None) -> None:
        """Exit ``inside()``, guarded, never told of the program's exception (so it can never swallow it)."""
        if cm is None:
            return
        try:
            cm.__exit__(None, None, None)
        except Exception as exc:
            record_failure(f"{self.name}.inside", exc)

    def saw(self, handle: Any, item: Any) -> None:
        self._hook("see", self.see, handle, item)

    def end(self, handle: Any, result: Any) -> None:
        self._hook("finish", self.finish, handle, result)

    def end_failed(self, handle: Any, exc: BaseException) -> None:
        self._hook("fail", self.fail, handle, exc)

    def returned(self, handle: Any, inside: AbstractContextManager[Any] | None, result: Any) -> None:
        """The wrapped call returned ``result``: leave ``inside`` (so ``finish`` runs outside it), then ``finish``."""
        self.leave(inside)
        self.end(handle, result)

    def raised(self, handle: Any, inside: AbstractContextManager[Any] | None, exc: BaseException) -> None:
        """The wrapped call (or stream) ended with ``exc``, which the caller re-raises unchanged: leave ``inside``,
        then ``fail``."""
        self.leave(inside)
        self.end_failed(handle, exc)

    def _hook(self, step: str, hook: Callable[[Any, Any], None], handle: Any, value: Any) -> None:
        """Run ``see``/``finish``/``fail``, guarded: a failure is counted under ``{name}.{step}``, never raised."""
        try:
            hook(handle, value)
        except Exception as exc:
            record_failure(f"{self.name}.{step}", exc)


# sync_wrapper and async_wrapper share everything but their skeleton (start, enter, call, returned/raised): the
# skeleton stays written twice because the only difference, ``await``, cannot be factored out of a plain function
# without turning the sync path into a coroutine or generator driven by hand, which would hide the control flow
# that guarantees the call happens once and its exception is re-raised as is.
def sync_wrapper(traced: Traced) -> Wrapper:
    """The ``wrapt`` wrapper for a sync method."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        handle = traced.start(wrapped, instance, args, kwargs)
        if handle is None:
            return wrapped(*args, **kwargs)
        inside = traced.enter(handle)
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            traced.raised(handle, inside, exc)
            raise
        traced.returned(handle, inside, result)
        return result

    return wrapper


def async_wrapper(traced: Traced) -> Wrapper:
    """The ``wrapt`` wrapper for an ``async def`` method (the wrapper is itself a coroutine function)."""

    async def wrapper(
        wrapped: Callable[..., Awaitable[Any]], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        handle = traced.start(wrapped, instance, args, kwargs)
        if handle is None:
            return await wrapped(*args, **kwargs)
        inside = traced.enter(handle)
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            traced.raised(handle, inside, exc)
            raise
        traced.returned(handle, inside, result)
        return result

    return wrapper


def _suppressed() -> bool:
    """Whether OpenTelemetry's suppression is on, under either spelling of its key.

    Reads the context once, where opentelemetry's ``is_instrumentation_enabled()`` reads it twice: this runs on
    every wrapped call.
    """
    ctx = otel_context.get_current()
    return bool(ctx.get(_SUPPRESS_INSTRUMENTATION_KEY) or ctx.get(_SUPPRESS_INSTRUMENTATION_KEY_PLAIN))


def iterator_wrapper(traced: Traced) -> Wrapper:
    """The ``wrapt`` wrapper for a method returning an iterator (a generator method, e.g. a graph's ``stream``).

    The method is called as is; when not recording its own iterator is returned. Otherwise a generator over it:
    ``begin`` runs at the first step, ``inside`` around every step, ``see`` on every item, ``finish(handle, None)``
    when the stream ends, ``fail`` when it raises (re-raised unchanged) or with ``GeneratorExit`` when the program
    closes it early (the framework's stream is then closed inside ``inside``).
    """
    return _stream_wrapper(traced, _traced_iterator, "__next__")


# (traced, wrapped, instance, args, kwargs, the framework's stream) -> the stream handed to the program
_StreamTracer = Callable[[Traced, Callable[..., Any], Any, tuple[Any, ...], dict[str, Any], Any], Any]


def _stream_wrapper(traced: Traced, trace_stream: _StreamTracer, step: str) -> Wrapper:
    """The wrapper both stream kinds share: call the method as is, then hand back its stream traced (or untouched:
    also when it returned something that is no iterator of the kind, so the program meets it as it is)."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        inner = wrapped(*args, **kwargs)
        if _suppressed() or not hasattr(inner, step):
            return inner
        return trace_stream(traced, wrapped, instance, args, kwargs, inner)

    return wrapper


def _traced_iterator(
    traced: Traced, wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
    inner: Any,
) -> Iterator[Any]:  # fmt: skip
    handle = traced.start(wrapped, instance, args, kwargs)
    if handle is None:
        yield from inner
        return
    try:
        while True:
            inside = traced.enter(handle)
            try:
                item = next(inner)
            except StopIteration:
                break
            finally:
                traced.leave(inside)
            traced.saw(handle, item)
            yield item
    except GeneratorExit as exc:  # the program stopped early: close the framework's stream (inside), then fail
        inside = traced.enter(handle)
        try:
            close = getattr(inner, "close", None)
            if close is not None:
                close()
        finally:
            traced.raised(handle, inside, exc)
        raise
    except BaseException as exc:
        traced.end_failed(handle, exc)
        raise
    traced.end(handle, None)


def async_iterator_wrapper(traced: Traced) -> Wrapper:
    """:func:`iterator_wrapper` for a method returning an async iterator (an async generator method)."""
    return _stream_wrapper(traced, _traced_async_iterator, "__anext__")


async def _traced_async_iterator(
    traced: Traced, wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
    inner: Any,
) -> AsyncIterator[Any]:  # fmt: skip
    handle = traced.start(wrapped, instance, args, kwargs)
    if handle is None:
        try:
            async for item in inner:
                yield item
        finally:
            aclose = getattr(inner, "aclose", None)
            if aclose is not None:
                await aclose()
        return
    try:
        while True:
            inside = traced.enter(handle)
            try:
                item = await inner.__anext__()
            except StopAsyncIteration:
                break
            finally:
                traced.leave(inside)
            traced.saw(handle, item)
            yield item
    except GeneratorExit as exc:
        inside = traced.enter(handle)
        try:
            aclose = getattr(inner, "aclose", None)
            if aclose is not None:
                await aclose()
        finally:
            traced.raised(handle, inside, exc)
        raise
    except BaseException as exc:
        traced.end_failed(handle, exc)
        raise
    traced.end(handle, None)


def _signature(fn: Callable[..., Any]) -> inspect.Signature:
    """``fn``'s signature, seen through a decorator that forgot ``functools.wraps``.

    A ``wrapper(self, *args, **kwargs)`` closing over exactly one function (MetaGPT's ``serialize_decorator`` on
    ``Team.run``) passes its arguments straight through: the inner function's signature is the real one.
    """
    sig = inspect.signature(fn)
    if any(p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.parameters.values()):
        return sig
    func = getattr(fn, "__func__", fn)
    inner = []
    for cell in getattr(func, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if inspect.isfunction(value):
            inner.append(value)
    if len(inner) != 1:
        return sig
    inner_sig = inspect.signature(inner[0])
    if inspect.ismethod(fn):  # the inner function is unbound: its first parameter is the bound instance
        inner_sig = inner_sig.replace(parameters=list(inner_sig.parameters.values())[1:])
    return inner_sig


def _qualname(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", None) or repr(fn))
