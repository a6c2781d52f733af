"""The one way every integration patches a framework and undoes it: a table of :class:`Hook` s applied by
:class:`Patches`, all of them or none.

A framework release that renames or removes one hooked method must not reach the program: :meth:`Patches.apply`
first resolves every hook of the table without touching anything, and patches only when all of them are there
and are functions. Otherwise that framework is left entirely unpatched (a partial set of hooks records partial
conversations, and the judge would read a missing handoff or message as a failure of the agents); the missing
hook is counted in ``mast_otel.recording_failures()`` under ``{framework}.hook`` and logged once, naming the
framework, its version and the hook.

Each patch keeps the owner's raw attribute (``vars(owner)[attr]``), and undo puts exactly that back: a
``staticmethod`` stays a ``staticmethod`` (OpenTelemetry's ``unwrap`` would put back the bare function), and a
method the owner inherits is removed from the owner again rather than copied onto it. Patches made later, while
the program runs (a MetaGPT subclass that overrides a hooked method, a module imported after ``instrument()``),
go through :meth:`Patches.patch` on the same object, so one :meth:`Patches.undo` takes back everything.

Usage in an integration::

    HOOKS = (Hook("myfw.agent", "Agent.run", lambda recorder: sync_wrapper(turns(recorder))), ...)

    def _instrument(self, **kwargs):
        self._patches = Patches("myfw", "myfw-dist")
        self._patches.apply(HOOKS, recorder_for("myfw", kwargs))

    def _uninstrument(self, **kwargs):
        self._patches.undo()
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import logging
import threading
import types
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import wrapt

from mast_otel._safety import record_failure

__all__ = ["Hook", "HookMissing", "Patches", "framework_version", "hook_kind", "resolve"]

_log = logging.getLogger("mast_otel")
C = TypeVar("C")
Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]
_ABSENT = object()  # the owner did not define the attribute itself (inherited): undo deletes it


def hook_kind(framework: str) -> str:
    """The failure kind under which ``framework``'s missing or misshapen hooks are counted."""
    return f"{framework}.hook"


class HookMissing(Exception):
    """A hooked target is missing from the installed framework, or is not a function (a release renamed it)."""


@dataclass(frozen=True, slots=True)
class Hook(Generic[C]):
    """One framework function to wrap: ``module`` holds ``path`` (``"Class.method"`` or ``"function"``), and
    ``make(context)`` builds the ``wrapt`` wrapper from the integration's context (its recorder, its state).

    ``optional``: some supported releases do not have it (AG2 0.9 has no group-API transition events); when it is
    absent it is skipped, neither counted nor stopping the others."""

    module: str
    path: str
    make: Callable[[C], Wrapper]
    optional: bool = False

    @property
    def target(self) -> str:
        return f"{self.module}.{self.path}"


def resolve(module: str, path: str) -> tuple[Any, str]:
    """``(owner, attribute)`` of ``module.path``, checked to be there and callable; :class:`HookMissing` if not."""
    try:
        owner: Any = importlib.import_module(module)
    except ImportError as exc:
        raise HookMissing(f"module {module} cannot be imported ({type(exc).__name__})") from None
    *owner_path, attr = path.split(".")
    for part in owner_path:
        owner = getattr(owner, part, _ABSENT)
        if owner is _ABSENT:
            raise HookMissing(f"{module}.{path}: {module} has no {'.'.join(owner_path)}")
    if not isinstance(owner, (type, types.ModuleType)):
        raise HookMissing(f"{module}.{path}: the owner is a {type(owner).__name__}, not a class or module")
    raw = inspect.getattr_static(owner, attr, _ABSENT)
    if raw is _ABSENT or (isinstance(owner, type) and raw is vars(object).get(attr)):
        # Only object's own default is left (a class that lost its __init__): wrapping it would change even the
        # program's error message ("Hub() takes no arguments" would name object.__init__).
        raise HookMissing(f"{module}.{path} does not exist")
    if not (callable(raw) or isinstance(raw, (staticmethod, classmethod))):
        raise HookMissing(f"{module}.{path} is a {type(raw).__name__}, not a function")
    if getattr(raw, "__isabstractmethod__", False):  # a base class's declaration, no implementation to wrap
        raise HookMissing(f"{module}.{path} is only an abstract method")
    return owner, attr


