"""Through a real collector process: an OpenAI Agents SDK run (two handoffs, two tools) traced by
``openinference-instrumentation-openai-agents``, judged once through the OpenInference adapter, labels on the
SDK's "Agent workflow" root, the transcript the SDK's own items, the handoffs its HandoffOutputItems.
Runs in ``nox -s adapters_openai_agents``; skipped elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adapters._require import framework

framework("adapters_openai_agents", "agents", "openinference.instrumentation.openai_agents", "grpc")

from tests.adapters._collector import check_once  # noqa: E402

pytestmark = pytest.mark.integration


def test_openai_agents_run_through_the_collector(tmp_path: Path) -> None:
    check_once(tmp_path, "openinference_openai_agents", "openai-agents", "refund_specialist")
