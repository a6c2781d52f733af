"""Through a real collector process: a smolagents manager delegating to a managed agent, traced by
``openinference-instrumentation-smolagents``, judged once through the OpenInference adapter, labels on the
manager's ``ToolCallingAgent.run`` root, the transcript both agents' memory steps in order, the handoffs the
delegation and its return. Runs in ``nox -s adapters_smolagents``; skipped elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adapters._require import framework

framework("adapters_smolagents", "smolagents", "openinference.instrumentation.smolagents", "grpc")

from tests.adapters._collector import check_once  # noqa: E402

pytestmark = pytest.mark.integration


def test_smolagents_delegation_through_the_collector(tmp_path: Path) -> None:
    check_once(tmp_path, "openinference_smolagents", "smolagents", "researcher")
