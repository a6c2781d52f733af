"""``mast-otel judge FILE``: label the conversations in a step-list JSON or OTLP JSON file, offline.

Prints one JSON object per conversation (JSON Lines) with ``trace_key`` and ``prompt_tokens`` (o200k_base, all
chunks), plus ``verdict`` unless ``--dry-run``::

    mast-otel judge ../shared/mast-data/parsers_output/ag2_output_mad.json --dry-run --limit 5
    MAST_OTEL_JUDGE_BASE_URL=http://127.0.0.1:8080/v1 mast-otel judge trace.otlp.json
    mast-otel judge FILE --no-model                   # no model: structural signals only, verdicts skipped

Endpoint options override the ``MAST_OTEL_JUDGE_*`` environment (see ``mast_otel.judge.config``); the API key is
read from the environment only, so it never appears in a shell history or a process list.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mast_otel.adapters import Ignored, SpanMapping, load_mappings
from mast_otel.collector._values import text_list
from mast_otel.judge.config import RESPONSE_FORMATS, JudgeConfig
from mast_otel.judge.foreign import to_foreign
from mast_otel.judge.llm import LLMJudge
from mast_otel.judge.model import Judge, Verdict
from mast_otel.judge.prepared import Prepared
from mast_otel.judge.rules import NoModelJudge

from .steplist_input import Conversation, load_conversations

__all__ = ["add_judge_options", "config_from_args", "register", "verdict_dict"]


def add_judge_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by ``judge`` and ``eval``."""
    parser.add_argument("--limit", type=int, default=None, help="judge at most N conversations per file")
    parser.add_argument("--no-model", action="store_true",
                        help="call no model even if one is configured: structural signals only (no MAST labels)")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint (env MAST_OTEL_JUDGE_BASE_URL)")
    parser.add_argument("--model", help="judge model (env MAST_OTEL_JUDGE_MODEL)")
    parser.add_argument("--temperature", type=float, help="sampling temperature (default 0)")
    parser.add_argument("--timeout", type=float, dest="timeout_s", help="seconds per request (default 120)")
    parser.add_argument("--max-retries", type=int, help="transport retries (default 4)")
    parser.add_argument("--concurrency", type=int, help="requests in flight (default 4)")
    parser.add_argument("--token-budget", type=int, help="prompt tokens per request, o200k_base (default 12000)")
    parser.add_argument("--max-tokens", type=int, dest="max_output_tokens", help="completion tokens (default 2048)")
    parser.add_argument("--max-chunks", type=int, help="chunks a long transcript may be split into (default 6)")
    parser.add_argument("--response-format", choices=RESPONSE_FORMATS, help="structured output mode (default auto)")
    parser.add_argument("--cache-dir", help="directory for the verdict cache (env MAST_OTEL_JUDGE_CACHE)")
    add_reading_options(parser)


def add_reading_options(parser: argparse.ArgumentParser) -> None:
    """How an OTLP file's runs are read, as the collector's options of the same names read them."""
    parser.add_argument("--span-mapping", metavar="FILE",
                        help="YAML file of your own span mappings (as the collector's --span-mapping)")
    parser.add_argument("--run-id-attributes", metavar="KEY,...", type=text_list, default=(),
                        help="span attributes whose value names one run (as the collector's option)")  # fmt: skip


def span_mappings(args: argparse.Namespace) -> tuple[SpanMapping, ...]:
    """The mappings ``--span-mapping`` names (ValueError, with where, for a file that cannot be used)."""
    return load_mappings(Path(args.span_mapping)) if args.span_mapping else ()


def config_from_args(args: argparse.Namespace) -> JudgeConfig:
    from pathlib import Path

    keys = ("base_url", "model", "temperature", "timeout_s", "max_retries", "concurrency", "token_budget",
            "max_output_tokens", "max_chunks", "response_format")  # fmt: skip
    overrides: dict[str, Any] = {k: getattr(args, k, None) for k in keys}
    if getattr(args, "cache_dir", None):
        overrides["cache_dir"] = Path(args.cache_dir)
    return JudgeConfig.from_env(**overrides)


