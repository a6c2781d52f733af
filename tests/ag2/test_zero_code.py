"""`opentelemetry-instrument` on an unmodified AG2 script, and instrument() with no TracerProvider, over real OTLP."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord
from tests.otlp_sink import otlp_sink

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

# An AG2 program that knows nothing of mast-otel or OpenTelemetry.
APP = textwrap.dedent(
    """
    from tests.ag2.scenarios import round_robin_group

    user, manager, groupchat = round_robin_group(
        {"planner": ["Plan it."], "coder": ["Code it."], "critic": ["Approved. TERMINATE"]}, max_round=8
    )
    user.initiate_chat(manager, message="Build the thing.", silent=True)
    """
)


def shape(spans: list[SpanRecord]) -> list[tuple[Any, ...]]:
    """What must be identical between two runs of the same conversation (ids and times differ)."""
    out = []
    for s in spans:
        kind = s.get(sc.MAST_SPAN_TYPE)
        if kind == sc.SPAN_TYPE_MESSAGE:
            out.append((kind, s.get(sc.MESSAGE_INDEX), s.get(sc.MESSAGE_SENDER), s.get(sc.MESSAGE_CONTENT)))
        elif kind == sc.SPAN_TYPE_HANDOFF:
            out.append((kind, s.get(sc.HANDOFF_INDEX), s.name, s.get(sc.HANDOFF_REASON)))
        elif kind == sc.SPAN_TYPE_CONVERSATION:
            out.append((kind, s.name, s.get(sc.TERMINATION_REASON), s.get(sc.CONVERSATION_ROUNDS)))
        else:
            out.append((kind, s.name))
    return sorted(out, key=str)


def run_app(tmp_path: Path, env: dict[str, str], prefix: list[str], app: str = APP) -> None:
    script = tmp_path / "app.py"
    script.write_text(app)
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    subprocess.run([*prefix, str(script)], cwd=ROOT, env=full_env, check=True, timeout=180, capture_output=True)


def test_opentelemetry_instrument_yields_the_same_spans(tmp_path: Path, instrument: Any, span_exporter: Any) -> None:
    exec(compile(APP, "app", "exec"), {})  # the same conversation, instrumented in-process
    from mast_otel.spans import from_readable_span

    in_process = [from_readable_span(s) for s in span_exporter.get_finished_spans()]

    with otlp_sink() as sink:
        run_app(
            tmp_path,
            {
                "OTEL_TRACES_EXPORTER": "otlp",
                "OTEL_METRICS_EXPORTER": "none",
                "OTEL_LOGS_EXPORTER": "none",
                "OTEL_EXPORTER_OTLP_ENDPOINT": sink.grpc_endpoint,
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
                "OTEL_SERVICE_NAME": "zero-code-app",
                # openinference-instrumentation-ag2 is installed in the dev venv; keep its spans out
                "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "ag2",
            },
            [str(BIN / "opentelemetry-instrument"), sys.executable],
        )
        zero_code = sink.wait_for_spans(len(in_process))

    assert len(zero_code) == len(in_process)
    assert shape(zero_code) == shape(in_process)
    assert {s.service_name for s in zero_code} == {"zero-code-app"}


def test_instrument_without_a_provider_exports_otlp_from_env(tmp_path: Path) -> None:
    app = "import mast_otel\nmast_otel.instrument()\n" + APP
    with otlp_sink() as sink:
        run_app(
            tmp_path,
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": sink.http_endpoint.removesuffix("/v1/traces"),
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                "OTEL_SERVICE_NAME": "default-provider-app",
            },
            [sys.executable],
            app=app,
        )
        spans = sink.wait_for_spans(1)
    roots = [s for s in spans if s.is_conversation_root]
    assert len(roots) == 1 and roots[0].get(sc.TERMINATION_REASON) == sc.TERMINATION_MESSAGE
    assert {s.service_name for s in spans} == {"default-provider-app"}
    assert sink.requests("grpc") == [] and sink.requests("http"), "sent over OTLP/HTTP as the env asked"
