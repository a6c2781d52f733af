"""``mast-otel report``: MAST failure modes across stored traces, by mode, category, framework and service.

The MAST paper's per-system breakdown, for your own system: how many conversations show each of the 14 failure
modes, how they split over the three categories, and how that differs between frameworks and services. Printed
as a terminal table; ``--html`` also writes a self-contained page with charts (inline SVG, no network)::

    mast-otel report spans.jsonl                       # OTLP JSON exported by the collector's downstream
    mast-otel report spans.jsonl --html report.html --json report.json
    mast-otel report --store mast-otel-collector.db    # the collector's recent verdicts (read-only)
    mast-otel report spans.jsonl --conversation TRACE_ID --out conversation.svg   # a picture of one conversation
    mast-otel report --store mast-otel-collector.db --since 7d --compare previous  # patterns across runs

Inputs, any mix:

- OTLP JSON files: one ``{"resourceSpans": [...]}`` document, or JSON Lines with one per line (what an
  OpenTelemetry Collector ``file`` exporter writes, and what ``mast-otel demo`` saves). Labels are read from the
  conversation root (hold mode) or the ``mast.verdict`` span (passthrough mode, or a root that never arrived),
  evidence from the spans carrying ``mast.failure_mode`` and the verdict span's links.
- ``--store PATH``: the collector's SQLite store, opened read-only while the collector runs. It keeps verdicts
  only for ``tombstone_ttl`` (15 minutes by default) and drops span bodies once exported, so it gives recent
  verdicts by service, without evidence span names; keep an OTLP JSON copy of the labelled spans for history.

Patterns across runs (``--since``, ``--from``/``--to``, ``--compare``): read from the collector's verdict history
(``STORE.history``, kept for ``history_retention``), which modes rose or fell, where, and whether the change is
beyond noise; see :mod:`.pattern_cli` and :mod:`.patterns`.

A conversation is counted once per mode, whatever the number of evidence spans. "judged" means
``mast.judge.status`` ok, partial or truncated; error and skipped conversations are listed, never counted as
"no failure".
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mast_otel.collector.report.aggregate import Report
from mast_otel.collector.report.conversations import Conversation, conversations_from_spans
from mast_otel.collector.report.html import jaeger_tag, render_html, traceql
from mast_otel.collector.report.otlp import Span, load_otlp_json, request_to_otlp_json, spans_from_otlp_json
from mast_otel.collector.report.pattern_cli import add_pattern_arguments, history_hint, run_patterns, wants_patterns
from mast_otel.collector.report.picture import pictures_in_trace, render_svg
from mast_otel.collector.report.store import load_store
from mast_otel.collector.report.text import render_text

__all__ = [
    "Conversation",
    "Report",
    "Span",
    "conversations_from_spans",
    "jaeger_tag",
    "load_otlp_json",
    "load_store",
    "register",
    "render_html",
    "render_text",
    "request_to_otlp_json",
    "spans_from_otlp_json",
    "traceql",
]


def register(subparsers: Any) -> None:
    """Add ``report`` to the ``mast-otel`` subcommands."""
    parser = subparsers.add_parser(
        "report",
        help="failure modes across stored traces, by mode, category, framework and service",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    parser.add_argument("files", nargs="*", metavar="FILE", help="OTLP JSON file (one document or JSON Lines)")
    parser.add_argument("--store", metavar="PATH", help="the collector's SQLite store (read-only)")
    parser.add_argument("--html", metavar="FILE", help="also write an HTML page with charts")
    parser.add_argument("--json", metavar="FILE", help="also write the counts as JSON")
    parser.add_argument("--title", default="MAST failure modes", help="title of the HTML page")
    parser.add_argument("--conversation", metavar="TRACE_ID",
                        help="draw this trace's conversation(s): agents, handoffs, messages, evidence (no table)")
    parser.add_argument("--out", metavar="FILE",
                        help="with --conversation: where the picture goes (.svg, or .html for a page; default "
                             "conversation-TRACE_ID.svg)")  # fmt: skip
    add_pattern_arguments(parser)
    parser.set_defaults(func=run)


def load(files: Sequence[str], store: str | None) -> Report:
    """One report over every input given: OTLP JSON files and the store, counted together."""
    return _load(files, store)[0]


def _load(files: Sequence[str], store: str | None) -> tuple[Report, list[Span]]:
    conversations: list[Conversation] = []
    spans: list[Span] = []
    for f in files:
        spans.extend(load_otlp_json(f))
    conversations.extend(conversations_from_spans(spans))
    if store:
        from mast_otel.collector.scaleout.shards import leftover_stores, shard_store

        # A collector run as several processes keeps one store per shard next to the first: read them all.
        for index in [0, *leftover_stores(store, 1)]:
            conversations.extend(load_store(shard_store(store, index)))
    return Report(tuple(conversations)), spans


def _draw(spans: Sequence[Span], trace_id: str, out: str | None) -> int:
    pictures = pictures_in_trace(spans, trace_id.lower())
    if not pictures:
        print(f"mast-otel report: no conversation in trace {trace_id} in the files given", file=sys.stderr)
        return 1
    svgs = [render_svg(p) for p in pictures]
    path = Path(out or f"conversation-{trace_id}.svg")
    if path.suffix == ".html":
        body = "".join(f"<section>{svg}</section>" for svg in svgs)
        path.write_text(f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>conversation {trace_id}'
                        f"</title></head><body>{body}</body></html>\n", encoding="utf-8")  # fmt: skip
        written = [path]
    else:  # an SVG document holds one picture: a trace with several conversations gets NAME-2.svg, ...
        written = [path if i == 0 else path.with_name(f"{path.stem}-{i + 1}{path.suffix}") for i in range(len(svgs))]
        for target, svg in zip(written, svgs, strict=True):
            target.write_text(svg, encoding="utf-8")
    print(f"conversation picture ({len(pictures)} conversation(s)): {', '.join(map(str, written))}")
    return 0


def run(args: argparse.Namespace) -> int:
    """The subcommand: print the text report, write HTML/JSON if asked; 2 for no input, 1 for an unreadable one."""
    if wants_patterns(args) and not args.conversation:
        if args.files:
            print("mast-otel report: patterns come from the verdict history (--store or --history), not from OTLP "
                  "files", file=sys.stderr)  # fmt: skip
            return 2
        return run_patterns(args)
    if not args.files and not args.store:
        print("mast-otel report: give OTLP JSON files and/or --store PATH", file=sys.stderr)
        return 2
    try:
        report, spans = _load(args.files, args.store)
    except (OSError, ValueError) as exc:
        print(f"mast-otel report: {exc}", file=sys.stderr)
        return 1
    if args.conversation:
        return _draw(spans, args.conversation, args.out)
    sys.stdout.write(render_text(report))
    if args.store:
        sys.stdout.write(history_hint(args.store))
    if args.html:
        failed = {c.trace_id for c in report.failed}
        pictures = [render_svg(p) for t in dict.fromkeys(s.trace_id for s in spans) if t in failed
                    for p in pictures_in_trace(spans, t) if p.modes]  # fmt: skip
        Path(args.html).write_text(render_html(report, title=args.title, pictures=pictures), encoding="utf-8")
        print(f"HTML report: {args.html}")
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=2), encoding="utf-8")
        print(f"JSON report: {args.json}")
    return 0
