"""Handoffs: who gets the turn next, and why, by team type.

Every manager but Magentic-One's selects through ``_transition_to_next_speakers``, which asks ``select_speaker``
and then logs the choice (``_log_speaker_selection``): the handoff opens at the first and is recorded at the second,
with a reason read from the manager's class and from what the selection left behind (the selector LLM's answers,
the graph edges whose conditions held, the Swarm ``HandoffMessage``). Magentic-One's orchestrator picks the next
speaker in ``_orchestrate_step`` from its progress ledger; the handoff is recorded when it asks that speaker to
publish, with the ledger's ``next_speaker.reason`` as the stated reason.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.util.types import AttributeValue

from mast_otel import semconv as sc
from mast_otel.integrations.lifecycle import Call, Traced
from mast_otel.recorder import Recorder

from ._state import SELECTION_KEY, RunState, Selection, attached, current_run, current_selection

Attrs = dict[str, AttributeValue]


def _previous_speaker(manager: Any) -> str:
    from autogen_agentchat.messages import BaseChatMessage

    for message in reversed(getattr(manager, "_message_thread", ())):
        if isinstance(message, BaseChatMessage):
            return str(message.source)
    return "user"


def _content(recorder: Recorder, text: str) -> str | None:
    """LLM-written text (a selector's answer, a ledger's reason) is content: captured and redacted as such."""
    if not recorder.config.capture_content:
        return None
    return recorder.config.redactor.redact(text)[0]


def _with_content(attrs: Attrs, key: str, value: str | None) -> Attrs:
    if value is not None:
        attrs[key] = value
    return attrs


# -- the generic selection path ----------------------------------------------------------------------
def _selecting(selection: Selection) -> AbstractContextManager[None]:
    return attached(otel_context.set_value(SELECTION_KEY, selection))


def _selection_failed(selection: Selection, exc: BaseException) -> None:
    if selection.handoff is not None:
        selection.handoff.fail(exc)
        selection.handoff = None


def transitions(recorder: Recorder) -> Traced:
    """``_transition_to_next_speakers``: opens the handoff while the manager selects."""

    def begin(manager: Any, _: Call) -> Selection | None:
        if current_run() is None:
            return None
        source = _previous_speaker(manager)
        return Selection(recorder.start_handoff(source, candidates=list(manager._participant_names)), source)

    return Traced("autogen_agentchat.selection", begin, fail=_selection_failed, inside=_selecting)


def selected(recorder: Recorder) -> Traced:
    """``_log_speaker_selection(speaker_names)``: records one handoff per selected speaker."""

    def begin(manager: Any, call: Call) -> None:
        selection = current_selection()
        run = current_run()
        if selection is not None and run is not None and selection.handoff is not None:
            names = call.get("speaker_names", [])
            _record_selection(recorder, run, manager, selection, [str(n) for n in names])

    return Traced("autogen_agentchat.selected", begin, params=("speaker_names",))


def _record_selection(recorder: Recorder, run: RunState, manager: Any, selection: Selection, names: list[str]) -> None:
    from autogen_agentchat.teams._group_chat._graph._digraph_group_chat import GraphFlowManager

    graph = isinstance(manager, GraphFlowManager)
    for i, target in enumerate(names):
        reason, attrs = _reason(recorder, run, manager, selection, target)
        handoff = selection.handoff if i == 0 and not graph else None
        if handoff is None:
            # A graph hands off along its edges (from the edge's source), several targets at once.
            source = attrs.pop("_source", selection.source)
            handoff = recorder.start_handoff(str(source), candidates=list(manager._participant_names))
        attrs.pop("_source", None)
        if handoff is not None:
            handoff.end(target, reason=reason, attributes=attrs)
    selection.handoff = None


def _reason(recorder: Recorder, run: RunState, manager: Any, selection: Selection, target: str) -> tuple[str, Attrs]:
    from autogen_agentchat.teams._group_chat._graph._digraph_group_chat import GraphFlowManager
    from autogen_agentchat.teams._group_chat._round_robin_group_chat import RoundRobinGroupChatManager
    from autogen_agentchat.teams._group_chat._selector_group_chat import SelectorGroupChatManager
    from autogen_agentchat.teams._group_chat._swarm_group_chat import SwarmGroupChatManager

    if isinstance(manager, RoundRobinGroupChatManager):
        return sc.HANDOFF_ROUND_ROBIN, {}
    if isinstance(manager, SelectorGroupChatManager):
        if selection.answers:
            attrs: Attrs = {sc.HANDOFF_ATTEMPTS: len(selection.answers)}
            return sc.HANDOFF_LLM_SELECTION, _with_content(
                attrs, sc.HANDOFF_DETAIL, _content(recorder, selection.answers[-1])
            )
        if manager._selector_func is not None or manager._candidate_func is not None:
            which = "selector_func" if manager._selector_func is not None else "candidate_func"
            return sc.HANDOFF_CUSTOM, {sc.HANDOFF_DETAIL: which}
        return sc.HANDOFF_ONLY_CANDIDATE, {}
    if isinstance(manager, SwarmGroupChatManager):
        return _swarm_reason(recorder, manager)
    if isinstance(manager, GraphFlowManager):
        edges = run.edges.pop(target, [])
        if not edges:
            return sc.HANDOFF_INITIAL, {sc.HANDOFF_DETAIL: "start node"}
        return sc.HANDOFF_GRAPH_EDGE, {sc.HANDOFF_DETAIL: "; ".join(edges), "_source": edges[0].split(" -> ")[0]}
    return sc.HANDOFF_ROUTING, {}


def _swarm_reason(recorder: Recorder, manager: Any) -> tuple[str, Attrs]:
    from autogen_agentchat.messages import BaseChatMessage, HandoffMessage

    chat = [m for m in manager._message_thread if isinstance(m, BaseChatMessage)]
    if chat and isinstance(chat[-1], HandoffMessage):
        last = chat[-1]
        context = "\n".join(str(getattr(m, "content", m)) for m in last.context)
        detail = f"{last.content}\n{context}".strip()
        return sc.HANDOFF_TOOL_CALL, _with_content({}, sc.HANDOFF_DETAIL, _content(recorder, detail))
    if not any(isinstance(m, HandoffMessage) for m in chat) and all(
        m.source not in manager._participant_names for m in chat
    ):
        return sc.HANDOFF_INITIAL, {}
    return sc.HANDOFF_SAME_SPEAKER, {}


def selector_answers(recorder: Recorder) -> Traced:
    """``SelectorGroupChatManager._mentioned_agents(content, names)``: called once per LLM attempt."""

    def begin(_: Any, call: Call) -> None:
        selection = current_selection()
        if selection is not None:
            selection.answers.append(str(call.get("message_content")))

    return Traced("autogen_agentchat.selector_answer", begin, params=("message_content",))


def graph_edges(recorder: Recorder) -> Traced:
    """``DiGraphEdge.check_condition(message)``: the edges whose condition held, for the handoff they cause."""

    def begin(edge: Any, call: Call) -> tuple[RunState, Any, Any] | None:
        run = current_run()
        return (run, edge, call.get("message")) if run is not None else None

    def finish(handle: tuple[RunState, Any, Any], result: Any) -> None:
        run, edge, message = handle
        if not result:
            return
        condition = edge.condition
        if condition is None:
            how = "unconditional"
        elif isinstance(condition, str):
            how = f"condition: {condition!r} in message"
        else:
            how = f"condition: {getattr(condition, '__name__', type(condition).__name__)}"
        run.edges.setdefault(str(edge.target), []).append(f"{message.source} -> {edge.target} ({how})")

    return Traced("autogen_agentchat.graph_edge", begin, finish=finish, params=("message",))


# -- Magentic-One ----------------------------------------------------------------------------------
def orchestrate_steps(recorder: Recorder) -> Traced:
    """``_orchestrate_step``: one inner-loop step of the orchestrator; its ledger names the next speaker."""

    def begin(orchestrator: Any, _: Call) -> Selection | None:
        if current_run() is None:
            return None
        name = str(orchestrator._name)
        return Selection(recorder.start_handoff(name, candidates=list(orchestrator._participant_names)), name)

    return Traced("autogen_agentchat.orchestrate_step", begin, fail=_selection_failed, inside=_selecting)


def ledgers(recorder: Recorder) -> Traced:
    """``extract_json_from_str`` as the orchestrator calls it: the progress ledger of the current step."""

    def finish(selection: Selection, result: Any) -> None:
        if isinstance(result, list) and len(result) == 1 and isinstance(result[0], dict):
            selection.ledger = result[0]

    return Traced("autogen_agentchat.ledger", lambda _, __: current_selection(), finish=finish)


def _answer(ledger: dict[str, Any] | None, key: str, field: str = "answer") -> Any:
    entry = (ledger or {}).get(key)
    return entry.get(field) if isinstance(entry, dict) else None


def _stall(recorder: Recorder, manager: Any, selection: Selection) -> None:
    ledger = selection.ledger
    if _answer(ledger, "is_progress_being_made") is False:
        why = "no progress: " + str(_answer(ledger, "is_progress_being_made", "reason") or "")
    elif _answer(ledger, "is_in_loop") is True:
        why = "in a loop: " + str(_answer(ledger, "is_in_loop", "reason") or "")
    else:
        return
    attrs: Attrs = {
        sc.ORCHESTRATOR_STALLS: int(manager._n_stalls),
        sc.ORCHESTRATOR_MAX_STALLS: int(manager._max_stalls),
    }
    recorder.event(sc.EVENT_STALL, attrs, content={sc.ORCHESTRATOR_REASON: why})


def orchestrator_publish(recorder: Recorder) -> Traced:
    """``MagenticOneOrchestrator.publish_message``: a ``GroupChatRequestPublish`` to a participant is the handoff."""

    def begin(orchestrator: Any, call: Call) -> None:
        selection = current_selection()
        if selection is not None and selection.handoff is not None:
            _orchestrator_handoff(recorder, orchestrator, selection, call.get("message"), call.get("topic_id"))

    return Traced("autogen_agentchat.orchestrator_publish", begin, params=("message", "topic_id"))


def _orchestrator_handoff(recorder: Recorder, manager: Any, selection: Selection, message: Any, topic: Any) -> None:
    from autogen_agentchat.teams._group_chat._events import GroupChatRequestPublish

    if not isinstance(message, GroupChatRequestPublish) or selection.handoff is None:
        return
    by_topic = {t: n for n, t in manager._participant_name_to_topic_type.items()}
    target = by_topic.get(getattr(topic, "type", None), str(_answer(selection.ledger, "next_speaker")))
    _stall(recorder, manager, selection)
    stated = str(_answer(selection.ledger, "next_speaker", "reason") or "")
    # The ledger's reason is the LLM's text: the recorder captures and redacts it as content.
    selection.handoff.end(target, reason=sc.HANDOFF_PROGRESS_LEDGER, content={sc.HANDOFF_STATED_REASON: stated})
    selection.handoff = None


def replans(recorder: Recorder) -> Traced:
    """``_update_task_ledger``: too many stalls; the orchestrator re-plans (then re-enters its outer loop)."""

    def begin(orchestrator: Any, _: Call) -> None:
        selection = current_selection()
        if selection is not None and current_run() is not None:
            _stall(recorder, orchestrator, selection)
            recorder.event(sc.EVENT_REPLAN, {sc.ORCHESTRATOR_STALLS: int(orchestrator._n_stalls)})

    return Traced("autogen_agentchat.replan", begin)


def outer_loops(recorder: Recorder) -> Traced:
    """``_reenter_outer_loop``: the facts and plan the orchestrator (re-)starts its inner loop with."""

    def begin(orchestrator: Any, _: Call) -> None:
        if current_run() is not None:
            content = {sc.ORCHESTRATOR_FACTS: str(orchestrator._facts), sc.ORCHESTRATOR_PLAN: str(orchestrator._plan)}
            recorder.event(sc.EVENT_PLAN, {sc.ORCHESTRATOR_STALLS: int(orchestrator._n_stalls)}, content=content)

    return Traced("autogen_agentchat.plan", begin)
