"""Through a real collector process: an OpenAI Agents SDK run (two handoffs, two tools) traced by
``openinference-instrumentation-openai-agents``, judged once through the OpenInference adapter, labels on the
SDK's "Agent workflow" root, the transcript the SDK's own items, the handoffs its HandoffOutputItems.
Runs in ``nox -s adapters_openai_agents``; skipped elsewhere."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mast_otel import semconv as sc
from mast_otel.collector.metrics import MetricNames

_SESSION = "adapters_openai_agents"
if os.environ.get("MAST_OTEL_REQUIRE_FRAMEWORK") == _SESSION:  # a broken install must fail, not skip
    import agents  # noqa: F401
    import openinference.instrumentation.openai_agents  # noqa: F401
_SKIP = f"the OpenAI Agents SDK and its OpenInference instrumentor run in their own environment: nox -s {_SESSION}"
pytest.importorskip("agents", reason=_SKIP)
pytest.importorskip("openinference.instrumentation.openai_agents", reason=_SKIP)
pytest.importorskip("grpc", reason="the collector extra is not installed")

from tests.adapters._collector import check_foreign, samples, through_collector  # noqa: E402

pytestmark = pytest.mark.integration


def test_openai_agents_run_through_the_collector(tmp_path: Path) -> None:
    out = through_collector(tmp_path, ["openinference_openai_agents"], {"1.3": r"^refund_specialist -> "})
    judged = samples(out.metrics, MetricNames.CONVERSATIONS_JUDGED)
    assert sum(judged.values()) == 1, judged
    (labels,) = [dict(k) for k, v in judged.items() if v]
    assert labels["framework"] == "openai-agents" and labels["status"] == sc.JUDGE_OK
    assert out.judge_calls == 1
    check_foreign(out, "openinference_openai_agents", "openinference", "openai-agents", "refund_specialist", tmp_path)
