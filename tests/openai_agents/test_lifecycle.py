"""The instrumentor's contract: additive to the program's trace processors, switchable, never raising."""

from __future__ import annotations

import importlib.metadata
import json
import logging
import re
from typing import Any

import pytest

from tests.openai_agents.conftest import SKIP_REASON

pytest.importorskip("agents", reason=SKIP_REASON)

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import mast_otel
from mast_otel._safety import reset_recording_failures
from mast_otel.integrations import openai_agents as oa
from mast_otel.integrations.openai_agents import OpenAIAgentsInstrumentor
from tests.fault_injection import INSIDE_A_RUN, assert_failures_only_from, recorder_broken
from tests.lifecycle_checks import assert_entry_point_registered
from tests.openai_agents import scenarios as sn


def _shape(exports: list[dict[str, Any] | None]) -> list[Any]:
    """The user's processor's view of a run, without ids and clocks (which differ between any two runs)."""
    out = []
    for e in exports:
        assert e is not None
        data = re.sub(r"(call|resp|msg)_\d+", r"\1_N", json.dumps(e["span_data"], sort_keys=True, default=str))
        out.append((data, e["error"], e["parent_id"] is None))
    return out


async def test_the_users_processors_get_every_span_unchanged(
    user_processor: Any, tracer_provider: TracerProvider, scripted: Any, spans: Any
) -> None:
    server = scripted(sn.triage_script())
    model = sn.model_for("chat_completions", server.base_url)
    user_processor.clear()
    await sn.run(sn.triage_agents(model), "Refund A17")
    without = _shape(user_processor.exports)
    spans_without = len(user_processor.ended)

    inst = OpenAIAgentsInstrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    try:
        server.reset()
        user_processor.clear()
        await sn.run(sn.triage_agents(model), "Refund A17")
    finally:
        inst.uninstrument()
    assert spans().roots, "mast-otel recorded the run"
    assert len(user_processor.ended) == spans_without > 5
    assert _shape(user_processor.exports) == without
    from agents.tracing import get_trace_provider

    processors = get_trace_provider()._multi_processor._processors  # type: ignore[attr-defined]
    assert processors[0] is user_processor, "mast-otel added its processor after the user's, replacing nothing"


async def test_uninstrument_stops_recording_and_instrument_resumes(
    user_processor: Any, tracer_provider: TracerProvider, scripted: Any, spans: Any
) -> None:
    server = scripted(sn.triage_script())
    model = sn.model_for("responses", server.base_url)
    inst = OpenAIAgentsInstrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    inst.uninstrument()
    await sn.run(sn.triage_agents(model), "Refund A17")
    assert spans().all == []
    inst.instrument(tracer_provider=tracer_provider)
    try:
        server.reset()
        await sn.run(sn.triage_agents(model), "Refund A17")
    finally:
        inst.uninstrument()
    assert len(spans().roots) == 1
    from agents.tracing import get_trace_provider

    mine = [p for p in get_trace_provider()._multi_processor._processors if isinstance(p, oa.MastTraceProcessor)]  # type: ignore[attr-defined]
    assert len(mine) == 1, "instrumenting again reuses the one registered processor"


async def test_mast_otel_instrument_covers_the_sdk(user_processor: Any, scripted: Any) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    server = scripted(sn.triage_script())
    mast_otel.instrument(tracer_provider=provider)
    try:
        await sn.run(sn.triage_agents(sn.model_for("chat_completions", server.base_url)), "Refund A17")
    finally:
        mast_otel.uninstrument()
    names = [s.name for s in exporter.get_finished_spans()]
    assert "handoff triage_agent -> billing_agent" in names


def test_entry_point_is_registered() -> None:
    assert_entry_point_registered("mast_openai_agents", OpenAIAgentsInstrumentor)


def test_a_version_outside_the_supported_range_warns_and_still_instruments(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, user_processor: Any, tracer_provider: Any
) -> None:
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda n: "0.31.2" if n == "openai-agents" else real(n))
    inst = OpenAIAgentsInstrumentor()
    with caplog.at_level(logging.WARNING):
        inst.instrument(tracer_provider=tracer_provider)
    inst.uninstrument()
    assert any("openai-agents 0.31.2 is outside" in r.getMessage() for r in caplog.records)
    monkeypatch.setattr(importlib.metadata, "version", real)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        inst.instrument(tracer_provider=tracer_provider)
    inst.uninstrument()
    assert not [r for r in caplog.records if "outside" in r.getMessage()]


async def test_a_recording_failure_is_counted_logged_once_and_never_raised(
    instrumentor: Any, scripted: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from mast_otel.integrations.openai_agents import _processor

    def broken(_data: Any) -> Any:
        raise ValueError("boom")

    monkeypatch.setattr(_processor, "read_model_call", broken)
    server = scripted(sn.triage_script())
    reset_recording_failures()
    with caplog.at_level(logging.WARNING):
        result = await sn.run(sn.triage_agents(sn.model_for("chat_completions", server.base_url)), "Refund A17")
    failures = mast_otel.recording_failures()
    reset_recording_failures()
    assert result.final_output == "Refund for A17 issued."
    assert failures == {"openai_agents.on_span_end": 3}
    assert len([r for r in caplog.records if "recording failed" in r.getMessage()]) == 1


@pytest.mark.parametrize("spare", [(), INSIDE_A_RUN], ids=["all", "inside_a_run"])
@pytest.mark.parametrize("api", ["chat_completions", "responses"])
async def test_every_recorder_entry_point_raising_changes_nothing(
    instrumentor: Any, scripted: Any, api: str, spare: Any
) -> None:

    server = scripted(sn.triage_script())
    plain = await sn.run(sn.triage_agents(sn.model_for(api, server.base_url)), "Refund A17")  # recorder intact
    server = scripted(sn.triage_script())  # a fresh one: its call ids count from the start again
    with recorder_broken(spare) as failures:
        traced = await sn.run(sn.triage_agents(sn.model_for(api, server.base_url)), "Refund A17")
    # the oracle: the SDK's own RunResult (its final output, last agent and every item of the run)
    assert traced.final_output == plain.final_output
    assert traced.last_agent.name == plain.last_agent.name
    assert [item.to_input_item() for item in traced.new_items] == [item.to_input_item() for item in plain.new_items]
    assert_failures_only_from(failures, "openai_agents")
