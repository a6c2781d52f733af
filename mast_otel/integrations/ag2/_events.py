"""AG2's event stream, read without changing it: termination reasons and handoff reasons.

AG2 Classic announces *why* a run ended (``TerminationEvent``) and *why* control moved in the group API
(``AfterWorksTransitionEvent`` and friends) only as events sent to the current ``IOStream``, each built right
where it is sent (``iostream.send(TerminationEvent(...))``). The instrumentor observes those event classes as
they are constructed: the stream the program chose (``IOStream.get_default()``) is never replaced, wrapped or
referenced, so ``is``, ``isinstance``, ``==`` and attribute assignment on it behave exactly as without mast-otel.
An event built outside a conversation (a program deserialising events) is ignored.
"""

from __future__ import annotations

import re
from typing import Any

from mast_otel import semconv as sc
from mast_otel.integrations.lifecycle import Call, Traced
from mast_otel.recorder import Recorder

# The event classes read, as (module, class): each wraps its ``__init__``.
EVENT_CLASSES: tuple[tuple[str, str], ...] = (
    ("autogen.events.agent_events", "TerminationEvent"),
    ("autogen.agentchat.group.events.transition_events", "AfterWorksTransitionEvent"),
    ("autogen.agentchat.group.events.transition_events", "OnContextConditionTransitionEvent"),
    ("autogen.agentchat.group.events.transition_events", "OnConditionLLMTransitionEvent"),
    ("autogen.agentchat.group.events.transition_events", "ReplyResultTransitionEvent"),
)

# AG2 event "type" tags (wrap_event derives them from the class names).
_TERMINATION = "termination"
_TRANSITION_REASONS = {
    "after_works_transition": sc.HANDOFF_AFTER_WORK,
    "on_context_condition_transition": sc.HANDOFF_CONTEXT_CONDITION,
    "on_condition_llm_transition": sc.HANDOFF_LLM_CONDITION,
    "on_condition_l_l_m_transition": sc.HANDOFF_LLM_CONDITION,  # AG2 0.14's camel2snake of "LLM"
    "reply_result_transition": sc.HANDOFF_TOOL_RESULT,
}

# AG2's termination texts (conversable_agent.py, groupchat.py in 0.9-0.14), most specific first.
_TERMINATION_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^Termination message condition"), sc.TERMINATION_MESSAGE),
    (re.compile(r"^Maximum rounds"), sc.TERMINATION_MAX_ROUNDS),
    (re.compile(r"^Maximum turns"), sc.TERMINATION_MAX_TURNS),
    (re.compile(r"^Maximum number of consecutive auto-replies"), sc.TERMINATION_MAX_AUTO_REPLIES),
    (re.compile(r"^No reply generated"), sc.TERMINATION_NO_REPLY),
    (re.compile(r"^No next speaker selected"), sc.TERMINATION_NO_SPEAKER),
    (re.compile(r"^User requested to end"), sc.TERMINATION_USER_EXIT),
)


def classify_termination(text: str) -> str:
    for pattern, reason in _TERMINATION_PATTERNS:
        if pattern.search(text):
            return reason
    return sc.TERMINATION_COMPLETED


def events(recorder: Recorder) -> Traced:
    """Read each event once it is built (``finish`` runs after ``__init__`` returned; the handle is the event)."""

    def begin(event: Any, call: Call) -> Any:
        return event

    return Traced("ag2.event", begin=begin, finish=lambda event, _: observe(event, recorder))


def observe(event: Any, recorder: Recorder) -> None:
    kind = getattr(event, "type", None)
    if kind == _TERMINATION:
        content = getattr(event, "content", None)
        text = str(getattr(content, "termination_reason", "") or "")
        sender = getattr(content, "sender", None)  # AG2 stores the agent's name
        reason = classify_termination(text)
        conv = recorder.current()
        if conv is not None and conv.termination == sc.TERMINATION_HANDOFF and reason == sc.TERMINATION_NO_SPEAKER:
            return  # the group API's TerminateTarget surfaces as "no next speaker": the handoff already said why
        recorder.terminate(reason, detail=text or None, agent=sender if isinstance(sender, str) else None)
    elif isinstance(kind, str) and kind in _TRANSITION_REASONS:
        # Transition events fire inside speaker selection, where recording is suppressed; they still belong to
        # the conversation whose handoff is being decided.
        conv = recorder.current(include_suppressed=True)
        if conv is not None:
            conv.pending_handoff_reason = _TRANSITION_REASONS[kind]
