"""The labelled MAD formats `mast-otel eval` reads: rebuilt full file, human-labelled file (codes remapped by
name, majority of annotators), and the warning on the 1,242-row release. Files are built here, never read from
../shared."""

from __future__ import annotations

import json
from pathlib import Path

from mast_otel.evaluation.mad_input import detect_format, human_labels, mode_for_name
from mast_otel.evaluation.steplist_input import label_format, load_conversations
from mast_otel.taxonomy import MODE_IDS
from tests.judge.test_output_and_cli import run

LOG = "[Coder] writing the game loop\nwhile True: step()\n\n[Reviewer] looks fine\n\n[Coder] done"


def full_record(i: int, benchmark: str, **labels: int) -> dict:
    return {"mas_name": "ChatDev", "llm_name": "gpt-4o", "benchmark_name": benchmark, "trace_id": 7,
            "trace": {"key": "programdev", "index": i, "trajectory": LOG},
            "mast_annotation": {m: labels.get(m.replace(".", "_"), 0) for m in MODE_IDS}}  # fmt: skip


def human_record(round_: str, annotations: list[tuple[str, bool, bool, bool]]) -> dict:
    return {"round": round_, "mas_name": "AG2", "benchmark_name": "GSM", "trace_id": 3,
            "trace": {"key": "gsm", "index": 3, "trajectory": "user: add 2 and 3\n\nassistant: 5"},
            "annotations": [{"failure mode": n, "annotator_1": a, "annotator_2": b, "annotator_3": c}
                            for n, a, b, c in annotations]}  # fmt: skip


def test_rebuilt_file_is_trusted_and_keyed_by_trace_key_and_index(tmp_path: Path):
    data = [full_record(0, "ProgramDev-v2", **{"1_3": 1}), full_record(1, "ProgramDev")]
    path = tmp_path / "MAD_full_dataset.json"
    path.write_text(json.dumps(data))
    fmt = label_format(path)
    assert fmt.name == "mad-full" and fmt.trusted
    convs = list(load_conversations(path))
    assert [c.trace_key for c in convs] == ["programdev_0", "programdev_1"]
    assert convs[0].reference["1.3"] and not any(convs[1].reference.values())
    assert convs[0].framework == "chatdev"
    texts = [s.attributes.get("mast.message.content") for s in convs[0].spans if s.span_type == "message"]
    assert len(texts) == 3 and texts[0].startswith("[Coder]")  # blank-line blocks, each citable


def test_the_old_release_is_flagged():
    old = [full_record(i, "ProgramDev") for i in range(3)]
    fmt = detect_format(old)
    assert fmt is not None and fmt.name == "mad-full-1242" and not fmt.trusted and "mean nothing" in fmt.note
    steplist = [{"steps": [], "metadata": {}}]
    assert detect_format(steplist).name == "steplist-mad-1242"  # type: ignore[union-attr]


def test_human_codes_are_remapped_by_name_across_taxonomy_versions():
    assert mode_for_name("2.2 Step Repetition") == "1.3"  # round 1 numbering
    assert mode_for_name("1.7 Disobey Role Specification") == "1.2"  # rounds 2-3 numbering
    assert mode_for_name("2.6 Action-Reasoning Mismatch") == "2.6"
    assert mode_for_name("3.3 Weak Verification") == "3.3"
    assert mode_for_name("3.2 No or Incorrect Verification") is None  # 3.2 in one release, 3.3 in another
    assert mode_for_name("4.1 Something Retired") is None
    labels, unmapped = human_labels([
        {"failure mode": "2.2 Step Repetition", "annotator_1": True, "annotator_2": True, "annotator_3": False},
        {"failure mode": "1.1 Disobey Task Specification", "annotator_1": True, "annotator_2": False,
         "annotator_3": False},
        {"failure mode": "4.1 Something Retired", "annotator_1": True, "annotator_2": True, "annotator_3": True},
    ])  # fmt: skip
    assert labels["1.3"] and not labels["1.1"] and unmapped == ["4.1 Something Retired"]


def test_eval_reads_the_human_file_without_a_warning(tmp_path: Path, capsys):
    data = [human_record("Round 1", [("2.2 Step Repetition", True, True, True)]),
            human_record("Generlazability", [("1.3 Step Repetition", False, False, True)])]  # fmt: skip
    path = tmp_path / "MAD_human_labelled_dataset.json"
    path.write_text(json.dumps(data))
    assert label_format(path).name == "mad-human"
    code, out = run(["eval", str(path), "--no-model", "--out", str(tmp_path / "o"), "--quiet"], capsys)
    assert code == 0 and "WARNING" not in out.err
    report = json.loads((tmp_path / "o" / "eval.json").read_text())
    assert [r["reference"] for r in report["traces"]] == [["1.3"], []]
