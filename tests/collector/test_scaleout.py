"""Scale-out through the real OpenTelemetry Collector: SDK exporters -> otelcol (load_balancing by trace id, the
shipped ``deploy/otelcol-loadbalancing.yaml``) -> two ``mast-otel collector`` processes (LLM judge) -> Jaeger.

The binaries are built by ``scripts/setup-go-tools.sh``. The judge is the real LLMJudge against a scripted
OpenAI-compatible server that names the conversation it was asked about, so "judged exactly once" is counted at
the judge itself, and again in both instances' metrics and in Jaeger's labels. Then one instance is killed with
SIGKILL in the middle of a second stream and restarted on the same store: the test measures what the Collector's
retry and queue do and asserts that every span reaches Jaeger with a labelled root.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import semconv as sc
from mast_otel.recorder import Recorder
from tests.collector.conftest import metric, provider, wait_until
from tests.collector.test_durability import CollectorProcess
from tests.go_servers import FRONT_CONFIG, FRONT_K8S_CONFIG, Front, Jaeger, front_collector, jaeger, validate
from tests.judge.fake_openai import Reply, answer, completion, fake_openai

SERVICE = "scaleout"
STEADY = 200  # conversations through the healthy tier
FAILOVER = 150  # conversations streamed while one instance is killed and restarted
DOWN_FOR = 3.0  # seconds the killed instance stays down
_NAME = re.compile(r"\bconv-\d+\b")


def conversations(names: Sequence[str]) -> list[list[ReadableSpan]]:
    """Recorder conversations (one trace each) as finished SDK spans in finish order, grouped by trace; every
    message names its conversation, so a judge request about any part of one says which conversation it is."""
    memory = InMemorySpanExporter()
    tp = provider(memory, SERVICE)
    rec = Recorder(tracer_provider=tp, framework="custom")
    for name in names:
        with rec.conversation(name, task=f"Fix the failing build ({name})"):
            with rec.agent_turn("planner"):
                for i in range(3):
                    rec.message("planner", ["coder"], f"Run the tests first ({name}, {i}).")
            rec.handoff("planner", "coder", reason=sc.HANDOFF_ROUTING, candidates=["coder"])
            with rec.agent_turn("coder"):
                rec.message("coder", ["planner"], f"3 tests fail ({name}).")
            rec.terminate(sc.TERMINATION_COMPLETED)
    tp.shutdown()
    traces: dict[int, list[ReadableSpan]] = {}
    for span in memory.get_finished_spans():
        traces.setdefault(span.context.trace_id, []).append(span)
    return list(traces.values())


class ScriptedJudge:
    """The OpenAI-compatible server's script: 1.3 present (citing the first message), counted per conversation."""

    def __init__(self) -> None:
        self.asked: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, body: Any) -> Reply:
        text = "\n".join(m["content"] for m in body["messages"] if isinstance(m.get("content"), str))
        (name,) = set(_NAME.findall(text))
        with self._lock:
            self.asked[name] += 1
        return completion(answer({"1.3": ["M1"]}, summary=f"{name} repeats itself"))


@dataclass(frozen=True)
class Downstream:
    """Where an instance exports: CollectorProcess takes anything with an OTLP/gRPC ``grpc_endpoint``."""

    grpc_endpoint: str


def instance(tmp: Path, j: Jaeger, llm_base_url: str, *flags: str) -> CollectorProcess:
    """A ``mast-otel collector`` process with the LLM judge, exporting to Jaeger; ``flags`` win over the defaults
    (argparse keeps the last value of a repeated flag)."""
    tmp.mkdir()
    env = {"MAST_OTEL_COLLECTOR_JUDGE_BASE_URL": llm_base_url, "MAST_OTEL_COLLECTOR_JUDGE_API_KEY": "k",
           "MAST_OTEL_COLLECTOR_JUDGE_MODEL": "judge-m"}  # fmt: skip
    process = CollectorProcess(tmp, Downstream(j.otlp_grpc), judge="llm", env=env)  # type: ignore[arg-type]
    process.cmd += flags
    return process


def keys(traces: Sequence[Sequence[ReadableSpan]]) -> set[tuple[str, str]]:
    return {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for t in traces for s in t}


