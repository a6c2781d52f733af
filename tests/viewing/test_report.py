"""``mast-otel report``: labels read back from OTLP JSON (hold and passthrough) and from the collector's store.

The spans are real: recorded by the Recorder, encoded by the OTel SDK's OTLP encoder, labelled by the collector's
own labeller (the code that labels them in production), written as OTLP JSON.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import time
import urllib.request
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanPb
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import Recorder
from mast_otel import semconv as sc
from mast_otel.cli import main as cli_main
from mast_otel.collector.release.labeller import label_spans, verdict_span
from mast_otel.collector.report import (
    Report,
    conversations_from_spans,
    load_otlp_json,
    load_store,
    render_html,
    render_text,
    request_to_otlp_json,
    spans_from_otlp_json,
)
from mast_otel.judge.model import ModeLabel, Verdict
from tests.otlp_sink import otlp_sink
from tests.viewing._support import ROOT, collector_process

REPEATED = "Here is the code again: def nth_prime(n): return primes[n] (unchanged from before)."


def record(service: str, framework: str, *, repeat: bool = True) -> ExportTraceServiceRequest:
    """One conversation recorded through the Recorder, as the OTLP request an SDK would send."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    rec = Recorder(tracer_provider=provider, framework=framework)
    with rec.conversation("triage", task="Report the 10th prime.", max_rounds=4):
        with rec.agent_turn("coder"):
            rec.message("coder", ["critic"], REPEATED)
        rec.handoff("coder", "critic", reason=sc.HANDOFF_ROUND_ROBIN)
        with rec.agent_turn("critic"):
            rec.message("critic", ["coder"], "primes[n] is off by one.")
        with rec.agent_turn("coder"):
            rec.message("coder", ["critic"], REPEATED if repeat else "Fixed: primes[n - 1].")
        rec.terminate(sc.TERMINATION_MAX_ROUNDS)
    request: ExportTraceServiceRequest = encode_spans(exporter.get_finished_spans())
    return request


def spans_of(request: ExportTraceServiceRequest) -> list[SpanPb]:
    return [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]


def verdict_for(request: ExportTraceServiceRequest, status: str = sc.JUDGE_OK) -> tuple[Verdict, SpanPb]:
    spans = spans_of(request)
    root = next(s for s in spans if s.name.startswith("invoke_workflow"))
    coder = [s.span_id.hex() for s in spans if s.name == "message coder -> critic"]
    last = next(s for s in spans if s.name == "message critic -> coder")
    modes = (ModeLabel("1.3", tuple(coder), "repeated"), ModeLabel("3.2", (last.span_id.hex(),), "no check"))
    verdict = Verdict(status=status, source=sc.SOURCE_RULES, modes=modes if status == sc.JUDGE_OK else ())
    return verdict, root


def hold_mode(request: ExportTraceServiceRequest, status: str = sc.JUDGE_OK) -> ExportTraceServiceRequest:
    """The request with the root and evidence spans labelled in place, as the collector's hold mode exports it."""
    verdict, root = verdict_for(request, status)
    spans = spans_of(request)
    bodies = {s.span_id: s.SerializeToString() for s in spans}
    new = label_spans(verdict, root_id=root.span_id, bodies=bodies, judge_name="rules", now_ns=root.end_time_unix_nano)
    for span in spans:
        if span.span_id in new:
            span.CopyFrom(SpanPb.FromString(new[span.span_id]))
    return request


def passthrough_mode(request: ExportTraceServiceRequest) -> ExportTraceServiceRequest:
    """The request untouched plus a mast.verdict span (child of the root, links to the evidence)."""
    verdict, root = verdict_for(request)
    body = verdict_span(verdict, trace_id=root.trace_id, unit_key="u", parent_id=root.span_id,
                        conversation_id=None, judge_name="rules", start_ns=root.end_time_unix_nano,
                        end_ns=root.end_time_unix_nano, linkable={s.span_id for s in spans_of(request)})  # fmt: skip
    request.resource_spans[0].scope_spans[0].spans.append(SpanPb.FromString(body))
    return request


def write_jsonl(path: Path, *requests: ExportTraceServiceRequest) -> Path:
    path.write_text("".join(json.dumps(request_to_otlp_json(r)) + "\n" for r in requests))
    return path


