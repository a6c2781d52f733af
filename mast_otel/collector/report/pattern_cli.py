"""``mast-otel report``'s pattern options: a time range and a comparison over the collector's verdict history.

::

    mast-otel report --store mast-otel-collector.db --since 7d --compare previous
    mast-otel report --store mast-otel-collector.db --since 30d --compare version:1.4,1.3 --service checkout
    mast-otel report --store mast-otel-collector.db --from 2026-11-01 --to 2026-11-08 --trace-url jaeger:URL
    mast-otel report --history a.db.history --history b.db.history --since 24h --json patterns.json

Any of ``--since``, ``--from``, ``--to``, ``--compare`` or ``--history`` asks for patterns; ``--store`` finds every
history beside the store (one per collector process: ``STORE.history``, ``STORE.shard1.history``, ...).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mast_otel.collector._values import ConfigError, seconds
from mast_otel.collector.history.reader import HistoryFile
from mast_otel.collector.history.schema import HistoryFileError
from mast_otel.collector.history.writer import history_files
from mast_otel.collector.report.links import link_maker
from mast_otel.collector.report.pattern_html import render_patterns_html
from mast_otel.collector.report.pattern_text import render_patterns_text
from mast_otel.collector.report.patterns import Comparison, Question, build_report

__all__ = ["add_pattern_arguments", "history_hint", "parse_time", "run_patterns", "wants_patterns"]

DEFAULT_SINCE = "7d"


def add_pattern_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("patterns across runs (the collector's verdict history)")
    g.add_argument("--since", metavar="DURATION", help=f"the window: the last DURATION (30m, 24h, 7d); default "
                   f"{DEFAULT_SINCE} when --from is not given")  # fmt: skip
    g.add_argument("--from", dest="from_", metavar="TIME", help="window start: 2026-11-20, 2026-11-20T08:00 (UTC "
                   "unless an offset is given) or a DURATION ago")  # fmt: skip
    g.add_argument("--to", metavar="TIME", help="window end (default now); as --from")
    g.add_argument("--compare", metavar="WHAT", help="previous (the window before, same length) or "
                   "DIMENSION:NOW,BEFORE, e.g. version:1.4,1.3 (also service:, framework:)")  # fmt: skip
    g.add_argument("--service", metavar="NAME", help="only this service's conversations")
    g.add_argument("--history", metavar="PATH", action="append", default=[],
                   help="a verdict history file (repeatable); default: every one beside --store")  # fmt: skip
    g.add_argument("--trace-url", metavar="SPEC", help="link example traces: jaeger:URL, tempo:GRAFANA_URL, "
                   "phoenix:URL, or a template with {trace_id}")  # fmt: skip
    g.add_argument("--top", type=int, default=25, metavar="N", help="patterns printed (default 25; JSON has all)")
    g.add_argument("--max-agents", type=int, default=20, metavar="N", help="decisive agents kept by name, the "
                   "rest counted as other (default 20)")  # fmt: skip
    g.add_argument("--max-versions", type=int, default=10, metavar="N", help="service versions kept by name, the "
                   "rest counted as other (default 10)")  # fmt: skip


def wants_patterns(args: argparse.Namespace) -> bool:
    return any((args.since, args.from_, args.to, args.compare, args.history))


def parse_time(text: str, now: float) -> float:
    """An ISO 8601 date or date-time (UTC unless it carries an offset), or a duration ago (``7d``)."""
    try:
        return now - seconds(text)
    except ConfigError:
        pass
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is neither a date-time (2026-11-20, 2026-11-20T08:00Z) nor a duration (7d)") from (
            None)  # fmt: skip
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def _question(args: argparse.Namespace, now: float) -> Question:
    end = parse_time(args.to, now) if args.to else now
    if args.from_:
        if args.since:
            raise ValueError("give --since or --from, not both")
        start = parse_time(args.from_, now)
    else:
        try:
            start = end - seconds(args.since or DEFAULT_SINCE)
        except ConfigError as exc:
            raise ValueError(f"--since: {exc}") from None
    if start >= end:
        raise ValueError("the window is empty: --from must be before --to")
    if min(args.top, args.max_agents, args.max_versions) < 1:
        raise ValueError("--top, --max-agents and --max-versions must be at least 1")
    return Question(start, end, Comparison.parse(args.compare) if args.compare else None, args.service,
                    args.max_agents, args.max_versions)  # fmt: skip


def _paths(args: argparse.Namespace) -> list[Path]:
    paths = [Path(p) for p in args.history]
    if args.store:
        found = history_files(args.store)
        if not found and not paths:
            raise FileNotFoundError(f"{args.store}: no verdict history beside this store ({args.store}.history); "
                                    "a collector of this version writes one as it judges")  # fmt: skip
        paths += found
    if not paths:
        raise ValueError("patterns need the verdict history: give --store PATH (the collector's store) or "
                         "--history FILE")  # fmt: skip
    return list(dict.fromkeys(paths))


def history_hint(store: str) -> str:
    """One line after the store's recent verdicts: how many the verdict history holds, and how to read them."""
    total = 0
    for path in history_files(store):
        try:
            with HistoryFile(path) as f:
                total += f.extent()[0]
        except (OSError, HistoryFileError):
            continue
    if not total:
        return ""
    return (
        f"\nThe verdict history beside this store holds {total} verdicts: mast-otel report --store {store} "
        "--since 7d --compare previous\n"
    )


def run_patterns(args: argparse.Namespace, *, now: float | None = None) -> int:
    """The pattern report: text on stdout, ``--json``/``--html`` files. 1 for unreadable input or bad options."""
    now = time.time() if now is None else now
    try:
        question = _question(args, now)
        link = link_maker(args.trace_url)
        paths = _paths(args)
        with ExitStack() as stack:
            files = [stack.enter_context(HistoryFile(p)) for p in paths]
            report = build_report(files, question, link=link)
    except (OSError, ValueError, HistoryFileError) as exc:
        print(f"mast-otel report: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(render_patterns_text(report, top=args.top))
    data: dict[str, Any] = report.to_json()
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=2), encoding="utf-8")
        print(f"JSON report: {args.json}")
    if args.html:
        title = args.title if args.title != "MAST failure modes" else "MAST failure patterns"
        Path(args.html).write_text(render_patterns_html(report, title=title), encoding="utf-8")
        print(f"HTML report: {args.html}")
    return 0
