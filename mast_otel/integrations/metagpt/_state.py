"""Per-run and per-role-run state carried in context variables, and coverage of subclass overrides.

MetaGPT runs every role of a round in its own asyncio task (``asyncio.gather`` in ``Environment.run``); a task
starts with a copy of the context it was created in, so state set here by ``Team.run`` is seen by every role of
that run, and state set by ``Role.run`` is private to that role's task.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

import wrapt
from opentelemetry import context as otel_context

from mast_otel.integrations.patching import Patches
from mast_otel.recorder import AgentTurn

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]


class Run:
    """One conversation root opened by ``Team.run`` or ``Environment.run``: what the termination is computed from."""

    __slots__ = ("budget", "env", "error", "in_env_run", "n_round", "rounds")

    def __init__(self, env: Any, n_round: int) -> None:
        self.env = env
        self.n_round = n_round
        self.rounds = 0  # Environment.run rounds started
        self.error: BaseException | None = None  # the first failure, as raised (MetaGPT re-wraps and swallows it)
        self.budget: BaseException | None = None  # NoMoneyException from Team._check_balance
        self.in_env_run = False

    def fail(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = exc


class RoleRun:
    """One ``Role.run`` call. The turn of its last action stays open (and current) until the role publishes.

    ``Role.run`` publishes the reply *after* ``react()`` returns, so a turn closed when ``_act`` returns would
    leave the message without the turn that produced it. The turn is closed by the role's next ``_act`` or when
    ``Role.run`` returns; ``base`` is the context outside any turn, current again while ``_think`` runs.
    """

    __slots__ = ("base", "role", "turn")

    def __init__(self, role: Any) -> None:
        self.role = role
        self.turn: AgentTurn | None = None
        self.base = otel_context.get_current()

    def close(self) -> None:
        turn, self.turn = self.turn, None
        if turn is not None:
            turn.end(replied=True)


RUN: ContextVar[Run | None] = ContextVar("mast_otel_metagpt_run", default=None)
ROLE_RUN: ContextVar[RoleRun | None] = ContextVar("mast_otel_metagpt_role_run", default=None)
# The object whose wrapped method is running: an override calling super() must not be recorded twice.
ACTING: ContextVar[Any] = ContextVar("mast_otel_metagpt_acting", default=None)
PUBLISHING: ContextVar[Any] = ContextVar("mast_otel_metagpt_publishing", default=None)


class Overrides:
    """Puts the base-class wrappers on subclasses that override a wrapped method (``Engineer._act``, ...).

    Patching ``Role._act`` does not reach a subclass that defines its own ``_act``. Subclasses that exist at
    instrument time are covered then; a class defined later is covered the first time one of its instances runs.
    """

    def __init__(self, patches: Patches) -> None:
        self._patches = patches  # the integration's own: one undo takes back the base classes and the overrides
        self._wrappers: dict[type, dict[str, Wrapper]] = {}
        self._seen: set[type] = set()
        self._lock = threading.Lock()

    def register(self, base: type, attr: str, wrapper: Wrapper) -> None:
        self._wrappers.setdefault(base, {})[attr] = wrapper
        self._seen.add(base)

    def cover(self, cls: type) -> None:
        if cls in self._seen:
            return
        with self._lock:
            for base, wrappers in self._wrappers.items():
                if not issubclass(cls, base):
                    continue
                for klass in cls.__mro__:
                    if klass is base:
                        break
                    if klass in self._seen:
                        continue
                    own = vars(klass)
                    for attr, wrapper in wrappers.items():
                        if attr in own and not isinstance(own[attr], wrapt.FunctionWrapper):
                            self._patches.patch(klass, attr, wrapper)
                    self._seen.add(klass)
            self._seen.add(cls)

    def cover_env(self, env: Any) -> None:
        """The environment's class and every role class in it."""
        if env is None:
            return
        self.cover(type(env))
        roles = getattr(env, "roles", None)
        if isinstance(roles, dict):
            for role in roles.values():
                self.cover(type(role))

    def cover_existing(self) -> None:
        for base in list(self._wrappers):
            for cls in _subclasses(base):
                self.cover(cls)

    def forget(self) -> None:
        """Stop covering new subclasses (the patches themselves are undone with the integration's ``Patches``)."""
        with self._lock:
            self._wrappers.clear()
            self._seen.clear()


def _subclasses(cls: type) -> Iterator[type]:
    sub: type
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)
