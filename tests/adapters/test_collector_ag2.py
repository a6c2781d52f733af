"""Through a real collector process: AG2 runs traced by AG2's built-in tracing, by OpenInference, by both
OpenInference and mast-otel, and a single-agent call, exported over OTLP/gRPC. Each conversation is judged
exactly once by the collector's LLM judge; its foreign root carries the labels and ``mast.source``; the evidence
is on the coder's foreign spans; the transcript the judge read is AG2's message list; the single call passes
through unjudged, counted; ``mast-otel report`` reads the result."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("grpc", reason="the collector extra is not installed")
pytest.importorskip("autogen", reason="AG2 is not installed (pip install -e '.[ag2]')")
pytest.importorskip("openinference.instrumentation.ag2", reason="openinference-instrumentation-ag2 is not installed")

from mast_otel import semconv as sc
from mast_otel.collector.metrics import UNASSIGNED_NOT_A_CONVERSATION, MetricNames
from tests.adapters._collector import check_foreign, samples, through_collector
from tests.adapters.runs import AG2_RUNS

pytestmark = pytest.mark.integration


def test_ag2_runs_through_the_collector(tmp_path: Path) -> None:
    out = through_collector(tmp_path, AG2_RUNS, {"1.3": r"^coder -> "})

    # Judged exactly once per conversation: three conversations (the mixed run once), the single call never.
    judged = samples(out.metrics, MetricNames.CONVERSATIONS_JUDGED)
    assert sum(judged.values()) == 3, judged
    counted = [dict(k) for k, v in judged.items() if v]
    assert all(k["status"] == sc.JUDGE_OK and k["framework"] == "ag2" for k in counted), judged
    unassigned = samples(out.metrics, MetricNames.SPANS_UNASSIGNED)
    assert unassigned[(("reason", UNASSIGNED_NOT_A_CONVERSATION),)] == len(out.sent["openinference_single_agent"])
    assert out.judge_calls == 3  # one judge call per conversation

    single = out.spans["openinference_single_agent"]
    assert not any(sc.JUDGE_STATUS in s.attributes or sc.FAILURE_MODE in s.attributes for s in single)
    check_foreign(out, "ag2_builtin", "ag2-builtin", "ag2", "coder", tmp_path)
    check_foreign(out, "openinference_ag2", "openinference", "ag2", "coder", tmp_path)

    # The run traced twice: one verdict, on mast-otel's root; OpenInference's spans in it carry no labels.
    (root,) = [s for s in out.spans["mixed_ag2"] if sc.JUDGE_STATUS in s.attributes]
    assert root.attributes[sc.MAST_SPAN_TYPE] == sc.SPAN_TYPE_CONVERSATION and sc.MAST_SOURCE not in root.attributes
    # (mast-otel's own spans carry OpenInference kinds too: OpenInference's spans are those without mast.span.type)
    oi = [s for s in out.spans["mixed_ag2"]
          if "openinference.span.kind" in s.attributes and sc.MAST_SPAN_TYPE not in s.attributes]  # fmt: skip
    assert oi and not any(sc.FAILURE_MODE in s.attributes or sc.JUDGE_STATUS in s.attributes for s in oi)

    # mast-otel report reads the labelled foreign roots, from the exported spans and from the collector's store.
    for args in ([str(out.exported)], ["--store", str(out.store)]):
        cmd = [sys.executable, "-m", "mast_otel.cli", "report", *args, "--json", str(tmp_path / "r.json")]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["conversations"] == 3 and report["judged"] == 3, (args, done.stdout)
        assert report["by_mode"]["1.3"] == 3, report
        frameworks = [c["framework"] for c in report["failed_conversations"]]
        # The stored verdicts name the framework too: the adapters' as they saw it, a native one from its root.
        assert frameworks.count("ag2") == 3, report
        if args[0] != "--store":  # the store keeps verdicts, not span names
            evidence = [c["evidence"]["1.3"] for c in report["failed_conversations"]]
            assert all(names and all("coder" in n for n in names) for names in evidence), evidence


def test_passthrough_mode_adds_no_span_to_a_foreign_trace(tmp_path: Path) -> None:
    """``--mode passthrough``: OpenInference's spans leave as they came and nothing follows them (mast-otel never
    adds a span to a trace it did not write); the verdict is judged all the same and kept in the store, naming
    the adapter, where ``mast-otel report --store`` reads it."""
    out = through_collector(tmp_path, ["openinference_ag2"], {"1.3": r"^coder -> "}, mode="passthrough")
    spans = out.spans["openinference_ag2"]
    assert not any(s.span_type == sc.SPAN_TYPE_VERDICT for s in spans)
    assert not any(sc.JUDGE_STATUS in s.attributes for s in spans)  # the originals: untouched
    assert out.judge_calls == 1
    judged = samples(out.metrics, MetricNames.CONVERSATIONS_JUDGED)
    assert sum(judged.values()) == 1 and all(dict(k)["framework"] == "ag2" for k, v in judged.items() if v)
    report_path = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "mast_otel.cli", "report", "--store", str(out.store), "--json", str(report_path)]
    subprocess.run(cmd, capture_output=True, text=True, check=True)
    report = json.loads(report_path.read_text())
    assert report["judged"] == 1 and report["by_mode"]["1.3"] == 1, report