def framework_version(distributions: Sequence[str]) -> str:
    """The installed version of the first of ``distributions`` found (AG2 Classic ships under two names)."""
    for dist in distributions:
        try:
            return f"{dist} {importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return f"{'/'.join(distributions)} (version unknown)"


class Patches:
    """What one ``instrument()`` of one framework patched, in order; :meth:`undo` restores it, the last first.

    One object per ``instrument()``: once undone it makes no more patches, so a patch racing with
    ``uninstrument()`` (MetaGPT covers subclasses while the program runs) cannot outlive it."""

    def __init__(self, framework: str, *distributions: str) -> None:
        self.framework = framework
        self.distributions = distributions or (framework,)
        self._done: list[tuple[Any, str, Any]] = []  # (owner, attribute, raw original or _ABSENT)
        self._lock = threading.Lock()
        self._closed = False  # undone: a patch arriving later (a subclass covered at run time) is not made

    def __len__(self) -> int:
        return len(self._done)

    def apply(self, hooks: Iterable[Hook[C]], context: C) -> bool:
        """Patch every hook, or none: False (nothing patched, the failure counted and logged once) when one is
        missing or misshapen, or when patching one fails."""
        hooks = tuple(hooks)
        resolved: list[tuple[Any, str, Hook[C]]] = []
        for hook in hooks:
            try:
                owner, attr = resolve(hook.module, hook.path)
            except HookMissing as exc:
                if hook.optional:
                    _log.debug("mast-otel: %s not patched: %s (not in every supported release)", hook.target, exc)
                    continue
                self.missing(hook.target, exc)
                return False
            resolved.append((owner, attr, hook))
        try:
            for owner, attr, hook in resolved:
                self.patch(owner, attr, hook.make(context))
        except Exception as exc:  # a wrapper factory or wrapt refused: take back what was done
            self.undo()
            self.missing("(patching)", exc)
            return False
        return True

    def patch(self, owner: Any, attr: str, wrapper: Wrapper) -> None:
        """Wrap ``owner.attr`` with ``wrapper``, remembering the raw attribute for :meth:`undo`."""
        with self._lock:
            if self._closed:
                return
            raw = vars(owner).get(attr, _ABSENT)
            wrapt.wrap_function_wrapper(owner, attr, wrapper)
            self._done.append((owner, attr, raw))

    def patch_value(self, owner: Any, attr: str, value: Any) -> None:
        """Set ``owner.attr = value`` (a re-export of a function wrapped elsewhere), undone like :meth:`patch`."""
        with self._lock:
            if self._closed:
                return
            raw = vars(owner).get(attr, _ABSENT)
            setattr(owner, attr, value)
            self._done.append((owner, attr, raw))

    def undo(self) -> None:
        """Restore every patch, the last first. Never raises: an attribute that cannot be restored is counted
        under ``{framework}.undo`` and the others are still restored."""
        with self._lock:
            done, self._done = self._done, []
            self._closed = True
        for owner, attr, raw in reversed(done):
            try:
                if raw is not _ABSENT:
                    setattr(owner, attr, raw)
                elif attr in vars(owner):
                    delattr(owner, attr)  # inherited: remove the wrapper, not the base's method
            except Exception as exc:
                record_failure(f"{self.framework}.undo", exc)

    def missing(self, hook: str, exc: BaseException) -> None:
        """Count and log once (per framework) that ``hook`` could not be patched, so the framework is not
        recorded."""
        record_failure(
            hook_kind(self.framework),
            exc,
            note=f"{self.framework} is not instrumented: hook {hook} of {framework_version(self.distributions)} "
            f"could not be patched ({exc}); the program runs unchanged, without mast-otel's spans for it",
        )