def test_hold_mode_labels_come_from_the_root_and_the_evidence_spans() -> None:
    doc = request_to_otlp_json(hold_mode(record("svc-a", "ag2")))
    (conv,) = conversations_from_spans(spans_from_otlp_json(doc))
    assert (conv.status, conv.source, conv.service, conv.framework) == ("ok", "rules", "svc-a", "ag2")
    assert conv.modes == ("1.3", "3.2") and conv.failed
    assert conv.evidence == {"1.3": ("message coder -> critic",), "3.2": ("message critic -> coder",)}
    assert conv.name == "invoke_workflow triage"


def test_passthrough_labels_come_from_the_verdict_span_and_its_links() -> None:
    doc = request_to_otlp_json(passthrough_mode(record("svc-a", "ag2")))
    (conv,) = conversations_from_spans(spans_from_otlp_json(doc))
    assert conv.status == "ok" and conv.modes == ("1.3", "3.2")
    assert conv.evidence["1.3"] == ("message coder -> critic",)
    assert conv.evidence["3.2"] == ("message critic -> coder",)


def test_otlp_json_ids_are_hex_and_base64_ids_are_accepted(tmp_path: Path) -> None:
    doc = request_to_otlp_json(hold_mode(record("svc-a", "ag2")))
    trace_id = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    assert len(trace_id) == 32 and int(trace_id, 16)
    for s in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:  # protobuf's own JSON mapping: base64 ids
        for key in ("traceId", "spanId", "parentSpanId"):
            if s.get(key):
                s[key] = base64.b64encode(bytes.fromhex(s[key])).decode()
    single = tmp_path / "one.json"
    single.write_text(json.dumps(doc))
    (conv,) = conversations_from_spans(load_otlp_json(single))
    assert conv.trace_id == trace_id and conv.modes == ("1.3", "3.2")


def test_unjudged_conversations_are_listed_never_counted_as_no_failure(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "spans.jsonl",
        hold_mode(record("svc-a", "ag2")),
        hold_mode(record("svc-a", "ag2"), status=sc.JUDGE_ERROR),
        record("svc-b", "metagpt"),  # never labelled
    )
    report = Report(tuple(conversations_from_spans(load_otlp_json(path))))
    assert report.statuses() == {"ok": 1, "error": 1, "unlabelled": 1}
    assert len(report.judged) == 1 and len(report.failed) == 1
    text = render_text(report)
    assert "3 conversations (error 1, ok 1, unlabelled 1); 1 judged, 1 with at least one" in text
    assert "Not judged: 2 conversation(s)" in text


def test_breakdown_by_mode_category_framework_service(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "spans.jsonl",
        hold_mode(record("svc-a", "ag2")),
        hold_mode(record("svc-a", "ag2")),
        hold_mode(record("svc-b", "metagpt")),
    )
    report = Report(tuple(conversations_from_spans(load_otlp_json(path))))
    assert report.by_mode() == {"1.3": 3, "3.2": 3}
    assert report.by_category() == {"FC1": 3, "FC3": 3}
    assert report.by_mode({"framework": "metagpt"}) == {"1.3": 1, "3.2": 1}
    assert report.groups("service") == ["svc-a", "svc-b"]
    data = report.to_json()
    assert data["by_framework"]["ag2"] == {"1.3": 2, "3.2": 2} and data["by_service"]["svc-b"]["3.2"] == 1
    text = render_text(report)
    assert "  1.3  Step repetition" in text and "ag2 (n=2)" in text and "svc-b (n=1)" in text


def test_html_is_self_contained_with_charts(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "spans.jsonl", hold_mode(record("svc-<a>", "ag2")))
    page = render_html(Report(tuple(conversations_from_spans(load_otlp_json(path)))), title="T & <T>")
    assert page.count("<svg") == 3  # modes; by framework; by service
    assert "<script" not in page and "<link" not in page and "src=" not in page  # nothing fetched
    assert "svc-&lt;a&gt;" in page and "T &amp; &lt;T&gt;" in page and "svc-<a>" not in page
    assert "mast.fm.1_3=true" in page and "{ span.mast.fm.1_3 = true }" in page
    assert "message coder -&gt; critic" in page  # evidence span names


