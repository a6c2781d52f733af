"""Command-line plumbing the examples share: the offline/real-server switch and ``--console`` span printing."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from mast_otel import semconv as sc

try:
    from examples.scripted_openai import ScriptedOpenAI
except ImportError:  # an example run as a script (python examples/x.py): examples/ itself is on sys.path
    from scripted_openai import ScriptedOpenAI  # type: ignore[no-redef]

# Defined here, not in _scripted (which imports AG2), so examples of frameworks in other environments share it.
BASE_URL_ENV = "MAST_OTEL_EXAMPLE_BASE_URL"

# Shown per span by --console, when present, in this order.
_SHOWN = (
    sc.MESSAGE_INDEX,
    sc.MESSAGE_KIND,
    sc.MESSAGE_CONTENT,
    sc.HANDOFF_REASON,
    sc.GEN_AI_TOOL_CALL_ARGUMENTS,
    sc.TERMINATION_REASON,
    sc.CONVERSATION_ROUNDS,
    sc.CONVERSATION_MAX_ROUNDS,
)
_WIDTH = 70


def parse_args(
    description: str,
    argv: Sequence[str] | None = None,
    more: Callable[[argparse.ArgumentParser], None] | None = None,
) -> argparse.Namespace:
    """The options every example shares; ``more`` adds an example's own."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--base-url",
        default=os.environ.get(BASE_URL_ENV) or None,
        metavar="URL",
        help=f"an OpenAI-compatible server, e.g. http://127.0.0.1:8011/v1 (default: ${BASE_URL_ENV}, else offline "
        "with scripted replies)",
    )
    parser.add_argument("--model", default=None, help="model name on that server")
    parser.add_argument("--api-key", default=None, help="API key for that server (default: $OPENAI_API_KEY)")
    parser.add_argument(
        "--console", action="store_true", help="print spans here instead of exporting OTLP to localhost:4317"
    )
    if more is not None:
        more(parser)
    return parser.parse_args(argv)


@contextmanager
def endpoint(base_url: str | None, script: Mapping[str, Any]) -> Iterator[str]:
    """``base_url`` when the run was given a server; else the scripted server answering ``script``, on a free
    127.0.0.1 port for the length of the block (the offline default of every example that talks to a model).
    An empty ``base_url`` counts as none given, as an empty ``$MAST_OTEL_EXAMPLE_BASE_URL`` does."""
    if base_url:
        yield base_url
        return
    with ScriptedOpenAI(script) as server:
        yield server.base_url


def console_tracing() -> None:
    """Install a global provider printing one line per span; ``mast_otel.instrument()`` then uses it."""
    provider = TracerProvider(resource=Resource.create({"service.name": "mast-otel-example"}))
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(formatter=_one_line)))
    trace.set_tracer_provider(provider)


def _one_line(span: ReadableSpan) -> str:
    attrs = span.attributes or {}
    parts = [span.name]
    for key in _SHOWN:
        if key in attrs:
            value = str(attrs[key]).replace("\n", " ")
            if len(value) > _WIDTH:
                value = value[: _WIDTH - 3] + "..."
            parts.append(f"{key.rsplit('.', 1)[-1]}={value}")
    return "  ".join(parts) + "\n"


def flush() -> None:
    """Export what is buffered before the process exits (OTLP batches otherwise wait for the interpreter's exit)."""
    provider = trace.get_tracer_provider()
    force_flush = getattr(provider, "force_flush", None)
    if callable(force_flush):
        force_flush()
