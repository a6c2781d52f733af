"""``mast-otel eval --attribution`` in-process: what a judge's answers score per subset (an error or a skip is a
miss), the report files and table a user reads, and where the command finds its input.

The oracle is the Who&When run files (their labels, read with plain ``json``) and figures worked by hand from
them; the judge is scripted here, answering per run by the run's question.
"""

from __future__ import annotations

import dataclasses
import json
import locale
import random
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from mast_otel import semconv as sc
from mast_otel.evaluation import attribution
from mast_otel.evaluation.attribution import (
    BASELINES,
    Prediction,
    baseline_predictions,
    evaluate,
    judge_prediction,
    markdown,
)
from mast_otel.evaluation.attribution_published import published_table
from mast_otel.judge.model import DecisiveStep, Verdict
from mast_otel.replay import spans_for_record
from mast_otel.spans import SpanRecord
from mast_otel.whowhen import WhoWhenRun, load_whowhen, to_step_record
from tests.replay.test_whowhen import SAMPLE
from tests.replay.test_whowhen_hand_crafted import HAND_CRAFTED


def _raws(directory: Path) -> list[dict[str, Any]]:
    """The run files as plain JSON, in the files' natural order (1, 10, 59)."""
    files = sorted(directory.glob("*.json"), key=lambda p: int(p.stem))
    return [json.loads(f.read_text(encoding="utf-8")) for f in files]


def _labels(directory: Path) -> list[tuple[str, int]]:
    """(mistake_agent, mistake_step) of each run file."""
    return [(str(raw["mistake_agent"]), int(raw["mistake_step"])) for raw in _raws(directory)]


class ScriptedJudge:
    """Answers each run (found by its question, the conversation's task) with the verdict given for it; a run it
    has no verdict for is skipped, as a judge does when a conversation has no content."""

    name = "scripted"

    def __init__(self, verdicts: Mapping[str, Verdict]) -> None:
        self.verdicts = verdicts

    def judge(self, spans: Sequence[SpanRecord], *, partial: bool = False) -> Verdict:
        (task,) = {s.get(sc.CONVERSATION_TASK) for s in spans if s.get(sc.CONVERSATION_TASK)}
        return self.verdicts.get(str(task), Verdict.skipped("no script for this run"))


def blame(agent: str, step: int) -> Verdict:
    return Verdict(status=sc.JUDGE_OK, source=sc.SOURCE_LLM, decisive=DecisiveStep("ab" * 8, step, agent, "r"))


def scripted(runs: Sequence[WhoWhenRun], *verdicts: Verdict) -> ScriptedJudge:
    return ScriptedJudge({run.question: v for run, v in zip(runs, verdicts, strict=False)})


# --- the judge's figures ----------------------------------------------------------------------------------------


def test_the_judge_is_scored_per_subset_with_errors_and_skips_as_misses() -> None:
    """Algorithm-generated: run 1 right (the agent's name in another case), run 2 an error, run 3 a longer name
    that holds the labelled one (wrong for us, right for the study's substring test), two steps late.
    Hand-crafted: every run skipped, no answer. An error or a skip is a miss, in the denominator as any run.
    Worked by hand from the labels."""
    algorithmic, handcrafted = load_whowhen(SAMPLE), load_whowhen(HAND_CRAFTED)
    (agent1, step1), _, (agent3, step3) = _labels(SAMPLE)
    judge = scripted(algorithmic, blame(agent1.lower(), step1), Verdict.error(sc.SOURCE_LLM, "timeout"),
                     blame(f"{agent3} (assistant)", step3 + 2))  # fmt: skip
    report = evaluate([*algorithmic, *handcrafted], judge)
    scores = {name: block["methods"]["judge"] for name, block in report["subsets"].items()}
    # 3 runs: agent right in run 1 only (1/3); step exact and within 1 run 1 only (1/3), within 3 runs 1 and 3
    # (2/3); study agent run 3 only ("excel_expert" does not hold "Excel_Expert"), study step run 1 only.
    assert scores["algorithm-generated"] == {
        "runs": 3, "predicted": 2, "agent": 0.3333, "step_exact": 0.3333, "step_within_1": 0.3333,
        "step_within_3": 0.6667, "study_agent": 0.3333, "study_step": 0.3333, "errors": 1, "skipped": 0,
    }  # fmt: skip
    assert scores["hand-crafted"] == {"runs": 6, "predicted": 0, "agent": 0.0, "step_exact": 0.0,
                                      "step_within_1": 0.0, "step_within_3": 0.0, "study_agent": 0.0,
                                      "study_step": 0.0, "errors": 0, "skipped": 6}  # fmt: skip
    # 9 runs: the same hits over 9 (1/9 = 0.1111, 2/9 = 0.2222).
    assert scores["all"] == {"runs": 9, "predicted": 2, "agent": 0.1111, "step_exact": 0.1111,
                             "step_within_1": 0.1111, "step_within_3": 0.2222, "study_agent": 0.1111,
                             "study_step": 0.1111, "errors": 1, "skipped": 6}  # fmt: skip
    assert report["judge_statuses"] == {sc.JUDGE_OK: 2, sc.JUDGE_ERROR: 1, sc.JUDGE_SKIPPED: 6}
    assert [row["judge"] for row in report["rows"][:3]] == [
        {"agent": agent1.lower(), "step": step1, "status": sc.JUDGE_OK},
        {"agent": None, "step": None, "status": sc.JUDGE_ERROR},
        {"agent": f"{agent3} (assistant)", "step": step3 + 2, "status": sc.JUDGE_OK},
    ]
    for block in report["subsets"].values():  # the judge first, then the baselines
        assert list(block["methods"]) == ["judge", *BASELINES]


