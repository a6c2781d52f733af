"""Through a real collector process: a LangGraph supervisor run (langgraph-supervisor, a ReAct researcher with a
tool) traced by ``openinference-instrumentation-langchain``, judged once through the OpenInference adapter,
labels on the ``LangGraph`` root, the transcript the graph's model-written messages, the handoffs its transfer
tools. Runs in ``nox -s adapters_langgraph``; skipped elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adapters._require import framework

framework("adapters_langgraph", "langgraph_supervisor", "openinference.instrumentation.langchain", "grpc")

from tests.adapters._collector import check_once  # noqa: E402

pytestmark = pytest.mark.integration


def test_langgraph_supervisor_through_the_collector(tmp_path: Path) -> None:
    check_once(tmp_path, "openinference_langgraph", "langgraph", "researcher")
