"""``mast-otel eval``: run a judge over labelled traces and measure its agreement with the reference labels.

Reference labels are each step-list record's ``mast_annotation`` (in MAD, the released o1 labels: a noisy
reference, not ground truth), or the ``mast.reference.fm.*`` attributes of a replayed OTLP recording. Writes
``eval.json`` (everything, per trace too), ``eval.md`` (the tables) and ``eval.png`` (per-mode bars)::

    mast-otel eval --rules                                   # the model-free judge, every trace in mast-data
    mast-otel eval FILE --model gpt-4o-mini --limit 20 --out eval-out/
    mast-otel eval FILE --base-url http://127.0.0.1:8080/v1 --limit 5
    mast-otel eval --attribution ../shared/whowhen/algorithm-generated --model gpt-4o-mini   # who and when

Traces whose verdict is an error are counted, not scored.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mast_otel.taxonomy import MODE_IDS, mode

from .chart import write_chart
from .cli import add_judge_options, config_from_args, verdict_dict
from .llm import LLMJudge
from .metrics import Scores, score
from .model import Judge, Verdict
from .progress import Progress
from .rules import RULES_COVERED_MODES, RulesJudge
from .steplist_input import Conversation, load_conversations

__all__ = ["DEFAULT_DATA", "register", "run"]

DATA_ENV = "MAST_OTEL_EVAL_DATA"
DEFAULT_DATA = ("../shared/mast-data/parsers_output/ag2_output_mad.json",
                "../shared/mast-data/parsers_output/metagpt_output_mad.json")  # fmt: skip
_SCORED = frozenset({"ok", "truncated", "partial"})


def _files(args: argparse.Namespace) -> list[Path]:
    if args.files:
        return [Path(f) for f in args.files]
    env = os.environ.get(DATA_ENV)
    candidates = env.split(os.pathsep) if env else list(DEFAULT_DATA)
    return [Path(c) for c in candidates if Path(c).exists()]


def evaluate(
    conversations: Sequence[Conversation], judge: Judge, *, llm: LLMJudge, workers: int = 1, quiet: bool = False
) -> list[dict[str, Any]]:
    """Judge every conversation (with a progress bar) and return one row per trace, in input order."""
    bar = Progress(len(conversations), "judging", disable=quiet)

    def one(conv: Conversation) -> dict[str, Any]:
        started = time.monotonic()
        prep = llm.prepare(conv.spans)
        verdict: Verdict = llm.judge_prepared(prep) if judge is llm else judge.judge(conv.spans)
        bar.update(verdict.tokens_in + verdict.tokens_out)
        return {
            "trace_key": conv.trace_key,
            "framework": conv.framework,
            "reference": [m for m in MODE_IDS if conv.reference.get(m)],
            "prompt_tokens": sum(prep.prompt_tokens),
            "latency_s": round(time.monotonic() - started, 3),
            "verdict": verdict_dict(verdict),
        }

    try:
        if workers > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                return list(pool.map(one, conversations))
        return [one(c) for c in conversations]
    finally:
        bar.close()


def summarise(rows: Sequence[dict[str, Any]], covered: Sequence[str]) -> dict[str, Any]:
    pairs = []
    for r in rows:
        v = r["verdict"]
        predicted = {m: True for m in v["failure_modes"]} if v["status"] in _SCORED else None
        pairs.append((predicted, {m: True for m in r["reference"]}))
    scores: Scores = score(pairs, MODE_IDS)
    n = max(len(rows), 1)
    tokens_in = sum(r["verdict"]["tokens_in"] for r in rows)
    tokens_out = sum(r["verdict"]["tokens_out"] for r in rows)
    cost = sum(r["verdict"]["cost_usd"] for r in rows)
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r["verdict"]["status"]] = statuses.get(r["verdict"]["status"], 0) + 1
    return {
        "traces": len(rows),
        "scored": scores.scored,
        "unscored_errors": scores.unscored,
        "statuses": statuses,
        "per_mode": {m: {"name": mode(m).name, **scores.per_mode[m].row()} for m in MODE_IDS},
        "overall": scores.overall(),
        "overall_covered": scores.overall(covered),
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "tokens_per_trace": round((tokens_in + tokens_out) / n, 1),
        "prompt_tokens_per_trace": round(sum(r["prompt_tokens"] for r in rows) / n, 1),
        "cost_usd": round(cost, 6),
        "cost_per_trace_usd": round(cost / n, 6),
    }


def markdown(summary: dict[str, Any], judge_name: str) -> str:
    def f(x: Any) -> str:
        return "n/a" if x is None else (f"{x:.3f}" if isinstance(x, float) else str(x))

    lines = [
        f"# mast-otel eval ({judge_name})",
        "",
        f"Traces: {summary['traces']} (scored {summary['scored']}, errors {summary['unscored_errors']}); "
        f"reference: the records' mast_annotation (noisy o1 labels, not ground truth).",
        "",
        "| mode | name | support | predicted | precision | recall | F1 | kappa |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for m, row in summary["per_mode"].items():
        lines.append(f"| {m} | {row['name']} | {row['support']} | {row['predicted']} | {f(row['precision'])} | "
                     f"{f(row['recall'])} | {f(row['f1'])} | {f(row['kappa'])} |")  # fmt: skip
    lines += ["", "| overall | modes | micro P | micro R | micro F1 | macro F1 | kappa |"]
    lines += ["|---|---|---:|---:|---:|---:|---:|"]
    for label, o in (("all 14 modes", summary["overall"]), ("modes the judge covers", summary["overall_covered"])):
        lines.append(f"| {label} | {len(o['modes'])} | {f(o['micro_precision'])} | {f(o['micro_recall'])} | "
                     f"{f(o['micro_f1'])} | {f(o['macro_f1'])} | {f(o['kappa'])} |")  # fmt: skip
    lines += [
        "",
        f"Tokens per trace: {summary['tokens_per_trace']} (prompt as counted with o200k_base: "
        f"{summary['prompt_tokens_per_trace']}); cost: ${summary['cost_usd']:.4f} total, "
        f"${summary['cost_per_trace_usd']:.5f} per trace.",
    ]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    if args.attribution:
        return _run_attribution(args)
    files = _files(args)
    if not files:
        print(f"mast-otel eval: no input files (pass FILE, or set {DATA_ENV})", file=sys.stderr)
        return 2
    config = config_from_args(args)
    llm = LLMJudge(config)
    judge: Judge = llm if config.llm_configured and not args.rules else RulesJudge()
    if judge is not llm and not args.rules:
        print("mast-otel eval: no judge endpoint configured; evaluating the rules judge", file=sys.stderr)
    conversations = [c for f in files for c in load_conversations(f, limit=args.limit)]
    rows = evaluate(conversations, judge, llm=llm, workers=config.concurrency if judge is llm else 1,
                    quiet=args.quiet)  # fmt: skip
    covered = RULES_COVERED_MODES if judge is not llm else MODE_IDS
    summary = summarise(rows, covered)
    name = f"{judge.name}" + (f", model {config.model_name}" if judge is llm else "")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {"judge": name, "files": [str(f) for f in files], "summary": summary, "traces": rows}
    (out / "eval.json").write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    (out / "eval.md").write_text(markdown(summary, name), encoding="utf-8")
    series = {k: [summary["per_mode"][m][k] for m in MODE_IDS] for k in ("precision", "recall", "f1")}
    writer = write_chart(out / "eval.png", MODE_IDS, series, f"per-mode agreement with reference labels ({name})")
    print(markdown(summary, name))
    print(f"wrote {out / 'eval.json'}, {out / 'eval.md'}, {out / 'eval.png'} (chart: {writer})", file=sys.stderr)
    return 0


def _run_attribution(args: argparse.Namespace) -> int:
    from . import attribution

    config = config_from_args(args)
    judge = LLMJudge(config) if config.llm_configured and not args.rules else None
    name = f"{judge.name}, model {config.model_name}" if judge is not None else None
    files = list(args.files) or [p for p in os.environ.get(attribution.DATA_ENV, "").split(os.pathsep) if p]
    return attribution.run(files, judge, name, Path(args.out), args.limit)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    doc = __doc__ or ""
    parser = subparsers.add_parser("eval", help=doc.splitlines()[0], description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("files", nargs="*", help=f"labelled step-list or OTLP JSON (default: ${DATA_ENV} or mast-data)")
    parser.add_argument("--out", default="eval-out", help="directory for eval.json, eval.md, eval.png")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--attribution",
        action="store_true",
        help="score who-and-when (the judge's decisive agent and step) against Who&When human labels; FILES are "
        "Who&When run files or directories (default: $MAST_OTEL_WHOWHEN_DATA or ../shared/whowhen)",
    )
    add_judge_options(parser)
    parser.set_defaults(func=run)
