"""A framework's own GenAI spans through a real ``mast-otel collector`` process, checked against the framework's own
record of the run: the end-to-end test every ``tests/<session>/test_collector.py`` runs.

The example runs as its own process (the framework's environment), exporting OTLP/gRPC to a local receiver that
keeps every request as it came; those requests, unchanged, are then exported to the collector (the main
environment's interpreter, ``MAST_OTEL_MAIN_PYTHON``, with an LLM judge played by a scripted model citing the
reviewer's messages as MAST 3.2), which exports to a second receiver downstream. Keeping the framework's requests
first is what lets a test say which spans the collector received, and so that nothing came out that did not go
in.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from mast_otel import semconv as sc
from mast_otel.collector.metrics import MetricNames
from mast_otel.collector.report.otlp import request_to_otlp_json
from mast_otel.spans import SpanRecord, from_otlp_request
from tests.adapters._collector import samples
from tests.collector.test_durability import CollectorProcess
from tests.frameworks import REPO, main_python_that_imports
from tests.genai.runs import FRAMEWORKS, run_example
from tests.judge.fake_openai import citing, fake_openai
from tests.otlp_sink import otlp_sink

CITED_AGENT = "reviewer"  # approves without looking the order up: the desk's MAST 3.2
CITED_MODE = "3.2"
_MESSAGE = re.compile(r"^\[M\d+\] (?P<sender>\S+) -> [^:]+?(?:: (?P<text>.*))?$")
_HANDOFF = re.compile(r"^\[H\d+\] handoff (?P<source>\S+) -> (?P<target>\S+)")
_TOOL = re.compile(r"^\[T\d+\] tool (?P<name>\S+)")


@dataclass
class Outcome:
    record: dict[str, Any]  # the framework's own record of the run
    sent: list[SpanRecord]  # what the framework exported, as the collector received it
    got: list[SpanRecord]  # what the collector exported downstream
    metrics: str
    judge_calls: int
    transcript: list[str]  # the transcript lines the judge reads from the sent spans (mast-otel judge --dry-run)


def through_collector(tmp_path: Path, name: str, variant: str, *, mode: str = "hold") -> Outcome:
    """Run ``name``'s example under ``variant``, send what it exported to a real collector in ``mode``, and return
    once every span came out the other side (in passthrough mode, once the collector also judged the run)."""
    python = main_python_that_imports("mast_otel.evaluation.judge_cli", "the collector")
    judge = fake_openai([citing({CITED_MODE: rf"^{CITED_AGENT} -> "}, summary="scripted verdict")] * 2)
    with otlp_sink() as upstream, otlp_sink() as downstream, judge as model:
        record = run_example(name, variant, upstream.grpc_endpoint, tmp_path, service=f"{name}-{variant}")
        requests = upstream.requests()
        env = {"MAST_OTEL_JUDGE_BASE_URL": model.base_url, "MAST_OTEL_JUDGE_MODEL": "scripted-judge",
               "PYTHONPATH": str(REPO), "MAST_OTEL_COLLECTOR_MODE": mode}  # fmt: skip
        proc = CollectorProcess(tmp_path, downstream, judge="llm", env=env, python=python)
        proc.start()
        try:
            _export(requests, proc.grpc_port)
            sent = [span for request in requests for span in from_otlp_request(request)]
            downstream.wait_for_spans(len(sent), timeout=90)
            metrics = _judged(proc) if mode == "passthrough" else proc.metrics()
            time.sleep(0.5)  # anything extra (a span the collector added) would arrive with the rest
            got = downstream.spans()
        finally:
            proc.stop()
        judge_calls = len(model.requests)
    return Outcome(record, sent, got, metrics, judge_calls, transcript(python, tmp_path / "sent.json", requests))


def _judged(proc: CollectorProcess, timeout: float = 90.0) -> str:
    """The collector's metrics once it counted a verdict (passthrough: the spans left before it), or at ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        text = proc.metrics()
        if sum(samples(text, MetricNames.CONVERSATIONS_JUDGED).values()) or time.monotonic() > deadline:
            return text
        time.sleep(0.2)


