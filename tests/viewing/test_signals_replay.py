"""No model configured: a real collector fed replayed traces attaches structural signals and no MAST labels.

The synthetic MetaGPT records (tests/data) always run; the MAST traces of ../shared/mast-data run when present
(skipped otherwise, so a fresh clone passes). The oracle for what each trace should raise is the signal detectors
run on the same replayed spans in this process (``mast-otel replay`` and the in-memory replay share the recorder).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mast_otel import semconv as sc
from mast_otel.judge.signals import SIGNALS, compute_signals
from mast_otel.judge.view import build_view
from mast_otel.replay import spans_for_record
from mast_otel.steplist import load_steplist
from tests.collector.conftest import wait_until
from tests.otlp_sink import otlp_sink
from tests.viewing._support import MAD, collector_process, replay, require_path

pytestmark = pytest.mark.integration

SYNTHETIC = Path(__file__).resolve().parents[1] / "data" / "metagpt_round_limit.json"
LIMIT = 12


def series(text: str, metric: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if line.startswith(metric + "{"):
            labels, value = line.rsplit(" ", 1)
            out[labels] = float(value)
    return out


@pytest.mark.parametrize("source", ["synthetic", "ag2", "metagpt"])
def test_no_model_attaches_signals_and_no_labels(tmp_path: Path, source: str) -> None:
    path = SYNTHETIC if source == "synthetic" else require_path(MAD / f"{source}_output_mad.json", "../shared")
    records = load_steplist(path)[:LIMIT]
    want = {}  # conversation task -> the signal names the detectors give on the same replay
    for record in records:
        spans = spans_for_record(record)
        want[record.trace_key] = {s.name for s in compute_signals(build_view(spans))}
    with otlp_sink() as sink, collector_process(tmp_path, sink.grpc_endpoint) as collector:
        replay(path, collector.grpc, limit=len(records), service=f"replay-{source}")
        roots = lambda: [s for s in sink.spans() if s.attributes.get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_CONVERSATION]  # noqa: E731
        wait_until(lambda: len(roots()) >= len(records), timeout=60)
        metrics = collector.scrape()
    spans = sink.spans()
    got = {}
    for root in roots():
        assert root.attributes[sc.JUDGE_STATUS] == sc.JUDGE_SKIPPED
        assert "no model configured" in root.attributes[sc.JUDGE_STATUS_REASON]
        got[root.attributes.get(sc.REPLAY_TRACE_KEY, root.span_id)] = set(root.attributes.get(sc.SIGNALS, ()))
        for name in root.attributes.get(sc.SIGNALS, ()):
            assert root.attributes[sc.signal_attribute(name)] is True
            assert root.attributes[f"{sc.signal_attribute(name)}.mode"] == SIGNALS[name].mode_id
    assert sorted(got.values(), key=sorted) == sorted(want.values(), key=sorted)
    assert not any(sc.FAILURE_MODES in s.attributes or sc.FAILURE_MODE in s.attributes for s in spans)
    assert not any(k.startswith(sc.FM_PREFIX) for s in spans for k in s.attributes)
    # the spans a signal points at carry it too (repeated messages, the approval, ...)
    pointed = [s for s in spans if s.attributes.get(sc.MAST_SPAN_TYPE) != sc.SPAN_TYPE_CONVERSATION
               and any(k.startswith(sc.SIGNAL_PREFIX) for k in s.attributes)]  # fmt: skip
    if any(w - {"round_limit", "stopped_early"} for w in want.values()):
        assert pointed
    assert sum(series(metrics, "mast_failure_mode_total").values()) == 0
    counted = {re.search(r'signal="(\w+)"', k).group(1): v for k, v in series(metrics, "mast_signal_total").items()
               if f'service="replay-{source}"' in k}  # type: ignore[union-attr]  # fmt: skip
    for name in SIGNALS:
        assert counted.get(name, 0) == sum(name in w for w in want.values()), name
    assert sum(counted.values()) > 0
