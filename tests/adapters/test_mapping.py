"""The user's own span mapping: a schema no built-in reader knows, read with no code (VoltAgent's, documented in
docs/adapters.md), every key of the file checked, and a translation that only adds what a span lacks."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hypothesis", reason="hypothesis is in the dev extra: this property runs in the main tier")
import yaml
from hypothesis import given
from hypothesis import strategies as st

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, MappingError, adapt, foreign_units, load_mappings, parse_mappings
from mast_otel.adapters.explain import explain
from mast_otel.judge.foreign import judge_spans
from mast_otel.judge.rules import NoModelJudge
from mast_otel.spans import SpanRecord
from tests.adapters.test_captures import _load, read_points
from tests.adapters.test_first_sight import FIRST_SIGHT

ROOT = Path(__file__).resolve().parents[2]
VOLTAGENT = ROOT / "examples" / "span_mappings" / "voltagent.yaml"


def test_the_documented_mapping_is_the_example_file() -> None:
    documented = (ROOT / "docs" / "adapters.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(# VoltAgent .*?)```", documented, re.DOTALL)
    assert block is not None, "docs/adapters.md shows examples/span_mappings/voltagent.yaml"
    assert block.group(1) == VOLTAGENT.read_text(encoding="utf-8")


@pytest.mark.parametrize("run", ["desk", "solo"])
def test_voltagent_read_through_its_mapping_reads_right_on_every_point(run: str) -> None:
    """VoltAgent's supervisor run, not read at all by any built-in reader (tests/data/first_sight/voltagent), reads
    right on every point checked against the framework's own record through the documented mapping; its solo
    control stays unjudged."""
    mappings = load_mappings(VOLTAGENT)
    points = read_points(FIRST_SIGHT / "voltagent" / f"{run}.json", mappings)
    assert points == dict.fromkeys(points, True)
    spans, _ = _load(FIRST_SIGHT / "voltagent" / "desk.json")
    if run == "desk":
        (unit,) = foreign_units(spans, mappings=mappings)
        adapted = adapt(unit, mappings)
        assert isinstance(adapted, Adapted) and adapted.source == "mapping:voltagent"
        assert adapted.records[0].get(sc.MAST_SOURCE) == "mapping:voltagent"
        assert foreign_units(spans) == [] and adapt(unit) is not None  # without it: nothing held


def test_explain_says_what_was_missing_and_what_the_mapping_found() -> None:
    spans, _ = _load(FIRST_SIGHT / "voltagent" / "desk.json")
    (unread,) = explain(spans)
    assert not unread.judged and "span mapping" in unread.missing[0] and unread.found["scopes"] == ["@voltagent/core"]
    (read,) = explain(spans, mappings=load_mappings(VOLTAGENT))
    assert read.judged and read.reader == "mapping:voltagent" and read.missing == ()
    assert read.found["agents"] == ["lead", "researcher", "writer"] and read.found["messages_with_text"] == 4


def test_explain_names_the_switch_of_a_run_without_content() -> None:
    spans, _ = _load(FIRST_SIGHT / "llama_index_otel_genai" / "desk-content-off.json")
    found = [e for e in explain(spans) if e.reader == "genai"]
    assert len(found) == 1 and not found[0].judged
    assert any("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in m for m in found[0].missing)


# --- the file ---------------------------------------------------------------------------------------------------

_GOOD: dict[str, Any] = {"name": "m", "agent": {"when": {"kind": "agent"}, "name": "agent"}}


@pytest.mark.parametrize(("mapping", "said"), [
    ({**_GOOD, "agnet": {}}, "unknown key(s) ['agnet']"),
    ({"name": "m"}, "an 'agent' kind is needed"),
    ({**_GOOD, "agent": {"name": "agent"}}, "mappings[0].agent.when"),
    ({**_GOOD, "agent": {"when": {}, "name": "a"}}, "at least one"),
    ({**_GOOD, "agent": {"when": {"k": "v"}, "name": 3}}, "mappings[0].agent.name"),
    ({**_GOOD, "tool": {"when": {"k": "v"}, "target": "t"}}, "mappings[0].tool: unknown key(s) ['target']"),
    ({**_GOOD, "scope": 7}, "mappings[0].scope"),
    ({"agent": _GOOD["agent"]}, "'name'"),
])  # fmt: skip
def test_a_mapping_file_that_cannot_be_used_is_refused_saying_where(mapping: dict[str, Any], said: str) -> None:
    with pytest.raises(MappingError) as caught:
        parse_mappings({"mappings": [mapping]}, "f.yaml")
    assert said in str(caught.value) and str(caught.value).startswith("f.yaml")


def test_two_mappings_of_one_name_and_a_file_of_another_shape_are_refused(tmp_path: Path) -> None:
    with pytest.raises(MappingError, match="share a name"):
        parse_mappings({"mappings": [_GOOD, _GOOD]})
    with pytest.raises(MappingError, match="'mappings:' list"):
        parse_mappings([_GOOD])
    bad = tmp_path / "bad.yaml"
    bad.write_text("mappings: [", encoding="utf-8")
    with pytest.raises(MappingError, match="cannot read it"):
        load_mappings(bad)


# --- the translation ---------------------------------------------------------------------------------------------

# any key, the GenAI ones a translation writes among them (a span may carry some already)
_GENAI_KEYS = [sc.GEN_AI_OPERATION_NAME, sc.GEN_AI_AGENT_NAME, sc.GEN_AI_TOOL_NAME, sc.GEN_AI_INPUT_MESSAGES,
               sc.GEN_AI_OUTPUT_MESSAGES, sc.GEN_AI_TOOL_CALL_ARGUMENTS]  # fmt: skip
_KEY = st.one_of(st.from_regex(r"[a-z]{1,6}(\.[a-z]{1,6}){0,2}", fullmatch=True), st.sampled_from(_GENAI_KEYS))
_VALUE = st.one_of(st.text(max_size=20), st.integers())


@given(st.dictionaries(_KEY, _VALUE, max_size=6), st.sampled_from(["agent", "tool", "transfer", "model"]))
def test_a_translation_only_adds_what_a_span_lacks_and_reads_only_its_scope(attributes: dict[str, Any],
                                                                            kind: str) -> None:  # fmt: skip
    fields = {"agent": {"name": "n"}, "model": {"name": "n"}, "tool": {"name": "n"}, "transfer": {"target": "n"}}
    (mapping,) = parse_mappings({"mappings": [{"name": "m", "scope": "mine", "agent": {"when": {"k": "*"}},
                                               kind: {"when": {"k": "*"}, **fields[kind]}}]})  # fmt: skip
    span = SpanRecord("t", "s", None, "x", 0, 1, {**attributes, "k": "v", "n": "who"}, scope_name="mine")
    translated = mapping.translate(span)
    assert {k: translated.attributes[k] for k in span.attributes} == span.attributes  # nothing overwritten
    assert sc.GEN_AI_OPERATION_NAME in translated.attributes
    other = SpanRecord("t", "s", None, "x", 0, 1, dict(span.attributes), scope_name="theirs")
    assert mapping.translate(other) == other and not mapping.recognises(other)


def test_a_transfer_is_written_as_the_transfer_tool_every_reader_knows() -> None:
    (mapping,) = parse_mappings(yaml.safe_load("""
