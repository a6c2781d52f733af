"""``mast-otel eval``: score a judge, and the structural signals, against labelled traces or constructed cases.

Two sources of truth:

- ``--attribution FILES``: who and when, the judge's decisive agent and step scored against the Who&When
  human labels (both halves, each subset on its own and together, steps as integers) with baselines in the same
  run and the published figures beside them (:mod:`mast_otel.evaluation.attribution`).
- ``--suite``: scripted multi-agent conversations run through the real integrations, each built to contain one
  failure mode by construction, plus clean controls (:mod:`mast_otel.evaluation.suite`). A smoke test for a judge
  configuration, not a benchmark of real failures.
- labelled files: the rebuilt MAD file (1,642 rows), the human-labelled MAD file (codes remapped by name), a
  step-list file, or a replayed OTLP recording (``mast.reference.fm.*``). The 1,242-row MAD release, and the
  step-list restructuring of it in ../shared/mast-data, carry labels that are not attached to their traces: eval
  prints a warning, and its figures mean nothing (see docs/judge.md).

The configured judge (an LLM endpoint: ``--model`` / ``--base-url`` or ``MAST_OTEL_JUDGE_*``) is scored on the
14 modes; the signals are scored on the modes they hint at (a signal "predicts" its mode). Without a model only
the signals are scored. Writes ``eval.json``, ``eval.md`` and ``eval.png``::

    mast-otel eval --suite                                   # constructed cases, signals (+ judge if configured)
    mast-otel eval MAD_human_labelled_dataset.json --model gpt-4o-mini --out eval-out/
    mast-otel eval MAD_full_dataset.json --base-url http://127.0.0.1:8080/v1 --limit 50
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

from mast_otel.judge.llm import LLMJudge
from mast_otel.judge.model import Verdict
from mast_otel.judge.signals import SIGNALS, compute_signals
from mast_otel.judge.view import build_view
from mast_otel.taxonomy import MODE_IDS, mode

from .chart import write_chart
from .judge_cli import add_judge_options, config_from_args, verdict_dict
from .metrics import Scores, score
from .progress import Progress
from .steplist_input import Conversation, label_format, load_conversations

__all__ = ["DEFAULT_DATA", "evaluate", "register", "run", "summarise"]

DATA_ENV = "MAST_OTEL_EVAL_DATA"
DEFAULT_DATA = ("../shared/mast-data/parsers_output/ag2_output_mad.json",
                "../shared/mast-data/parsers_output/metagpt_output_mad.json")  # fmt: skip
_SCORED = frozenset({"ok", "truncated", "partial"})
SIGNAL_MODES: tuple[str, ...] = tuple(sorted({k.mode_id for k in SIGNALS.values()}))


def _files(args: argparse.Namespace) -> list[Path]:
    if args.files:
        return [Path(f) for f in args.files]
    env = os.environ.get(DATA_ENV)
    candidates = env.split(os.pathsep) if env else list(DEFAULT_DATA)
    return [Path(c) for c in candidates if Path(c).exists()]


def evaluate(
    conversations: Sequence[Conversation], llm: LLMJudge | None, *, workers: int = 1, quiet: bool = False
) -> list[dict[str, Any]]:
    """Signals for every conversation, and the LLM judge's verdict when one is given; one row per trace."""
    bar = Progress(len(conversations), "judging" if llm else "signals", disable=quiet)

    def one(conv: Conversation) -> dict[str, Any]:
        started = time.monotonic()
        signals = compute_signals(build_view(conv.spans))
        row: dict[str, Any] = {
            "trace_key": conv.trace_key,
            "framework": conv.framework,
            "reference": [m for m in MODE_IDS if conv.reference.get(m)],
            "signals": [{"name": s.name, "mode": s.mode_id, "detail": s.detail} for s in signals],
        }
        if llm is not None:
            prep = llm.prepare(conv.spans)
            verdict: Verdict = llm.judge_prepared(prep)
            bar.update(verdict.tokens_in + verdict.tokens_out)
            row["prompt_tokens"] = sum(prep.prompt_tokens)
            row["verdict"] = verdict_dict(verdict)
        else:
            bar.update(0)
        row["latency_s"] = round(time.monotonic() - started, 3)
        return row

    try:
        if workers > 1 and llm is not None:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                return list(pool.map(one, conversations))
        return [one(c) for c in conversations]
    finally:
        bar.close()


