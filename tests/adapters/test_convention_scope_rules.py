"""The rule the Vercel AI SDK 7 capture (tests/data/captures/vercel_ai_v7: ``ai`` 7 traced by ``@ai-sdk/otel``'s
default integration) added, named by the kind of evidence it reads: **a scope named for a convention names no
framework**. The integration writes the GenAI conventions under the tracer ``gen_ai``; read as a framework's name
it said ``gen-ai``. Passed over, the framework is what the rest of the data says: here nothing (the resource names
only the OpenTelemetry SDK, ``gen_ai.provider.name`` the model's vendor), so ``unknown``.
"""

from __future__ import annotations

import json
from pathlib import Path

from mast_otel.adapters import Adapted, adapt, foreign_units
from mast_otel.adapters._evidence import framework_from_scopes, scope_framework
from mast_otel.spans import from_otlp_json

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"


def test_a_scope_named_for_the_genai_convention_names_no_framework() -> None:
    assert scope_framework("gen_ai") is None
    assert scope_framework("gen-ai") is None
    # (a framework's scope still names it; a convention's scope is skipped for the next span's)
    assert scope_framework("strands.telemetry.tracer") == "strands"
    assert scope_framework("opentelemetry.instrumentation.langchain") == "langchain"


def test_the_ai_sdk_7_capture_reads_with_no_framework_named() -> None:
    data = json.loads((CAPTURES / "vercel_ai_v7" / "desk.json").read_text(encoding="utf-8"))
    spans = from_otlp_json(json.dumps(data["otlp"]))
    assert {s.scope_name for s in spans} == {"gen_ai"}
    assert framework_from_scopes(spans) is None
    (unit,) = foreign_units(spans)
    adapted = adapt(unit)
    assert isinstance(adapted, Adapted)
    assert (adapted.source, adapted.framework) == ("genai", "unknown")
