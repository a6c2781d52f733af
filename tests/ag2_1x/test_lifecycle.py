"""Instrumentation changes nothing AG2 does, undoes itself, swallows its own failures, joins AG2's own traces,
and is what ``mast_otel.instrument()`` and the entry point pick when AG2 1.x is installed."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.ag2_1x.conftest import SKIP_REASON

pytest.importorskip("ag2.network", reason=SKIP_REASON)

from ag2 import Agent
from ag2.network import CONVERSATION_TYPE

import mast_otel
from examples._ag2_1x import ScriptedConfig
from mast_otel import semconv as sc
from mast_otel.integrations.ag2_1x import AG2V1Instrumentor
from mast_otel.recorder import Recorder
from tests.ag2_1x import scenarios
from tests.ag2_1x.oracle import WalRecord, recorded_run, root_of, wal_record
from tests.fault_injection import INSIDE_A_RUN, assert_failures_only_from, recorder_broken
from tests.lifecycle_checks import assert_entry_point_registered
from tests.span_query import attr, parent_id, span_id


async def triage_record(**hub_options: Any) -> WalRecord:
    from examples.ag2_1x_triage import run

    hub, metadata = await run(**hub_options)
    record = await wal_record(hub, metadata.channel_id)
    await hub.close()
    return record


def same_run(a: WalRecord, b: WalRecord) -> bool:
    strip = [(m.sender, m.recipients, m.text, m.routing) for m in a.messages]
    return strip == [(m.sender, m.recipients, m.text, m.routing) for m in b.messages] and (
        a.close_kind,
        a.close_reason,
    ) == (b.close_kind, b.close_reason)


async def test_the_run_is_the_same_with_and_without_instrumentation(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    plain = await triage_record()
    inst = AG2V1Instrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    try:
        traced = await triage_record()
    finally:
        inst.uninstrument()
    assert same_run(plain, traced)
    assert span_exporter.get_finished_spans(), "the traced run was recorded"


async def test_uninstrument_stops_recording_on_existing_hubs_and_agents(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    inst = AG2V1Instrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    hub = await scenarios.open_hub()
    listeners_before = len(hub._listeners)
    inst.uninstrument()
    assert len(hub._listeners) == listeners_before - 1
    await scenarios.ping_pong(hub, ("user", "writer", "editor"), max_turns=3)
    await hub.close()
    assert span_exporter.get_finished_spans() == ()


async def test_a_recording_failure_is_counted_logged_once_and_never_raised(
    instrumentor: AG2V1Instrumentor, span_exporter: Any, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    def broken(self: Recorder, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("exporter on fire")

    monkeypatch.setattr(Recorder, "message", broken)
    with caplog.at_level(logging.WARNING, logger="mast_otel"):
        traced = await triage_record()
    monkeypatch.undo()
    assert mast_otel.recording_failures() == {"ag2_1x.message": len(traced.messages)}
    assert len(traced.messages) == 5
    logged = [r.getMessage() for r in caplog.records if "recording failed" in r.getMessage()]
    assert len(logged) == 1 and "recording failed in ag2_1x.message " in logged[0]  # logged once
    assert traced.close_reason == "resolved", "AG2's run completed regardless"
    root = root_of(span_exporter.get_finished_spans(), traced.channel_id)
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_FINISH


@pytest.mark.parametrize("spare", [(), INSIDE_A_RUN], ids=["all", "inside_a_run"])
async def test_every_recorder_entry_point_raising_changes_nothing(
    tracer_provider: TracerProvider, span_exporter: Any, spare: Any
) -> None:

    plain = await triage_record()
    inst = AG2V1Instrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    try:
        with recorder_broken(spare) as failures:
            traced = await triage_record()
    finally:
        inst.uninstrument()
    assert same_run(plain, traced)  # the oracle: AG2's own write-ahead log (messages, routing, how it closed)
    assert_failures_only_from(failures, "ag2_1x")


async def test_ag2_envelope_spans_join_the_conversation_trace(
    instrumentor: AG2V1Instrumentor, tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    record = await triage_record(tracer_provider=tracer_provider)  # AG2's own envelope telemetry on
    spans = span_exporter.get_finished_spans()
    root = root_of(spans, record.channel_id)
    envelopes = [s for s in spans if s.name.startswith("network.envelope")]
    assert len(envelopes) == len(record.messages)
    assert [attr(s, "ag2.network.envelope_id") for s in sorted(envelopes, key=lambda s: s.start_time)] == [
        m.envelope_id for m in record.messages
    ]
    assert all(e.context.trace_id == root.context.trace_id for e in envelopes)
    assert all(parent_id(e) == span_id(root) for e in envelopes)


async def test_join_can_be_turned_off(tracer_provider: TracerProvider, span_exporter: Any) -> None:
    inst = AG2V1Instrumentor()
    inst.instrument(tracer_provider=tracer_provider, join_ag2_traces=False)
    try:
        record = await triage_record(tracer_provider=tracer_provider)
    finally:
        inst.uninstrument()
    spans = span_exporter.get_finished_spans()
    root = root_of(spans, record.channel_id)
    envelopes = [s for s in spans if s.name.startswith("network.envelope")]
    assert envelopes and all(e.parent is None and e.context.trace_id != root.context.trace_id for e in envelopes)


async def test_ttl_expiry(instrumentor: AG2V1Instrumentor, span_exporter: Any) -> None:
    record, spans = await recorded_run(span_exporter, scenarios.expiring)
    root = root_of(spans, record.channel_id)
    assert record.close_kind == "ag2.channel.expired"
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_EXPIRED
    assert attr(root, sc.TERMINATION_DETAIL) == record.close_reason == "ttl_expired"


def test_mast_otel_instrument_picks_the_ag2_1x_integration(tracer_provider: TracerProvider) -> None:
    import mast_otel
    from mast_otel import _registry

    mast_otel.instrument(tracer_provider=tracer_provider)
    try:
        assert isinstance(_registry.STATE.instrumented.get("ag2_1x"), AG2V1Instrumentor)
        assert "ag2" not in _registry.STATE.instrumented, "AG2 Classic's integration needs `autogen`"
    finally:
        mast_otel.uninstrument()
    assert_entry_point_registered("mast_ag2_1x", AG2V1Instrumentor)


async def test_a_channel_left_open_ends_with_its_hub(instrumentor: AG2V1Instrumentor, span_exporter: Any) -> None:
    hub = await scenarios.open_hub()
    user = await scenarios.register_silent(hub, "user")
    await hub.register(Agent("helper", config=ScriptedConfig("On it.", "")))
    channel = await user.open(type=CONVERSATION_TYPE, target="helper")
    await channel.send("Please look at ticket 42.")
    await scenarios.wait_messages(hub, channel.channel_id, 2)
    record = await wal_record(hub, channel.channel_id)
    await hub.close()  # the channel is still active: AG2 writes no close event

    assert record.close_kind == "" and (await hub.get_channel(channel.channel_id)).state.value == "active"
    spans = span_exporter.get_finished_spans()
    root = root_of(spans, channel.channel_id)
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_CLOSED
    assert attr(root, sc.TERMINATION_DETAIL) == "hub closed with the channel open"
    assert attr(root, sc.CONVERSATION_ROUNDS) == len(record.messages) == 2
    assert instrumentor._hooks is not None and len(instrumentor._hooks.channels) == 0, "nothing kept for it"


async def test_expectation_violation_closes_the_channel(instrumentor: AG2V1Instrumentor, span_exporter: Any) -> None:
    clock = scenarios.ManualClock()
    hub = await scenarios.open_hub(clock=clock, expectation_sweep_interval=0.02)
    channel_id = await scenarios.unanswered_consultation(hub, clock)
    record = await wal_record(hub, channel_id)
    await hub.close()
    root = root_of(span_exporter.get_finished_spans(), channel_id)
    assert record.close_reason == "expectation_violated:reply_within"
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_EXPECTATION
    assert attr(root, sc.TERMINATION_DETAIL) == f"{record.close_reason}: expectation reply_within violated"


async def test_ag2_turn_and_llm_spans_follow_into_the_conversation_trace(
    instrumentor: AG2V1Instrumentor, tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    from ag2.middleware.builtin.telemetry import TelemetryMiddleware

    hub = await scenarios.open_hub(tracer_provider=tracer_provider)
    channel_id = await scenarios.ping_pong(
        hub,
        ("user", "writer", "editor"),
        max_turns=4,
        middleware=lambda name: [TelemetryMiddleware(tracer_provider=tracer_provider, agent_name=name)],
    )
    record = await wal_record(hub, channel_id)
    await hub.close()
    spans = span_exporter.get_finished_spans()
    root = root_of(spans, channel_id)
    ours = {span_id(s) for s in spans if attr(s, sc.MAST_SPAN_TYPE)}
    theirs = [s for s in spans if span_id(s) not in ours]
    ag2_turns = [s for s in theirs if attr(s, "gen_ai.operation.name") == "invoke_agent"]
    assert [attr(s, sc.GEN_AI_AGENT_NAME) for s in sorted(ag2_turns, key=lambda s: s.start_time)] == record.senders[1:]
    assert any(s.name.startswith("chat") for s in theirs)
    assert {s.context.trace_id for s in theirs} == {root.context.trace_id}, "one trace per conversation"
