"""Record the GenAI adapter's fixtures from real runs: ``python -m tests.genai.record FRAMEWORK [VARIANT ...]``,
run with the framework's environment's interpreter (``.nox/<session>/bin/python``).

Each fixture (``tests/data/genai/<framework>-<variant>.json``) holds what the run exported, as one OTLP JSON
document (``"otlp"``), the settings it ran with, and the framework's own record of the run (``"record"``: the
agents in the order they spoke, every message, handoffs, tool calls and the final output, from its result objects
and message lists). Nothing in them is written by hand; re-run this after changing an example.
"""

from __future__ import annotations

import base64
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from mast_otel.collector.report.otlp import request_to_otlp_json
from tests.genai.runs import FRAMEWORKS, Variant, run_example
from tests.otlp_sink import otlp_sink

DATA = Path(__file__).resolve().parents[1] / "data" / "genai"


def record(name: str, variant: str, *, solo: bool = False, settings: Variant | None = None) -> dict[str, Any]:
    """Run ``name``'s example under ``variant`` (``solo``: its one-agent control run; ``settings``: tracing
    settings of no variant in runs.py) against a local OTLP receiver; the fixture as a dict, with ``"otlp_logs"``
    when the run exported log records. The capture recorder (``tests/captures/record_genai.py``) writes the same
    runs in the capture format."""
    settings = settings or FRAMEWORKS[name].variants[variant]
    with otlp_sink() as sink, tempfile.TemporaryDirectory() as tmp:
        run = run_example(name, variant, sink.grpc_endpoint, Path(tmp), solo=solo, settings=settings)
        requests = sink.requests()
        log_requests = sink.log_requests()
    resource_spans = [rs for r in requests for rs in request_to_otlp_json(r)["resourceSpans"]]
    found = {
        "framework": name,
        "variant": variant,
        "settings": asdict(settings),
        "record": run,
        "otlp": {"resourceSpans": resource_spans},
    }
    if log_requests:
        found["otlp_logs"] = {"resourceLogs": [rl for r in log_requests for rl in _logs_json(r)]}
    return found


def _logs_json(request: ExportLogsServiceRequest) -> list[dict[str, Any]]:
    """An ExportLogsServiceRequest's resource logs as OTLP JSON, ids in hex as the spec writes them."""
    data: dict[str, Any] = json_format.MessageToDict(request)
    for resource_logs in data.get("resourceLogs", []):
        for scope_logs in resource_logs.get("scopeLogs", []):
            for log in scope_logs.get("logRecords", []):
                for key in ("traceId", "spanId"):
                    if log.get(key):
                        log[key] = base64.b64decode(log[key]).hex()
    found: list[dict[str, Any]] = data.get("resourceLogs", [])
    return found


def main(argv: list[str]) -> int:
    name, *variants = argv
    DATA.mkdir(parents=True, exist_ok=True)
    for variant in variants or list(FRAMEWORKS[name].variants):
        path = DATA / f"{name}-{variant}.json"
        path.write_text(json.dumps(record(name, variant), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
