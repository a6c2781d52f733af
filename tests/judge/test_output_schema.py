"""The answer schema a model is constrained by and the parser that validates its answer agree: every answer the
schema admits is one the parser accepts with the same meaning, and what the schema refuses (a missing or an
unknown mode, a stray key, a non-boolean verdict, a reason or an evidence list over its bound) a constrained
decoder can never produce. Checked with a real JSON Schema validator (``jsonschema``)."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from mast_otel.judge.output import JudgeOutput, json_schema, parse_output, schema_hint
from mast_otel.taxonomy import MODE_IDS

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the dev extra and the mutation session")


def an_answer(present: tuple[str, ...] = ("1.3",)) -> dict[str, Any]:
    return {
        "summary": "The coder repeats itself.",
        "task_completed": False,
        "modes": {
            m: {"evidence": ["M2", "M4"] if m in present else [], "reason": "same code twice", "present": m in present}
            for m in MODE_IDS
        },
        "decisive": {"message": "M4", "agent": "coder", "reason": "the repeat ends the run"},
    }


def admits(schema: dict[str, Any], answer: Any) -> bool:
    return not list(jsonschema.Draft202012Validator(schema).iter_errors(answer))


def test_the_schema_is_a_valid_json_schema_with_no_references() -> None:
    jsonschema.Draft202012Validator.check_schema(json_schema(reason_max_chars=200, max_evidence=4))
    assert "$ref" not in json.dumps(json_schema())


@pytest.mark.parametrize("decisive", [True, False])
def test_an_answer_the_schema_admits_is_parsed_with_the_same_meaning(decisive: bool) -> None:
    answer = an_answer(("1.3", "2.6"))
    if not decisive:
        answer["decisive"] = None
    assert admits(json_schema(), answer)
    out = parse_output(json.dumps(answer))
    assert isinstance(out, JudgeOutput)
    assert out.present() == ["1.3", "2.6"] and out.modes["1.3"].refs() == ["M2", "M4"]
    assert out.task_completed is False and out.summary == answer["summary"]
    assert (out.decisive is not None) == decisive


def _without_mode(a: dict[str, Any]) -> None:
    del a["modes"]["2.1"]


def _unknown_mode(a: dict[str, Any]) -> None:
    a["modes"]["1.6"] = dict(a["modes"]["1.1"])


def _stray_top_key(a: dict[str, Any]) -> None:
    a["confidence"] = 0.9


def _stray_mode_key(a: dict[str, Any]) -> None:
    a["modes"]["1.1"]["severity"] = "high"


def _verdict_not_boolean(a: dict[str, Any]) -> None:
    a["modes"]["1.1"]["present"] = "yes"


def _no_reason(a: dict[str, Any]) -> None:
    del a["modes"]["1.1"]["reason"]


def _no_evidence(a: dict[str, Any]) -> None:
    del a["modes"]["1.1"]["evidence"]


def _evidence_not_strings(a: dict[str, Any]) -> None:
    a["modes"]["1.1"]["evidence"] = [3]


def _completed_not_boolean(a: dict[str, Any]) -> None:
    a["task_completed"] = "no"


def _no_summary(a: dict[str, Any]) -> None:
    del a["summary"]


def _no_decisive(a: dict[str, Any]) -> None:
    del a["decisive"]


def _decisive_without_agent(a: dict[str, Any]) -> None:
    del a["decisive"]["agent"]


def _decisive_stray_key(a: dict[str, Any]) -> None:
    a["decisive"]["confidence"] = 1


def _summary_not_string(a: dict[str, Any]) -> None:
    a["summary"] = 3


def _modes_not_object(a: dict[str, Any]) -> None:
    a["modes"] = []


def _decisive_message_not_string(a: dict[str, Any]) -> None:
    a["decisive"]["message"] = 4


def _decisive_agent_not_string(a: dict[str, Any]) -> None:
    a["decisive"]["agent"] = ["coder"]


def _decisive_not_object(a: dict[str, Any]) -> None:
    a["decisive"] = "M4"


def _evidence_not_array(a: dict[str, Any]) -> None:
    a["modes"]["1.1"]["evidence"] = "M1"


def _reason_not_string(a: dict[str, Any]) -> None:
    a["modes"]["1.1"]["reason"] = 3


def _mode_not_object(a: dict[str, Any]) -> None:
    a["modes"]["1.1"] = "absent"


@pytest.mark.parametrize(
    "spoil",
    [_without_mode, _unknown_mode, _stray_top_key, _stray_mode_key, _verdict_not_boolean, _no_reason, _no_evidence,
     _evidence_not_strings, _completed_not_boolean, _no_summary, _no_decisive, _decisive_without_agent,
     _decisive_stray_key, _summary_not_string, _modes_not_object, _decisive_message_not_string,
     _decisive_agent_not_string, _decisive_not_object, _evidence_not_array, _reason_not_string, _mode_not_object],
)  # fmt: skip
def test_the_schema_refuses_what_a_constrained_model_must_never_produce(spoil: Any) -> None:
    answer = an_answer()
    spoil(answer)
    assert not admits(json_schema(), answer)


def test_the_answer_must_be_an_object() -> None:
    assert not admits(json_schema(), [an_answer()])


def test_the_bounds_limit_reason_length_and_evidence_count_and_nothing_else() -> None:
    schema = json_schema(reason_max_chars=30, max_evidence=2)
    assert admits(schema, an_answer())  # reasons of at most 23 characters, two references
    long_reason = copy.deepcopy(an_answer())
    long_reason["modes"]["1.3"]["reason"] = "x" * 31
    assert not admits(schema, long_reason)
    long_decisive = copy.deepcopy(an_answer())
    long_decisive["decisive"]["reason"] = "y" * 31
    assert not admits(schema, long_decisive)
    many = copy.deepcopy(an_answer())
    many["modes"]["1.3"]["evidence"] = ["M1", "M2", "M3"]
    assert not admits(schema, many)
    assert admits(json_schema(), long_reason) and admits(json_schema(), many)  # unbounded by default


def test_the_prompts_schema_hint_names_every_mode_and_the_answer_keys() -> None:
    hint = schema_hint()
    assert all(f'"{m}": {{...}}' in hint for m in MODE_IDS)
    for key in json_schema()["required"]:
        assert f'"{key}"' in hint
    for key in json_schema()["properties"]["modes"]["properties"]["1.1"]["required"]:
        assert f'"{key}"' in hint


def test_the_prompts_schema_hint_filled_in_is_an_answer_the_schema_admits() -> None:
    hint = schema_hint()
    shape, _, rest = hint.partition("\nwhere every {...} is ")
    entry = rest.partition("; all 14 ids")[0].replace("true|false", "true")
    filled = shape.replace("{...}", entry).replace("true|false", "false").replace(" | null", "")
    assert admits(json_schema(), json.loads(filled))
    # its example references look like the transcript's (M3, H1: upper-case letter, number)
    assert all(re.fullmatch(r"[MH]\d+", ref) for ref in re.findall(r'"([A-Za-z]+\d+)"', hint))
