"""How often each structural signal fires, per framework, on recorded step-list traces (default: mast-data).

    .venv/bin/python benchmarks/signal_rates.py [FILE ...]

Prints a Markdown table (signal, the mode it hints at, share of conversations per file) for docs/judge.md. The
traces are replayed through the recorder in memory, as `mast-otel replay` sends them to a collector.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mast_otel.judge.signals import SIGNALS, compute_signals
from mast_otel.judge.view import build_view
from mast_otel.replay import spans_for_record
from mast_otel.steplist import load_steplist

DEFAULT = [Path(__file__).resolve().parents[1].parent / "shared" / "mast-data" / "parsers_output" / f
           for f in ("ag2_output_mad.json", "metagpt_output_mad.json")]  # fmt: skip


def main(argv: list[str]) -> int:
    files = [Path(a) for a in argv] or [p for p in DEFAULT if p.exists()]
    if not files:
        print("no input files (pass step-list JSON files)", file=sys.stderr)
        return 2
    columns: list[tuple[str, int, dict[str, int]]] = []
    for path in files:
        records = load_steplist(path)
        fired: dict[str, int] = {}
        for record in records:
            for name in {s.name for s in compute_signals(build_view(spans_for_record(record)))}:
                fired[name] = fired.get(name, 0) + 1
        columns.append((path.stem, len(records), fired))
    print("| signal | hints at | " + " | ".join(f"{name} (n={n})" for name, n, _ in columns) + " |")
    print("|---|---|" + "---:|" * len(columns))
    for kind in SIGNALS.values():
        cells = [f"{fired.get(kind.name, 0)} ({fired.get(kind.name, 0) / n:.1%})" for _, n, fired in columns]
        print(f"| `{kind.name}` | {kind.mode_id} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
