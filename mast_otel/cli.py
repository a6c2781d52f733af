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
    "judge": "mast_otel.judge.cli",
    "eval": "mast_otel.judge.eval_cli",
    "report": "mast_otel.collector.report",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mast-otel", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in SUBCOMMANDS.values():
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and module.startswith(exc.name):
                continue  # subcommand not part of this build
            raise
        mod.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
