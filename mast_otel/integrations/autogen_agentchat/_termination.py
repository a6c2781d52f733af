"""Why a team stopped: the stop condition that fired, the manager's own limits, Magentic-One's ledger, errors.

A group chat manager resets its termination condition *before* it signals termination, so by then the condition
no longer says which of its parts fired. Each built-in condition class's ``__call__`` is therefore watched: the
classes that returned a ``StopMessage`` are noted on the run, and ``_signal_termination`` maps them to a reason.
"""

from __future__ import annotations

import inspect
from typing import Any

from mast_otel import semconv as sc
from mast_otel.integrations.lifecycle import Call, Traced
from mast_otel.recorder import Recorder

from ._state import RunState, current_run

# autogen_agentchat.conditions class -> mast.termination.reason. Anything else (FunctionalTermination, a user's
# own subclass) is a custom condition.
CONDITION_REASONS: dict[str, str] = {
    "TextMentionTermination": sc.TERMINATION_MESSAGE,
    "TextMessageTermination": sc.TERMINATION_MESSAGE,
    "StopMessageTermination": sc.TERMINATION_MESSAGE,
    "MaxMessageTermination": sc.TERMINATION_MAX_ROUNDS,  # a cap on messages, as AG2's max_round
    "HandoffTermination": sc.TERMINATION_HANDOFF,
    "TimeoutTermination": sc.TERMINATION_TIMEOUT,
    "TokenUsageTermination": sc.TERMINATION_BUDGET,
    "ExternalTermination": sc.TERMINATION_EXTERNAL,
    "FunctionCallTermination": sc.TERMINATION_FUNCTION_CALL,
    "SourceMatchTermination": sc.TERMINATION_SOURCE_MATCH,
}
_MAX_TURNS_PREFIX = "Maximum number of turns"  # BaseGroupChatManager._apply_termination_condition
_GRAPH_COMPLETE = "Digraph execution is complete"  # _digraph_group_chat._DIGRAPH_STOP_MESSAGE
_M1_MAX_ROUNDS = "Max rounds reached."  # MagenticOneOrchestrator._orchestrate_step


def condition_classes(module: Any) -> list[type]:
    """The stop-condition classes of ``autogen_agentchat.conditions`` that define their own ``__call__``."""
    from autogen_agentchat.base import TerminationCondition

    found = []
    for _, cls in inspect.getmembers(module, inspect.isclass):
        if issubclass(cls, TerminationCondition) and "__call__" in vars(cls):
            found.append(cls)
    return found


def watched_condition(recorder: Recorder) -> Traced:
    """A stop condition's ``__call__``: the run notes the classes that returned a ``StopMessage``."""

    def finish(handle: tuple[RunState, Any], result: Any) -> None:
        run, condition = handle
        name = type(condition).__name__
        if result is not None and name not in run.fired:
            run.fired.append(name)

    def begin(condition: Any, _: Call) -> tuple[RunState, Any] | None:
        run = current_run()
        return (run, condition) if run is not None else None

    return Traced("autogen_agentchat.condition", begin, finish=finish)


def _last_speaker(manager: Any) -> str | None:
    from autogen_agentchat.messages import BaseChatMessage

    for message in reversed(getattr(manager, "_message_thread", ())):
        if isinstance(message, BaseChatMessage):
            return str(message.source)
    return None


def classify(content: str, source: str, manager_name: str, fired: list[str]) -> str:
    """The mast.termination.reason for a StopMessage, given the condition classes that fired."""
    for name in fired:
        return CONDITION_REASONS.get(name, sc.TERMINATION_CUSTOM)
    if source == manager_name and content.startswith(_MAX_TURNS_PREFIX):
        return sc.TERMINATION_MAX_TURNS
    if content == _GRAPH_COMPLETE:
        return sc.TERMINATION_GRAPH_COMPLETE
    return sc.TERMINATION_CUSTOM


def signalled_termination(recorder: Recorder) -> Traced:
    """``_signal_termination(StopMessage)``: the reason, the StopMessage text (= ``TaskResult.stop_reason``)."""

    def begin(manager: Any, call: Call) -> None:
        run = current_run()
        message = call.get("message")
        if run is not None and message is not None:
            content = str(getattr(message, "content", ""))
            source = str(getattr(message, "source", ""))
            reason = classify(content, source, run.manager_name, run.fired)
            agent = _last_speaker(manager) if run.fired else source
            recorder.terminate(reason, detail=content, agent=agent)
            if run.fired:
                run.conversation.span.set_attribute(sc.TERMINATION_CONDITION, list(run.fired))

    return Traced("autogen_agentchat.termination", begin, params=("message",))


def signalled_error(recorder: Recorder) -> Traced:
    """``_signal_termination_with_error``: the run raises next (``run_stream`` re-raises it as RuntimeError)."""

    def begin(_: Any, call: Call) -> None:
        error = call.get("error")
        detail = f"{getattr(error, 'error_type', 'error')}: {getattr(error, 'error_message', error)}"
        recorder.terminate(sc.TERMINATION_ERROR, detail=recorder.config.redactor.redact(detail)[0])

    return Traced("autogen_agentchat.termination_error", begin, params=("error",))


def final_answer(recorder: Recorder) -> Traced:
    """Magentic-One's ``_prepare_final_answer(reason)``: the ledger said the request is satisfied, or max rounds."""

    def begin(orchestrator: Any, call: Call) -> None:
        stated = str(call.get("reason", ""))
        if stated == _M1_MAX_ROUNDS:
            recorder.terminate(sc.TERMINATION_MAX_ROUNDS, detail=stated, agent=str(orchestrator._name))
        else:
            # The ledger's is_request_satisfied.reason: the orchestrator's own words, so content.
            detail = recorder.config.redactor.redact(stated)[0] if recorder.config.capture_content else None
            recorder.terminate(sc.TERMINATION_COMPLETED, detail=detail, agent=str(orchestrator._name))

    return Traced("autogen_agentchat.final_answer", begin, params=("reason",))