def stream(front: Front, traces: Sequence[Sequence[ReadableSpan]], per_request: int = 10, pause: float = 0.05) -> None:
    """The SDK's gRPC exporter sends whole conversations, ``per_request`` per Export (many trace ids each)."""
    exporter = OTLPSpanExporter(endpoint=front.grpc, insecure=True, timeout=30)
    for i in range(0, len(traces), per_request):
        batch = [s for t in traces[i : i + per_request] for s in t]
        assert exporter.export(batch) == SpanExportResult.SUCCESS
        time.sleep(pause)  # a stream, not one burst
    exporter.shutdown()


def in_jaeger(j: Jaeger) -> tuple[set[tuple[str, str]], Counter[tuple[str, str]], list[dict[str, Any]]]:
    """(span keys, how often each key is stored, the roots' tags) for SERVICE, as a Jaeger search returns them."""
    stored: Counter[tuple[str, str]] = Counter()
    roots = []
    for trace in j.search(SERVICE):
        for span in trace:
            stored[(span.trace_id, span.span_id)] += 1
            if span.tags.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_WORKFLOW:
                roots.append(dict(span.tags))
    return set(stored), stored, roots


def wait_labelled(j: Jaeger, want: set[tuple[str, str]], n_roots: int, timeout: float) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        got, _, roots = in_jaeger(j)
        labelled = [r for r in roots if sc.JUDGE_STATUS in r]
        if want <= got and len(labelled) >= n_roots:
            return labelled
        assert time.monotonic() < deadline, f"{len(want - got)} spans and {n_roots - len(labelled)} labels missing"
        time.sleep(0.5)


def judged(process: CollectorProcess) -> float:
    """Verdicts the instance gave for SERVICE, whatever their status and framework (a part without its root has
    no ``mast.framework``)."""
    lines = process.metrics().splitlines()
    series = [ln for ln in lines if ln.startswith("mast_conversations_judged_total{") and f'service="{SERVICE}"' in ln]
    return sum(float(ln.rpartition(" ")[2]) for ln in series)


def otelcol_series(text: str, *prefixes: str) -> dict[str, float]:
    """The Collector's own metric samples whose names start with one of ``prefixes``."""
    found = {}
    for line in text.splitlines():
        if line.startswith(prefixes):
            head, _, value = line.rpartition(" ")
            found[head] = float(value)
    return found


def retry_waits(log: str) -> list[str]:
    """The waits the Collector's per-instance OTLP exporter logged before each retry ("Will retry ... after")."""
    return re.findall(r'Will retry the request after interval\.\s.*?"interval": "([^"]+)"', log)


