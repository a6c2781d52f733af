"""Judge prompt size: mast-otel's prompt against the original MAST judge's, on every trace in ../shared/mast-data.

For each step-list record (827: AG2 597, MetaGPT 230) the record is replayed into spans through the recorder
(``mast_otel.replay``), and ``LLMJudge.prepare`` builds the prompts exactly as a live judge call would (no model
is called). Tokens are o200k_base (``bpe-openai``).

The original judge's prompt is the raw trace with a fixed block around it: an instruction header and answer
template (~1.1k characters), the definitions file (13,162 bytes) and the examples file (67,469 bytes). Those
files are not on these machines, so their token counts are *estimated* from their byte sizes (notes/mast.md)
with a bytes-per-token ratio measured here on our own English prompt text (the definitions and rules); the trace
part is counted exactly, rendering each step as ``{agent} ({kind}): {content}``. The estimate is printed next to
the figure measured on the real files in notes/mast.md §7 (18,965 fixed tokens) as a cross-check.

Also checked: no prompt exceeds the configured budget whatever the trace length (every record, plus synthetic
traces made by repeating a record's steps up to ~400k tokens), all 14 definitions are in every prompt; and the
rules-only judge's per-mode F1 against the reference labels (``mast_annotation``, the released o1 labels) for
the modes it covers.

Run from the repository root::

    .venv/bin/python benchmarks/bench_judge_prompt.py [--budget 12000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

from mast_otel.judge.config import JudgeConfig
from mast_otel.judge.llm import LLMJudge
from mast_otel.judge.metrics import score
from mast_otel.judge.prompt import RULES, definitions
from mast_otel.judge.rules import RULES_COVERED_MODES, RulesJudge
from mast_otel.judge.steplist_input import record_to_spans
from mast_otel.judge.tokens import count_tokens
from mast_otel.steplist import StepRecord, load_steplist
from mast_otel.taxonomy import MODES

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "mast-data" / "parsers_output"
FILES = ("ag2_output_mad.json", "metagpt_output_mad.json")
# Sizes of the original judge's fixed text (notes/mast.md §2 and §7).
ORIGINAL_HEADER_CHARS = 1_100
ORIGINAL_DEFINITIONS_BYTES = 13_162
ORIGINAL_EXAMPLES_BYTES = 67_469
ORIGINAL_FIXED_MEASURED = 18_965  # tokens, measured on the real files (notes/mast.md §7): the cross-check
GOAL_RATIO = 0.35


def raw_trace(record: StepRecord) -> str:
    return "\n".join(f"{s.agent} ({s.kind}): {s.content}" for s in record.steps)


def md(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(int(q * len(values)), len(values) - 1)]


def stress(judge: LLMJudge, record: StepRecord, budget: int) -> list[tuple[int, int, int, bool]]:
    """(trace tokens, prompts, largest prompt, definitions all present) for ever longer synthetic traces."""
    rows = []
    for factor in (1, 10, 50, 200):
        steps = tuple(replace(s, content=f"[copy {k}] {s.content}") for k in range(factor) for s in record.steps)
        big = replace(record, steps=steps, n_turns=len(steps))
        prepared = judge.prepare(record_to_spans(big))
        ok = all(m.definition in p[1]["content"] for p in prepared.prompts for m in MODES)
        rows.append((count_tokens(raw_trace(big)), len(prepared.prompts), max(prepared.prompt_tokens), ok))
        assert max(prepared.prompt_tokens) <= budget, f"prompt over budget at x{factor}"
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=12_000, help="judge token budget per prompt")
    ap.add_argument("--json", help="write the figures to this file as well")
    args = ap.parse_args()

    own_text = definitions() + "\n\n" + RULES
    bytes_per_token = len(own_text.encode("utf-8")) / count_tokens(own_text)
    fixed_est = round((ORIGINAL_HEADER_CHARS + ORIGINAL_DEFINITIONS_BYTES + ORIGINAL_EXAMPLES_BYTES) / bytes_per_token)

    judge = LLMJudge(JudgeConfig(model="bench", token_budget=args.budget))
    rules = RulesJudge()
    per_fw: dict[str, dict[str, list[float]]] = {}
    pairs = []
    over_budget = missing_definitions = 0
    started = time.monotonic()
    for name in FILES:
        for record in load_steplist(DATA / name):
            spans = record_to_spans(record)
            prepared = judge.prepare(spans)
            ours = sum(prepared.prompt_tokens)
            trace_tokens = count_tokens(raw_trace(record))
            original = trace_tokens + fixed_est
            over_budget += sum(t > args.budget for t in prepared.prompt_tokens)
            missing_definitions += sum(
                not all(m.definition in p[1]["content"] for m in MODES) for p in prepared.prompts
            )
            fw = per_fw.setdefault(record.mas_name, {"ours": [], "original": [], "ratio": [], "measured": []})
            fw["ours"].append(ours)
            fw["original"].append(original)
            fw["ratio"].append(ours / original)
            fw["measured"].append(ours / (trace_tokens + ORIGINAL_FIXED_MEASURED))
            verdict = rules.judge(spans)
            pairs.append(({m: True for m in verdict.failure_modes}, dict(record.mast_annotation)))
    elapsed = time.monotonic() - started

    all_ratio = [r for fw in per_fw.values() for r in fw["ratio"]]
    all_measured = [r for fw in per_fw.values() for r in fw["measured"]]
    print(f"o200k_base; our English prompt text measures {bytes_per_token:.2f} bytes/token")
    print(f"original fixed block, estimated from byte sizes: {fixed_est} tokens "
          f"(measured on the real files, notes/mast.md: {ORIGINAL_FIXED_MEASURED})")  # fmt: skip
    print(f"budget {args.budget} tokens per prompt; traces {len(all_ratio)}; {elapsed:.0f}s\n")
    print(md("system", "traces", "ours median", "ours p90", "ours max", "original median", "ratio median",
             "ratio p90", "ratio max"))  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    figures: dict[str, object] = {"bytes_per_token": round(bytes_per_token, 3), "original_fixed_estimated": fixed_est,
                                  "budget": args.budget, "systems": {}}  # fmt: skip
    for fw_name, fw in [*per_fw.items(), ("all", {k: [v for f in per_fw.values() for v in f[k]]
                                                  for k in ("ours", "original", "ratio", "measured")})]:  # fmt: skip
        row = {
            "traces": len(fw["ours"]),
            "ours_median": statistics.median(fw["ours"]), "ours_p90": pct(fw["ours"], 0.9), "ours_max": max(fw["ours"]),
            "original_median": statistics.median(fw["original"]),
            "ratio_median": round(statistics.median(fw["ratio"]), 3), "ratio_p90": round(pct(fw["ratio"], 0.9), 3),
            "ratio_max": round(max(fw["ratio"]), 3),
            "ratio_median_vs_measured_fixed": round(statistics.median(fw["measured"]), 3),
        }  # fmt: skip
        figures["systems"][fw_name] = row  # type: ignore[index]
        print(md(fw_name, row["traces"], f"{row['ours_median']:.0f}", f"{row['ours_p90']:.0f}", row["ours_max"],
                 f"{row['original_median']:.0f}", row["ratio_median"], row["ratio_p90"], row["ratio_max"]))  # fmt: skip
    median_ratio = statistics.median(all_ratio)
    print(f"\nmedian ratio {median_ratio:.3f} (goal <= {GOAL_RATIO}); against the measured fixed block "
          f"{statistics.median(all_measured):.3f}")  # fmt: skip
    print(f"prompts over budget: {over_budget}; prompts missing a definition: {missing_definitions}")

    longest = max((r for n in FILES for r in load_steplist(DATA / n)), key=lambda r: len(raw_trace(r)))
    print("\nsynthetic long traces (the longest record's steps repeated):")
    print("| trace tokens | prompts | largest prompt | all 14 definitions |\n|---:|---:|---:|---|")
    stress_rows = stress(judge, longest, args.budget)
    for t, n, big, ok in stress_rows:
        print(f"| {t} | {n} | {big} | {'yes' if ok else 'NO'} |")
    figures["stress"] = stress_rows

    scores = score(pairs, RULES_COVERED_MODES)
    print("\nrules-only judge vs reference labels (released o1 labels), modes it covers:")
    print("| mode | support | predicted | precision | recall | F1 | kappa |\n|---|---:|---:|---:|---:|---:|---:|")
    for m in RULES_COVERED_MODES:
        r = scores.per_mode[m].row()
        print(md(m, r["support"], r["predicted"], r["precision"], r["recall"], r["f1"], r["kappa"]))
    overall = scores.overall()
    print(f"| covered, micro | | | {overall['micro_precision']} | {overall['micro_recall']} | {overall['micro_f1']} | "
          f"{overall['kappa']} |")  # fmt: skip
    figures["rules"] = {m: scores.per_mode[m].row() for m in RULES_COVERED_MODES} | {"overall": overall}
    figures.update(median_ratio=round(median_ratio, 3), over_budget=over_budget)
    figures["missing_definitions"] = missing_definitions
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    ok = median_ratio <= GOAL_RATIO and not over_budget and not missing_definitions
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
