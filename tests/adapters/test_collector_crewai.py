"""Through a real collector process: a sequential CrewAI crew traced by ``openinference-instrumentation-crewai``,
judged once through the OpenInference adapter, labels on the crew's ``kickoff`` root, the transcript the crew's
task outputs, the handoff its task order. Runs in ``nox -s adapters_crewai``; skipped elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adapters._require import framework

framework("adapters_crewai", "crewai", "openinference.instrumentation.crewai", "grpc")

from tests.adapters._collector import check_once  # noqa: E402

pytestmark = pytest.mark.integration


def test_crewai_crew_through_the_collector(tmp_path: Path) -> None:
    check_once(tmp_path, "openinference_crewai", "crewai", "Writer")
