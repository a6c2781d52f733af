"""``mast-otel eval --attribution``: who and when, scored against human labels (Who&When).

A MAST label says what kind of failure a run shows; the engineer next asks which agent caused it and at which
message. Who&When (Zhang et al., ICML 2025, arXiv 2505.00212) has humans' answers for failed runs of two systems
(see :mod:`mast_otel.whowhen`): 126 algorithm-generated AG2 CaptainAgent runs and 58 hand-crafted Magentic-One
runs. This module replays each run through the recorder (the spans a live run yields), asks the configured judge
for its decisive step (``Verdict.decisive``), and scores each subset on its own and both together:

- agent-level accuracy: the judge's agent is the labelled ``mistake_agent`` (names compared ignoring case: two
  hand-crafted labels spell WebSurfer ``Websurfer``, an agent no run has);
- step-level accuracy: its message index equals ``mistake_step`` as integers, exactly, within 1, within 3.

The study's own scorer compares strings by substring (a predicted step "10" is right for a reference "1"); its
figure is computed as well for every method (``study_agent``, ``study_step``), marked, never as the headline.

Baselines are computed in the same run, on the same runs, so every figure has its anchor beside it:
``first_speaker`` (the agent of message 0, step 0), ``last_speaker`` (the last message), ``random_speaker`` (a
speaker drawn uniformly, then one of its messages; seeded, so repeatable) and ``earliest_signal`` (the message
the earliest structural signal points at: a model-free fact, no judgement; no prediction when no signal fires).
The published figures (:mod:`.attribution_published`) are printed beside them with their sources.

Every method is scored over every run of a subset: a run it gave no answer for, the judge's errors and skips
included, is a miss. The table's "runs scored" and the chart's legend (``name (n=...)``) say over how many.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mast_otel import semconv as sc
from mast_otel.judge.model import Judge, Verdict
from mast_otel.judge.signals import compute_signals
from mast_otel.judge.view import build_view
from mast_otel.replay import spans_for_record
from mast_otel.spans import SpanRecord
from mast_otel.whowhen import SUBSETS, WhoWhenError, WhoWhenRun, load_whowhen, to_step_record

from .attribution_published import published_table
from .chart import write_chart

__all__ = ["BASELINES", "DEFAULT_DATA", "Prediction", "baseline_predictions", "evaluate", "markdown", "run", "score"]

DATA_ENV = "MAST_OTEL_WHOWHEN_DATA"  # run files or directories, os.pathsep-separated
DEFAULT_DATA = ("../shared/whowhen/algorithm-generated", "../shared/whowhen/hand-crafted")  # those present
BASELINES = ("first_speaker", "last_speaker", "random_speaker", "earliest_signal")
METRICS = ("agent", "step_exact", "step_within_1", "step_within_3")
ALL = "all"


@dataclass(frozen=True, slots=True)
class Prediction:
    """A method's answer for one run; None where it gave none (counted wrong, never skipped)."""

    agent: str | None
    step: int | None


def _messages(spans: Sequence[SpanRecord]) -> list[SpanRecord]:
    msgs = [s for s in spans if s.get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_MESSAGE]
    return sorted(msgs, key=lambda s: _index(s))


def _index(span: SpanRecord) -> int:
    value = span.get(sc.MESSAGE_INDEX)
    return value if isinstance(value, int) else -1


def _sender(span: SpanRecord) -> str | None:
    value = span.get(sc.MESSAGE_SENDER)
    return value if isinstance(value, str) else None


def baseline_predictions(spans: Sequence[SpanRecord], rng: random.Random) -> dict[str, Prediction]:
    """Every baseline's answer for one conversation's spans."""
    messages = _messages(spans)
    if not messages:
        return dict.fromkeys(BASELINES, Prediction(None, None))
    first, last = messages[0], messages[-1]
    speakers = list(dict.fromkeys(s for s in map(_sender, messages) if s is not None))
    chosen = rng.choice(speakers)
    chosen_step = rng.choice([_index(m) for m in messages if _sender(m) == chosen])
    by_id = {m.span_id: m for m in messages}
    cited = [by_id[i] for signal in compute_signals(build_view(spans)) for i in signal.evidence_span_ids if i in by_id]
    earliest = min(cited, key=_index) if cited else None
    return {
        "first_speaker": Prediction(_sender(first), _index(first)),
        "last_speaker": Prediction(_sender(last), _index(last)),
        "random_speaker": Prediction(chosen, chosen_step),
        "earliest_signal": Prediction(_sender(earliest), _index(earliest)) if earliest else Prediction(None, None),
    }


