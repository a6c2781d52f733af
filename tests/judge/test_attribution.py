"""``mast-otel eval --attribution``: baselines and scoring against Who&When human labels.

The oracle is the run files themselves (their ``history`` and labels, read here with plain ``json``), never the
spans mast-otel made from them.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from mast_otel.evaluation.attribution import Prediction, baseline_predictions, evaluate, score
from mast_otel.replay import spans_for_record
from mast_otel.whowhen import load_whowhen, to_step_record
from tests.replay.test_whowhen import FULL, SAMPLE


def _raw(directory: Path) -> list[dict[str, object]]:
    files = sorted(directory.glob("*.json"), key=lambda p: int(p.stem))
    return [json.loads(p.read_text()) for p in files]


def test_first_and_last_speaker_baselines_read_the_history() -> None:
    for i, (run, raw) in enumerate(zip(load_whowhen(SAMPLE), _raw(SAMPLE), strict=True)):
        spans = spans_for_record(to_step_record(run, i))
        got = baseline_predictions(spans, random.Random(0))
        history = raw["history"]
        assert isinstance(history, list)
        assert got["first_speaker"] == Prediction(history[0]["name"], 0)
        assert got["last_speaker"] == Prediction(history[-1]["name"], len(history) - 1)
        random_pick = got["random_speaker"]
        assert random_pick.step is not None and history[random_pick.step]["name"] == random_pick.agent


def test_score_counts_agent_and_step_hits_and_missing_answers_as_wrong() -> None:
    runs = load_whowhen(SAMPLE)  # decisive: (agent, step) per file
    truth = [(r.mistake_agent, r.mistake_step) for r in runs]
    pairs = [
        (Prediction(truth[0][0], truth[0][1]), runs[0]),  # both right
        (Prediction(truth[1][0], truth[1][1] + 2), runs[1]),  # right agent, 2 steps off
        (Prediction(None, None), runs[2]),  # no answer
    ]
    s = score(pairs)
    assert s["runs"] == 3 and s["predicted"] == 2
    assert s["agent"] == round(2 / 3, 4)
    assert (s["step_exact"], s["step_within_1"], s["step_within_3"]) == (round(1 / 3, 4), round(1 / 3, 4),
                                                                        round(2 / 3, 4))  # fmt: skip


def test_first_speaker_accuracy_on_all_126_runs_matches_a_direct_count() -> None:
    if not FULL.is_dir():
        pytest.skip(f"Who&When runs not found at {FULL} (set MAST_OTEL_WHOWHEN_DATA)")
    raw = _raw(FULL)
    expected = sum(1 for r in raw if r["history"][0]["name"] == r["mistake_agent"]) / len(raw)  # type: ignore[index]
    report = evaluate(load_whowhen(FULL), None)
    assert report["runs"] == 126
    assert report["methods"]["first_speaker"]["agent"] == round(expected, 4)
    assert "judge" not in report["methods"]


def test_cli_writes_the_report_and_refuses_bad_input(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "mast_otel.cli", "eval", "--attribution", str(SAMPLE), "--out",
                           str(out)], capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "| first_speaker | 3 | 3 |" in done.stdout
    report = json.loads((out / "attribution.json").read_text())
    assert [row["run"] for row in report["rows"]] == ["1.json", "10.json", "59.json"]
    assert (out / "attribution.png").stat().st_size > 0
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "1.json").write_text("{}")
    refused = subprocess.run([sys.executable, "-m", "mast_otel.cli", "eval", "--attribution", str(bad)],
                             capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert refused.returncode == 2
    assert "1.json: not a Who&When run" in refused.stderr
