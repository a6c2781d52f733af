"""``mast-otel``: one console script, one subcommand per job.

Each subcommand lives in its own module exposing ``register(subparsers)``; this file only dispatches, so a
subcommand's heavy imports (grpc, openai) happen only when it runs.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# subcommand -> module with register(subparsers) that sets ``func`` on its parser
SUBCOMMANDS: dict[str, str] = {
    "replay": "mast_otel.replay",
    "collector": "mast_otel.collector.cli",
    "judge": "mast_otel.evaluation.judge_cli",
    "explain": "mast_otel.evaluation.explain_cli",
    "eval": "mast_otel.evaluation.eval_cli",
    "report": "mast_otel.collector.report",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """All subcommands, or only ``only``: a subcommand's dependencies are imported when it is the one chosen."""
    parser = argparse.ArgumentParser(prog="mast-otel", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in SUBCOMMANDS.items():
        if only is not None and name != only:
            continue
        importlib.import_module(module).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(chosen if chosen in SUBCOMMANDS else None).parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
