"""Through a real collector process: a LangGraph supervisor run (langgraph-supervisor, a ReAct researcher with a
tool) traced by OpenInference's ``openinference-instrumentation-langchain``, then by OpenLLMetry's
``opentelemetry-instrumentation-langchain``: each judged once through its adapter, labels on the graph's root
span, the transcript the graph's model-written messages, the handoffs its transfer tools. Runs in
``nox -s adapters_langgraph``; skipped elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adapters._require import framework

framework("adapters_langgraph", "langgraph_supervisor", "openinference.instrumentation.langchain",
          "opentelemetry.instrumentation.langchain", "grpc")  # fmt: skip

from tests.adapters._collector import check_once  # noqa: E402

pytestmark = pytest.mark.integration


def test_langgraph_supervisor_through_the_collector(tmp_path: Path) -> None:
    check_once(tmp_path, "openinference_langgraph", "langgraph", "researcher")


def test_langgraph_supervisor_traced_by_openllmetry_through_the_collector(tmp_path: Path) -> None:
    check_once(tmp_path, "openllmetry_langgraph", "langgraph", "researcher", source="openllmetry")
