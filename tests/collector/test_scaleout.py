"""Two collector instances behind a trace-id router share nothing, lose no trace, judge each exactly once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from mast_otel import semconv as sc
from tests.collector.conftest import FakeJudge, recorded
from tests.collector.router import TraceIdRouter
from tests.collector.sink import OtlpSink

DEPLOY = Path(__file__).resolve().parents[2] / "mast_otel" / "collector" / "deploy"


def test_each_trace_judged_exactly_once_behind_a_trace_id_router(
    tmp_path: Path, sink: OtlpSink, make_collector
) -> None:
    # prepare: two instances with their own stores and judges, a router in front
    judges = [FakeJudge(name="a"), FakeJudge(name="b")]
    instances = [
        make_collector(sink, judge=judges[i], store=str(tmp_path / f"{name}.db"), quiet_period=0.05)
        for i, name in enumerate(("a", "b"))
    ]
    for instance in instances:
        instance.start()
    router = TraceIdRouter([f"127.0.0.1:{i.grpc.port}" for i in instances]).start()
    spans = recorded(40)
    want = {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in spans}
    try:
        # test: the SDK exporter sends mixed batches (many traces per request) to the router
        exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{router.port}", insecure=True)
        for i in range(0, len(spans), 50):
            assert exporter.export(spans[i : i + 50]) == SpanExportResult.SUCCESS
        exporter.shutdown()
        got = sink.wait_for(lambda s: want <= {x.key for x in s})
    finally:
        router.stop()
    # verify: nothing lost, each conversation judged once, by the instance its trace id routes to
    assert {s.key for s in got} == want and len(got) == len(want)
    judged = Counter(call[0][0].trace_id for judge in judges for call in judge.calls)
    assert len(judged) == 40 and set(judged.values()) == {1}
    per_instance = [{call[0][0].trace_id for call in judge.calls} for judge in judges]
    assert per_instance[0].isdisjoint(per_instance[1]) and all(per_instance)
    roots = [s for s in got if s.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_WORKFLOW]
    assert len(roots) == 40 and all(r.attributes[sc.JUDGE_STATUS] == "ok" for r in roots)


def test_shipped_loadbalancing_config_routes_by_trace_id() -> None:
    config = yaml.safe_load((DEPLOY / "otelcol-loadbalancing.yaml").read_text())
    lb = config["exporters"]["loadbalancing"]
    assert lb["routing_key"] == "traceID"
    assert lb["resolver"]
    pipeline = config["service"]["pipelines"]["traces"]
    assert pipeline["exporters"] == ["loadbalancing"]
    assert lb["protocol"]["otlp"]["retry_on_failure"]["enabled"] is True  # our backpressure is then retried
