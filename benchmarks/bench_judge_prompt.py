"""Judge prompt size against the original MAST judge's, and the share of conversations judged in one call.

Three sets of conversations, each replayed into spans through the recorder (``mast_otel.replay``) and prepared by
``LLMJudge.prepare`` exactly as a live judge call would be (no model is called; o200k_base via ``bpe-openai``):

- **mast-data**: every step-list trace in ../shared/mast-data (AG2 597, MetaGPT 230);
- **mast-data longest**: the longest 10% of those;
- **long, tool-heavy**: the longest conversations the project's replays can produce. No trace on these machines
  is longer than 29k characters, so consecutive AG2 records of one trace set (MathChat: tool calls and tool
  results are ~40% of the steps) are chained into one conversation per target length; 60 targets from 12k to
  235k characters, median ~28k (the sizes of the long, tool-heavy conversations issue 15 measured elsewhere).
  Chained runs are a proxy: real long runs have longer tool output (pages, logs), which compaction trims first.

Baseline, computed in the same run: the original judge's prompt is the raw trace plus a fixed block (instruction
header ~1.1k characters, definitions 13,162 bytes, examples 67,469 bytes). The files are not on these machines:
their tokens are *estimated* from the byte sizes with the bytes/token ratio of our own English prompt text, and the
figure measured on the real files (18,965 tokens, notes/mast.md §7) is shown as a cross-check; the trace part is
counted exactly (``{agent} ({kind}): {content}`` per step).

Also checked: no prompt exceeds the budget, all 14 definitions in every prompt, also for synthetic traces of up to
~1.5M tokens (a record's steps repeated). Goal (issue 15): median <= 0.25 of the original on long, tool-heavy
conversations, and >= 90% of conversations up to ~60k characters in one call.

Run from the repository root::

    .venv/bin/python benchmarks/bench_judge_prompt.py [--budget 12000] [--json out.json] [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from mast_otel.evaluation.steplist_input import record_to_spans
from mast_otel.judge.config import JudgeConfig
from mast_otel.judge.llm import LLMJudge
from mast_otel.judge.prompt import RULES, definitions
from mast_otel.judge.tokens import count_tokens
from mast_otel.steplist import StepRecord, load_steplist
from mast_otel.taxonomy import MODES

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "mast-data" / "parsers_output"
FILES = ("ag2_output_mad.json", "metagpt_output_mad.json")
ORIGINAL_HEADER_CHARS = 1_100
ORIGINAL_DEFINITIONS_BYTES = 13_162
ORIGINAL_EXAMPLES_BYTES = 67_469
ORIGINAL_FIXED_MEASURED = 18_965  # tokens, measured on the real files (notes/mast.md §7): the cross-check
GOAL_RATIO_LONG = 0.25
GOAL_ONE_CALL = 0.90
ONE_CALL_CHARS = 60_000
LONG_TARGETS = 60


def raw_trace(record: StepRecord) -> str:
    return "\n".join(f"{s.agent} ({s.kind}): {s.content}" for s in record.steps)


def chars(record: StepRecord) -> int:
    return sum(len(s.content) for s in record.steps)


def md(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


def long_targets(n: int = LONG_TARGETS, low: int = 12_000, high: int = 235_000) -> list[int]:
    """n lengths from ``low`` to ``high``, denser at the short end (median about 28k)."""
    return [int(low * math.exp(math.log(high / low) * (i / (n - 1)) ** 1.8)) for i in range(n)]


def chained(records: Sequence[StepRecord], targets: Iterable[int]) -> list[StepRecord]:
    """One conversation per target: consecutive records of one trace set, their steps chained, until the target."""
    groups: dict[str, list[StepRecord]] = {}
    for r in records:
        groups.setdefault(r.mad_trace_key, []).append(r)
    pools = sorted(groups.values(), key=len, reverse=True)
    out = []
    for n, target in enumerate(targets):
        pool = pools[n % len(pools)]
        start = (n * 37) % len(pool)
        steps: list = []
        i = start
        while sum(len(s.content) for s in steps) < target:
            steps.extend(pool[i % len(pool)].steps)
            i += 1
        steps = [replace(s, index=k) for k, s in enumerate(steps)]
        out.append(replace(pool[start], steps=tuple(steps), n_turns=len(steps), trace_id=f"chain{n}"))
    return out


def measure(judge: LLMJudge, records: Sequence[StepRecord], fixed: int, budget: int) -> list[dict[str, float]]:
    rows = []
    for record in records:
        prepared = judge.prepare(record_to_spans(record))
        trace_tokens = count_tokens(raw_trace(record))
        ours = sum(prepared.prompt_tokens)
        assert max(prepared.prompt_tokens) <= budget, f"prompt over budget: {record.trace_key}"
        assert all(m.definition in p[1]["content"] for p in prepared.prompts for m in MODES), record.trace_key
        rows.append({
            "chars": chars(record), "trace_tokens": trace_tokens, "ours": ours, "calls": len(prepared.prompts),
            "ratio": ours / (trace_tokens + fixed), "ratio_measured": ours / (trace_tokens + ORIGINAL_FIXED_MEASURED),
            "truncated": prepared.plan.truncated, "dropped": prepared.plan.dropped,
        })  # fmt: skip
    return rows


def summary(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    within = [r for r in rows if r["chars"] <= ONE_CALL_CHARS]
    return {
        "n": len(rows),
        "chars_median": statistics.median(r["chars"] for r in rows),
        "chars_max": max(r["chars"] for r in rows),
        "ours_median": statistics.median(r["ours"] for r in rows),
        "ratio_median": round(statistics.median(r["ratio"] for r in rows), 3),
        "ratio_p90": round(pct([r["ratio"] for r in rows], 0.9), 3),
        "ratio_median_vs_measured_fixed": round(statistics.median(r["ratio_measured"] for r in rows), 3),
        "one_call": round(sum(r["calls"] == 1 for r in rows) / len(rows), 3),
        "one_call_up_to_60k": round(sum(r["calls"] == 1 for r in within) / len(within), 3) if within else float("nan"),
        "max_calls": max(r["calls"] for r in rows),
        "with_lines_dropped": sum(bool(r["dropped"]) for r in rows),
    }


def stress(judge: LLMJudge, record: StepRecord, budget: int) -> list[tuple[int, int, int]]:
    rows = []
    for factor in (10, 50, 200):
        steps = tuple(replace(s, content=f"[copy {k}] {s.content}") for k in range(factor) for s in record.steps)
        prepared = judge.prepare(record_to_spans(replace(record, steps=steps, n_turns=len(steps))))
        assert max(prepared.prompt_tokens) <= budget
        assert all(m.definition in p[1]["content"] for p in prepared.prompts for m in MODES)
        rows.append((count_tokens("\n".join(s.content for s in steps)), len(prepared.prompts),
                     max(prepared.prompt_tokens)))  # fmt: skip
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--budget", type=int, default=12_000, help="judge token budget per prompt (the default)")
    ap.add_argument("--json", help="write the figures to this file as well")
    ap.add_argument("--quick", action="store_true", help="every 5th mast-data trace and 20 long ones")
    args = ap.parse_args()

    own = definitions() + "\n\n" + RULES
    bytes_per_token = len(own.encode("utf-8")) / count_tokens(own)
    fixed = round((ORIGINAL_HEADER_CHARS + ORIGINAL_DEFINITIONS_BYTES + ORIGINAL_EXAMPLES_BYTES) / bytes_per_token)
    judge = LLMJudge(JudgeConfig(model="bench", token_budget=args.budget))
    started = time.monotonic()
    records = {name: load_steplist(DATA / name) for name in FILES}
    everything = [r for rs in records.values() for r in rs]
    step = 5 if args.quick else 1
    sets: dict[str, list[StepRecord]] = {
        "mast-data AG2": records[FILES[0]][::step],
        "mast-data MetaGPT": records[FILES[1]][::step],
        "mast-data longest 10%": sorted(everything, key=chars)[-len(everything) // 10 :][::step],
        "long, tool-heavy (chained AG2)": chained(records[FILES[0]], long_targets(20 if args.quick else LONG_TARGETS)),
    }
    figures: dict[str, object] = {"budget": args.budget, "original_fixed_estimated": fixed,
                                  "original_fixed_measured": ORIGINAL_FIXED_MEASURED, "sets": {}}  # fmt: skip
    print(f"o200k_base; budget {args.budget} tokens per prompt; original judge's fixed block estimated at {fixed} "
          f"tokens ({bytes_per_token:.2f} bytes/token; measured on the real files: {ORIGINAL_FIXED_MEASURED})\n")
    print(md("set", "conversations", "chars median", "chars max", "ours median (tokens)", "ratio median",
             "ratio p90", "ratio median (measured fixed)", "one call", "one call, <= 60k chars", "most calls",
             "lines dropped"))  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    results = {}
    for name, recs in sets.items():
        s = summary(measure(judge, recs, fixed, args.budget))
        results[name] = s
        figures["sets"][name] = s  # type: ignore[index]
        print(md(name, s["n"], f"{s['chars_median']:.0f}", s["chars_max"], f"{s['ours_median']:.0f}",
                 s["ratio_median"], s["ratio_p90"], s["ratio_median_vs_measured_fixed"], f"{s['one_call']:.0%}",
                 f"{s['one_call_up_to_60k']:.0%}", s["max_calls"], s["with_lines_dropped"]))  # fmt: skip
    longest = max(everything, key=chars)
    print("\nsynthetic traces (the longest record's steps repeated): trace tokens, prompts, largest prompt")
    for t, n, big in stress(judge, longest, args.budget):
        print(f"  {t:>9} {n:>3} {big:>6}")
    long = results["long, tool-heavy (chained AG2)"]
    print(f"\n{time.monotonic() - started:.0f}s. Long, tool-heavy: median ratio {long['ratio_median']} (goal <= "
          f"{GOAL_RATIO_LONG}), one call {long['one_call']:.0%}, one call up to 60k characters "
          f"{long['one_call_up_to_60k']:.0%} (goal >= {GOAL_ONE_CALL:.0%})")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    met = long["ratio_median"] <= GOAL_RATIO_LONG and long["one_call_up_to_60k"] >= GOAL_ONE_CALL
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
