"""``opentelemetry-instrument`` on an unmodified autogen-agentchat program, over real OTLP, with OpenInference's
instrumentation installed next to ours and disabled the documented way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.autogen_agentchat.conftest import SKIP_REASON

pytest.importorskip("autogen_agentchat", reason=SKIP_REASON)

from mast_otel import semconv as sc
from tests.autogen_agentchat.scenarios import REPO
from tests.otlp_sink import otlp_sink

# A program that knows nothing of mast-otel or OpenTelemetry; it prints the team's own record.
APP = textwrap.dedent(
    """
    import asyncio, json
    from autogen_agentchat.messages import BaseChatMessage
    from examples.scripted_openai import ScriptedOpenAI
    from tests.autogen_agentchat import scenarios as s

    async def main():
        with ScriptedOpenAI(s.SCRIPT) as server:
            result = await s.swarm(server.base_url).run(task="I want a refund")
        chat = [[m.source, m.to_text()] for m in result.messages if isinstance(m, BaseChatMessage)]
        print(json.dumps({"chat": chat, "stop_reason": result.stop_reason}))

    asyncio.run(main())
    """
)


def test_opentelemetry_instrument_traces_an_unmodified_program(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text(APP)
    with otlp_sink() as sink:
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none",
            "OTEL_EXPORTER_OTLP_ENDPOINT": sink.grpc_endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_SERVICE_NAME": "zero-code-autogen",
            "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "autogen_agentchat",  # OpenInference's entry point
            "AUTOGEN_DISABLE_RUNTIME_TRACING": "true",
        }
        bin_dir = Path(sys.executable).parent
        done = subprocess.run([str(bin_dir / "opentelemetry-instrument"), sys.executable, str(script)], cwd=REPO,
                              env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        record = json.loads(done.stdout.strip().splitlines()[-1])
        spans = sink.wait_for_spans(len(record["chat"]) + 1)
        roots = [s for s in spans if s.is_conversation_root]
        while not roots:
            spans = sink.wait_for_spans(len(spans) + 1)
            roots = [s for s in spans if s.is_conversation_root]
    (root,) = roots
    messages = sorted((s for s in spans if s.span_type == sc.SPAN_TYPE_MESSAGE), key=lambda s: s.get(sc.MESSAGE_INDEX))
    assert [[m.get(sc.MESSAGE_SENDER), m.get(sc.MESSAGE_CONTENT)] for m in messages] == record["chat"]
    assert root.get(sc.TERMINATION_DETAIL) == record["stop_reason"]
    assert {s.service_name for s in spans} == {"zero-code-autogen"}
    foreign = [s for s in spans if s.get("openinference.span.kind") and s.span_type is None]  # ours carry kinds too
    assert not foreign, "OpenInference was disabled"