def test_a_judge_right_once_that_errs_or_skips_the_rest_scores_against_a_hand_count() -> None:
    """The three algorithm-generated sample runs, every figure worked by hand from the files (history, labels):

    run        label (agent, step)          first speaker (agent, step)     last speaker (agent, step)
    1.json     Excel_Expert, 0              Excel_Expert, 0                 DataVerification_Expert, 5
    10.json    Validation_Expert, 5         Validation_Expert, 0            Validation_Expert, 9
    59.json    DataExtraction_Expert, 1     DataExtraction_Expert, 0        Computer_terminal, 9

    The judge answers run 1 rightly, errs on 10.json and skips 59.json: right once out of 3, never 1 of 1."""
    runs = load_whowhen(SAMPLE)
    judge = scripted(runs, blame("Excel_Expert", 0), Verdict.error(sc.SOURCE_LLM, "timeout"))  # 59.json: skipped
    report = evaluate(runs, judge)
    methods = report["methods"]
    # judge: 1 hit / 3 runs on every figure ("0" in "0" for the study's step); 1 error, 1 skip, 1 answer.
    third = 0.3333
    assert methods["judge"] == {"runs": 3, "predicted": 1, "agent": third, "step_exact": third,
                                "step_within_1": third, "step_within_3": third, "study_agent": third,
                                "study_step": third, "errors": 1, "skipped": 1}  # fmt: skip
    # first speaker: agent 3/3; steps off by 0, 5, 1: exact 1/3, within 1 2/3, within 3 2/3;
    # study step: "0" in "0", "5" not in "0", "1" not in "0": 1/3.
    assert methods["first_speaker"] == {"runs": 3, "predicted": 3, "agent": 1.0, "step_exact": third,
                                        "step_within_1": 0.6667, "step_within_3": 0.6667, "study_agent": 1.0,
                                        "study_step": third}  # fmt: skip
    # last speaker: agent right in 10.json only, 1/3; steps off by 5, 4, 8: 0 everywhere;
    # study step: "0" not in "5", "5" not in "9", "1" not in "9": 0.
    assert methods["last_speaker"] == {"runs": 3, "predicted": 3, "agent": third, "step_exact": 0.0,
                                       "step_within_1": 0.0, "step_within_3": 0.0, "study_agent": third,
                                       "study_step": 0.0}  # fmt: skip
    assert all(m["runs"] == 3 for m in methods.values())  # every method over the same runs
    lines = markdown(report, "scripted").splitlines()
    assert "| judge | 3 | 1 | 33.3% | 33.3% | 33.3% | 33.3% | 33.3% | 33.3% |" in lines
    assert "| first_speaker | 3 | 3 | 100.0% | 33.3% | 66.7% | 66.7% | 100.0% | 33.3% |" in lines
    assert "| last_speaker | 3 | 3 | 33.3% | 0.0% | 0.0% | 0.0% | 33.3% | 0.0% |" in lines


