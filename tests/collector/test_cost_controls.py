"""Cost controls and accounting: signals are always judged; tokens are counted whatever the verdict."""

from __future__ import annotations

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import semconv as sc
from mast_otel.collector.metrics import CollectorMetrics
from mast_otel.judge.model import Verdict
from mast_otel.recorder import Recorder
from tests.collector.conftest import FakeClock, FakeJudge, judge_and_export, provider
from tests.collector.sink import OtlpSink
from tests.collector.test_pipeline import roots, send


def test_sampling_never_skips_a_conversation_with_a_structural_signal(sink: OtlpSink, make_collector) -> None:
    clock = FakeClock()
    judge = FakeJudge()
    service = make_collector(sink, judge=judge, clock=clock, judge_fraction=0.0)
    service.start(pipeline=False)
    memory = InMemorySpanExporter()
    rec = Recorder(tracer_provider=provider(memory))
    repeated = "Here is the full plan again: parse input, compute the total, print the result, then stop."
    with rec.conversation("looping"):
        for sender in ("planner", "coder", "planner", "coder"):
            with rec.agent_turn(sender):
                rec.message(sender, ["team"], repeated)
    with rec.conversation("quiet"), rec.agent_turn("planner"):
        rec.message("planner", ["coder"], "ok")
    send(service, list(memory.get_finished_spans()))
    judge_and_export(service, clock)
    got = {s.name: s.attributes for s in roots(sink.spans())}
    assert got["invoke_workflow looping"][sc.JUDGE_STATUS] == sc.JUDGE_OK  # repeated content: always judged
    assert got["invoke_workflow quiet"][sc.JUDGE_STATUS] == sc.JUDGE_SKIPPED
    assert len(judge.calls) == 1


def test_tokens_of_an_error_verdict_are_counted() -> None:
    metrics = CollectorMetrics()
    failed = Verdict(status=sc.JUDGE_ERROR, source=sc.SOURCE_LLM, tokens_in=700, tokens_out=90, cost_usd=0.01)
    metrics.count_verdict(failed, "shop", "ag2")
    assert metrics.registry.get_sample_value("mast_judge_tokens_total", {"direction": "in"}) == 700
    assert metrics.registry.get_sample_value("mast_judge_tokens_total", {"direction": "out"}) == 90
    assert metrics.registry.get_sample_value("mast_judge_cost_usd_total") == 0.01
    assert metrics.registry.get_sample_value(
        "mast_failure_mode_total",
        {"mode": "1.3", "category": "FC1", "service": "shop", "version": "unknown", "framework": "ag2"},
    ) == 0


def test_grpc_receiver_binds_an_ipv6_literal(sink: OtlpSink, make_collector) -> None:
    import socket

    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        import pytest

        pytest.skip("no IPv6 loopback on this machine")
    service = make_collector(sink, otlp_grpc="[::1]:0")
    service.start(pipeline=False)
    assert service.grpc is not None and service.grpc.port > 0
