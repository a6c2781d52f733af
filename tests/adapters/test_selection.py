"""Adapter selection and cost: an adapter that recognises some spans but finds no root lets the next one try; the
collector's root-candidate test holds exactly the spans the adapters root conversations on; every adapter's work
grows linearly with the spans (counted in Python calls, not timed: benchmarks/bench_adapters.py has the times)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from mast_otel import semconv as sc
from mast_otel.adapters import _ADAPTERS as ADAPTERS
from mast_otel.adapters import Adapted, adapt, foreign_units, root_candidate
from mast_otel.spans import SpanRecord, from_otlp_json
from tests.adapters._fixtures import DATA, fixture, handoffs, messages

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_an_adapter_with_no_root_lets_the_next_one_try() -> None:
    """A LangGraph run traced by OpenLLMetry, plus one LLM span from OpenInference's OpenAI instrumentor: it was
    refused as "openinference: no agent or workflow span" and passed through unjudged."""
    spans, oracle = fixture("openllmetry_langgraph")
    workflow = next(s for s in spans if s.get("traceloop.span.kind") == "workflow")
    llm = SpanRecord(workflow.trace_id, "00000000000000ff", workflow.span_id, "ChatCompletion", workflow.start_ns + 1,
                     workflow.start_ns + 2, {sc.OI_SPAN_KIND: sc.OI_KIND_LLM, sc.OI_LLM_SYSTEM: "openai"})  # fmt: skip
    adapted = adapt([*spans, llm])
    assert isinstance(adapted, Adapted) and adapted.source == "openllmetry"
    assert messages(adapted.records) == oracle["messages"]
    assert handoffs(adapted.records) == oracle["handoffs"]


def _all_fixture_spans() -> list[SpanRecord]:
    import json

    spans = []
    for path in sorted(DATA.glob("*.json")):
        spans += fixture(path.stem)[0]
    for path in sorted((DATA.parent / "genai").glob("*.json")) + sorted((DATA.parent / "captures").glob("*/*.json")):
        spans += from_otlp_json(json.dumps(json.loads(path.read_text(encoding="utf-8"))["otlp"]))
    return spans


def test_root_candidates_are_the_adapters_roots() -> None:
    """Ingest holds a foreign span as a unit's root by ``root_candidate`` (attribute values only, on the receive
    path); the adapters root conversations by their ``is_root``. The two agree on every recorded span."""
    foreign = [s for s in _all_fixture_spans() if s.span_type is None]
    assert len(foreign) > 300
    for span in foreign:

        def get(key: str, span: SpanRecord = span) -> str | None:
            value = span.get(key)
            return value if isinstance(value, str) else None

        rooted = any(is_root(span) for _, _, is_root, _ in ADAPTERS)
        assert root_candidate(get, span.name, span.scope_name) == rooted, span


def _calls(fn: Callable[[], Any]) -> int:
    """Python function calls made while ``fn`` runs (C calls excluded: they are what a linear walk is made of)."""
    count = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event == "call":
            count += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count


def _bench() -> Any:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_adapters
    finally:
        sys.path.remove(str(BENCHMARKS))
    return bench_adapters


@pytest.mark.parametrize("workload", ["openllmetry", "genai", "openinference", "ag2"])
def test_adapting_is_linear_in_the_spans(workload: str) -> None:
    """Twice the spans, about twice the work: a quadratic step (OpenLLMetry's membership test in a list of chat
    spans, an ancestor walk per span) makes it four times."""
    bench = _bench()

    def trace(n: int) -> list[SpanRecord]:
        if workload == "openllmetry":
            return list(bench.openllmetry_trace(n))
        if workload == "genai":
            return list(bench.genai_trace(n))
        name = {"openinference": "openinference_autogen_agentchat", "ag2": "ag2_builtin"}[workload]
        return _repeated(fixture(name)[0], n // 20)

    small, large = trace(200), trace(400)
    assert isinstance(adapt(small), Adapted)
    ratio = _calls(lambda: adapt(large)) / _calls(lambda: adapt(small))
    assert 1.5 < ratio < 2.5, ratio


def _repeated(spans: list[SpanRecord], times: int) -> list[SpanRecord]:
    """A recorded conversation's root with its subtree repeated ``times`` times under it (new ids, later starts)."""
    (unit,) = foreign_units(spans)
    root, below = unit[0], unit[1:]
    span = max(s.end_ns for s in unit) - root.start_ns + 1
    out = [dataclasses.replace(root, end_ns=root.start_ns + span * (times + 1))]
    for k in range(times):

        def new(span_id: str | None, k: int = k) -> str | None:
            return None if span_id is None else span_id if span_id == root.span_id else f"{k:04x}{span_id[4:]}"

        shift = span * k
        out += [dataclasses.replace(s, span_id=str(new(s.span_id)), parent_span_id=new(s.parent_span_id),
                                    start_ns=s.start_ns + shift, end_ns=s.end_ns + shift) for s in below]  # fmt: skip
    return out


def test_the_adapters_spell_no_published_key_by_hand() -> None:
    """Every attribute key a package publishes (OpenInference's semantic conventions, the OpenTelemetry GenAI
    conventions) reaches the adapters through ``mast_otel.semconv``, which takes it from the package or is tested
    against it (tests/core/test_semconv.py): no adapter writes one as a string literal."""
    import ast

    from openinference.semconv import trace as oi
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes

    published: set[str] = set()
    for namespace in (oi.SpanAttributes, oi.MessageAttributes, oi.ToolCallAttributes, oi.ToolAttributes,
                      oi.MessageContentAttributes, gen_ai_attributes):  # fmt: skip
        published |= {v for k, v in vars(namespace).items() if k.isupper() and isinstance(v, str)}
    adapters = Path(__file__).resolve().parents[2] / "mast_otel" / "adapters"
    spelled = [
        (path.name, node.lineno, node.value)
        for path in sorted(adapters.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in published
    ]
    assert len(published) > 100 and spelled == []