def test_an_error_verdict_that_names_a_step_is_still_a_miss() -> None:
    """An error (or a skip) is a miss even when the verdict carries a decisive step: what failed is not scored."""
    runs = load_whowhen(SAMPLE)
    (agent1, step1), *_ = _labels(SAMPLE)
    failed = dataclasses.replace(blame(agent1, step1), status=sc.JUDGE_ERROR)
    skipped = dataclasses.replace(blame(agent1, step1), status=sc.JUDGE_SKIPPED)
    for verdict in (failed, skipped):
        judge = scripted(runs[:1], verdict)
        scores = evaluate(runs[:1], judge)["methods"]["judge"]
        assert (scores["runs"], scores["predicted"], scores["agent"], scores["step_exact"]) == (1, 0, 0.0, 0.0)


def test_without_a_judge_only_the_baselines_are_scored() -> None:
    report = evaluate(load_whowhen(SAMPLE), None, seed=5)
    assert report["seed"] == 5 and report["runs"] == 3 and report["judge_statuses"] == {}
    assert list(report["subsets"]) == ["algorithm-generated", "all"]  # no empty hand-crafted section
    assert list(report["methods"]) == list(BASELINES)
    assert all("judge" not in row for row in report["rows"])
    assert [row["truth"] for row in report["rows"]] == [{"agent": a, "step": s} for a, s in _labels(SAMPLE)]
    histories = [[m["name"] for m in raw["history"]] for raw in _raws(SAMPLE)]
    assert [row["first_speaker"] for row in report["rows"]] == [{"agent": h[0], "step": 0} for h in histories]
    assert [row["last_speaker"] for row in report["rows"]] == [{"agent": h[-1], "step": len(h) - 1} for h in histories]


def test_the_random_baseline_repeats_with_its_seed_and_the_published_figures_use_seed_0() -> None:
    """docs/overview.md publishes the random speaker's figures "(seed 0)": the default seed, and a seed gives the
    same draws on every run of the command."""
    runs = load_whowhen(SAMPLE) + load_whowhen(HAND_CRAFTED)
    default = evaluate(runs, None)
    assert default["seed"] == 0 and default == evaluate(runs, None, seed=0)
    picks = [row["random_speaker"] for row in evaluate(runs, None, seed=9)["rows"]]
    assert picks == [row["random_speaker"] for row in evaluate(runs, None, seed=9)["rows"]]


def test_each_run_is_replayed_as_its_own_record_in_input_order() -> None:
    """The judge is given each run's spans with the run's position in the input on the root (a trace found in a
    backend leads back to its run file)."""
    runs = load_whowhen(SAMPLE) + load_whowhen(HAND_CRAFTED)
    seen: list[object] = []

    class Recording(ScriptedJudge):
        def judge(self, spans: Sequence[SpanRecord], *, partial: bool = False) -> Verdict:
            (root,) = [s for s in spans if s.parent_span_id is None]
            seen.append(root.get(sc.REPLAY_RECORD_INDEX))
            return super().judge(spans, partial=partial)

    evaluate(runs, Recording({}))
    assert seen == list(range(len(runs)))


def test_a_verdict_without_a_decisive_step_is_no_answer() -> None:
    assert judge_prediction(Verdict(status=sc.JUDGE_OK, source=sc.SOURCE_LLM)) == Prediction(None, None)
    assert judge_prediction(blame("coder", 4)) == Prediction("coder", 4)


# --- the baselines, whatever order the spans come in ----------------------------------------------------------------


def test_baselines_follow_the_message_order_not_the_span_order() -> None:
    """Spans are exported as they end, not in conversation order: the first and last speaker come from the
    messages' indexes."""
    for i, run in enumerate(load_whowhen(SAMPLE)):
        spans = spans_for_record(to_step_record(run, i))
        history = [m.sender for m in run.history]
        for ordering in (spans, spans[::-1]):
            got = baseline_predictions(ordering, random.Random(0))
            assert got["first_speaker"] == Prediction(history[0], 0)
            assert got["last_speaker"] == Prediction(history[-1], len(history) - 1)


def test_a_conversation_without_messages_gets_no_answer_from_any_baseline() -> None:
    (run,) = load_whowhen(SAMPLE / "1.json")
    no_messages = [s for s in spans_for_record(to_step_record(run)) if s.span_type != sc.SPAN_TYPE_MESSAGE]
    assert baseline_predictions(no_messages, random.Random(0)) == dict.fromkeys(BASELINES, Prediction(None, None))


