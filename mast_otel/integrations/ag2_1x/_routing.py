"""How control moves and how a channel ends, read from AG2's own record after the hub folded an envelope.

AG2 decides both inside the channel adapter's ``fold`` (private): the packet's ``routing`` field carries a tool's
``Handoff`` / ``Finish``; otherwise the workflow graph picks the next speaker; a discussion rotates round robin.
The folded state the hub exposes (``Hub.adapter_state``) holds the outcome: ``expected_next_speaker`` and, for a
graph that ends the channel, ``pending_close_reason``. Nothing here changes AG2's decision; it only reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mast_otel import semconv as sc

from ._channels import ChannelRun

WORKFLOW = "workflow"
DISCUSSION = "discussion"
CONSULTING = "consulting"
CLOSE_MAX_TURNS = "max_turns"  # WorkflowAdapter.on_accepted
CLOSE_CONSULTING_DONE = "consulting_complete"  # ConsultingAdapter.on_accepted
CLOSE_EXPECTATION = "expectation_violated"  # AutoCloseHandler: "expectation_violated:<name>"


@dataclass(frozen=True)
class Route:
    """One handoff: ``target`` None ends the channel."""

    target: str | None
    reason: str
    detail: str | None = None


def route_after(run: ChannelRun, envelope: Any, state: Any) -> Route | None:
    """The handoff the envelope just caused (None: the channel type has no turn order, or nothing moved).

    Also notes on ``run`` how the channel is about to end, when this envelope ends it.
    """
    if run.kind == WORKFLOW:
        return _workflow_route(run, envelope, state)
    if run.kind == DISCUSSION:
        nxt = getattr(state, "expected_next_speaker", None)
        if nxt:
            return Route(run.name(nxt), sc.HANDOFF_ROUND_ROBIN)
    return None


def _workflow_route(run: ChannelRun, envelope: Any, state: Any) -> Route | None:
    routing = envelope.event_data.get("routing") or {}
    kind = routing.get("kind")
    nxt = getattr(state, "expected_next_speaker", None)
    if kind == "finish":
        run.finish = dict(routing)
        run.finish_sender = run.name(envelope.sender_id)
        return None
    turns = getattr(state, "turn_count", 0)
    if run.max_turns is not None and turns >= run.max_turns and nxt is not None:
        return None  # the hub closes the channel on this turn (max_turns): nobody takes over
    tool = routing.get("tool") or ""
    stated = routing.get("reason") or ""
    if kind == "handoff" and routing.get("target"):
        # A tool returned Handoff(target, reason): the agent chose, and said why.
        return Route(run.name(routing["target"]), sc.HANDOFF_TOOL_CALL, f"{tool}: {stated}" if stated else tool)
    if nxt is None:
        reason = getattr(state, "pending_close_reason", "") or ""
        run.graph_end = reason
        return Route(None, sc.HANDOFF_ROUTING, _condition(run, envelope, state) or reason)
    detail = _condition(run, envelope, state)
    if kind == "handoff" and stated:
        detail = f"{detail}; {tool}: {stated}" if detail else f"{tool}: {stated}"
    return Route(run.name(nxt), sc.HANDOFF_ROUTING, detail)


def _condition(run: ChannelRun, envelope: Any, state: Any) -> str | None:
    """The graph rule that fired, as AG2 prints it, with agent ids replaced by names."""
    try:
        from ag2.network import TransitionGraph

        graph = TransitionGraph.loads(state.graph_data)
        for rule in sorted(graph.transitions, key=lambda t: t.priority):
            if rule.when.evaluate(state, envelope):
                return _named(run, f"{rule.when!r} -> {rule.then!r}")
        return _named(run, f"default_target {graph.default_target!r}")
    except Exception:  # an AG2 version whose graph API moved: the handoff is still recorded, without its rule
        return None


def _named(run: ChannelRun, text: str) -> str:
    for agent_id in run.participant_ids:
        text = text.replace(agent_id, run.name(agent_id))
    return text


def termination(run: ChannelRun, kind: str, reason: str) -> tuple[str, str | None, str | None]:
    """(termination reason, detail, agent) for a channel that just closed (``kind`` closed) or expired.

    AG2's close reason decides; what the listener saw before (a Finish packet, a graph end, a violated
    expectation, a failed turn) explains it.
    """
    if kind == "expired":
        return sc.TERMINATION_EXPIRED, reason or None, None
    if reason == CLOSE_MAX_TURNS:
        return sc.TERMINATION_MAX_TURNS, f"the workflow graph's max_turns ({run.max_turns}) was reached", None
    if run.finish is not None and reason == (run.finish.get("reason") or "finished"):
        summary = run.finish.get("summary") or ""
        return sc.TERMINATION_FINISH, f"{reason}: {summary}" if summary else reason, run.finish_sender
    if run.graph_end is not None and reason == (run.graph_end or "workflow_terminated"):
        return sc.TERMINATION_HANDOFF, reason, None
    if reason == CLOSE_CONSULTING_DONE:
        return sc.TERMINATION_COMPLETED, reason, None
    if reason.startswith(CLOSE_EXPECTATION) or run.violation is not None:
        return sc.TERMINATION_EXPECTATION, f"{reason}: {run.violation}" if run.violation else reason, None
    if run.turn_failure is not None:
        return sc.TERMINATION_ERROR, f"{run.turn_failure}; then closed: {reason}", None
    return sc.TERMINATION_CLOSED, reason or None, None
