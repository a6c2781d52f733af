"""MetaGPT's implicit routing, recomputed without touching it: who sent a message, who it is for, who takes it.

MetaGPT never names a message's receiver. ``Environment.publish_message`` puts the message in the buffer of every
role whose addresses match its ``send_to`` (``"<all>"`` by default), and each role's ``_observe`` later keeps it
only if the role watches the action that caused it (``cause_by in rc.watch``) or is named in ``send_to``. That
second filter is the real handoff, so it is replayed here from the roles' watch lists at publish time.
``sent_from`` and ``cause_by`` are class paths (``metagpt.roles.role.Role``), not names: names come from the
``Role`` instances.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# metagpt.const.MESSAGE_ROUTE_TO_ALL, spelled here so that this module imports without MetaGPT.
ROUTE_TO_ALL = "<all>"


def role_name(role: Any) -> str:
    name = getattr(role, "name", None)
    return name if isinstance(name, str) and name else type(role).__name__


def class_path(obj: Any) -> str:
    """MetaGPT's ``any_to_str`` for an instance: the class's ``module.qualname``."""
    cls = type(obj)
    return f"{cls.__module__}.{cls.__name__}"


def short_name(path: str) -> str:
    """``metagpt.actions.add_requirement.UserRequirement`` -> ``UserRequirement``."""
    return path.rsplit(".", 1)[-1] if path else path


def env_roles(env: Any) -> list[Any]:
    roles = getattr(env, "roles", None)
    return list(roles.values()) if isinstance(roles, dict) else []


def resolve_sender(message: Any, env: Any, publisher: Any | None) -> tuple[str, Any | None]:
    """The sender's name and Role: the role whose run is publishing, else the one ``sent_from`` names uniquely.

    A message published outside any role's run (the idea ``Team.run`` publishes, or user code) has an empty
    ``sent_from``; its ``role`` field (``"Human"`` for the idea) is the best name there is.
    """
    if publisher is not None:
        return role_name(publisher), publisher
    sent_from = getattr(message, "sent_from", "") or ""
    if sent_from:
        matches = [r for r in env_roles(env) if sent_from in (class_path(r), role_name(r))]
        if len(matches) == 1:
            return role_name(matches[0]), matches[0]
        return short_name(sent_from), None
    role = getattr(message, "role", "")
    return (role if isinstance(role, str) and role else "user"), None


def recipients(send_to: Iterable[str], env: Any) -> list[str]:
    """``send_to`` with class paths turned into role names where one role matches; ``"<all>"`` stays."""
    roles = env_roles(env)
    out: list[str] = []
    for addr in sorted(send_to):
        if addr == ROUTE_TO_ALL:
            out.append(addr)
            continue
        matches = [role_name(r) for r in roles if addr in (class_path(r), role_name(r))]
        out.append(matches[0] if len(matches) == 1 else addr)
    return out


def _addresses(env: Any, role: Any) -> Any:
    try:
        return env.member_addrs.get(role, ())
    except Exception:  # an unhashable or exotic role: fall back to MetaGPT's default addresses
        return (class_path(role), role_name(role))


def route(message: Any, env: Any, sender: Any | None) -> tuple[list[Any], list[Any]]:
    """(roles the message is delivered to, roles among them that will take it), the sender excluded.

    Delivery is ``metagpt.utils.common.is_send_to`` against ``member_addrs``; taking is ``Role._observe``'s
    filter. The sender is left out: it already holds its own message in memory, so ``_observe`` drops it.
    """
    send_to = getattr(message, "send_to", None) or {ROUTE_TO_ALL}
    cause_by = getattr(message, "cause_by", "")
    to_all = ROUTE_TO_ALL in send_to
    delivered: list[Any] = []
    takers: list[Any] = []
    for role in env_roles(env):
        if role is sender:
            continue
        if not to_all and not any(addr in send_to for addr in _addresses(env, role)):
            continue
        delivered.append(role)
        watch = getattr(getattr(role, "rc", None), "watch", ()) or ()
        if cause_by in watch or role_name(role) in send_to:
            takers.append(role)
    return delivered, takers


def busy_roles(env: Any) -> list[str]:
    """Names of the roles that still have work (MetaGPT's ``Role.is_idle`` is false)."""
    busy: list[str] = []
    for role in env_roles(env):
        try:
            idle = bool(role.is_idle)
        except Exception:
            continue
        if not idle:
            busy.append(role_name(role))
    return busy