@pytest.mark.integration
def test_each_conversation_judged_once_then_an_instance_killed_and_restarted(tmp_path: Path) -> None:
    script = ScriptedJudge()
    steady = conversations([f"conv-{i}" for i in range(STEADY)])
    failover = conversations([f"conv-{i}" for i in range(STEADY, STEADY + FAILOVER)])
    with fake_openai([script]) as llm, jaeger(tmp_path) as j:
        instances = [instance(tmp_path / name, j, llm.base_url, "--quiet-period", "0.5") for name in ("a", "b")]
        for process in instances:
            process.start()
        b = instances[1]  # the one killed in test 2
        try:
            with front_collector(tmp_path, [f"127.0.0.1:{i.grpc_port}" for i in instances]) as front:
                # test 1: the healthy tier
                started = time.monotonic()
                stream(front, steady)
                roots = wait_labelled(j, keys(steady), STEADY, timeout=180)
                steady_s = time.monotonic() - started
                # verify 1: each conversation judged exactly once, by one instance, whole; every span in Jaeger
                assert set(script.asked) == {f"conv-{i}" for i in range(STEADY)}
                twice = [n for n, c in script.asked.items() if c > 1]
                assert not twice, f"judged twice: {twice}"
                per_instance = [judged(i) for i in instances]
                assert sum(per_instance) == STEADY and min(per_instance) > 0, per_instance
                received = [metric(i.metrics(), "mast_collector_spans_received_total", protocol="grpc")
                            for i in instances]  # fmt: skip
                assert sum(received) == len(keys(steady)), "a span reached both instances, or none"
                assert len(roots) == STEADY
                assert all(r[sc.JUDGE_STATUS] == sc.JUDGE_OK and r["mast.fm.1_3"] is True for r in roots)
                _, stored, _ = in_jaeger(j)
                assert set(stored.values()) == {1}, "a span stored twice in Jaeger"

                # test 2: kill -9 instance b once a third of the failover stream has reached it, restart it
                b_before = metric(b.metrics(), "mast_collector_spans_received_total", protocol="grpc")
                # 15 Exports 0.3 s apart: the stream outlasts the downtime, so batches for b arrive while b is dead
                client = threading.Thread(target=stream, args=(front, failover, 10, 0.3), daemon=True)
                started = time.monotonic()
                client.start()
                b_share = len(keys(failover)) / 2

                def a_third_in() -> bool:
                    got = metric(b.metrics(), "mast_collector_spans_received_total", protocol="grpc")
                    return got - b_before >= b_share / 3

                wait_until(a_third_in, timeout=60, what="a third of b's share received")
                b.kill9()
                time.sleep(DOWN_FOR)
                b.start()
                restarted_at = time.monotonic()
                client.join(120)
                assert not client.is_alive(), "the SDK could not finish the stream through the Collector"
                want = keys(steady) | keys(failover)
                roots = wait_labelled(j, want, STEADY + FAILOVER, timeout=180)
                recovered_s = time.monotonic() - restarted_at
                failover_s = time.monotonic() - started
                front_metrics = otelcol_series(front.scrape(), "otelcol_exporter_", "otelcol_loadbalancer_")
                got, stored, _ = in_jaeger(j)
                retries = retry_waits(front.log.read_text())
                redelivered = metric(b.metrics(), "mast_collector_spans_duplicated_total")
        finally:
            for process in instances:
                process.stop()
    # verify 2: nothing lost; every root labelled; what was delivered or judged twice is counted, not hidden
    assert want <= got and len(roots) == STEADY + FAILOVER
    assert set(script.asked) == {f"conv-{i}" for i in range(STEADY + FAILOVER)}
    assert all(r[sc.JUDGE_STATUS] in (sc.JUDGE_OK, sc.JUDGE_PARTIAL) for r in roots)
    assert retries, "the Collector never retried: the kill did not land in the middle of the stream"
    twice = [n for n, c in script.asked.items() if c > 1]
    statuses = Counter(r[sc.JUDGE_STATUS] for r in roots)
    print(
        f"\nscale-out: {STEADY} conversations ({len(keys(steady))} spans) judged once each, split "
        f"{per_instance[0]:.0f}/{per_instance[1]:.0f}, all in Jaeger after {steady_s:.1f} s;"
        f"\nkill -9 of one instance for {DOWN_FOR:.0f} s during {FAILOVER} more: the Collector retried "
        f"{len(retries)} times (waits {', '.join(retries)}), all in Jaeger {recovered_s:.1f} s after the restart "
        f"({failover_s:.1f} s for the stream); "
        f"root statuses {dict(statuses)}; spans the restarted instance already had: {redelivered:.0f}; judged "
        f"twice: {len(twice)}; spans stored twice in Jaeger: {sum(1 for c in stored.values() if c > 1)}"
    )
    for line in sorted(k for k in front_metrics if "outcome" in k or "sent_spans" in k):
        print(f"  {line} {front_metrics[line]:.0f}")


