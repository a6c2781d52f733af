"""``mast-otel eval --attribution``: who and when, scored against human labels (Who&When).

A MAST label says what kind of failure a run shows; the engineer next asks which agent caused it and at which
message. Who&When (Zhang et al., ICML 2025, arXiv 2505.00212) has humans' answers for failed AG2 CaptainAgent
runs (see :mod:`mast_otel.whowhen`). This module replays each run through the recorder (the spans a live run
yields), asks the configured judge for its decisive step (``Verdict.decisive``), and scores:

- agent-level accuracy: the judge's agent is the labelled ``mistake_agent``;
- step-level accuracy: its message index equals ``mistake_step`` exactly, within 1, within 3.

Baselines are computed in the same run, on the same runs, so every figure has its anchor beside it:
``first_speaker`` (the agent of message 0, step 0), ``last_speaker`` (the last message), ``random_speaker`` (a
speaker drawn uniformly, then one of its messages; seeded, so repeatable) and ``earliest_signal`` (the message
the earliest structural signal points at: a model-free fact, no judgement; no prediction when no signal fires).
The study's best method reached 53.5% agent-level and 14.2% step-level accuracy (its abstract); those are the
anchors a judge should be read against, not a bar this tool sets.
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
from mast_otel.whowhen import WhoWhenError, WhoWhenRun, load_whowhen, to_step_record

from .chart import write_chart

__all__ = ["BASELINES", "DEFAULT_DATA", "Prediction", "baseline_predictions", "evaluate", "markdown", "run", "score"]

DATA_ENV = "MAST_OTEL_WHOWHEN_DATA"
DEFAULT_DATA = "../shared/whowhen/algorithm-generated"
BASELINES = ("first_speaker", "last_speaker", "random_speaker", "earliest_signal")
METRICS = ("agent", "step_exact", "step_within_1", "step_within_3")
STUDY_BEST = {"agent": 0.535, "step_exact": 0.142}  # Who&When's best method, arXiv 2505.00212 abstract


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


def score(pairs: Sequence[tuple[Prediction, WhoWhenRun]]) -> dict[str, Any]:
    """Accuracy of one method over runs: agent-level, and step-level exact / within 1 / within 3."""
    n = len(pairs)

    def share(hit: Callable[[Prediction, WhoWhenRun], bool]) -> float | None:
        return round(sum(1 for p, r in pairs if hit(p, r)) / n, 4) if n else None

    def within(k: int) -> Callable[[Prediction, WhoWhenRun], bool]:
        return lambda p, r: p.step is not None and abs(p.step - r.mistake_step) <= k

    return {
        "runs": n,
        "predicted": sum(1 for p, _ in pairs if p.agent is not None),
        "agent": share(lambda p, r: p.agent == r.mistake_agent),
        "step_exact": share(within(0)),
        "step_within_1": share(within(1)),
        "step_within_3": share(within(3)),
    }


def evaluate(runs: Sequence[WhoWhenRun], judge: Judge | None, *, seed: int = 0) -> dict[str, Any]:
    """Replay each run, collect every method's prediction, and score them; one row per run as well."""
    rng = random.Random(seed)
    predictions: dict[str, list[tuple[Prediction, WhoWhenRun]]] = {name: [] for name in BASELINES}
    judged: list[tuple[Prediction, WhoWhenRun]] = []
    statuses: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
    for i, run in enumerate(runs):
        spans = spans_for_record(to_step_record(run, i))
        row: dict[str, Any] = {"run": run.source, "truth": {"agent": run.mistake_agent, "step": run.mistake_step}}
        for name, prediction in baseline_predictions(spans, rng).items():
            predictions[name].append((prediction, run))
            row[name] = {"agent": prediction.agent, "step": prediction.step}
        if judge is not None:
            verdict = judge.judge(spans)
            statuses[verdict.status] = statuses.get(verdict.status, 0) + 1
            prediction = judge_prediction(verdict)
            if verdict.status != sc.JUDGE_ERROR:
                judged.append((prediction, run))
            row["judge"] = {"agent": prediction.agent, "step": prediction.step, "status": verdict.status}
        rows.append(row)
    methods = {name: score(pairs) for name, pairs in predictions.items()}
    if judge is not None:
        methods = {"judge": {**score(judged), "errors": statuses.get(sc.JUDGE_ERROR, 0)}, **methods}
    return {"runs": len(runs), "seed": seed, "methods": methods, "judge_statuses": statuses, "rows": rows}


def markdown(report: Mapping[str, Any], judge_name: str | None) -> str:
    def f(x: Any) -> str:
        return "n/a" if x is None else f"{x:.1%}"

    lines = [
        f"# mast-otel eval --attribution ({judge_name or 'no judge configured: baselines only'})",
        "",
        f"Runs: {report['runs']} (Who&When human labels; random baseline seed {report['seed']}).",
        "",
        "| method | runs scored | gave an answer | agent | step exact | step ±1 | step ±3 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, m in report["methods"].items():
        lines.append(f"| {name} | {m['runs']} | {m['predicted']} | {f(m['agent'])} | {f(m['step_exact'])} | "
                     f"{f(m['step_within_1'])} | {f(m['step_within_3'])} |")  # fmt: skip
    lines += [
        "",
        f"Anchor: the Who&When study's best method reached {STUDY_BEST['agent']:.1%} agent-level and "
        f"{STUDY_BEST['step_exact']:.1%} step-level accuracy (arXiv 2505.00212). earliest_signal is a model-free "
        "fact (the first message a structural signal points at), not a judgement.",
    ]
    if "judge" in report["methods"]:
        lines.append(f"Judge verdicts by status: {report['judge_statuses']} (errors are counted, not scored).")
    return "\n".join(lines) + "\n"


def load_runs(paths: Sequence[str]) -> list[WhoWhenRun]:
    return [run for p in paths for run in load_whowhen(p)]


def run(files: Sequence[str], judge: Judge | None, judge_name: str | None, out: Path, limit: int | None) -> int:
    """The ``eval --attribution`` subcommand body: 0 on success, 2 on bad or missing input."""
    if not files:
        default = Path(DEFAULT_DATA)
        if not default.is_dir():
            print(f"mast-otel eval --attribution: no input (pass Who&When files or directories, or set {DATA_ENV})",
                  file=sys.stderr)  # fmt: skip
            return 2
        files = [str(default)]
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
    series = {name: [m[k] for k in METRICS] for name, m in report["methods"].items()}
    writer = write_chart(out / "attribution.png", METRICS, series, "who and when: accuracy against human labels")
    print(text)
    print(f"wrote {out / 'attribution.json'}, {out / 'attribution.md'}, {out / 'attribution.png'} (chart: {writer})",
          file=sys.stderr)  # fmt: skip
    return 0
