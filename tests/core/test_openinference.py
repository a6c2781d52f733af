"""OpenInference attributes next to the GenAI ones: the kinds and graph viewers key on, switchable off, adding only
their own keys (off: every other attribute exactly as it is with them on), and no content when capture is off."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import Recorder
from mast_otel import semconv as sc
from mast_otel.config import CaptureConfig

OI_KEYS = {sc.OI_SPAN_KIND, sc.OI_AGENT_NAME, sc.OI_GRAPH_NODE_ID, sc.OI_GRAPH_NODE_NAME, sc.OI_GRAPH_NODE_PARENT_ID,
           sc.OI_INPUT_VALUE, sc.OI_OUTPUT_VALUE, sc.OI_TOOL_NAME}  # fmt: skip


def run(config: CaptureConfig) -> list[tuple[str, dict[str, Any]]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    rec = Recorder(tracer_provider=provider, config=config, framework="home-grown")
    with rec.conversation("triage", task="Fix the build", conversation_id="c1"):
        with rec.agent_turn("planner"):
            rec.message("planner", ["coder"], "Run the tests first.")
        rec.handoff("planner", "coder", reason=sc.HANDOFF_DELEGATION)
        with rec.agent_turn("coder"):
            with rec.tool_call("run_tests", arguments={"path": "tests/"}, call_id="t1") as call:
                assert call is not None
                call.set_result("3 failed", success=False)
            rec.message("coder", ["planner"], "3 tests fail.")
        rec.handoff("coder", "reviewer", reason=sc.HANDOFF_ROUTING)
        with rec.agent_turn("reviewer"):
            rec.message("reviewer", ["planner"], "Looks fine.")
        rec.terminate(sc.TERMINATION_COMPLETED)
    provider.shutdown()
    return [(s.name, dict(s.attributes or {})) for s in exporter.get_finished_spans()]


def by_type(spans: list[tuple[str, dict[str, Any]]], kind: str) -> list[dict[str, Any]]:
    return [a for _, a in spans if a.get(sc.MAST_SPAN_TYPE) == kind]


def test_kinds_agent_names_graph_and_values_on_the_right_spans() -> None:
    spans = run(CaptureConfig.from_env(environ={}))
    (root,) = by_type(spans, sc.SPAN_TYPE_CONVERSATION)
    assert root[sc.OI_SPAN_KIND] == "CHAIN" and root[sc.OI_INPUT_VALUE] == "Fix the build"
    turns = by_type(spans, sc.SPAN_TYPE_AGENT_TURN)
    assert [t[sc.OI_SPAN_KIND] for t in turns] == ["AGENT"] * 3
    assert [(t[sc.OI_AGENT_NAME], t[sc.OI_GRAPH_NODE_ID]) for t in turns] == [
        ("planner", "planner"), ("coder", "coder"), ("reviewer", "reviewer")]  # fmt: skip
    # the graph: each agent's parent is the agent that handed control to it (none for the first)
    assert [t.get(sc.OI_GRAPH_NODE_PARENT_ID) for t in turns] == [None, "planner", "coder"]
    (tool,) = by_type(spans, sc.SPAN_TYPE_TOOL_CALL)
    assert tool[sc.OI_SPAN_KIND] == "TOOL" and tool[sc.OI_TOOL_NAME] == "run_tests"
    assert tool[sc.OI_INPUT_VALUE] == tool[sc.GEN_AI_TOOL_CALL_ARGUMENTS] and tool[sc.OI_OUTPUT_VALUE] == "3 failed"
    assert {h[sc.OI_SPAN_KIND] for h in by_type(spans, sc.SPAN_TYPE_HANDOFF)} == {"DECISION"}
    messages = by_type(spans, sc.SPAN_TYPE_MESSAGE)
    assert [(m[sc.OI_SPAN_KIND], m[sc.OI_OUTPUT_VALUE]) for m in messages] == [
        ("CHAIN", "Run the tests first."), ("CHAIN", "3 tests fail."), ("CHAIN", "Looks fine.")]  # fmt: skip


def test_switched_off_the_spans_are_exactly_the_spans_without_the_openinference_keys() -> None:
    on = run(CaptureConfig.from_env(environ={}))
    off = run(CaptureConfig.from_env(environ={"MAST_OTEL_OPENINFERENCE": "false"}))
    assert [name for name, _ in off] == [name for name, _ in on]
    for (_, with_oi), (_, without) in zip(on, off, strict=True):
        assert not OI_KEYS & set(without)
        assert {k: v for k, v in with_oi.items() if k not in OI_KEYS} == without
    assert run(CaptureConfig.from_env(environ={}, openinference=False)) == off


def test_capture_off_means_kinds_and_names_but_no_content_anywhere() -> None:
    spans = run(CaptureConfig.from_env(environ={}, capture_content=False))
    assert not any({sc.OI_INPUT_VALUE, sc.OI_OUTPUT_VALUE} & set(a) for _, a in spans)
    assert {a[sc.OI_SPAN_KIND] for _, a in spans} == {"CHAIN", "AGENT", "TOOL", "DECISION"}