def _export(requests: Sequence[ExportTraceServiceRequest], port: int) -> None:
    """Send the framework's requests, unchanged, to the collector's OTLP/gRPC receiver."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        for request in requests:
            stub.Export(request, timeout=30)


def transcript(python: str, path: Path, requests: Sequence[ExportTraceServiceRequest]) -> list[str]:
    """The message, handoff and tool lines of the transcript the judge reads from these spans (dry run: no
    model), by the main environment's ``mast-otel judge``."""
    resource_spans = [rs for r in requests for rs in request_to_otlp_json(r)["resourceSpans"]]
    path.write_text(json.dumps({"resourceSpans": resource_spans}), encoding="utf-8")
    cmd = [python, "-m", "mast_otel.cli", "judge", str(path), "--dry-run", "--show-prompt"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(rows) == 1, f"one conversation in the run, not {len(rows)}: {done.stderr[-2000:]}"
    text = "\n".join(str(m["content"]) for chunk in rows[0]["prompt"] for m in chunk)
    return [line for line in text.splitlines() if re.match(r"^\[[MHT]\d+\] ", line)]


def check(out: Outcome, name: str, variant: str) -> None:
    """Everything the issue asks of one framework run, against the framework's own record."""
    spec = FRAMEWORKS[name]
    settings = spec.variants[variant]
    record = out.record

    # Nothing lost, nothing added: every exported span is one the collector received, each exactly once.
    assert sorted((s.trace_id, s.span_id) for s in out.got) == sorted((s.trace_id, s.span_id) for s in out.sent)

    # One judged conversation, on the framework's own root, and nothing counted as a mast-otel conversation.
    judged = samples(out.metrics, MetricNames.CONVERSATIONS_JUDGED)
    counted = {dict(k)["framework"]: v for k, v in judged.items() if v}
    assert counted == {spec.framework: 1}, judged
    (root,) = [s for s in out.got if sc.JUDGE_STATUS in s.attributes]
    assert root.name.startswith(settings.root or spec.root), root.name
    assert root.attributes[sc.MAST_SOURCE] == "genai"
    assert root.attributes[sc.MAST_FRAMEWORK] == spec.framework
    assert not any(s.attributes.get(sc.MAST_SPAN_TYPE) for s in out.got)  # no mast-otel span in a foreign trace

    # The conversation the judge reads: the framework's agents, handoffs and tool calls.
    messages = [m for line in out.transcript if (m := _MESSAGE.match(line))]
    senders = [m["sender"] for m in messages]
    assert _collapsed(senders, skip="user") == record["agents"]
    handoffs = [[m["source"], m["target"]] for line in out.transcript if (m := _HANDOFF.match(line))]
    assert handoffs == record["handoffs"]
    tools = [m["name"] for line in out.transcript if (m := _TOOL.match(line))]
    assert tools == [tool for _, tool in record["tools"]]

    if settings.content_captured:
        # The message text, in order, and the judge's labels on the framework's own spans.
        assert [(m["sender"], (m["text"] or "").split("\n")[0]) for m in messages] == [
            (sender, text.split("\n")[0]) for sender, text in record["messages"]
        ]
        assert out.judge_calls == 1
        assert root.attributes[sc.JUDGE_STATUS] == sc.JUDGE_OK
        assert root.attributes[sc.LABEL_SOURCE] == sc.SOURCE_LLM
        assert list(root.attributes[sc.FAILURE_MODES]) == [CITED_MODE]
        evidence = [s for s in out.got if s.attributes.get(sc.FAILURE_MODE) == CITED_MODE]
        assert evidence and {_agent_of(s, out.got) for s in evidence} == {CITED_AGENT}
        assert len(evidence) == sum(sender == CITED_AGENT for sender, _ in record["messages"])
    else:
        # No text to judge: never sent to the judge; the verdict says why and names the framework's switch.
        assert out.judge_calls == 0
        assert root.attributes[sc.JUDGE_STATUS] == sc.JUDGE_SKIPPED
        reason = str(root.attributes[sc.JUDGE_STATUS_REASON])
        assert "content" in reason and spec.switch in reason, reason


def check_passthrough(out: Outcome, name: str) -> None:
    """Passthrough mode: the spans leave as they came, nothing is added to the framework's trace (no
    ``mast.verdict`` span), and the run is judged once all the same (the verdict is in the store and metrics)."""
    assert sorted((s.trace_id, s.span_id) for s in out.got) == sorted((s.trace_id, s.span_id) for s in out.sent)
    sent = {(s.trace_id, s.span_id): dict(s.attributes) for s in out.sent}
    assert {(s.trace_id, s.span_id): dict(s.attributes) for s in out.got} == sent  # no label: the spans had left
    judged = samples(out.metrics, MetricNames.CONVERSATIONS_JUDGED)
    assert {dict(k)["framework"]: v for k, v in judged.items() if v} == {FRAMEWORKS[name].framework: 1}
    assert out.judge_calls == 1


def _collapsed(names: Sequence[str], *, skip: str) -> list[str]:
    out: list[str] = []
    for name in names:
        if name != skip and (not out or out[-1] != name):
            out.append(name)
    return out


def _agent_of(span: SpanRecord, spans: Sequence[SpanRecord]) -> str:
    """The agent a span belongs to: its own ``gen_ai.agent.name``, else its nearest ancestor's."""
    by_id = {s.span_id: s for s in spans if s.trace_id == span.trace_id}
    node: SpanRecord | None = span
    while node is not None:
        if sc.GEN_AI_AGENT_NAME in node.attributes:
            return str(node.attributes[sc.GEN_AI_AGENT_NAME])
        node = by_id.get(node.parent_span_id or "")
    return "?"


def desk_test(name: str) -> Callable[[Path, str], None]:
    """The test of ``tests/<name>/test_collector.py``: the desk through the collector, once per variant of the
    framework's tracing settings (``tests/genai/runs.py``)."""

    @pytest.mark.integration
    @pytest.mark.parametrize("variant", list(FRAMEWORKS[name].variants))
    def test_desk_through_the_collector(tmp_path: Path, variant: str) -> None:
        check(through_collector(tmp_path, name, variant), name, variant)

    return test_desk_through_the_collector


def passthrough_test(name: str, variant: str) -> Callable[[Path], None]:
    """The passthrough-mode test of ``tests/<name>/test_collector.py``, on a variant that captures content."""
    assert FRAMEWORKS[name].variants[variant].content_captured

    @pytest.mark.integration
    def test_desk_in_passthrough_mode(tmp_path: Path) -> None:
        check_passthrough(through_collector(tmp_path, name, variant, mode="passthrough"), name)

    return test_desk_in_passthrough_mode
