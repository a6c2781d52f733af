"""Through a real collector process: AG2 runs traced by AG2's built-in tracing, by OpenInference, by both
OpenInference and mast-otel, and a single-agent call, exported over OTLP/gRPC. Each conversation is judged
exactly once by the collector's LLM judge (a scripted model that cites the transcript), its foreign root carries
the labels and ``mast.source``, the evidence is on the coder's foreign spans, the transcript the judge read is
AG2's message list; the single call passes through unjudged, counted."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("grpc", reason="the collector extra is not installed")
pytest.importorskip("openinference.instrumentation.ag2", reason="openinference-instrumentation-ag2 is not installed")

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from mast_otel import semconv as sc
from mast_otel.collector.metrics import UNASSIGNED_NOT_A_CONVERSATION, MetricNames
from mast_otel.collector.report.otlp import request_to_otlp_json
from tests.adapters._fixtures import speaker_handoffs
from tests.adapters.runs import RUNS
from tests.collector.test_durability import CollectorProcess
from tests.judge.fake_openai import citing, fake_openai
from tests.otlp_sink import otlp_sink

pytestmark = pytest.mark.integration

_LINE = re.compile(r"^\[(M\d+|H\d+)\] (.*)$")
SOURCES = {"ag2_builtin": "ag2-builtin", "openinference_ag2": "openinference"}


def _samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    out: dict[tuple[tuple[str, str], ...], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name:
                out[tuple(sorted(s.labels.items()))] = s.value
    return out


def _transcript(path: Path) -> list[str]:
    """The message and handoff lines of the transcript the judge reads (``mast-otel judge --dry-run``)."""
    done = subprocess.run([sys.executable, "-m", "mast_otel.cli", "judge", str(path), "--dry-run", "--show-prompt"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    (row,) = [json.loads(line) for line in done.stdout.splitlines()]
    text = "\n".join(str(m["content"]) for chunk in row["prompt"] for m in chunk)
    return [f"{m.group(1)} {m.group(2)}" for line in text.splitlines() if (m := _LINE.match(line))]


def test_foreign_runs_through_the_collector(tmp_path: Path) -> None:
    judge = fake_openai([citing({"1.3": r"^coder -> "}, summary="The coder repeated its code.")] * 8)
    sent: dict[str, list[Any]] = {}
    oracles: dict[str, list[tuple[str, str]]] = {}
    with otlp_sink() as sink:
        with judge as model:
            env = {"MAST_OTEL_JUDGE_BASE_URL": model.base_url, "MAST_OTEL_JUDGE_MODEL": "scripted-judge"}
            proc = CollectorProcess(tmp_path, sink, judge="llm", env=env)
            proc.start()
            try:
                for name, run in RUNS.items():
                    memory = InMemorySpanExporter()
                    provider = TracerProvider(resource=Resource.create({"service.name": name}))
                    provider.add_span_processor(SimpleSpanProcessor(memory))
                    otlp = OTLPSpanExporter(endpoint=f"127.0.0.1:{proc.grpc_port}", insecure=True, timeout=30)
                    provider.add_span_processor(SimpleSpanProcessor(otlp))
                    oracles[name] = run(provider)
                    provider.shutdown()
                    sent[name] = memory.get_finished_spans()
                want = {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for v in sent.values() for s in v}
                got = sink.wait_for_spans(len(want), timeout=90)
                metrics = proc.metrics()
            finally:
                proc.stop()
        exported = tmp_path / "exported.jsonl"  # what a file exporter downstream of the collector would keep
        exported.write_text("".join(json.dumps(request_to_otlp_json(r)) + "\n" for r in sink.requests()))

    # Judged exactly once per conversation: three conversations (the mixed run once), the single call never.
    judged = _samples(metrics, MetricNames.CONVERSATIONS_JUDGED)
    assert sum(judged.values()) == 3, judged
    counted = [dict(k) for k, v in judged.items() if v]
    assert all(k["status"] == sc.JUDGE_OK and k["framework"] == "ag2" for k in counted), judged
    unassigned = _samples(metrics, MetricNames.SPANS_UNASSIGNED)
    assert unassigned[(("reason", UNASSIGNED_NOT_A_CONVERSATION),)] == len(sent["openinference_single_agent"])
    assert len(model.requests) == 3  # one judge call per conversation
    assert {(s.trace_id, s.span_id) for s in got} == want  # nothing lost, nothing added

    by_service: dict[str, list[Any]] = {}
    for span in got:
        by_service.setdefault(str(span.service_name), []).append(span)
    labelled = {name: [s for s in spans if sc.JUDGE_STATUS in s.attributes] for name, spans in by_service.items()}
    assert labelled["openinference_single_agent"] == []
    assert not any(sc.FAILURE_MODE in s.attributes for s in by_service["openinference_single_agent"])

    for name, source in SOURCES.items():
        (root,) = labelled[name]
        assert root.parent_span_id is None and root.attributes[sc.MAST_SOURCE] == source
        assert root.attributes[sc.MAST_FRAMEWORK] == "ag2" and root.attributes[sc.LABEL_SOURCE] == sc.SOURCE_LLM
        assert list(root.attributes[sc.FAILURE_MODES]) == ["1.3"]
        evidence = [s for s in by_service[name] if s.attributes.get(sc.FAILURE_MODE) == "1.3"]
        assert len(evidence) == sum(sender == "coder" for sender, _ in oracles[name])  # AG2: the coder spoke twice
        assert all("coder" in s.name for s in evidence)

        # The transcript the judge read is AG2's message list, and its handoffs are AG2's speaker order.
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(request_to_otlp_json(encode_spans(sent[name]))))
        lines = _transcript(path)
        messages = [line for line in lines if line.startswith("M")]
        assert [m.split(" ", 2)[1] for m in messages] == [sender for sender, _ in oracles[name]]
        assert [m.split(": ", 1)[1].split("\n")[0] for m in messages] == [c.split("\n")[0] for _, c in oracles[name]]
        hand = [re.match(r"H\d+ handoff (\S+) -> (\S+)", line) for line in lines if line.startswith("H")]
        assert [(h.group(1), h.group(2)) for h in hand if h] == speaker_handoffs(oracles[name])

    # The run traced twice: one verdict, on mast-otel's root; OpenInference's spans in it carry no labels.
    (root,) = labelled["mixed_ag2"]
    assert root.attributes[sc.MAST_SPAN_TYPE] == sc.SPAN_TYPE_CONVERSATION and sc.MAST_SOURCE not in root.attributes
    oi = [s for s in by_service["mixed_ag2"] if "openinference.span.kind" in s.attributes]
    assert oi and not any(sc.FAILURE_MODE in s.attributes or sc.JUDGE_STATUS in s.attributes for s in oi)

    # mast-otel report reads the labelled foreign roots, from the exported spans and from the collector's store.
    for args in ([str(exported)], ["--store", str(tmp_path / "collector.db")]):
        cmd = [sys.executable, "-m", "mast_otel.cli", "report", *args, "--json", str(tmp_path / "r.json")]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["conversations"] == 3 and report["judged"] == 3, (args, done.stdout)
        assert report["by_mode"]["1.3"] == 3, report
        frameworks = [c["framework"] for c in report["failed_conversations"]]
        # The store's verdict of a native conversation names no framework (the root does); the adapters' do.
        assert frameworks.count("ag2") == (2 if args[0] == "--store" else 3), report
        if args[0] != "--store":  # the store keeps verdicts, not span names
            evidence = [c["evidence"]["1.3"] for c in report["failed_conversations"]]
            assert all(names and all("coder" in n for n in names) for names in evidence), evidence