mappings:
  - name: m
    transfer: {when: {op: handoff}, target: to, reason: why}
    agent: {when: {op: agent}, name: who, output: said}
"""))
    span = SpanRecord("t", "s", None, "x", 0, 1, {"op": "handoff", "to": "b", "why": "billing"})
    arguments = json.loads(mapping.translate(span).attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS])
    assert mapping.translate(span).attributes[sc.GEN_AI_TOOL_NAME] == "transfer_to_agent"
    assert arguments == {"agent_name": "b", "reason": "billing"}


# --- where the user asks ----------------------------------------------------------------------------------------


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mast_otel.cli", *argv], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, check=False)  # fmt: skip


def test_the_cli_explains_and_judges_a_trace_through_the_mapping(tmp_path: Path) -> None:
    otlp = tmp_path / "voltagent.otlp.json"
    otlp.write_text(json.dumps(json.loads((FIRST_SIGHT / "voltagent" / "desk.json").read_text())["otlp"]))
    unread = _cli("explain", str(otlp))
    assert unread.returncode == 0 and [json.loads(line)["judged"] for line in unread.stdout.splitlines()] == [False]
    read = _cli("explain", str(otlp), "--span-mapping", str(VOLTAGENT))
    (row,) = [json.loads(line) for line in read.stdout.splitlines()]
    assert row["judged"] and row["reader"] == "mapping:voltagent" and row["found"]["messages"] == 7
    judged = _cli("judge", str(otlp), "--dry-run", "--span-mapping", str(VOLTAGENT))
    (conversation,) = [json.loads(line) for line in judged.stdout.splitlines()]
    assert conversation["source"] == "mapping:voltagent" and conversation["framework"] == "voltagent"
    bad = tmp_path / "bad.yaml"
    bad.write_text("mappings: {}", encoding="utf-8")
    refused = _cli("explain", str(otlp), "--span-mapping", str(bad))
    assert refused.returncode == 2 and "'mappings:' list" in refused.stderr and refused.stdout == ""


def test_the_collector_logs_why_at_debug_level(caplog: pytest.LogCaptureFixture) -> None:
    spans, _ = _load(FIRST_SIGHT / "llama_index_otel_genai" / "desk-content-off.json")
    (unit,) = [u for u in foreign_units(spans) if isinstance(adapt(u), Adapted)]
    with caplog.at_level(logging.DEBUG, logger="mast_otel.judge.foreign"):
        judge_spans(NoModelJudge(), unit)
    (line,) = [r.getMessage() for r in caplog.records if r.name == "mast_otel.judge.foreign"]
    assert line.startswith(f"trace {unit[0].trace_id}: read by genai as llama-index: 3 agents")
    assert "not judged" in line and "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in line


_EVERY_KIND = """
mappings:
  - name: every-kind
    scope: s
    framework: Acme_Agents
    transfer: {when: {op: handoff}, target: [to, target], reason: why}
    tool: {when: {op: tool}, name: [tool, label], arguments: args, result: [out], call_id: id}
    model: {when: {op: llm}, name: who, input: prompt, output: answer}
    agent: {when: {op: agent, kind: "*"}, name: [sub, who], input: [given], output: said}