def judge_prediction(verdict: Verdict) -> Prediction:
    decisive = verdict.decisive
    return Prediction(decisive.agent, decisive.message_index) if decisive else Prediction(None, None)


def agent_hit(predicted: str | None, labelled: str) -> bool:
    """Ours: the same name, ignoring case."""
    return predicted is not None and predicted.casefold() == labelled.casefold()


def study_agent_hit(predicted: str | None, labelled: str) -> bool:
    """The study scorer's: ``actual_agent in predicted_agent`` (substring, case-sensitive)."""
    return predicted is not None and labelled in predicted


def study_step_hit(predicted: int | None, labelled: int) -> bool:
    """The study scorer's: ``actual_step in predicted_step`` on strings, so "10" is right for "1"."""
    return predicted is not None and str(labelled) in str(predicted)


def score(pairs: Sequence[tuple[Prediction, WhoWhenRun]]) -> dict[str, Any]:
    """Accuracy of one method over runs: agent-level, step-level exact / within 1 / within 3 (integers), and the
    study scorer's agent and step figures (substring), marked ``study_``."""
    n = len(pairs)

    def share(hit: Callable[[Prediction, WhoWhenRun], bool]) -> float | None:
        return round(sum(1 for p, r in pairs if hit(p, r)) / n, 4) if n else None

    def within(k: int) -> Callable[[Prediction, WhoWhenRun], bool]:
        return lambda p, r: p.step is not None and abs(p.step - r.mistake_step) <= k

    return {
        "runs": n,
        "predicted": sum(1 for p, _ in pairs if p.agent is not None),
        "agent": share(lambda p, r: agent_hit(p.agent, r.mistake_agent)),
        "step_exact": share(within(0)),
        "step_within_1": share(within(1)),
        "step_within_3": share(within(3)),
        "study_agent": share(lambda p, r: study_agent_hit(p.agent, r.mistake_agent)),
        "study_step": share(lambda p, r: study_step_hit(p.step, r.mistake_step)),
    }


def evaluate(runs: Sequence[WhoWhenRun], judge: Judge | None, *, seed: int = 0) -> dict[str, Any]:
    """Replay each run, collect every method's prediction, and score them per subset and all together; one row
    per run as well. ``methods`` is the scores over every run (``subsets["all"]``)."""
    rng = random.Random(seed)
    predictions: dict[str, list[tuple[Prediction, WhoWhenRun]]] = {name: [] for name in BASELINES}
    judged: list[tuple[Prediction, WhoWhenRun]] = []
    statuses: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
    for i, run in enumerate(runs):
        spans = spans_for_record(to_step_record(run, i))
        row: dict[str, Any] = {"run": run.source, "subset": run.subset,
                               "truth": {"agent": run.mistake_agent, "step": run.mistake_step}}  # fmt: skip
        for name, prediction in baseline_predictions(spans, rng).items():
            predictions[name].append((prediction, run))
            row[name] = {"agent": prediction.agent, "step": prediction.step}
        if judge is not None:
            verdict = judge.judge(spans)
            statuses[verdict.status] = statuses.get(verdict.status, 0) + 1
            answered = verdict.status not in (sc.JUDGE_ERROR, sc.JUDGE_SKIPPED)
            prediction = judge_prediction(verdict) if answered else Prediction(None, None)
            judged.append((prediction, run))  # an error or a skip is a miss, in the denominator like any run
            row["judge"] = {"agent": prediction.agent, "step": prediction.step, "status": verdict.status}
        rows.append(row)
    present = [name for name in SUBSETS if any(r.subset == name for r in runs)]
    subsets: dict[str, Any] = {}
    for name in [*present, ALL]:
        methods = {m: score([(p, r) for p, r in pairs if _in(name, r.subset)]) for m, pairs in predictions.items()}
        if judge is not None:
            statuses_here = [row["judge"]["status"] for row in rows if _in(name, row["subset"])]
            methods = {"judge": {**score([(p, r) for p, r in judged if _in(name, r.subset)]),
                                 "errors": statuses_here.count(sc.JUDGE_ERROR),
                                 "skipped": statuses_here.count(sc.JUDGE_SKIPPED)},
                       **methods}  # fmt: skip
        subsets[name] = {"runs": sum(1 for r in runs if _in(name, r.subset)), "methods": methods}
    return {"runs": len(runs), "seed": seed, "subsets": subsets, "methods": subsets[ALL]["methods"],
            "judge_statuses": statuses, "rows": rows}  # fmt: skip


