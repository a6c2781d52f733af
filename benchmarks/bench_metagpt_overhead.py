"""Per-message time that mast-otel adds to a MetaGPT 0.8 team: the MetaGPT row of the overhead benchmark.

Runs in the MetaGPT virtual environment (``nox -s metagpt`` creates it in ``.nox/metagpt``)::

    .nox/metagpt/bin/python benchmarks/bench_metagpt_overhead.py
    .nox/metagpt/bin/python benchmarks/bench_metagpt_overhead.py --reps 20 --messages 100 --json bench.json

Workload: the test suite's software team (``tests.metagpt.scenarios``: Coder, Tester, Reviewer, the Coder also
watching the reviews, so the team never goes idle) with the scripted provider registered in MetaGPT's provider
registry (no LLM, no network); one ``Team.run`` publishes about ``--messages`` messages. MetaGPT's own logging is
set to WARNING, so that MetaGPT's mechanics, not its log I/O, are the baseline (which makes the ratio
conservative: a smaller baseline, a larger ratio). Spans go to a counting no-op exporter behind a
``SimpleSpanProcessor``: span creation is measured, export is not.

Time is the process's CPU time by default (``--clock cpu``): the workload never waits (no I/O, no sleeps, spans
exported synchronously), so CPU time is its whole cost, and other processes on a shared machine do not inflate it
the way they inflate wall time (``--clock wall``, as in the AG2 benchmark).

Configurations alternate run by run in one process (``mast_otel.instrument()`` / ``uninstrument()`` between runs,
untimed; the order rotates every repetition), so a change in machine load falls on all of them alike: on a shared
machine that pairing matters more than process isolation, and mast-otel's instrumentation undoes cleanly.
``--warmup`` untimed repetitions come first.

Reported per configuration, in the AG2 benchmark's table format (benchmarks/bench_ag2_overhead.py): µs per message
(median over repetitions), the time added per message against the uninstrumented baseline (median of the
per-repetition differences, with the interquartile range), that added time as a ratio of the baseline, and spans
per message.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import _harness as harness  # noqa: E402
from mast_otel.evaluation.suite_metagpt import ensure_metagpt_config  # noqa: E402

CONFIGURATIONS = {
    "none": "MetaGPT 0.8.2, uninstrumented",
    "mast-otel": "MetaGPT 0.8.2 + mast-otel (`mast_otel.instrument()`)",
    "mast-otel-no-content": "MetaGPT 0.8.2 + mast-otel, content capture off",
}
MESSAGES_PER_ROUND = 3  # the scripted provider never yields: Coder, Tester and Reviewer each publish every round
LAYOUT = harness.Layout("message", CONFIGURATIONS, digits=1, span_digits=3)


switch = harness.switch_mast_otel


async def _one_run(run: harness.Run, n_round: int) -> None:
    """One Team.run on a fresh team; its units are the messages it published."""
    from tests.metagpt.scenarios import IDEA, scripted_context, software_team

    team = software_team(scripted_context(), cycle=True)
    with run.timing():
        await team.run(n_round=n_round, idea=IDEA)
    run.units = len({m.id for role in team.env.roles.values() for m in role.rc.memory.get()})


async def measure(names: list[str], reps: int, warmup: int, messages: int, clock: str) -> list[harness.Series]:
    from tests.metagpt.scenarios import scripted_provider

    trial = harness.Alternation(names, switch, reps=reps, warmup=warmup, clock=clock, unit="message", digits=1)
    n_round = max(1, round((messages - 1) / MESSAGES_PER_ROUND))
    with scripted_provider():
        for s in trial.rotations():
            with trial.configured(s) as run:
                await _one_run(run, n_round)
    return trial.series


def report(series: list[harness.Series], args: argparse.Namespace) -> str:
    workload = f"(runs alternating in one process) x ~{args.messages} messages per run"
    return "\n".join(harness.table(series, harness.heading(args, workload), LAYOUT))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    harness.add_alternation_arguments(parser, CONFIGURATIONS, reps=30, only_help="configurations besides none")
    parser.add_argument("--messages", type=int, default=150, help="messages per run (about; whole rounds)")
    args = parser.parse_args(argv)

    ensure_metagpt_config()
    from metagpt.logs import define_log_level

    define_log_level(print_level="WARNING", logfile_level="WARNING")
    names = harness.chosen(args.only or ["mast-otel", "mast-otel-no-content"])
    series = asyncio.run(measure(names, args.reps, args.warmup, args.messages, args.clock))
    print(report(series, args))
    if args.json:
        args.json.write_text(json.dumps({s.name: s.as_json("message") for s in series}, indent=2))


if __name__ == "__main__":
    main()
