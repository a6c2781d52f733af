"""The rules the Vercel AI SDK's captures (tests/data/captures/vercel_ai) added: its own telemetry's ``ai.*``
attributes read as the GenAI spans they are (mast_otel/adapters/ai_sdk.py), each named by the kind of evidence it
reads, each case changing one thing in the real capture:

- the tracer scope ``ai`` (the SDK's ``trace.getTracer("ai")``) names ``vercel-ai``;
- ``ai.operationId`` names the operation (an agent loop, a model call in it, a tool run), and the outermost agent
  loop roots a conversation (and is a root candidate for the collector);
- ``ai.telemetry.functionId`` names the agent;
- a model call's answer is ``ai.response.text`` with ``ai.response.toolCalls``; the task is the agent loop's
  ``ai.prompt``, else the user's message in a model call's ``ai.prompt.messages``;
- a tool run is ``ai.toolCall.name`` / ``.args`` / ``.result``; one holding another agent's loop is a delegation.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, NotAConversation, adapt, foreign_units, root_candidate
from mast_otel.adapters._evidence import scope_framework
from mast_otel.adapters.ai_sdk import as_genai
from mast_otel.spans import SpanRecord, from_otlp_json
from tests.adapters._fixtures import handoffs, messages

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"
TASK = "I was charged twice for order A17. Please refund the duplicate charge."


def _capture(run: str = "desk") -> tuple[list[SpanRecord], dict[str, Any]]:
    data = json.loads((CAPTURES / "vercel_ai" / f"{run}.json").read_text(encoding="utf-8"))
    return from_otlp_json(json.dumps(data["otlp"])), data["expect"]


def _without(spans: list[SpanRecord], drop: Callable[[str], bool]) -> list[SpanRecord]:
    return [dataclasses.replace(s, attributes={k: v for k, v in s.attributes.items() if not drop(k)}) for s in spans]


def _read(spans: list[SpanRecord]) -> Adapted | NotAConversation | None:
    units = foreign_units(spans)
    return adapt(units[0]) if units else None


def _adapted(spans: list[SpanRecord]) -> Adapted:
    found = _read(spans)
    assert isinstance(found, Adapted), found
    return found


def test_the_sdks_tracer_scope_names_vercel_ai() -> None:
    """The SDK traces itself under the tracer name ``ai``, which says nothing by its letters: the table says it."""
    assert scope_framework("ai") == "vercel-ai"
    spans, _ = _capture()
    assert {s.scope_name for s in spans} == {"ai"}
    adapted = _adapted(spans)
    assert (adapted.source, adapted.framework) == ("ai-sdk", "vercel-ai")
    assert adapted.records[0].get(sc.MAST_SOURCE) == "ai-sdk"


def test_the_operation_id_names_the_operation_and_the_outermost_agent_loop_roots_the_run() -> None:
    """``ai.operationId`` is the only record of what a span is (no ``gen_ai.operation.name``): an agent loop is
    ``invoke_agent``, its model call ``chat``, a tool run ``execute_tool``; the outermost loop is the root the
    collector holds. Without it, nothing is read."""
    spans, _ = _capture()
    assert not any(sc.GEN_AI_OPERATION_NAME in s.attributes for s in spans)
    ops = {s.name: as_genai(s).get(sc.GEN_AI_OPERATION_NAME) for s in spans}
    assert ops == {"ai.generateText": "invoke_agent", "ai.generateText.doGenerate": "chat",
                   "ai.toolCall": "execute_tool"}  # fmt: skip
    (root,) = [s for s in spans if s.parent_span_id is None]
    (unit,) = foreign_units(spans)
    assert unit[0] is root and len(unit) == len(spans)
    for operation, held in (("ai.generateText", True), ("ai.streamText", True), ("ai.toolCall", False),
                            ("ai.generateText.doGenerate", False)):  # fmt: skip
        assert root_candidate({"ai.operationId": operation}.get) is held, operation
    assert _read(_without(spans, lambda k: k == "ai.operationId")) is None


def test_the_function_id_names_the_agent() -> None:
    """Each agent's calls set ``experimental_telemetry.functionId`` to its name: without it no span names an agent
    (``resource.name`` and the metadata repeat it, and are not read), and no conversation is found."""
    spans, expect = _capture()
    adapted = _adapted(spans)
    agents = [a for a in adapted.records[0].get(sc.CONVERSATION_AGENTS) or () if a != "user"]
    assert sorted(agents) == sorted(expect["agents"])
    bare = _read(_without(spans, lambda k: k == "ai.telemetry.functionId"))
    assert isinstance(bare, NotAConversation) and bare.source == "ai-sdk"


def test_a_model_calls_answer_is_its_response_text_and_tool_calls() -> None:
    """A model call's answer: ``ai.response.text``, and the tools ``ai.response.toolCalls`` names when it calls
    some. Without the text (recordOutputs off) the run is structure only, and the reason names the switch."""
    spans, _ = _capture()
    assert messages(_adapted(spans).records) == [
        ("user", TASK),
        ("lead", "research"),
        ("researcher", "lookup_order"),
        ("researcher", "Order A17 was charged 49.00 EUR twice on 2026-11-02."),
        ("lead", "write"),
        ("writer", "Dear customer, the duplicate charge on order A17 is refunded."),
        ("lead", "The duplicate 49.00 EUR charge on A17 is refunded; the customer has been told."),
    ]
    hidden = _adapted(_without(spans, lambda k: k.startswith(("ai.response.", "ai.prompt"))))
    assert hidden.no_content is not None and "recordOutputs" in hidden.no_content
    assert all(not content for _, content in messages(hidden.records))  # (the calls are outputs too)
    assert len(handoffs(hidden.records)) == 4


def test_the_task_is_the_agent_loops_prompt_else_the_model_calls_user_message() -> None:
    """The root loop's ``ai.prompt`` (``{system, prompt}``) gives the task; without it, the first model call's
    ``ai.prompt.messages``; without both, no task."""
    spans, _ = _capture()
    assert _adapted(spans).records[0].get(sc.CONVERSATION_TASK) == TASK
    loop_only = _without(spans, lambda k: k == "ai.prompt.messages")
    assert _adapted(loop_only).records[0].get(sc.CONVERSATION_TASK) == TASK
    calls_only = _without(spans, lambda k: k == "ai.prompt")
    assert _adapted(calls_only).records[0].get(sc.CONVERSATION_TASK) == TASK
    neither = _without(spans, lambda k: k in ("ai.prompt", "ai.prompt.messages"))
    assert _adapted(neither).records[0].get(sc.CONVERSATION_TASK) is None


def test_a_tool_run_is_a_tool_call_unless_it_runs_another_agent() -> None:
    """``ai.toolCall.name`` / ``.args`` / ``.result`` are the call; the lead's ``research`` and ``write`` runs hold
    the researcher's and the writer's loops: delegations there and back, not tool calls."""
    spans, expect = _capture()
    adapted = _adapted(spans)
    (call,) = [r for r in adapted.records if r.span_type == sc.SPAN_TYPE_TOOL_CALL]
    assert (call.get(sc.GEN_AI_AGENT_NAME), call.get(sc.GEN_AI_TOOL_NAME)) == ("researcher", "lookup_order")
    assert json.loads(str(call.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS))) == {"order_id": "A17"}
    assert "49.00 EUR twice" in str(call.get(sc.GEN_AI_TOOL_CALL_RESULT))
    assert handoffs(adapted.records) == [tuple(h) for h in expect["handoffs"]]
    unnamed = _adapted(_without(spans, lambda k: k == "ai.toolCall.name"))
    assert [r.get(sc.GEN_AI_TOOL_NAME) for r in unnamed.records if r.span_type == sc.SPAN_TYPE_TOOL_CALL] != [
        "lookup_order"
    ]


def test_a_solo_agent_is_no_conversation() -> None:
    spans, expect = _capture("solo")
    assert not expect["conversation"]
    found = _read(spans)
    assert isinstance(found, NotAConversation) and found.source == "ai-sdk"
