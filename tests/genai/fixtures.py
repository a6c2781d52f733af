"""The recorded GenAI fixtures (``tests/data/genai/<framework>-<variant>.json``, written by
``python -m tests.genai.record``): the spans a framework exported, and its own record of the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mast_otel.spans import SpanRecord, from_otlp_json

DATA = Path(__file__).resolve().parents[1] / "data" / "genai"


def names() -> list[str]:
    """Every recorded fixture, ``<framework>-<variant>``."""
    return sorted(p.stem for p in DATA.glob("*.json"))


def fixture(name: str) -> tuple[list[SpanRecord], dict[str, Any]]:
    """(spans, record) of a recorded run. The record (``examples/_genai.py``'s ``Record``) has ``agents`` (who
    spoke, in order), ``messages`` ([sender, text]; a turn that only called tools is the tool names), ``handoffs``
    ([from, to]), ``tools`` ([agent, tool], handoff tools excluded) and ``final_output``; the fixture's
    ``settings`` say whether the spans hold message text (``content_captured``)."""
    data: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    record = {**data["record"], "settings": data["settings"]}
    return from_otlp_json(json.dumps(data["otlp"])), record
