"""Real runs exported over OTLP/gRPC to a real ``mast-otel collector`` process with the LLM judge (a scripted
model citing the transcript), and the checks every source shares: the labelled foreign root, the evidence, the
transcript the judge read (``mast-otel judge --dry-run --show-prompt``) against the framework's own record."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from mast_otel import semconv as sc
from mast_otel.adapters import foreign_units
from mast_otel.collector.metrics import MetricNames
from mast_otel.collector.report.otlp import request_to_otlp_json
from mast_otel.spans import SpanRecord
from tests.adapters.runs import RUNS, Oracle
from tests.collector.test_durability import CollectorProcess
from tests.judge.fake_openai import citing, fake_openai
from tests.otlp_sink import otlp_sink

_SVG = "{http://www.w3.org/2000/svg}"
_LINE = re.compile(r"^\[(M\d+|H\d+)\] (.*)$")


@dataclass
class Outcome:
    spans: dict[str, list[SpanRecord]]  # by run name (the service name each run exported as)
    sent: dict[str, list[Any]]  # the SDK spans each run exported
    oracles: dict[str, Oracle]
    metrics: str
    judge_calls: int
    exported: Path  # the labelled spans as OTLP JSON Lines, as a file exporter downstream would keep them
    store: Path


def through_collector(tmp_path: Path, names: Sequence[str], cite: dict[str, str], *, mode: str = "hold") -> (
        Outcome):  # fmt: skip
    """Run each named run against one collector in ``mode``; return once every span came out the other side and,
    in passthrough mode, the collector judged them all. No span is ever added to these foreign traces."""
    judge = fake_openai([citing(cite, summary="scripted verdict")] * (2 * len(names)))
    sent: dict[str, list[Any]] = {}
    oracles: dict[str, Oracle] = {}
    with otlp_sink() as sink, judge as model:
        env = {"MAST_OTEL_JUDGE_BASE_URL": model.base_url, "MAST_OTEL_JUDGE_MODEL": "scripted-judge"}
        env["MAST_OTEL_COLLECTOR_MODE"] = mode
        proc = CollectorProcess(tmp_path, sink, judge="llm", env=env)
        proc.start()
        try:
            for name in names:
                memory = InMemorySpanExporter()
                provider = TracerProvider(resource=Resource.create({"service.name": name}))
                provider.add_span_processor(SimpleSpanProcessor(memory))
                otlp = OTLPSpanExporter(endpoint=f"127.0.0.1:{proc.grpc_port}", insecure=True, timeout=30)
                provider.add_span_processor(SimpleSpanProcessor(otlp))
                oracles[name] = RUNS[name](provider)
                provider.shutdown()
                sent[name] = list(memory.get_finished_spans())
            want = {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for v in sent.values() for s in v}
            got = sink.wait_for_spans(len(want), timeout=90)
            metrics = proc.metrics()
            if mode == "passthrough":  # the spans left on arrival: wait for the verdicts in the metrics instead
                metrics = _wait_judged(proc, len(names))
        finally:
            proc.stop()
        exported = tmp_path / "exported.jsonl"
        exported.write_text("".join(json.dumps(request_to_otlp_json(r)) + "\n" for r in sink.requests()))
    assert sorted((s.trace_id, s.span_id) for s in got) == sorted(want)  # nothing lost, nothing added
    by_service: dict[str, list[SpanRecord]] = {}
    for span in got:
        by_service.setdefault(str(span.service_name), []).append(span)
    return Outcome(by_service, sent, oracles, metrics, len(model.requests), exported, tmp_path / "collector.db")


def _wait_judged(proc: CollectorProcess, conversations: int, timeout: float = 90.0) -> str:
    """The collector's metrics once it counted ``conversations`` verdicts (or ``timeout`` passed)."""
    deadline = time.monotonic() + timeout
    while True:
        text = proc.metrics()
        if sum(samples(text, MetricNames.CONVERSATIONS_JUDGED).values()) >= conversations:
            return text
        if time.monotonic() > deadline:
            return text
        time.sleep(0.2)


def samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Every sample of a metric, by its sorted label pairs."""
    out: dict[tuple[tuple[str, str], ...], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name:
                out[tuple(sorted(s.labels.items()))] = s.value
    return out


def transcript(path: Path, sent: list[Any]) -> list[str]:
    """The message and handoff lines of the transcript the judge reads from these spans (dry run, no model)."""
    path.write_text(json.dumps(request_to_otlp_json(encode_spans(sent))))
    done = subprocess.run([sys.executable, "-m", "mast_otel.cli", "judge", str(path), "--dry-run", "--show-prompt"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    (row,) = [json.loads(line) for line in done.stdout.splitlines()]
    text = "\n".join(str(m["content"]) for chunk in row["prompt"] for m in chunk)
    return [f"{m.group(1)} {m.group(2)}" for line in text.splitlines() if (m := _LINE.match(line))]


def check_foreign(out: Outcome, name: str, source: str, framework: str, cited_sender: str, tmp_path: Path) -> None:
    """One foreign conversation: labels on its root, evidence on its spans, the transcript = the framework's."""
    spans = out.spans[name]
    (root,) = [s for s in spans if sc.JUDGE_STATUS in s.attributes]
    assert root.attributes[sc.MAST_SOURCE] == source
    assert root.attributes[sc.JUDGE_STATUS] == sc.JUDGE_OK and root.attributes[sc.LABEL_SOURCE] == sc.SOURCE_LLM
    assert root.attributes[sc.MAST_FRAMEWORK] == framework
    assert list(root.attributes[sc.FAILURE_MODES]) == ["1.3"]
    held = foreign_units(out.spans[name])  # the outermost agent / workflow span: what the collector held
    assert [unit[0].span_id for unit in held] == [root.span_id]
    oracle = out.oracles[name]
    evidence = [s for s in spans if s.attributes.get(sc.FAILURE_MODE) == "1.3"]
    assert len(evidence) == sum(sender == cited_sender for sender, _ in oracle["messages"])
    by_id = {s.span_id: s for s in spans}

    def agent_of(span: SpanRecord | None) -> str:  # the span's own agent, or its nearest ancestor's
        while span is not None:
            if cited_sender in span.name:
                return cited_sender
            span = by_id.get(span.parent_span_id or "")
        return "?"

    assert all(agent_of(s) == cited_sender for s in evidence)

    lines = transcript(tmp_path / f"{name}.json", out.sent[name])
    messages = [line for line in lines if line.startswith("M")]
    assert [m.split(" ", 2)[1] for m in messages] == [sender for sender, _ in oracle["messages"]]
    heads = [m.split(": ", 1)[1].split("\n")[0] if ": " in m else "" for m in messages]
    assert heads == [content.split("\n")[0] for _, content in oracle["messages"]]
    found = [re.match(r"H\d+ handoff (\S+) -> (\S+)", line) for line in lines if line.startswith("H")]
    assert [(h.group(1), h.group(2)) for h in found if h] == oracle["handoffs"]
    check_picture(out, name, root, cited_sender, tmp_path)


def check_picture(out: Outcome, name: str, root: SpanRecord, cited_sender: str, tmp_path: Path) -> None:
    """``mast-otel report --conversation`` on the exported spans draws the conversation the judge read: the
    framework's messages in order, its handoffs, and the cited agent's messages marked as evidence."""
    svg_path = tmp_path / f"{name}.svg"
    cmd = [sys.executable, "-m", "mast_otel.cli", "report", str(out.exported), "--conversation", root.trace_id,
           "--out", str(svg_path)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    svg = ET.fromstring(svg_path.read_text())
    assert svg.get("data-trace-id") == root.trace_id
    groups = [g for g in svg.iter(f"{_SVG}g") if g.get("class") in ("message", "handoff")]
    oracle = out.oracles[name]
    messages = [g for g in groups if g.get("class") == "message"]
    assert [g.get("data-source") for g in messages] == [sender for sender, _ in oracle["messages"]], (
        [(g.get("data-source"), g.get("data-index")) for g in messages], oracle["messages"])
    handoffs = [(g.get("data-source"), g.get("data-target")) for g in groups if g.get("class") == "handoff"]
    assert [h for h in handoffs if h[1] != "end"] == oracle["handoffs"]
    marked = [g for g in messages if "1.3" in (g.get("data-modes") or "").split()]
    assert [g.get("data-source") for g in marked] == [s for s, _ in oracle["messages"] if s == cited_sender]
    evidence = {s.span_id for s in out.spans[name] if s.attributes.get(sc.FAILURE_MODE) == "1.3"}
    assert {g.get("data-span-id") for g in marked} <= evidence  # drawn under the foreign span ids


def check_once(tmp_path: Path, name: str, framework: str, cited_sender: str, source: str = "openinference") -> None:
    """One run of one foreign source through the collector: judged exactly once, then :func:`check_foreign`."""

    out = through_collector(tmp_path, [name], {"1.3": rf"^{cited_sender} -> "})
    judged = samples(out.metrics, MetricNames.CONVERSATIONS_JUDGED)
    assert sum(judged.values()) == 1, judged
    (labels,) = [dict(k) for k, v in judged.items() if v]
    assert labels["framework"] == framework and labels["status"] == sc.JUDGE_OK
    assert out.judge_calls == 1
    check_foreign(out, name, source, framework, cited_sender, tmp_path)