def _in(subset: str, run_subset: str) -> bool:
    return subset == ALL or run_subset == subset


def markdown(report: Mapping[str, Any], judge_name: str | None) -> str:
    def f(x: Any) -> str:
        return "n/a" if x is None else f"{x:.1%}"

    lines = [
        f"# mast-otel eval --attribution ({judge_name or 'no judge configured: baselines only'})",
        "",
        f"Runs: {report['runs']} (Who&When human labels; random baseline seed {report['seed']}). Steps are compared "
        "as integers; the last two columns are the study scorer's figures (substring: a predicted step 10 counts "
        "for a reference 1), for comparison with published figures only.",
    ]
    for subset, block in report["subsets"].items():
        lines += [
            "",
            f"## {'all runs' if subset == ALL else subset} ({block['runs']} runs)",
            "",
            "| method | runs scored | gave an answer | agent | step exact | step ±1 | step ±3 | "
            "agent (study scorer) | step (study scorer) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for name, m in block["methods"].items():
            lines.append(f"| {name} | {m['runs']} | {m['predicted']} | {f(m['agent'])} | {f(m['step_exact'])} | "
                         f"{f(m['step_within_1'])} | {f(m['step_within_3'])} | {f(m['study_agent'])} | "
                         f"{f(m['study_step'])} |")  # fmt: skip
    lines += [
        "",
        "## Published figures (not measured here)",
        "",
        *published_table(),
        "",
        "earliest_signal is a model-free fact (the first message a structural signal points at), not a judgement.",
    ]
    if "judge" in report["methods"]:
        lines.append(f"Judge verdicts by status: {report['judge_statuses']} (an error or a skip is scored as a miss).")
    return "\n".join(lines) + "\n"


def load_runs(paths: Sequence[str]) -> list[WhoWhenRun]:
    return [run for p in paths for run in load_whowhen(p)]


def run(files: Sequence[str], judge: Judge | None, judge_name: str | None, out: Path, limit: int | None) -> int:
    """The ``eval --attribution`` subcommand body: 0 on success, 2 on bad or missing input."""
    if not files:
        files = [d for d in DEFAULT_DATA if Path(d).is_dir()]
        if not files:
            print(f"mast-otel eval --attribution: no input (pass Who&When files or directories, or set {DATA_ENV})",
                  file=sys.stderr)  # fmt: skip
            return 2
    try:
        runs = load_runs(files)
    except WhoWhenError as exc:
        print(f"mast-otel eval --attribution: error: {exc}", file=sys.stderr)
        return 2
    report = evaluate(runs[:limit] if limit else runs, judge)
    out.mkdir(parents=True, exist_ok=True)
    text = markdown(report, judge_name)
    (out / "attribution.json").write_text(json.dumps({"judge": judge_name, "files": list(files), **report},
                                                     indent=1, ensure_ascii=False), encoding="utf-8")  # fmt: skip
    (out / "attribution.md").write_text(text, encoding="utf-8")
    series = {f"{name} (n={m['runs']})": [m[k] or 0.0 for k in METRICS] for name, m in report["methods"].items()}
    writer = write_chart(out / "attribution.png", METRICS, series, "who and when: accuracy against human labels")
    print(text)
    print(f"wrote {out / 'attribution.json'}, {out / 'attribution.md'}, {out / 'attribution.png'} (chart: {writer})",
          file=sys.stderr)  # fmt: skip
    return 0