def test_a_message_span_without_an_index_or_a_sender_string_is_read_as_such() -> None:
    """Spans from another instrumentation may lack ``mast.message.index`` or carry a sender that is no name: an
    unindexed message counts as before the first (index -1, never a labelled step), a non-string sender as no
    agent."""
    (run,) = load_whowhen(SAMPLE / "1.json")
    spans = spans_for_record(to_step_record(run))
    messages = sorted((s for s in spans if s.span_type == sc.SPAN_TYPE_MESSAGE), key=lambda s: s.get(sc.MESSAGE_INDEX))
    unindexed, nameless = messages[3], messages[-1]
    changed = {
        unindexed.span_id: {k: v for k, v in unindexed.attributes.items() if k != sc.MESSAGE_INDEX},
        nameless.span_id: {**nameless.attributes, sc.MESSAGE_SENDER: 42},
    }
    foreign = [dataclasses.replace(s, attributes=changed.get(s.span_id, s.attributes)) for s in spans]
    history = [m["name"] for m in _raws(SAMPLE)[0]["history"]]
    got = baseline_predictions(foreign, random.Random(0))
    assert got["first_speaker"] == Prediction(history[3], -1)
    assert got["last_speaker"] == Prediction(None, len(history) - 1)  # 42 is nobody


def test_the_random_baseline_draws_a_speaker_first_then_one_of_its_messages() -> None:
    """Uniform over speakers, not over messages: in 10.json the speakers have unequal message counts, and over
    many seeds each speaker is drawn about equally often; the same seed always draws the same."""
    (run,) = load_whowhen(SAMPLE / "10.json")
    spans = spans_for_record(to_step_record(run))
    senders = [m.sender for m in run.history]
    speakers = set(senders)
    counts = {s: senders.count(s) for s in speakers}
    assert len(set(counts.values())) > 1  # otherwise speaker-first and message-first look alike
    draws = [baseline_predictions(spans, random.Random(seed))["random_speaker"] for seed in range(300)]
    per_speaker = {s: sum(1 for d in draws if d.agent == s) for s in speakers}
    assert all(abs(n / 300 - 1 / len(speakers)) < 0.1 for n in per_speaker.values()), per_speaker
    for speaker in speakers:  # and every one of its messages can be drawn
        steps = {d.step for d in draws if d.agent == speaker}
        assert steps == {i for i, s in enumerate(senders) if s == speaker}
    assert baseline_predictions(spans, random.Random(3)) == baseline_predictions(spans, random.Random(3))


def test_the_random_draw_is_the_documented_one_so_published_figures_reproduce_in_any_process() -> None:
    """The module says "a speaker drawn uniformly, then one of its messages; seeded": with ``Random(seed)``,
    ``choice`` over the speakers in order of their first message, then over that speaker's message indexes. An
    order that depends on the process (a set of names: string hashes are salted per process) would change the
    published figures."""
    for i, (run, raw) in enumerate(zip(load_whowhen(SAMPLE), _raws(SAMPLE), strict=True)):
        senders = [m["name"] for m in raw["history"]]
        spans = spans_for_record(to_step_record(run, i))
        for seed in range(5):
            expected = random.Random(seed)
            speaker = expected.choice(list(dict.fromkeys(senders)))
            step = expected.choice([k for k, s in enumerate(senders) if s == speaker])
            assert baseline_predictions(spans, random.Random(seed))["random_speaker"] == Prediction(speaker, step)


# --- the table a user reads -----------------------------------------------------------------------------------------


def _method(runs: int, predicted: int, *shares: float | None) -> dict[str, Any]:
    keys = ("agent", "step_exact", "step_within_1", "step_within_3", "study_agent", "study_step")
    return {"runs": runs, "predicted": predicted, **dict(zip(keys, shares, strict=True))}


REPORT: dict[str, Any] = {
    "runs": 4,
    "seed": 7,
    "subsets": {
        "hand-crafted": {"runs": 4, "methods": {"judge": _method(3, 2, 2 / 3, None, 0.0, 1.0, 0.33333, 0.125),
                                                "first_speaker": _method(4, 4, 0.0, 0.25, 0.25, 0.5, 0.0, 0.25)}},
        "all": {"runs": 4, "methods": {"judge": _method(3, 2, 2 / 3, None, 0.0, 1.0, 0.33333, 0.125)}},
    },
    "judge_statuses": {"ok": 3, "error": 1},
}  # fmt: skip