def _scores(rows: Sequence[dict[str, Any]], predicted: Any, modes: Sequence[str]) -> dict[str, Any]:
    pairs = [(predicted(r), {m: True for m in r["reference"]}) for r in rows]
    scores: Scores = score(pairs, MODE_IDS)
    return {
        "scored": scores.scored,
        "unscored_errors": scores.unscored,
        "per_mode": {m: {"name": mode(m).name, **scores.per_mode[m].row()} for m in MODE_IDS},
        "overall": scores.overall(modes),
    }


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Scores of the signals (on the modes they hint at) and, when rows carry verdicts, of the judge."""
    summary: dict[str, Any] = {"traces": len(rows)}
    summary["signals"] = _scores(rows, lambda r: {s["mode"]: True for s in r["signals"]}, SIGNAL_MODES)
    fired: dict[str, int] = {}
    for r in rows:
        for name in dict.fromkeys(s["name"] for s in r["signals"]):
            fired[name] = fired.get(name, 0) + 1
    summary["signals"]["fired"] = {name: fired.get(name, 0) for name in SIGNALS}
    if rows and "verdict" in rows[0]:

        def judged(r: dict[str, Any]) -> dict[str, bool] | None:
            v = r["verdict"]
            return {m: True for m in v["failure_modes"]} if v["status"] in _SCORED else None

        judge = _scores(rows, judged, MODE_IDS)
        n = max(len(rows), 1)
        tokens_in = sum(r["verdict"]["tokens_in"] for r in rows)
        tokens_out = sum(r["verdict"]["tokens_out"] for r in rows)
        cost = sum(r["verdict"]["cost_usd"] for r in rows)
        statuses: dict[str, int] = {}
        for r in rows:
            statuses[r["verdict"]["status"]] = statuses.get(r["verdict"]["status"], 0) + 1
        judge.update(
            statuses=statuses,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            tokens_per_trace=round((tokens_in + tokens_out) / n, 1),
            prompt_tokens_per_trace=round(sum(r.get("prompt_tokens", 0) for r in rows) / n, 1),
            cost_usd=round(cost, 6),
            cost_per_trace_usd=round(cost / n, 6),
        )
        summary["judge"] = judge
    return summary


def _f(x: Any) -> str:
    return "n/a" if x is None else (f"{x:.3f}" if isinstance(x, float) else str(x))


def _mode_table(title: str, block: dict[str, Any], modes: Sequence[str]) -> list[str]:
    lines = [f"## {title}", "", "| mode | name | support | predicted | precision | recall | F1 | kappa |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for m in modes:
        row = block["per_mode"][m]
        lines.append(f"| {m} | {row['name']} | {row['support']} | {row['predicted']} | {_f(row['precision'])} | "
                     f"{_f(row['recall'])} | {_f(row['f1'])} | {_f(row['kappa'])} |")  # fmt: skip
    o = block["overall"]
    lines += ["", f"Overall on these {len(o['modes'])} modes: micro P {_f(o['micro_precision'])}, micro R "
              f"{_f(o['micro_recall'])}, micro F1 {_f(o['micro_f1'])}, macro F1 {_f(o['macro_f1'])}, kappa "
              f"{_f(o['kappa'])}; scored {block['scored']}, errors {block['unscored_errors']}.", ""]  # fmt: skip
    return lines


def markdown(summary: dict[str, Any], judge_name: str | None, *, header: Sequence[str] = ()) -> str:
    lines = ["# mast-otel eval", "", *header, f"Traces: {summary['traces']}.", ""]
    if "judge" in summary:
        j = summary["judge"]
        lines += _mode_table(f"Judge: {judge_name}", j, MODE_IDS)
        lines += [f"Tokens per trace: {j['tokens_per_trace']} (prompt, o200k_base: {j['prompt_tokens_per_trace']}); "
                  f"cost ${j['cost_usd']:.4f} total, ${j['cost_per_trace_usd']:.5f} per trace.", ""]  # fmt: skip
    else:
        lines += ["No judge configured (no model): only the structural signals are scored. For MAST labels set "
                  "OPENAI_API_KEY, or MAST_OTEL_JUDGE_BASE_URL (+ MAST_OTEL_JUDGE_MODEL), or pass --base-url.", ""]
    lines += _mode_table("Structural signals (a signal predicts the mode it hints at)", summary["signals"],
                         SIGNAL_MODES)  # fmt: skip
    fired = summary["signals"]["fired"]
    lines += ["Signals fired (conversations): " + ", ".join(f"{k} {v}" for k, v in fired.items()), ""]
    return "\n".join(lines) + "\n"


def write_outputs(out: Path, report: dict[str, Any], text: str, chart_title: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "eval.json").write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    (out / "eval.md").write_text(text, encoding="utf-8")
    block = report["summary"].get("judge") or report["summary"]["signals"]
    series = {k: [block["per_mode"][m][k] for m in MODE_IDS] for k in ("precision", "recall", "f1")}
    writer = write_chart(out / "eval.png", MODE_IDS, series, chart_title)
    print(text)
    print(f"wrote {out / 'eval.json'}, {out / 'eval.md'}, {out / 'eval.png'} (chart: {writer})", file=sys.stderr)


def configured_llm(args: argparse.Namespace) -> LLMJudge | None:
    config = config_from_args(args)
    return LLMJudge(config) if config.llm_configured and not args.no_model else None


def run(args: argparse.Namespace) -> int:
    if args.attribution:
        return _run_attribution(args)
    if args.suite:
        return _run_suite(args)
    files = _files(args)
    if not files:
        print(f"mast-otel eval: no input files (pass FILE, or set {DATA_ENV})", file=sys.stderr)
        return 2
    header: list[str] = []
    for f in files:
        fmt = label_format(f)
        if not fmt.trusted:
            print(f"mast-otel eval: {f}: {fmt.note}", file=sys.stderr)
            header += [f"**{f.name}**: {fmt.note}", ""]
        elif fmt.note:
            header += [f"{f.name}: {fmt.name} ({fmt.note}).", ""]
    llm = configured_llm(args)
    if llm is None:
        print("mast-otel eval: no judge configured (no model); scoring the structural signals only", file=sys.stderr)
    conversations = [c for f in files for c in load_conversations(f, limit=args.limit)]
    rows = evaluate(conversations, llm, workers=llm.config.concurrency if llm else 1, quiet=args.quiet)
    summary = summarise(rows)
    name = f"llm, model {llm.config.model_name}" if llm else None
    report = {"judge": name, "files": [str(f) for f in files], "summary": summary, "traces": rows}
    write_outputs(Path(args.out), report, markdown(summary, name, header=header),
                  f"per-mode agreement with reference labels ({name or 'signals'})")  # fmt: skip
    return 0


def _run_suite(args: argparse.Namespace) -> int:
    """``mast-otel eval --suite``: run every case, score the judge (if configured) and the signals, print tables."""
    from .suite import CASES, DISCLAIMER, case_table, run_case, run_metagpt_cases

    try:
        import autogen  # noqa: F401
    except ImportError:
        print("mast-otel eval --suite: the AG2 cases need AG2 (pip install 'mast-otel[ag2]')", file=sys.stderr)
        return 2
    print(f"mast-otel eval --suite: {DISCLAIMER}", file=sys.stderr)
    conversations = [run_case(c) for c in CASES if c.run is not None]
    metagpt, left_out = run_metagpt_cases(args.metagpt_python)
    conversations += metagpt
    if left_out:
        print(f"mast-otel eval --suite: {left_out}", file=sys.stderr)
    llm = configured_llm(args)
    rows = evaluate(conversations, llm, workers=llm.config.concurrency if llm else 1, quiet=args.quiet)
    summary = summarise(rows)
    name = f"llm, model {llm.config.model_name}" if llm else None
    header = [f"**Constructed suite, {len(conversations)} cases.** {DISCLAIMER}", "", case_table(rows), ""]
    if left_out:
        header += [left_out + ".", ""]
    report = {"judge": name, "suite": [c.name for c in CASES], "summary": summary, "traces": rows}
    write_outputs(Path(args.out), report, markdown(summary, name, header=header),
                  f"constructed suite ({name or 'signals'})")  # fmt: skip
    return 0


def _run_attribution(args: argparse.Namespace) -> int:
    from . import attribution

    judge = configured_llm(args)
    name = f"{judge.name}, model {judge.config.model_name}" if judge is not None else None
    files = list(args.files) or [p for p in os.environ.get(attribution.DATA_ENV, "").split(os.pathsep) if p]
    return attribution.run(files, judge, name, Path(args.out), args.limit)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    doc = __doc__ or ""
    parser = subparsers.add_parser("eval", help=doc.splitlines()[0], description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("files", nargs="*", help=f"labelled MAD, step-list or OTLP JSON (default: ${DATA_ENV})")
    parser.add_argument("--suite", action="store_true", help="run the constructed ground-truth suite instead")
    parser.add_argument("--metagpt-python", help="--suite: the MetaGPT environment's interpreter for its cases "
                        "(default .nox/metagpt/bin/python when it exists)")
    parser.add_argument("--out", default="eval-out", help="directory for eval.json, eval.md, eval.png")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--attribution",
        action="store_true",
        help="score who-and-when (the judge's decisive agent and step) against Who&When human labels, per subset "
        "(algorithm-generated, hand-crafted) and together; FILES are Who&When run files or directories of either "
        "half (default: $MAST_OTEL_WHOWHEN_DATA, else ../shared/whowhen/algorithm-generated and hand-crafted)",
    )
    add_judge_options(parser)
    parser.set_defaults(func=run)
