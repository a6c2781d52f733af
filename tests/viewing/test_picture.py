"""``mast-otel report --conversation``: the picture of one conversation checked against its spans.

The conversation is a real AG2 group chat (examples/ag2_group_chat.py, scripted replies), instrumented by
mast-otel, encoded by the OTel SDK's OTLP encoder and labelled by the collector's own labeller, as hold mode
exports it. The picture must draw every handoff once, numbered in order, every message once in order, and mark
every span the verdict cites. A headless Chromium screenshot goes to test-artifacts/ when Chromium is installed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanPb
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import mast_otel
from mast_otel import Recorder
from mast_otel import semconv as sc
from mast_otel.collector.release.labeller import label_spans
from mast_otel.collector.report import request_to_otlp_json, spans_from_otlp_json
from mast_otel.collector.report.picture import pictures_in_trace, render_svg
from mast_otel.judge.model import ModeLabel, Verdict
from tests.viewing.test_report import write_jsonl

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[SpanPb], Verdict]:
    pytest.importorskip("autogen")
    from examples.ag2_group_chat import run

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    mast_otel.instrument(tracer_provider=provider)
    try:
        run(silent=True)
    finally:
        mast_otel.uninstrument()
    request = encode_spans(exporter.get_finished_spans())
    spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    root = next(s for s in spans if s.name.startswith("invoke_workflow"))
    messages = [s for s in spans if s.name.startswith("message ")]
    handoff = next(s for s in spans if s.name.startswith("handoff "))
    verdict = Verdict(
        status=sc.JUDGE_OK,
        source=sc.SOURCE_LLM,
        modes=(
            ModeLabel("1.3", (messages[1].span_id.hex(), messages[3].span_id.hex()), "repeated"),
            ModeLabel("2.2", (handoff.span_id.hex(),), "never asked"),
        ),
    )
    bodies = {s.span_id: s.SerializeToString() for s in spans}
    new = label_spans(verdict, root_id=root.span_id, bodies=bodies, judge_name="llm", now_ns=root.end_time_unix_nano)
    for span in spans:
        if span.span_id in new:
            span.CopyFrom(SpanPb.FromString(new[span.span_id]))
    path = write_jsonl(tmp_path_factory.mktemp("picture") / "spans.jsonl", request)
    return path, spans, verdict


def _draw(jsonl: Path, trace_id: str, out: Path) -> ET.Element:
    done = subprocess.run([sys.executable, "-m", "mast_otel.cli", "report", str(jsonl), "--conversation", trace_id,
                           "--out", str(out)], capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return ET.fromstring(out.read_text())


def _groups(svg: ET.Element, cls: str) -> list[ET.Element]:
    return [g for g in svg.iter(f"{SVG}g") if g.get("class") == cls]


def _attr(span: SpanPb, key: str) -> object:
    for kv in span.attributes:
        if kv.key == key:
            value = kv.value
            if value.HasField("array_value"):
                return [v.string_value for v in value.array_value.values]
            return getattr(value, value.WhichOneof("value"))
    return None


def test_every_handoff_once_in_order_every_message_and_every_evidence_span_marked(
    labelled: tuple[Path, list[SpanPb], Verdict], tmp_path: Path
) -> None:
    jsonl, spans, verdict = labelled
    trace_id = spans[0].trace_id.hex()
    svg = _draw(jsonl, trace_id, tmp_path / "conversation.svg")

    handoff_spans = sorted((s for s in spans if _attr(s, sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_HANDOFF),
                           key=lambda s: int(_attr(s, sc.HANDOFF_INDEX)))  # type: ignore[arg-type]  # fmt: skip
    drawn = _groups(svg, "handoff")
    assert [g.get("data-span-id") for g in drawn] == [s.span_id.hex() for s in handoff_spans]
    assert [g.get("data-n") for g in drawn] == [str(n) for n in range(1, len(handoff_spans) + 1)]
    assert [(g.get("data-source"), g.get("data-reason")) for g in drawn] == [
        (_attr(s, sc.HANDOFF_FROM), _attr(s, sc.HANDOFF_REASON)) for s in handoff_spans
    ]

    message_spans = sorted((s for s in spans if _attr(s, sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_MESSAGE),
                           key=lambda s: int(_attr(s, sc.MESSAGE_INDEX)))  # type: ignore[arg-type]  # fmt: skip
    messages = _groups(svg, "message")
    assert [g.get("data-span-id") for g in messages] == [s.span_id.hex() for s in message_spans]
    assert [g.get("data-source") for g in messages] == [_attr(s, sc.MESSAGE_SENDER) for s in message_spans]

    cited = {span_id: m.mode_id for m in verdict.modes for span_id in m.evidence_span_ids}
    marked = {g.get("data-span-id"): g.get("data-modes") for g in [*drawn, *messages] if g.get("data-modes")}
    assert marked == cited
    footer = " ".join(t.text or "" for t in svg.iter(f"{SVG}text") if t.get("class") == "footer")
    assert "1.3 Step repetition" in footer and "termination: " + str(_attr(spans[-1], sc.TERMINATION_REASON)) in footer
    _screenshot(tmp_path / "conversation.svg")


def test_message_text_is_escaped_and_an_unknown_trace_is_an_error(
    labelled: tuple[Path, list[SpanPb], Verdict], tmp_path: Path
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    rec = Recorder(tracer_provider=provider, framework="home-grown")
    hostile = '</text><script>alert(1)</script><text x="0">"&'
    with rec.conversation("escape", task="t"):
        rec.message("a", ["b"], hostile)
        rec.terminate(sc.TERMINATION_COMPLETED)
    doc = request_to_otlp_json(encode_spans(exporter.get_finished_spans()))
    spans = list(spans_from_otlp_json(doc))
    (picture,) = pictures_in_trace(spans, spans[0].trace_id)
    svg = ET.fromstring(render_svg(picture))
    assert not list(svg.iter(f"{SVG}script"))
    assert any(hostile[:25] in (t.text or "") for t in svg.iter(f"{SVG}text"))

    jsonl, _, _ = labelled
    missing = subprocess.run([sys.executable, "-m", "mast_otel.cli", "report", str(jsonl), "--conversation",
                              "0" * 32], capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert missing.returncode == 1 and "no conversation in trace" in missing.stderr


def test_the_html_report_carries_a_picture_per_failed_conversation(
    labelled: tuple[Path, list[SpanPb], Verdict], tmp_path: Path
) -> None:
    jsonl, spans, _ = labelled
    page = tmp_path / "report.html"
    done = subprocess.run([sys.executable, "-m", "mast_otel.cli", "report", str(jsonl), "--html", str(page)],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    assert html.count('<section class="picture">') == 1
    assert f'data-trace-id="{spans[0].trace_id.hex()}"' in html


def _screenshot(svg: Path) -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        return  # the picture itself was checked above; the screenshot is for people
    ARTIFACTS.mkdir(exist_ok=True)
    out = ARTIFACTS / "conversation-picture.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={out}",
                    "--window-size=1100,1400", svg.as_uri()], capture_output=True, timeout=60, check=False)  # fmt: skip