@pytest.mark.integration  # runs the built Collector binary
def test_shipped_front_tier_configs_validate_with_the_built_collector(tmp_path: Path) -> None:
    # The static and the Kubernetes (DNS resolver) configs, as shipped: the distribution accepts both.
    for config in (FRONT_CONFIG, FRONT_K8S_CONFIG):
        done = validate(config)
        assert done.returncode == 0, f"{config.name}: {done.stdout}\n{done.stderr}"
        lb = yaml.safe_load(config.read_text())["exporters"]["load_balancing"]
        assert lb["routing_key"] == "traceID"
        assert lb["protocol"]["otlp"]["retry_on_failure"]["enabled"] is True  # mast-otel's backpressure is retried
        assert lb["protocol"]["otlp"]["sending_queue"]["enabled"] is True  # and an instance's downtime queued
    assert "static" in yaml.safe_load(FRONT_CONFIG.read_text())["exporters"]["load_balancing"]["resolver"]
    assert "dns" in yaml.safe_load(FRONT_K8S_CONFIG.read_text())["exporters"]["load_balancing"]["resolver"]
    # A broken file is refused by the same check (so the check above could fail).
    broken = tmp_path / "broken.yaml"
    broken.write_text(FRONT_CONFIG.read_text().replace("routing_key: traceID", "routing_key: no_such_key"))
    assert validate(broken).returncode != 0


MOVED_TEST = 90  # conversations in flight while an instance is added


@pytest.mark.integration
def test_an_instance_added_mid_conversation_moves_a_share_of_the_trace_ids(tmp_path: Path) -> None:
    # prepare: three instances; the front tier knows two. Each conversation is exported in two halves (as a
    # BatchSpanProcessor does for a long run): the first half before the third instance is added, the rest after.
    script = ScriptedJudge()
    traces = conversations([f"conv-{i}" for i in range(MOVED_TEST)])
    first = [t[: len(t) // 2] for t in traces]  # finish order: the root, which ends last, is in the second half
    second = [t[len(t) // 2 :] for t in traces]
    with fake_openai([script]) as llm, jaeger(tmp_path) as j:
        flags = ("--quiet-period", "0.5", "--max-trace-age", "8")
        instances = [instance(tmp_path / name, j, llm.base_url, *flags) for name in ("a", "b", "c")]
        for process in instances:
            process.start()
        backends = [f"127.0.0.1:{i.grpc_port}" for i in instances]
        received = lambda: sum(  # noqa: E731
            metric(i.metrics(), "mast_collector_spans_received_total", protocol="grpc") for i in instances
        )
        try:
            # test: the first halves through a front tier of two, then the rest through a front tier of three
            (tmp_path / "two").mkdir()
            with front_collector(tmp_path / "two", backends[:2]) as front:
                stream(front, first)
                wait_until(lambda: received() >= len(keys(first)), timeout=60, what="the first halves delivered")
            (tmp_path / "three").mkdir()
            with front_collector(tmp_path / "three", backends) as front:
                stream(front, second)
                labelled = wait_labelled(j, keys(traces), MOVED_TEST, timeout=120)
            wait_until(lambda: all(metric(i.metrics(), "mast_collector_traces_pending") == 0 for i in instances),
                       timeout=60, what="every instance done")  # fmt: skip
            per_instance = [judged(i) for i in instances]
            statuses = Counter(r[sc.JUDGE_STATUS] for r in labelled)
            verdict_spans = Counter(
                s.tags.get(sc.JUDGE_STATUS)
                for trace in j.search(SERVICE)
                for s in trace
                if s.tags.get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_VERDICT
            )
            got, stored, _ = in_jaeger(j)
        finally:
            for process in instances:
                process.stop()
    # verify: nothing lost; the new instance took a share; each moved conversation was judged in two parts
    assert keys(traces) <= got and set(stored.values()) == {1}
    moved = sum(per_instance) - MOVED_TEST  # a conversation split across two instances is judged once by each
    assert per_instance[2] > 0 and 0 < moved < MOVED_TEST, per_instance
    assert sum(1 for c in script.asked.values() if c == 2) == moved and max(script.asked.values()) == 2
    assert verdict_spans == {sc.JUDGE_PARTIAL: moved}  # the parts without their root: a partial verdict span each
    # the parts with their root know from it how many messages the conversation recorded: partial, not ok
    assert statuses == {sc.JUDGE_OK: MOVED_TEST - moved, sc.JUDGE_PARTIAL: moved}
    print(
        f"\ninstance added: {MOVED_TEST} conversations in flight; {moved} moved (judged in two parts), verdicts per "
        f"instance {per_instance}; root statuses {dict(statuses)}; mast.verdict spans (parts without their root) "
        f"by status {dict(verdict_spans)}; every span in Jaeger once"
    )
