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
from mast_otel.integrations.patching import Hook, Patches, resolve
from mast_otel.recorder import Recorder

from . import _wrappers as w
from ._state import Overrides

__all__ = ["HOOKS", "MetaGPTInstrumentor"]

_TEAM = "metagpt.team"
_ENV = "metagpt.environment.base_env"
_ROLE = "metagpt.roles.role"

Context = tuple[Recorder, Overrides]  # what every MetaGPT wrapper factory takes


def _hook(module: str, path: str, factory: w.Factory) -> Hook[Context]:
    return Hook(module, path, lambda context: factory(*context))


# The whole coverage list, greppable in one place.
HOOKS: tuple[Hook[Context], ...] = (
    _hook(_TEAM, "Team.run", w.traced_team_run),
    _hook(_TEAM, "Team._check_balance", w.watched_check_balance),
    _hook(_ENV, "Environment.run", w.traced_env_run),
    _hook(_ENV, "Environment.publish_message", w.traced_publish_message),
    _hook(_ROLE, "Role.run", w.traced_role_run),
    _hook(_ROLE, "Role._think", w.traced_think),
    _hook(_ROLE, "Role._act", w.traced_act),
)


class MetaGPTInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Spans for MetaGPT runs, role actions, published messages, watch/send_to routing and termination."""

    _patches: Patches | None = None
    _overrides: Overrides | None = None

    def instrumentation_dependencies(self) -> Collection[str]:
        return ("metagpt >= 0.8, < 0.9",)

    def _instrument(self, **kwargs: Any) -> None:
        recorder = recorder_for("metagpt", kwargs)
        self._patches = patches = Patches("metagpt")
        self._overrides = overrides = Overrides(patches)
        if not patches.apply(HOOKS, (recorder, overrides)):
            return
        try:
            for hook in HOOKS:
                owner, attr = resolve(hook.module, hook.path)
                overrides.register(owner, attr, hook.make((recorder, overrides)))
            overrides.cover_existing()
        except Exception as exc:  # all or nothing, like a missing hook
            overrides.forget()
            patches.undo()
            patches.missing("(subclass overrides)", exc)

    def _uninstrument(self, **kwargs: Any) -> None:
        if self._overrides is not None:
            self._overrides.forget()
        if self._patches is not None:
            self._patches.undo()
