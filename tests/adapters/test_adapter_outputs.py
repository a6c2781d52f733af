"""Adapter outputs the fixture oracles do not cover: a trace from no known instrumentation is left alone, and a
CrewAI crew's conversation task is the tasks the crew was given, in order (what the judge reads as the goal)."""

from __future__ import annotations

import json

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, NotAConversation, adapt, foreign_units
from mast_otel.collector.report.otlp import request_to_otlp_json
from mast_otel.spans import from_otlp_json
from tests.adapters._fixtures import fixture
from tests.adapters.runs import CREW_TASKS, SUPERVISOR_SCRIPT


def test_a_trace_from_no_known_instrumentation_is_left_alone() -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("web")
    with tracer.start_as_current_span("GET /orders", attributes={"http.request.method": "GET"}):
        with tracer.start_as_current_span("SELECT orders", attributes={"db.system.name": "postgresql"}):
            pass
    provider.shutdown()
    spans = from_otlp_json(json.dumps(request_to_otlp_json(encode_spans(memory.get_finished_spans()))))
    assert foreign_units(spans) == []  # the collector holds none of it: it passes through untouched
    refused = adapt(spans)  # and were it held, no adapter reads it: never judged as if it were mast-otel's
    assert isinstance(refused, NotAConversation) and refused.source == "unknown"


def test_a_crews_task_is_the_tasks_it_was_given_in_order() -> None:
    spans, _ = fixture("openinference_crewai")
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted)
    assert adapted.records[0].get(sc.CONVERSATION_TASK) == "\n".join(f"{role}: {task}" for role, task in CREW_TASKS)


def test_langgraph_tool_calls_name_the_agent_and_the_arguments_the_model_sent() -> None:
    spans, _ = fixture("openllmetry_langgraph")
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted)
    calls = [r for r in adapted.records if r.span_type == sc.SPAN_TYPE_TOOL_CALL]
    # (a transfer tool's call is the handoff its goto span records, no tool call: the graph's own history says so)
    sent = [(reply["tool"], reply["args"]) for rule in SUPERVISOR_SCRIPT["rules"] for reply in rule["replies"]
            if isinstance(reply, dict) and not reply["tool"].startswith("transfer_")]  # fmt: skip
    assert sorted((str(c.get(sc.GEN_AI_TOOL_NAME)), json.loads(str(c.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS))))
                  for c in calls) == sorted(sent)  # fmt: skip
    by_tool = {c.get(sc.GEN_AI_TOOL_NAME): c for c in calls}
    assert by_tool["search"].get(sc.GEN_AI_AGENT_NAME) == "researcher"  # the agent whose model called it
    assert "GDP: 42" in str(by_tool["search"].get(sc.GEN_AI_TOOL_CALL_RESULT))  # what runs.py's search() returned


def test_langgraph_task_goes_to_the_first_speaker_and_a_handoff_lands_on_its_first_record() -> None:
    spans, oracle = fixture("openllmetry_langgraph")
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted)
    task = min(adapted.messages, key=lambda r: r.get(sc.MESSAGE_INDEX))
    assert task.get(sc.MESSAGE_RECIPIENTS) == (oracle["messages"][1][0],)
    by_id = {s.span_id: s for s in spans}
    # The supervisor's transfer is recorded three ways: its model's call of transfer_to_researcher, the tool's span
    # and LangGraph's Command(goto=...) spans. One transfer recorded several ways is one handoff, its evidence the
    # first record: the supervisor's answer that called the transfer.
    (first, *_) = adapted.handoffs
    origin = by_id[adapted.original(first.span_id)]
    assert first.get(sc.HANDOFF_TO) == "researcher" and origin.get(sc.GEN_AI_OPERATION_NAME) == "chat"
    assert "transfer_to_researcher" in str(origin.get(sc.GEN_AI_OUTPUT_MESSAGES))
    assert len(adapted.handoffs) == len(oracle["handoffs"])
