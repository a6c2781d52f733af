"""``mast-otel explain FILE``: why each run in an OTLP JSON file would be judged or not, offline.

Prints one JSON object per run (JSON Lines), as the collector would read it: ``judged``, the ``reader`` that read
it (``genai``, ``openinference``, ``mapping:<name>``...), what it ``found`` (framework, agents, messages and how many
carry text, handoffs, tool calls, the task) and what is ``missing`` (the content switch to turn on, no task, values
left out), then one object per trace in which no run was found, saying what marks one::

    mast-otel explain trace.otlp.json
    mast-otel explain trace.otlp.json --span-mapping my-schema.yaml --run-id-attributes app.run_id

The collector logs the same facts of every run it reads at ``--log-level debug``.
"""

from __future__ import annotations

import argparse
import json
import sys

from mast_otel.adapters.explain import explain
from mast_otel.adapters.mapping import MappingError

from .judge_cli import add_reading_options, span_mappings
from .steplist_input import otlp_spans


def run(args: argparse.Namespace) -> int:
    try:
        mappings = span_mappings(args)
        with open(args.file, encoding="utf-8") as fh:
            spans = otlp_spans(fh.read())
    except (OSError, ValueError, MappingError) as exc:
        print(f"mast-otel explain: {exc}", file=sys.stderr)
        return 2
    for found in explain(spans, args.run_id_attributes, mappings):
        print(json.dumps(found.as_dict(), ensure_ascii=False), flush=True)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    doc = __doc__ or ""
    parser = subparsers.add_parser("explain", help=doc.splitlines()[0], description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("file", help="OTLP JSON (resourceSpans), one document or one per line")
    add_reading_options(parser)
    parser.set_defaults(func=run)
