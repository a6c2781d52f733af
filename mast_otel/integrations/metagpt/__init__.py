"""MetaGPT 0.8 (``metagpt>=0.8,<0.9``; built and tested against 0.8.2).

``MetaGPTInstrumentor().instrument()`` (or ``mast_otel.instrument()``, or ``opentelemetry-instrument``) patches
MetaGPT's classes, so every team, environment and role, created before or after, is traced:

====================================  ==================================================================
MetaGPT method                        recorder call
====================================  ==================================================================
``Team.run``                          conversation root, with the idea as the task and ``n_round`` as
                                      max rounds; termination: ``idle`` (every role idle),
                                      ``max_rounds`` (rounds used up, a role not idle),
                                      ``budget_exceeded`` (``NoMoneyException``) or ``error``
``Environment.run``                   conversation root when called on its own (``k`` rounds); inside
                                      ``Team.run`` it counts rounds and notes failures
``Team._check_balance``               reads the budget stop (MetaGPT swallows the exception)
``Role.run``                          scopes one role's round: the turn of its last action stays open
                                      until the role has published that action's message
``Role._act``                         agent turn (``invoke_agent {role name}``) per action, with the
                                      action's name in ``mast.turn.action``
``Role._think``                       runs outside the previous action's turn (which stays open until
                                      the next ``_act``, or until the role has published)
``Environment.publish_message``       one message span (sender role name, ``send_to`` as recipients,
                                      ``cause_by`` as cause) and one handoff (reason ``routing``) per
                                      role that takes it: named in ``send_to`` or watching ``cause_by``
====================================  ==================================================================

Subclasses that override one of these methods (``Engineer._act``, ``WerewolfEnv.publish_message``...) are
patched too: those that exist at instrument time then, later ones the first time they run.

MetaGPT pins dependencies that clash with other frameworks (pydantic < 2.10 among them): install it in its own
virtual environment, see docs/metagpt.md and the `metagpt` session in noxfile.py.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from mast_otel.integrations import recorder_for
from mast_otel.integrations.wrapped_methods import WrappedMethods

from . import _wrappers as w
from ._state import Overrides

__all__ = ["MetaGPTInstrumentor"]

_TEAM = "metagpt.team"
_ENV = "metagpt.environment.base_env"
_ROLE = "metagpt.roles.role"

# (module, Class.method, wrapper factory): the whole coverage list, greppable in one place.
_TARGETS: tuple[tuple[str, str, w.Factory], ...] = (
    (_TEAM, "Team.run", w.traced_team_run),
    (_TEAM, "Team._check_balance", w.watched_check_balance),
    (_ENV, "Environment.run", w.traced_env_run),
    (_ENV, "Environment.publish_message", w.traced_publish_message),
    (_ROLE, "Role.run", w.traced_role_run),
    (_ROLE, "Role._think", w.traced_think),
    (_ROLE, "Role._act", w.traced_act),
)


class MetaGPTInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Spans for MetaGPT runs, role actions, published messages, watch/send_to routing and termination."""

    _methods: WrappedMethods | None = None
    _overrides: Overrides

    def instrumentation_dependencies(self) -> Collection[str]:
        return ("metagpt >= 0.8, < 0.9",)

    def _instrument(self, **kwargs: Any) -> None:
        recorder = recorder_for("metagpt", kwargs)
        self._methods = WrappedMethods()
        self._overrides = Overrides()
        for module, path, factory in _TARGETS:
            wrapper = factory(recorder, self._overrides)
            owner = self._methods.wrap(module, path, wrapper)
            self._overrides.register(owner, path.rpartition(".")[2], wrapper)
        self._overrides.cover_existing()

    def _uninstrument(self, **kwargs: Any) -> None:
        overrides = getattr(self, "_overrides", None)
        if overrides is not None:
            overrides.undo()
        if self._methods is not None:
            self._methods.unwrap_all()