def test_the_table_gives_each_method_per_subset_in_percent_and_n_a_where_nothing_was_scored() -> None:
    text = markdown({**REPORT, "methods": REPORT["subsets"]["all"]["methods"]}, "llm (gpt-x)")
    lines = text.splitlines()
    assert lines[:3] == [
        "# mast-otel eval --attribution (llm (gpt-x))",
        "",
        "Runs: 4 (Who&When human labels; random baseline seed 7). Steps are compared as integers; the last two "
        "columns are the study scorer's figures (substring: a predicted step 10 counts for a reference 1), for "
        "comparison with published figures only.",
    ]
    hand, every = lines.index("## hand-crafted (4 runs)"), lines.index("## all runs (4 runs)")
    assert hand < every
    header = ("| method | runs scored | gave an answer | agent | step exact | step ±1 | step ±3 | "
              "agent (study scorer) | step (study scorer) |")  # fmt: skip
    for heading in (hand, every):  # a blank line around each heading, then the table
        assert lines[heading - 1 : heading + 4] == ["", lines[heading], "", header, "|---" + "|---:" * 8 + "|"]
    assert lines[every + 5 :] == [
        "", "## Published figures (not measured here)", "", *published_table(), "",
        "earliest_signal is a model-free fact (the first message a structural signal points at), not a judgement.",
        "Judge verdicts by status: {'ok': 3, 'error': 1} (an error or a skip is scored as a miss).",
    ]  # fmt: skip
    judge_row = "| judge | 3 | 2 | 66.7% | n/a | 0.0% | 100.0% | 33.3% | 12.5% |"
    first_row = "| first_speaker | 4 | 4 | 0.0% | 25.0% | 25.0% | 50.0% | 0.0% | 25.0% |"
    assert lines[hand + 4 : hand + 6] == [judge_row, first_row]
    assert lines[every + 4] == judge_row
    assert text.endswith("\n")


def test_a_report_without_a_judge_says_so_and_gives_no_status_line() -> None:
    report = evaluate(load_whowhen(SAMPLE), None)
    text = markdown(report, None)
    assert text.splitlines()[0] == "# mast-otel eval --attribution (no judge configured: baselines only)"
    assert "Judge verdicts by status" not in text
    assert "earliest_signal is a model-free fact" in text


# --- the command: its files, its input, its exit code ---------------------------------------------------------------


Chart = tuple[Path, Sequence[str], dict[str, list[float]], str]


@pytest.fixture(autouse=True)
def charted(monkeypatch: pytest.MonkeyPatch) -> list[Chart]:
    """The chart's bars as the command hands them to the writer (the PNG itself is the subprocess tests')."""
    calls: list[Chart] = []

    def chart(path: Path, metrics: Sequence[str], series: dict[str, list[float]], title: str) -> str:
        calls.append((path, metrics, series, title))
        path.write_bytes(b"png")
        return "test"

    monkeypatch.setattr(attribution, "write_chart", chart)
    return calls


def test_the_command_writes_json_markdown_and_chart_and_prints_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], charted: list[Chart]
) -> None:
    runs = load_whowhen(SAMPLE)
    judge = scripted(runs, *[Verdict.error(sc.SOURCE_LLM, "down")] * 3)  # every run a miss: 0.0, a bar of 0
    out = tmp_path / "reports" / "attribution"  # made, parents and all
    assert attribution.run([str(SAMPLE)], judge, "scripted judgé", out, 2) == 0
    printed = capsys.readouterr()
    written = (out / "attribution.json").read_text(encoding="utf-8")
    assert written.splitlines()[:2] == ["{", ' "judge": "scripted judgé",']  # one space a level, names unescaped
    saved = json.loads(written)
    assert saved["judge"] == "scripted judgé" and saved["files"] == [str(SAMPLE)]
    assert saved["runs"] == 2 and [row["run"] for row in saved["rows"]] == ["1.json", "10.json"]  # the limit
    assert saved["methods"]["judge"]["errors"] == 2 and saved["methods"]["judge"]["agent"] == 0.0
    table = (out / "attribution.md").read_text(encoding="utf-8")
    assert printed.out == table + "\n"
    assert table.splitlines()[0] == "# mast-otel eval --attribution (scripted judgé)"
    assert "| judge | 2 | 0 | 0.0% | 0.0% | 0.0% | 0.0% | 0.0% | 0.0% |" in table
    for name in ("attribution.json", "attribution.md", "attribution.png"):
        assert str(out / name) in printed.err and (out / name).is_file()
    ((path, metrics, series, title),) = charted
    assert path == out / "attribution.png" and list(metrics) == list(attribution.METRICS)
    assert title == "who and when: accuracy against human labels"
    assert series["judge (n=2)"] == [0.0, 0.0, 0.0, 0.0]  # the legend says over how many runs
    first = saved["methods"]["first_speaker"]
    assert series["first_speaker (n=2)"] == [first[k] for k in attribution.METRICS]


