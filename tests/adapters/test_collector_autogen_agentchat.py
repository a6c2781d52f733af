"""Through a real collector process: an autogen-agentchat round-robin team (writer, critic) traced by
``openinference-instrumentation-autogen-agentchat``, judged once through the OpenInference adapter, labels on
the team's ``run_stream`` span, the transcript the team's ``TaskResult.messages``, the handoffs its speaker order.
Runs in ``nox -s adapters_autogen_agentchat``; skipped elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adapters._require import framework

framework("adapters_autogen_agentchat", "autogen_agentchat", "openinference.instrumentation.autogen_agentchat", "grpc")

from tests.adapters._collector import check_once  # noqa: E402

pytestmark = pytest.mark.integration


def test_autogen_agentchat_team_through_the_collector(tmp_path: Path) -> None:
    check_once(tmp_path, "openinference_autogen_agentchat", "autogen-agentchat", "writer")