def verdict_dict(v: Verdict) -> dict[str, Any]:
    """A verdict as plain JSON."""
    return {
        "status": v.status,
        "source": v.source,
        "failed": v.failed,
        "failure_modes": list(v.failure_modes),
        "modes": [
            {"mode": m.mode_id, "evidence_span_ids": list(m.evidence_span_ids), "reason": m.reason} for m in v.modes
        ],
        "summary": v.summary,
        "task_completed": v.task_completed,
        "model": v.model,
        "tokens_in": v.tokens_in,
        "tokens_out": v.tokens_out,
        "cost_usd": v.cost_usd,
        "status_reason": v.status_reason,
        "extra": dict(v.extra),
    }


def prepared_dict(conv: Conversation, prep: Prepared) -> dict[str, Any]:
    return {
        "trace_key": conv.trace_key,
        "prompt_tokens": sum(prep.prompt_tokens),
        "chunk_prompt_tokens": list(prep.prompt_tokens),
        "transcript_tokens": prep.transcript_tokens,
        "chunks": len(prep.plan.chunks),
        "truncated": prep.plan.truncated,
        "compaction": prep.plan.describe(),
        "signals": [f"{s.mode_id}:{s.name}" for s in prep.signals],
        "spans": len(conv.spans),
        **({"source": conv.adapted.source, "framework": conv.adapted.framework} if conv.adapted else {}),
        **({"ignored": [_ignored_dict(i) for i in conv.ignored]} if conv.ignored else {}),
    }


def _ignored_dict(ignored: Ignored) -> dict[str, str]:
    """An attribute value left out (too deep or too large to read), as plain JSON: where it was and why."""
    return {"span_id": ignored.span_id, "key": ignored.key, "reason": ignored.reason,
            **({"event": ignored.event} if ignored.event else {})}  # fmt: skip


def judge_file(args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    """Prepare (and unless dry-run, judge) every conversation; results in input order."""
    config = config_from_args(args)
    llm = LLMJudge(config)
    judge: Judge = NoModelJudge() if args.no_model or not config.llm_configured else llm
    conversations = list(load_conversations(args.file, limit=args.limit, mappings=span_mappings(args),
                                            run_keys=args.run_id_attributes))  # fmt: skip

    def one(conv: Conversation) -> dict[str, Any]:
        prep = llm.prepare(conv.spans)
        row = prepared_dict(conv, prep)
        if args.show_prompt:
            row["prompt"] = [list(p) for p in prep.prompts]
        if not args.dry_run:
            verdict = llm.judge_prepared(prep) if judge is llm else judge.judge(conv.spans)
            if conv.adapted is not None:  # evidence on the spans the user has, not the adapter's synthetic ones
                verdict = to_foreign(verdict, conv.adapted)
            row["verdict"] = verdict_dict(verdict)
        return row

    if args.dry_run or judge is not llm:
        yield from map(one, conversations)
        return
    with ThreadPoolExecutor(max_workers=config.concurrency) as pool:
        yield from pool.map(one, conversations)


def run(args: argparse.Namespace) -> int:
    if not args.dry_run and not args.no_model:
        config = config_from_args(args)
        if not config.llm_configured:
            print(
                "mast-otel judge: no judge endpoint configured (set MAST_OTEL_JUDGE_BASE_URL or "
                "MAST_OTEL_JUDGE_MODEL, or pass --base-url/--model): structural signals only, no MAST labels",
                file=sys.stderr,
            )
    try:
        for row in judge_file(args):
            print(json.dumps(row, ensure_ascii=False), flush=True)
    except (OSError, ValueError) as exc:
        print(f"mast-otel judge: {exc}", file=sys.stderr)
        return 2
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    doc = __doc__ or ""
    parser = subparsers.add_parser("judge", help=doc.splitlines()[0], description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("file", help="step-list JSON (a list of records) or OTLP JSON (resourceSpans)")
    parser.add_argument("--dry-run", action="store_true", help="build the prompts and count tokens; call no model")
    parser.add_argument("--show-prompt", action="store_true", help="include the prompt messages in the output")
    add_judge_options(parser)
    parser.set_defaults(func=run)
