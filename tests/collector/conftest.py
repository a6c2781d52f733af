"""Fixtures and scenarios for the collector tests: a downstream sink, collectors on free ports, fake judges."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import semconv as sc
from mast_otel.collector import CollectorConfig, CollectorService
from mast_otel.judge.model import ModeLabel, Verdict
from mast_otel.recorder import Recorder
from mast_otel.spans import SpanRecord
from tests.collector.sink import OtlpSink


@pytest.fixture
def sink() -> Iterator[OtlpSink]:
    s = OtlpSink().start()
    yield s
    s.stop()


class FakeClock:
    """Injected wall clock: tests move time instead of sleeping."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def judge_and_export(service: CollectorService, clock: FakeClock) -> None:
    """The clock 1 s on (past the tests' quiet period) and one manual pipeline step: what is due is judged, released
    and exported."""
    clock.advance(1)
    service.tick()
    assert service.flush()


@dataclass
class FakeJudge:
    """A Judge whose behaviour is a function field; records every call."""

    on_judge: Callable[[Sequence[SpanRecord], bool], Verdict] = field(
        default=lambda spans, partial: Verdict(status=sc.JUDGE_PARTIAL if partial else sc.JUDGE_OK, source="rules")
    )
    name: str = "fake"
    calls: list[tuple[list[SpanRecord], bool]] = field(default_factory=list)

    def judge(self, spans: Sequence[SpanRecord], *, partial: bool = False) -> Verdict:
        self.calls.append((list(spans), partial))
        return self.on_judge(spans, partial)


def flag_messages(mode_id: str = "1.3") -> Callable[[Sequence[SpanRecord], bool], Verdict]:
    """A judge behaviour citing every message span as evidence of ``mode_id``."""

    def judge(spans: Sequence[SpanRecord], partial: bool) -> Verdict:
        evidence = tuple(s.span_id for s in spans if s.span_type == sc.SPAN_TYPE_MESSAGE)
        return Verdict(
            status=sc.JUDGE_PARTIAL if partial else sc.JUDGE_OK,
            source=sc.SOURCE_LLM,
            modes=(ModeLabel(mode_id, evidence, "the same message again"),),
            summary="repeats itself",
            task_completed=False,
            model="fake-model",
            tokens_in=100,
            tokens_out=20,
        )

    return judge


def collector_config(tmp_path: Path, sink: OtlpSink | None, **overrides: Any) -> CollectorConfig:
    values: dict[str, Any] = {
        "otlp_grpc": "127.0.0.1:0",
        "otlp_http": "127.0.0.1:0",
        "metrics": "127.0.0.1:0",
        "store": str(tmp_path / "collector.db"),
        "export_endpoint": sink.grpc_endpoint if sink is not None else "http://127.0.0.1:9",
        "quiet_period": 1.0,
        "max_trace_age": 60.0,
        "poll_interval": 0.05,
        "export_backoff_max": 0.5,
        "retry_after": 1.0,
        "store_reserve": "1MiB",  # the 64 MiB default, per collector, would cost the suite gigabytes of tmp
    }
    values.update(overrides)
    return CollectorConfig(**values)


@pytest.fixture
def make_collector(tmp_path: Path) -> Iterator[Callable[..., CollectorService]]:
    """Build (not start) collectors; every one made is stopped at teardown."""
    made: list[CollectorService] = []

    def make(sink: OtlpSink | None, *, judge: Any = None, clock: Any = None, **overrides: Any) -> CollectorService:
        config = collector_config(tmp_path, sink, **overrides)
        kwargs: dict[str, Any] = {"judge": judge if judge is not None else FakeJudge()}
        if clock is not None:
            kwargs["clock"] = clock
        service = CollectorService(config, **kwargs)
        made.append(service)
        return service

    yield make
    for service in made:
        try:
            service.stop(grace=0.5)
        except Exception:
            pass


def scrape(service: CollectorService) -> str:
    assert service.metrics_server is not None
    url = f"http://127.0.0.1:{service.metrics_server.port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


def metric(text: str, name: str, /, **labels: str) -> float:
    """The value of one sample in Prometheus text format (0 when absent: tests check presence separately)."""
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        head, _, value = line.rpartition(" ")
        series = head[len(name) :]
        if series and not series.startswith("{"):
            continue
        found = dict(part.split("=", 1) for part in series.strip("{}").split(",") if part) if series else {}
        found = {k: v.strip('"') for k, v in found.items()}
        if all(found.get(k) == v for k, v in labels.items()):
            return float(value)
    return 0.0


def has_series(text: str, name: str, /, **labels: str) -> bool:
    want = [f'{k}="{v}"' for k, v in labels.items()]
    return any(line.startswith(name + "{") and all(w in line for w in want) for line in text.splitlines())


# -- scenarios: real recorder spans ---------------------------------------------------------------------------


def provider(exporter: SpanExporter, service: str = "shop") -> TracerProvider:
    tp = TracerProvider(resource=Resource.create({"service.name": service}))
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp


def conversation(rec: Recorder, name: str = "triage", *, messages: int = 3, tool: bool = True) -> None:
    """A small conversation: root, two agent turns, messages, a handoff and a tool call."""
    with rec.conversation(name, task="Fix the failing build"):
        with rec.agent_turn("planner"):
            for i in range(messages):
                rec.message("planner", ["coder"], f"Run the tests first ({i}).")
        rec.handoff("planner", "coder", reason=sc.HANDOFF_ROUTING, candidates=["coder"])
        with rec.agent_turn("coder"):
            if tool:
                with rec.tool_call("run_tests", arguments={"path": "tests/"}) as call:
                    assert call is not None
                    call.set_result("3 failed")
            rec.message("coder", ["planner"], "3 tests fail.")
        rec.terminate(sc.TERMINATION_COMPLETED)


def recorded(n: int, service: str = "shop", **kw: Any) -> list[ReadableSpan]:
    """``n`` conversations (one trace each) as finished SDK spans."""
    memory = InMemorySpanExporter()
    tp = provider(memory, service)
    rec = Recorder(tracer_provider=tp, framework="custom")
    for i in range(n):
        conversation(rec, f"conv-{i}", **kw)
    tp.shutdown()
    return list(memory.get_finished_spans())


def wait_until(predicate: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout}s")
        time.sleep(0.02)
