"""Record the GenAI adapter's fixtures from real runs: ``python -m tests.genai.record FRAMEWORK [VARIANT ...]``,
run with the framework's environment's interpreter (``.nox/<session>/bin/python``).

Each fixture (``tests/data/genai/<framework>-<variant>.json``) holds what the run exported, as one OTLP JSON
document (``"otlp"``), the settings it ran with, and the framework's own record of the run (``"record"``: the
agents in the order they spoke, every message, handoffs, tool calls and the final output, from its result objects
and message lists). Nothing in them is written by hand; re-run this after changing an example.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mast_otel.collector.report.otlp import request_to_otlp_json
from tests.genai.runs import FRAMEWORKS, run_example
from tests.otlp_sink import otlp_sink

DATA = Path(__file__).resolve().parents[1] / "data" / "genai"


def record(name: str, variant: str, *, solo: bool = False) -> dict[str, Any]:
    """Run ``name``'s example under ``variant`` (``solo``: its one-agent control run) against a local OTLP
    receiver; the fixture as a dict. The capture recorder (``tests/captures/record_genai.py``) writes the same
    runs in the capture format."""
    with otlp_sink() as sink, tempfile.TemporaryDirectory() as tmp:
        run = run_example(name, variant, sink.grpc_endpoint, Path(tmp), solo=solo)
        requests = sink.requests()
    resource_spans = [rs for r in requests for rs in request_to_otlp_json(r)["resourceSpans"]]
    settings = FRAMEWORKS[name].variants[variant]
    return {
        "framework": name,
        "variant": variant,
        "settings": asdict(settings),
        "record": run,
        "otlp": {"resourceSpans": resource_spans},
    }


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
