"""The recorded fixtures (``tests/data/adapters``, written by ``python -m tests.adapters.record``) and the oracle
checks the fast tests and the real-collector tests share."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord, from_otlp_json

DATA = Path(__file__).resolve().parents[1] / "data" / "adapters"


def fixture(name: str) -> tuple[list[SpanRecord], dict[str, list[tuple[str, str]]]]:
    """(spans, oracle) of a recorded run; the oracle is the framework's own record (see runs.py)."""
    data: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    oracle = {key: [(a, b) for a, b in pairs] for key, pairs in data["oracle"].items()}
    return from_otlp_json(json.dumps(data["otlp"])), oracle


def messages(records: Sequence[SpanRecord]) -> list[tuple[str, str]]:
    """(sender, content) of the message spans, in message order."""
    found = sorted((r for r in records if r.span_type == sc.SPAN_TYPE_MESSAGE), key=lambda r: r.get(sc.MESSAGE_INDEX))
    return [(str(r.get(sc.MESSAGE_SENDER)), str(r.get(sc.MESSAGE_CONTENT))) for r in found]


def handoffs(records: Sequence[SpanRecord]) -> list[tuple[str, str]]:
    found = sorted((r for r in records if r.span_type == sc.SPAN_TYPE_HANDOFF), key=lambda r: r.get(sc.HANDOFF_INDEX))
    return [(str(r.get(sc.HANDOFF_FROM)), str(r.get(sc.HANDOFF_TO))) for r in found]


def recipients(records: Sequence[SpanRecord]) -> list[tuple[str, tuple[str, ...]]]:
    """(sender, recipients) of the message spans, in message order."""
    found = sorted((r for r in records if r.span_type == sc.SPAN_TYPE_MESSAGE), key=lambda r: r.get(sc.MESSAGE_INDEX))
    return [(str(r.get(sc.MESSAGE_SENDER)), tuple(map(str, r.get(sc.MESSAGE_RECIPIENTS) or ()))) for r in found]