"""


def _translated(attributes: dict[str, Any], name: str = "x") -> dict[str, Any]:
    (mapping,) = parse_mappings(yaml.safe_load(_EVERY_KIND))
    return dict(mapping.translate(SpanRecord("t", "s1", None, name, 0, 1, attributes, scope_name="s")).attributes)


def test_each_kind_translates_each_of_its_fields() -> None:
    agent = _translated({"op": "agent", "kind": "sub", "sub": "helper", "who": "lead", "given": "Do it.",
                         "said": '[{"role": "assistant", "content": "Done."}]'})  # fmt: skip
    assert agent[sc.GEN_AI_OPERATION_NAME] == sc.OP_INVOKE_AGENT and agent[sc.GEN_AI_AGENT_NAME] == "helper"
    assert json.loads(agent[sc.GEN_AI_INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Do it."}]}]  # fmt: skip
    assert json.loads(agent[sc.GEN_AI_OUTPUT_MESSAGES]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Done."}]}]  # fmt: skip
    assert _translated({"op": "agent", "who": "lead"}).get(sc.GEN_AI_OPERATION_NAME) is None  # kind: "*" unmet
    model = _translated({"op": "llm", "who": "lead", "answer": "Hi."})
    assert (model[sc.GEN_AI_OPERATION_NAME], model[sc.GEN_AI_AGENT_NAME]) == (sc.OP_CHAT, "lead")
    assert sc.GEN_AI_INPUT_MESSAGES not in model
    assert json.loads(model[sc.GEN_AI_OUTPUT_MESSAGES]) == [{"role": "assistant", "parts": [
        {"type": "text", "content": "Hi."}]}]  # fmt: skip
    tool = _translated({"op": "tool", "label": "lookup", "args": {"order": "A17"}, "out": "42", "id": 7})
    assert {k: v for k, v in tool.items() if k.startswith("gen_ai.")} == {
        sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME: "lookup",
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"order": "A17"}', sc.GEN_AI_TOOL_CALL_RESULT: "42",
        sc.GEN_AI_TOOL_CALL_ID: "7"}  # fmt: skip
    unnamed = _translated({"op": "tool"}, name="tool:lookup")
    assert unnamed[sc.GEN_AI_TOOL_NAME] == "tool:lookup" and sc.GEN_AI_TOOL_CALL_RESULT not in unnamed
    transfer = _translated({"op": "handoff", "target": "billing"})
    assert json.loads(transfer[sc.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"agent_name": "billing"}  # no reason: none
    assert _translated({"op": "other"}) == {"op": "other"}


def test_the_mapping_names_the_framework_and_the_source_on_the_conversation() -> None:
    (mapping,) = parse_mappings(yaml.safe_load(_EVERY_KIND))
    spans = [SpanRecord("t", "r", None, "lead", 0, 100, {"op": "agent", "kind": "k", "who": "lead",
                                                          "said": "Done."}, scope_name="s"),
             SpanRecord("t", "a", "r", "helper", 10, 50, {"op": "agent", "kind": "k", "who": "helper",
                                                          "said": "Found."}, scope_name="s")]  # fmt: skip
    adapted = adapt(spans, [mapping])
    assert isinstance(adapted, Adapted)
    assert (adapted.source, adapted.framework) == ("mapping:every-kind", "Acme_Agents")
    root = adapted.records[0]
    assert (root.get(sc.MAST_SOURCE), root.get(sc.MAST_FRAMEWORK)) == ("mapping:every-kind", "acme-agents")
    assert mapping.root_keys == ("op", "kind")
    alone = adapt(spans[:1], [mapping])
    assert alone is not None and not isinstance(alone, Adapted) and alone.source == "mapping:every-kind"


def test_a_mapping_file_with_another_shape_is_refused_in_every_place(tmp_path: Path) -> None:
    cases: list[tuple[Any, str]] = [
        ({"mappings": [7]}, "mappings[0]: expected a mapping of keys"),
        ({"mappings": [{"name": " ", "agent": {"when": {"k": "v"}}}]}, "'name' must name the mapping"),
        ({"mappings": [{**_GOOD, "framework": 1}]}, "mappings[0].framework: expected text"),
        ({"mappings": [{**_GOOD, "agent": [1]}]}, "mappings[0].agent: expected a mapping of keys"),
        ({"mappings": [{**_GOOD, "agent": {"when": {"": "v"}}}]}, "mappings[0].agent.when"),
        ({"mappings": [{**_GOOD, "agent": {"when": {"k": "v"}, "name": []}}]}, "mappings[0].agent.name"),
        ({"mappings": [{**_GOOD, "agent": {"when": {"k": "v"}, "name": ["a", " "]}}]}, "mappings[0].agent.name"),
        ({"mappings": [], "more": 1}, "'mappings:' list and nothing else"),
        ({"mappings": {}}, "'mappings:' list"),
    ]
    for data, said in cases:
        with pytest.raises(MappingError) as caught:
            parse_mappings(data, "here.yaml")
        assert str(caught.value).startswith("here.yaml") and said in str(caught.value), data
    (named,) = parse_mappings({"mappings": [{**_GOOD, "name": " m ", "agent": {"when": {"k": 1},
                                                                              "name": [" a "]}}]})  # fmt: skip
    assert named.name == "m" and dict(named.kinds)["agent"].when == {"k": "1"}
    assert dict(named.kinds)["agent"].fields == {"name": ("a",)}
    missing = tmp_path / "none.yaml"
    with pytest.raises(MappingError, match=f"span mapping {missing}: cannot read it"):
        load_mappings(missing)
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump({"mappings": [_GOOD]}), encoding="utf-8")
    assert [m.name for m in load_mappings(good)] == ["m"]
