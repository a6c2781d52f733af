"""Content learnt after a span opened is redacted like message text: one test per late-set path of the recorder.

The paths: ``Recorder.set_task`` (a run's input learnt after the root opened: OpenAI Agents, AG2 1.x),
``ToolCall.set_arguments`` (arguments filled in late: OpenAI Agents), a handoff's ``detail`` (CrewAI delegation
arguments through ``handoff``, OpenAI transfer arguments through ``start_handoff``) and ``Handoff.end(content=)``
(Magentic-One's ledger reason, a selector's answer). Each test fails if its path stops redacting, capping or
honouring content capture off.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mast_otel import CaptureConfig, Recorder
from mast_otel import semconv as sc
from mast_otel.redaction import REDACTED

SECRET = "sk-proj-" + "Q7x" * 10
PASSWORD = "hunter2-horse"  # caught by the key = value pattern, which keeps the key
CAP = 64


def _recorder(tracer_provider: Any, **config: Any) -> Recorder:
    return Recorder(tracer_provider=tracer_provider, config=CaptureConfig.from_env(environ={}, **config))


def _only(exporter: Any, span_type: str) -> Any:
    (span,) = [s for s in exporter.get_finished_spans() if s.attributes.get(sc.MAST_SPAN_TYPE) == span_type]
    return span


def _assert_clean(value: Any) -> None:
    assert isinstance(value, str)
    assert SECRET not in value and PASSWORD not in value
    assert REDACTED in value


def set_task(rec: Recorder, text: Any) -> None:
    opened = rec.start_conversation("run")
    assert opened is not None
    rec.set_task(opened[0], text)
    rec.end_conversation(*opened)


def set_arguments(rec: Recorder, arguments: Any) -> None:
    with rec.conversation("run"), rec.tool_call("transfer_funds") as call:
        assert call is not None
        call.set_arguments(arguments)


def crewai_delegation(rec: Recorder, arguments: Any) -> None:
    """CrewAI's manager delegating: ``handoff(detail=tool(arguments))``."""
    detail = f"Delegate work to coworker({json.dumps(arguments)})"
    with rec.conversation("crew"):
        rec.handoff("manager", "researcher", reason=sc.HANDOFF_DELEGATION, detail=detail)


def openai_transfer(rec: Recorder, arguments: Any) -> None:
    """The OpenAI Agents SDK's transfer tool call: ``start_handoff(detail=...)``, ended once the target is known."""
    with rec.conversation("run"):
        handoff = rec.start_handoff("triage", candidates=["refunds"], detail=f"transfer_to_refunds({arguments})")
        assert handoff is not None
        handoff.end("refunds", reason=sc.HANDOFF_TOOL_CALL)


def ledger_reason(rec: Recorder, reason: Any) -> None:
    """Magentic-One: the progress ledger's reason for the next speaker, known only when the handoff ends."""
    with rec.conversation("team"):
        handoff = rec.start_handoff("orchestrator", candidates=["coder"])
        assert handoff is not None
        handoff.end("coder", reason=sc.HANDOFF_PROGRESS_LEDGER, content={sc.HANDOFF_STATED_REASON: reason})


# (how the path is driven, which span and attribute it writes)
PATHS = {
    "set_task": (set_task, sc.SPAN_TYPE_CONVERSATION, sc.CONVERSATION_TASK),
    "set_arguments": (set_arguments, sc.SPAN_TYPE_TOOL_CALL, sc.GEN_AI_TOOL_CALL_ARGUMENTS),
    "crewai_delegation": (crewai_delegation, sc.SPAN_TYPE_HANDOFF, sc.HANDOFF_DETAIL),
    "openai_transfer": (openai_transfer, sc.SPAN_TYPE_HANDOFF, sc.HANDOFF_DETAIL),
    "ledger_reason": (ledger_reason, sc.SPAN_TYPE_HANDOFF, sc.HANDOFF_STATED_REASON),
}


@pytest.mark.parametrize("path", PATHS)
def test_redacted_like_message_text(path: str, tracer_provider: Any, span_exporter: Any) -> None:
    drive, span_type, key = PATHS[path]
    value = {"key": SECRET, "note": f"password = {PASSWORD}"}
    drive(_recorder(tracer_provider), value if path != "ledger_reason" else json.dumps(value))
    written = _only(span_exporter, span_type).attributes[key]
    _assert_clean(written)
    assert "password" in written  # the key of a key = value secret stays: only the value is replaced


@pytest.mark.parametrize("path", PATHS)
def test_capped_like_message_text(path: str, tracer_provider: Any, span_exporter: Any) -> None:
    drive, span_type, key = PATHS[path]
    drive(_recorder(tracer_provider, max_content_length=CAP), "x" * 10 * CAP)
    assert len(_only(span_exporter, span_type).attributes[key]) <= CAP


@pytest.mark.parametrize("path", PATHS)
def test_left_out_with_content_capture_off(path: str, tracer_provider: Any, span_exporter: Any) -> None:
    drive, span_type, key = PATHS[path]
    drive(_recorder(tracer_provider, capture_content=False), f"use {SECRET}")
    assert key not in _only(span_exporter, span_type).attributes


@pytest.mark.parametrize("path", PATHS)
def test_user_callback_applies(path: str, tracer_provider: Any, span_exporter: Any) -> None:
    """The program's own redactor sees late content too (a secret shape no built-in pattern knows)."""
    drive, span_type, key = PATHS[path]
    drive(_recorder(tracer_provider, redact=lambda text: text.replace("ACME-42", "<acme>")), "order ACME-42")
    written = _only(span_exporter, span_type).attributes[key]
    assert "ACME-42" not in written and "<acme>" in written


def test_openinference_input_is_the_redacted_text(tracer_provider: Any, span_exporter: Any) -> None:
    """With OpenInference attributes on, the late task is also ``input.value``: the same cleaned text."""
    set_task(_recorder(tracer_provider, openinference=True), f"deploy with {SECRET}")
    root = _only(span_exporter, sc.SPAN_TYPE_CONVERSATION)
    _assert_clean(root.attributes[sc.OI_INPUT_VALUE])
    assert root.attributes[sc.OI_INPUT_VALUE] == root.attributes[sc.CONVERSATION_TASK]