@pytest.mark.parametrize("limit", [None, 0])
def test_without_a_limit_every_run_is_scored(
    limit: int | None, tmp_path: Path, capsys: pytest.CaptureFixture[str], charted: list[Chart]
) -> None:
    """No limit, or 0 (as ``mast-otel replay --limit 0`` replays every record): all nine runs; the chart shows
    the figures over all of them."""
    assert attribution.run([str(SAMPLE), str(HAND_CRAFTED)], None, None, tmp_path, limit) == 0
    saved = json.loads((tmp_path / "attribution.json").read_text(encoding="utf-8"))
    assert saved["runs"] == 9 and saved["judge"] is None
    every = saved["subsets"]["all"]["methods"]
    ((_, metrics, series, _),) = charted
    assert series == {f"{name} (n=9)": [every[name][k] for k in metrics] for name in BASELINES}
    assert "## all runs (9 runs)" in capsys.readouterr().out


@pytest.mark.skipif(sys.flags.utf8_mode == 1, reason="in UTF-8 mode the locale never decides a file's encoding")
def test_the_report_files_are_utf8_whatever_the_locale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Under the C locale (ASCII) the table's "±" and a judge's non-ASCII name are still written, as UTF-8."""
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        assert locale.getencoding().upper().replace("-", "") != "UTF8"
        assert attribution.run([str(SAMPLE)], None, "juge é", tmp_path, None) == 0
    finally:
        locale.setlocale(locale.LC_CTYPE, before)
    capsys.readouterr()
    assert "step ±1" in (tmp_path / "attribution.md").read_bytes().decode("utf-8")
    assert json.loads((tmp_path / "attribution.json").read_bytes().decode("utf-8"))["judge"] == "juge é"


def test_with_no_input_the_command_reads_the_shared_runs_that_are_present(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default input is ../shared/whowhen/{algorithm-generated,hand-crafted}, each only if present; with
    neither, exit 2 and say how to give input."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert attribution.run([], None, None, tmp_path / "none", None) == 2
    assert attribution.DATA_ENV in capsys.readouterr().err and not (tmp_path / "none").exists()
    algorithmic = tmp_path / "shared" / "whowhen" / "algorithm-generated"
    algorithmic.mkdir(parents=True)
    for f in SAMPLE.glob("*.json"):
        shutil.copy(f, algorithmic)
    assert attribution.run([], None, None, tmp_path / "one", None) == 0
    saved = json.loads((tmp_path / "one" / "attribution.json").read_text(encoding="utf-8"))
    assert saved["files"] == ["../shared/whowhen/algorithm-generated"] and saved["runs"] == 3
    shutil.copytree(HAND_CRAFTED, tmp_path / "shared" / "whowhen" / "hand-crafted")
    assert attribution.run([], None, None, tmp_path / "both", None) == 0
    saved = json.loads((tmp_path / "both" / "attribution.json").read_text(encoding="utf-8"))
    assert saved["files"] == list(attribution.DEFAULT_DATA) and saved["runs"] == 9


def test_a_file_that_is_not_a_who_and_when_run_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "7.json"
    bad.write_text('{"history": []}', encoding="utf-8")
    assert attribution.run([str(bad)], None, None, tmp_path / "out", None) == 2
    err = capsys.readouterr().err
    assert err.startswith("mast-otel eval --attribution: error: ") and "7.json" in err
    assert not (tmp_path / "out").exists()
