"""Parsing the step-list JSON: the real files' shapes and quirks, and errors that name the record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mast_otel.steplist import StepListError, StepRecord, load_steplist, parse_steplist


def _record(**meta: Any) -> dict[str, Any]:
    base = {"mas_name": "AG2", "mad_trace_key": "AG2_X", "trace_id": 3}
    base.update(meta)
    return {"steps": [{"agent": "a", "content": "task", "kind": "message"}], "metadata": base}


def test_real_files_parse_whole(ag2_all: list[StepRecord], metagpt_all: list[StepRecord]) -> None:
    assert len(ag2_all) == 597
    assert len(metagpt_all) == 230
    for record in ag2_all + metagpt_all:
        assert record.n_turns == len(record.steps)
        assert [s.index for s in record.steps] == list(range(len(record.steps)))
        assert set(record.mast_annotation) == {f"{c}.{m}" for c, n in ((1, 5), (2, 6), (3, 3)) for m in range(1, n + 1)}


def test_trace_ids_are_strings_and_keys_unique(ag2_all: list[StepRecord], metagpt_all: list[StepRecord]) -> None:
    # AG2 writes trace_id as an int, MetaGPT as a string; both come out as strings.
    assert ag2_all[0].trace_id == "0"
    assert metagpt_all[0].trace_id == "0"
    keys = [r.trace_key for r in ag2_all + metagpt_all]
    assert len(set(keys)) == len(keys)
    assert ag2_all[30].trace_key == "AG2_GSM_Plus_Claude_0"  # the judge baseline's key form


def test_record_fields(ag2_all: list[StepRecord], metagpt_all: list[StepRecord]) -> None:
    mmlu = ag2_all[226]
    assert (mmlu.mas_name, mmlu.framework, mmlu.llm_name, mmlu.benchmark_name) == ("AG2", "ag2", "GPT-4o", "MMLU")
    assert mmlu.reference_modes == ("2.2", "2.3")
    assert mmlu.steps[1].kind == "system" and mmlu.steps[1].agent == "chat_manager"
    assert mmlu.steps[-1].is_final_answer
    assert mmlu.extra["final_answer"]  # untyped metadata is kept
    metagpt = metagpt_all[0]
    assert metagpt.framework == "metagpt"
    # MetaGPT's metadata.task is a parser artefact; the task is what the human said first.
    assert metagpt.task == metagpt.steps[0].content
    assert metagpt.agents == ("Human", "SimpleCoder", "SimpleTester", "SimpleReviewer")


def test_optional_metadata_defaults() -> None:
    meta = {"mas_name": "X", "mad_trace_key": "k"}
    (record,) = parse_steplist([{"steps": [{"agent": "a", "content": None}], "metadata": meta}])
    assert record.trace_id == "0"  # the position
    assert record.n_turns == 1
    assert record.steps[0].content == "" and record.steps[0].kind == "message"
    assert record.mast_annotation == {} and record.llm_name is None


@pytest.mark.parametrize(
    ("second", "message"),
    [
        ("not a record", "record 1: must be an object"),
        ({"metadata": {}}, "record 1: 'steps' must be a list, got null"),
        ({"steps": [], "metadata": {}}, "record 1: 'steps' is empty"),
        (_record(mas_name=None), "record 1: metadata.mas_name must be a non-empty string"),
        (_record(trace_id=[1]), "record 1: metadata.trace_id must be an int or a string"),
        (_record(n_turns=-1), "record 1: metadata.n_turns must be a non-negative int"),
        (_record(mast_annotation={"1.3": 2}), "record 1: metadata.mast_annotation['1.3'] must be 0/1"),
        (_record(mast_annotation={"x": 1}), "record 1: metadata.mast_annotation key 'x' is not a mode id"),
        ({"steps": [{"agent": "a", "content": 3}], "metadata": {}}, "record 1: steps[0].content must be a string"),
        ({"steps": [{"content": "x"}], "metadata": {}}, "record 1: steps[0].agent must be a non-empty string"),
        ({"steps": ["x"], "metadata": {}}, "record 1: steps[0] must be an object"),
    ],
)
def test_malformed_record_is_named_by_index(second: Any, message: str) -> None:
    with pytest.raises(StepListError) as info:
        parse_steplist([_record(), second])
    assert message in str(info.value)


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("[{")
    with pytest.raises(StepListError, match=r"broken\.json: not valid JSON"):
        load_steplist(broken)
    not_a_list = tmp_path / "object.json"
    not_a_list.write_text(json.dumps({"steps": []}))
    with pytest.raises(StepListError, match=r"object\.json: a step-list file holds a JSON list"):
        load_steplist(not_a_list)
    bad_record = tmp_path / "bad.json"
    bad_record.write_text(json.dumps([_record(), _record(), {"steps": 1}]))
    with pytest.raises(StepListError, match=r"bad\.json: record 2: 'steps' must be a list"):
        load_steplist(bad_record)


def test_shipped_samples_are_unchanged_copies_of_the_full_records() -> None:
    """tests/data/mad holds records copied as they are; this pins each to its position in the full file."""
    import json

    from tests.mad_data import AG2_SAMPLE, AG2_SAMPLE_INDICES, METAGPT_SAMPLE, METAGPT_SAMPLE_INDICES, full_data_file

    for sample, indices, name in ((AG2_SAMPLE, AG2_SAMPLE_INDICES, "ag2_output_mad.json"),
                                  (METAGPT_SAMPLE, METAGPT_SAMPLE_INDICES, "metagpt_output_mad.json")):  # fmt: skip
        full = json.loads(full_data_file(name).read_text())
        assert json.loads(sample.read_text()) == [full[i] for i in indices]
