"""Record the adapter tests' fixtures from real runs: ``python -m tests.adapters.record [NAME ...]``.

Each fixture (``tests/data/adapters/<name>.json``) holds what a real run exported, as OTLP JSON
(``"otlp"``), and the framework's own record of the conversation (``"oracle"``: ``[sender, content]`` pairs in
order). Nothing in them is written by hand; re-run this after changing a run in ``runs.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel.collector.report.otlp import request_to_otlp_json
from tests.adapters.runs import RUNS

DATA = Path(__file__).resolve().parents[1] / "data" / "adapters"


def record(name: str) -> dict[str, Any]:
    """Run ``name`` for real with an in-memory exporter; the fixture as a dict."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    oracle = RUNS[name](provider)
    provider.shutdown()
    return {"run": name, "oracle": oracle, "otlp": request_to_otlp_json(encode_spans(exporter.get_finished_spans()))}


def main(argv: list[str]) -> int:
    DATA.mkdir(parents=True, exist_ok=True)
    for name in argv or list(RUNS):
        path = DATA / f"{name}.json"
        path.write_text(json.dumps(record(name), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
