"""mast_otel.semconv against the published OpenTelemetry semantic conventions and against docs/spans.md."""

from __future__ import annotations

import re
from pathlib import Path

from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
from opentelemetry.semconv.attributes import error_attributes

from mast_otel import semconv as sc

ROOT = Path(__file__).resolve().parents[2]


def _constants(module: object) -> dict[str, str]:
    return {k: v for k, v in vars(module).items() if k.isupper() and isinstance(v, str)}


PUBLISHED = set(_constants(gen_ai_attributes).values()) | set(_constants(error_attributes).values())
OURS = _constants(sc)


def test_every_gen_ai_attribute_is_the_published_name() -> None:
    ours = {k: v for k, v in OURS.items() if v.startswith(("gen_ai.", "error.")) and v not in sc.PROPOSED_ATTRIBUTES}
    ours.pop("EVAL_EVENT_NAME")  # an event name, not an attribute
    assert ours, "nothing checked"
    unpublished = {k: v for k, v in ours.items() if v not in PUBLISHED}
    assert unpublished == {}, "not in opentelemetry-semantic-conventions: move to mast.* or to PROPOSED_ATTRIBUTES"
    published = _constants(gen_ai_attributes) | _constants(error_attributes)
    for name, value in ours.items():
        if name in published:
            assert published[name] == value, name


def test_operation_names_are_the_published_values() -> None:
    values = {v.value for v in gen_ai_attributes.GenAiOperationNameValues}
    assert {sc.OP_INVOKE_WORKFLOW, sc.OP_INVOKE_AGENT, sc.OP_EXECUTE_TOOL, sc.OP_CHAT, sc.OP_GENERATE_CONTENT,
            sc.OP_TEXT_COMPLETION} <= values


def test_proposal_stage_names_are_still_unpublished() -> None:
    """When the transfer attributes are published, they stop being proposal-stage: this test says so."""
    assert set(sc.PROPOSED_ATTRIBUTES).isdisjoint(PUBLISHED)
    assert all(not v.startswith("gen_ai.") or v in PUBLISHED or v in sc.PROPOSED_ATTRIBUTES or k == "EVAL_EVENT_NAME"
               for k, v in OURS.items())  # fmt: skip


def test_every_name_the_span_shapes_page_quotes_is_defined_here() -> None:
    section = (ROOT / "docs" / "spans.md").read_text()
    quoted = set(re.findall(r"`((?:gen_ai|mast)\.[a-z_.0-9]+)", section))
    assert len(quoted) > 10
    values = set(OURS.values())
    unknown = {n for n in quoted if n not in values and not any(v.startswith(n) for v in values)}
    assert unknown == set()
