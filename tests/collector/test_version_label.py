"""The ``version`` label (the conversation's ``service.version``) on ``mast_failure_mode_total``,
``mast_conversations_judged_total`` and ``mast_conversations_failed_total``: bounded per service/framework pair to the
versions seen most recently, each version's series at 0 from its first span (before its first verdict counts)."""

from __future__ import annotations

from pathlib import Path

from mast_otel import semconv as sc
from mast_otel.collector.metrics import CollectorMetrics
from mast_otel.judge.model import ModeLabel, Verdict
from mast_otel.judge.signals import Signal
from tests.collector.conftest import FakeJudge, flag_messages
from tests.collector.in_process import in_process
from tests.collector.test_history_collector import runs

FAILED = Verdict(status=sc.JUDGE_OK, source=sc.SOURCE_LLM, modes=(ModeLabel("2.3"),))


def versions(metrics: CollectorMetrics, service: str = "shop") -> set[str]:
    return {s.labels["version"] for m in metrics.registry.collect() for s in m.samples
            if s.name == "mast_failure_mode_total" and s.labels["service"] == service}  # fmt: skip


def value(metrics: CollectorMetrics, version: str, mode: str = "2.3") -> float | None:
    return metrics.registry.get_sample_value("mast_failure_mode_total", {
        "mode": mode, "category": "FC2", "service": "shop", "version": version, "framework": "ag2"})  # fmt: skip


def test_a_version_is_counted_under_its_own_label() -> None:
    metrics = CollectorMetrics()
    metrics.count_verdict(FAILED, "shop", "ag2", "1.4")
    metrics.count_verdict(Verdict(status=sc.JUDGE_OK, source=sc.SOURCE_LLM), "shop", "ag2", "1.3")
    assert value(metrics, "1.4") == 1 and value(metrics, "1.3") == 0
    judged = {"status": "ok", "service": "shop", "framework": "ag2"}
    for version in ("1.3", "1.4"):
        assert metrics.registry.get_sample_value("mast_conversations_judged_total", {**judged, "version": version}) == 1
    failed = {"service": "shop", "version": "1.4", "framework": "ag2"}
    assert metrics.registry.get_sample_value("mast_conversations_failed_total", failed) == 1


def test_past_the_bound_the_least_recently_seen_version_makes_room() -> None:
    metrics = CollectorMetrics(max_versions=2)
    metrics.count_verdict(FAILED, "shop", "ag2", "1.1")
    metrics.count_verdict(FAILED, "shop", "ag2", "1.2")
    metrics.count_verdict(FAILED, "shop", "ag2", "1.1")  # 1.1 seen again: 1.2 is now the least recent
    metrics.count_verdict(FAILED, "shop", "ag2", "1.3")
    assert versions(metrics) == {"1.1", "1.3"}
    assert value(metrics, "1.1") == 2 and value(metrics, "1.2") is None
    assert metrics.registry.get_sample_value("mast_collector_metric_versions_evicted_total") == 1
    # signals carry no version: counting them leaves the versions' order alone
    metrics.count_signals([Signal("1.5", "round_limit", "limit", ())], "shop", "ag2")
    metrics.count_verdict(FAILED, "shop", "ag2", "1.4")
    assert versions(metrics) == {"1.3", "1.4"}


def test_a_new_versions_series_exist_at_zero_before_its_first_verdict(tmp_path: Path) -> None:
    with in_process(tmp_path, judge=FakeJudge(on_judge=flag_messages("1.3"))) as c:
        c.send(runs(2, version="2.0"))
        labels = {"mode": "1.3", "category": "FC1", "service": "shop", "version": "2.0", "framework": "custom"}
        assert c.metric("mast_failure_mode_total", labels) == 0
        assert c.service.metrics.registry.get_sample_value("mast_failure_mode_total", labels) == 0  # it exists
        c.release()
        assert c.metric("mast_failure_mode_total", labels) == 2
        assert c.metric("mast_conversations_judged_total", {"status": "ok", "service": "shop", "version": "2.0",
                                                            "framework": "custom"}) == 2  # fmt: skip