def test_cli_writes_text_html_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_jsonl(tmp_path / "spans.jsonl", hold_mode(record("svc-a", "ag2")))
    html_out, json_out = tmp_path / "r.html", tmp_path / "r.json"
    assert cli_main(["report", str(path), "--html", str(html_out), "--json", str(json_out)]) == 0
    assert "1 with at least one MAST failure mode" in capsys.readouterr().out
    assert html_out.read_text().startswith("<!doctype html>")
    assert json.loads(json_out.read_text())["by_mode"]["1.3"] == 1
    assert cli_main(["report"]) == 2
    assert cli_main(["report", str(tmp_path / "missing.jsonl")]) == 1
    (tmp_path / "bad.json").write_text('{"not": "otlp"}')
    assert cli_main(["report", str(tmp_path / "bad.json")]) == 1


def test_store_verdicts_are_read_read_only(tmp_path: Path) -> None:
    """The store of a running collector (whatever its internal layout): the verdict there is the one exported."""
    request = record("svc-s", "ag2")
    judge = ["--judge", "tests.viewing.signal_judge:SignalModeJudge"]  # a user judge: labels without a model
    with otlp_sink() as sink, collector_process(tmp_path, sink.grpc_endpoint, extra=judge,
                                                env={"PYTHONPATH": str(ROOT)}) as collector:  # fmt: skip
        post = urllib.request.Request(collector.http, data=request.SerializeToString(),
                                      headers={"Content-Type": "application/x-protobuf"})  # fmt: skip
        with urllib.request.urlopen(post, timeout=10) as r:
            assert r.status == 200
        deadline = time.monotonic() + 30
        while not (roots := [s for s in sink.spans() if s.is_conversation_root and sc.JUDGE_STATUS in s.attributes]):
            assert time.monotonic() < deadline, collector.log.read_text()[-3000:]
            time.sleep(0.1)
        (root,) = roots
        (conv,) = load_store(tmp_path / "collector.db")  # while the collector holds it open
        assert (conv.trace_id, conv.status, conv.source) == (root.trace_id, "ok", "test")
        assert conv.modes == tuple(root.attributes[sc.FAILURE_MODES]) and "1.5" in conv.modes
        assert conv.service in ("svc-s", "unknown")  # the store links verdicts to resources in some layouts only
        with pytest.raises(sqlite3.OperationalError):  # how load_store opens it: writes are refused
            sqlite3.connect(f"file:{tmp_path / 'collector.db'}?mode=ro", uri=True).execute("CREATE TABLE probe (a)")
    with pytest.raises(FileNotFoundError):
        load_store(tmp_path / "nope.db")
    (tmp_path / "other.db").write_bytes(b"")
    with pytest.raises(ValueError, match="not a mast-otel collector store"):
        load_store(tmp_path / "other.db")


def test_signals_without_a_verdict_reach_the_report() -> None:
    from mast_otel.judge.signals import Signal

    request = record("svc-a", "ag2")
    spans = spans_of(request)
    root = next(s for s in spans if s.name.startswith("invoke_workflow"))
    coder = tuple(s.span_id.hex() for s in spans if s.name == "message coder -> critic")
    signals = [Signal("1.3", "repeated_message", "2 repeats", coder), Signal("1.5", "round_limit", "limit",
                                                                               (root.span_id.hex(),))]
    new = label_spans(Verdict.skipped("no model configured"), root_id=root.span_id,
                      bodies={s.span_id: s.SerializeToString() for s in spans}, judge_name="signals",
                      now_ns=root.end_time_unix_nano, signals=signals)  # fmt: skip
    for span in spans:
        if span.span_id in new:
            span.CopyFrom(SpanPb.FromString(new[span.span_id]))
    (conv,) = conversations_from_spans(spans_from_otlp_json(request_to_otlp_json(request)))
    assert conv.status == "skipped" and conv.modes == () and not conv.judged
    assert conv.signals == ("repeated_message", "round_limit")
    assert conv.signal_spans == {"repeated_message": ("message coder -> critic",), "round_limit": ()}
    report = Report((conv,))
    assert report.by_signal() == {"repeated_message": 1, "round_limit": 1}
    text = render_text(report)
    assert "Structural signals (facts seen without a model, not MAST verdicts)" in text
    assert "repeated_message  1" in text
    assert report.to_json()["by_signal"] == {"repeated_message": 1, "round_limit": 1}
    assert "<td>round_limit</td>" in render_html(report)
