"""The answer parser, the metrics, and the `judge` / `eval` subcommands on real step-list data."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from mast_otel.evaluation import eval_cli, judge_cli
from mast_otel.evaluation.chart import _png_bars
from mast_otel.evaluation.metrics import Counts
from mast_otel.judge.output import OutputError, json_schema, parse_output
from mast_otel.taxonomy import MODE_IDS
from tests.judge.fake_openai import answer, completion, fake_openai
from tests.mad_data import AG2_SAMPLE, METAGPT_SAMPLE


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mast-otel")
    sub = p.add_subparsers(dest="command", required=True)
    judge_cli.register(sub)
    eval_cli.register(sub)
    return p


def run(argv, capsys):
    args = parser().parse_args(argv)
    code = args.func(args)
    return code, capsys.readouterr()


@pytest.fixture(scope="module")
def small_steplist(tmp_path_factory) -> Path:
    """Three AG2 and two MetaGPT records from the real data (the samples shipped in tests/data/mad), in one file."""
    records = json.loads(AG2_SAMPLE.read_text())[:3]
    records += json.loads(METAGPT_SAMPLE.read_text())[:2]
    path = tmp_path_factory.mktemp("data") / "small.json"
    path.write_text(json.dumps(records))
    return path


def test_parse_output_is_lenient_in_form_strict_in_content():
    text = answer({"1.3": ["M2"]}).replace('"present": true', '"present": "yes"').replace('["M2"]', '"[M2], M3"')
    out = parse_output("Sure!\n```json\n" + text + "\n```")
    assert out.present() == ["1.3"] and out.modes["1.3"].refs() == ["M2", "M3"]
    with pytest.raises(OutputError, match=r"missing 1\.2, 1\.3"):
        parse_output(json.dumps({"summary": "", "task_completed": True, "modes": {"1.1": {"present": False}}}))
    with pytest.raises(OutputError):
        parse_output("")
    extra = json.loads(answer())
    extra["modes"]["1.6"] = {"present": True, "evidence": [], "reason": "old taxonomy"}
    assert "1.6" not in parse_output(json.dumps(extra)).modes


def test_schema_requires_every_mode():
    schema = json_schema()
    assert schema["properties"]["modes"]["required"] == list(MODE_IDS)
    assert "$ref" not in json.dumps(schema)


def test_counts_match_hand_computed_kappa():
    c = Counts(tp=20, fp=5, fn=10, tn=65)
    assert c.precision() == 0.8 and c.recall() == 20 / 30
    po, pe = 0.85, 0.25 * 0.3 + 0.75 * 0.7
    assert c.kappa() == pytest.approx((po - pe) / (1 - pe))
    assert Counts(tn=10).kappa() is None  # constant raters: undefined, not 0 or 1


def test_builtin_png_writer_makes_a_valid_png():
    data = _png_bars(["1.1", "3.3"], {"f1": [0.5, None], "recall": [1.0, 0.2]})
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and data.endswith(b"IEND\xaeB`\x82")


def test_judge_dry_run_prints_trace_key_and_prompt_tokens(small_steplist, capsys):
    code, out = run(["judge", str(small_steplist), "--dry-run"], capsys)
    assert code == 0
    rows = [json.loads(line) for line in out.out.splitlines()]
    assert [r["trace_key"] for r in rows] == [
        "AG2_GSM_Plus_GPT4o_0", "AG2_GSM_Plus_GPT4o_1", "AG2_GSM_Plus_GPT4o_2",
        "MetaGPT_ProgramDev_GPT4o_0", "MetaGPT_ProgramDev_GPT4o_1",
    ]  # fmt: skip
    assert all(500 < r["prompt_tokens"] <= 12000 and "verdict" not in r for r in rows)


def test_judge_with_endpoint_adds_the_verdict(small_steplist, capsys, monkeypatch):
    monkeypatch.delenv("MAST_OTEL_JUDGE_CACHE", raising=False)
    with fake_openai([completion(answer({"1.1": ["M2"]}))]) as server:
        code, out = run(["judge", str(small_steplist), "--limit", "2", "--base-url", server.base_url,
                         "--model", "fake"], capsys)  # fmt: skip
    rows = [json.loads(line) for line in out.out.splitlines()]
    assert code == 0 and len(rows) == 2
    assert all(r["verdict"]["status"] == "ok" and r["verdict"]["failure_modes"] == ["1.1"] for r in rows)
    assert rows[0]["verdict"]["modes"][0]["evidence_span_ids"]


def test_judge_reads_otlp_json(tmp_path, capsys):
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from mast_otel.recorder import Recorder

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    rec = Recorder(provider)
    with rec.conversation("otlp", task="say hi"):
        rec.message("a", ["b"], "hi there, this is a message")
    data = json_format.MessageToDict(encode_spans(exporter.get_finished_spans()))
    for rs in data["resourceSpans"]:  # OTLP JSON spells ids in hex; protobuf's JSON mapping uses base64
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                for k in ("traceId", "spanId", "parentSpanId"):
                    if k in s:
                        import base64

                        s[k] = base64.b64decode(s[k]).hex()
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(data))
    code, out = run(["judge", str(path), "--dry-run"], capsys)
    assert code == 0
    (row,) = [json.loads(line) for line in out.out.splitlines()]
    root = next(s for s in exporter.get_finished_spans() if s.parent is None)
    assert row["trace_key"] == f"{root.context.trace_id:032x}:{root.context.span_id:016x}"


def test_judge_reads_a_file_with_a_value_too_deep_as_if_it_were_not_there(tmp_path, capsys):
    """A framework's run whose model input is JSON nested 100,000 deep (the whole command died of RecursionError):
    the row is the one the run gives without that attribute, plus where the value was and why it was left out."""
    capture = Path(__file__).parents[1] / "data" / "captures" / "pydantic_ai" / "desk.json"
    otlp = json.loads(capture.read_text())["otlp"]
    spans = [s for rs in otlp["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    span = next(s for s in spans if any(a["key"] == "gen_ai.input.messages" for a in s["attributes"]))
    rows = []
    for value in (None, "[" * 100_000 + "]" * 100_000):
        span["attributes"] = [a for a in span["attributes"] if a["key"] != "gen_ai.input.messages"]
        if value is not None:
            span["attributes"].append({"key": "gen_ai.input.messages", "value": {"stringValue": value}})
        path = tmp_path / "run.json"
        path.write_text(json.dumps(otlp))
        code, out = run(["judge", str(path), "--no-model"], capsys)
        assert code == 0
        (row,) = [json.loads(line) for line in out.out.splitlines()]
        rows.append(row)
    without, deep = rows
    assert deep.pop("ignored") == [{"span_id": span["spanId"], "key": "gen_ai.input.messages", "reason": "too_deep"}]
    for row in rows:  # (the prompt's size varies by a few tokens from run to run whatever the input)
        row.pop("prompt_tokens"), row.pop("chunk_prompt_tokens")
    assert deep == without and "ignored" not in without


@pytest.mark.parametrize("levels", [60, 50_000])
def test_judge_refuses_a_file_nested_past_what_the_parsers_read(tmp_path, capsys, levels):
    """An attribute whose OTLP array value nests 60 levels (past protobuf's limit) or 50,000 (past JSON's): the file
    cannot be read at all, as the collector refuses such a request; the command says so and exits 2."""
    capture = Path(__file__).parents[1] / "data" / "captures" / "pydantic_ai" / "desk.json"
    otlp = json.loads(capture.read_text())["otlp"]
    deep = '{"arrayValue": {"values": [' * levels + '{"stringValue": "x"}' + "]}}" * levels
    text = json.dumps(otlp).replace('"attributes": [', '"attributes": [{"key": "deep", "value": ' + deep + "}, ", 1)
    path = tmp_path / "run.json"
    path.write_text(text)
    code, out = run(["judge", str(path), "--dry-run"], capsys)
    assert code == 2 and out.out == ""
    assert out.err.startswith("mast-otel judge: not OTLP JSON that can be read")


def test_eval_without_a_model_scores_signals_and_warns_about_the_old_labels(small_steplist, tmp_path, capsys):
    code, out = run(["eval", str(small_steplist), "--no-model", "--out", str(tmp_path), "--quiet"], capsys)
    assert code == 0
    assert "1,242-row MAD release" in out.err and "mean nothing" in out.err
    report = json.loads((tmp_path / "eval.json").read_text())
    assert report["summary"]["traces"] == 5 and "judge" not in report["summary"]
    signals = report["summary"]["signals"]
    assert set(signals["per_mode"]) == set(MODE_IDS) and signals["fired"]["round_limit"] >= 2  # MetaGPT: 5 rounds
    text = (tmp_path / "eval.md").read_text()
    assert "1,242-row MAD release" in text and "| 1.5 | Unaware of termination conditions |" in text
    assert "No judge configured" in text
    assert (tmp_path / "eval.png").read_bytes().startswith(b"\x89PNG")


def test_eval_llm_counts_errors_apart_and_reports_tokens(small_steplist, tmp_path, capsys):
    script = [completion(answer({"1.3": ["M1"]}), 1000, 100), completion("garbage")]
    with fake_openai(script) as server:
        code, _ = run(["eval", str(small_steplist), "--limit", "2", "--base-url", server.base_url, "--model", "m",
                       "--concurrency", "1", "--out", str(tmp_path), "--quiet"], capsys)  # fmt: skip
    summary = json.loads((tmp_path / "eval.json").read_text())["summary"]["judge"]
    assert code == 0
    assert summary["scored"] == 1 and summary["unscored_errors"] == 1 and summary["statuses"] == {"ok": 1, "error": 1}
    assert summary["tokens_in"] > 0
