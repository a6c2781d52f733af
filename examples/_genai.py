"""What the examples of frameworks that trace themselves (OpenTelemetry GenAI spans, no mast-otel integration) share:
the refund-desk scenario and its script, OTLP export of the framework's own spans, and the framework's own record
of the run.

The scenario is the same in all four: ``triage`` hands the customer to ``billing``, which calls the tool
``lookup_order`` and hands a refund proposal to ``reviewer``; the reviewer approves without looking the order up
(MAST 3.2, no or incomplete verification). Offline, the scripted OpenAI-compatible server plays the model, matching
each agent by the ``ROLE_...`` marker in its instructions.

``--solo`` runs one agent instead, ``clerk``, which looks the order up and answers the customer itself: the
control run, not a multi-agent conversation.

``--record PATH`` writes the framework's own record of the run (:class:`Record`, taken from its result objects and
message lists, never from spans) as JSON: the tests and fixture recorder compare the spans against it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

try:
    from examples._cli import console_tracing, endpoint, parse_args
except ImportError:  # run as a script (python examples/x.py): examples/ itself is on sys.path
    from _cli import console_tracing, endpoint, parse_args  # type: ignore[no-redef]

TASK = "I was charged twice for order A17. Please refund the duplicate charge."
ORDER = "order A17: paid once, 49.00 EUR"
PROPOSAL = "Order A17 was charged twice: refund the duplicate 49.00 EUR"
APPROVAL = "Approved: refunding the duplicate 49.00 EUR on A17 looks correct."

TRIAGE_INSTRUCTIONS = "ROLE_TRIAGE. Route the customer to billing for charges and refunds; do not answer yourself."
BILLING_INSTRUCTIONS = "ROLE_BILLING. Look the order up with lookup_order, then send a refund proposal to the reviewer."
REVIEWER_INSTRUCTIONS = "ROLE_REVIEWER. Approve or reject refund proposals; check the order's payments first."
CLERK_INSTRUCTIONS = "ROLE_CLERK. Look the order up with lookup_order and answer the customer yourself."
CLERK_ANSWER = "Order A17 was paid once (49.00 EUR): there is no duplicate charge to refund."

# Content-capture choices every example offers; what each means is the framework's own switch (its module doc).
CONTENT_CHOICES = ("default", "on", "off")


def lookup_order(order_id: str) -> str:
    """Look an order up: its status and payments."""
    return ORDER if order_id == "A17" else f"order {order_id}: not found"


def desk_script(triage: list[Any], billing: list[Any], reviewer: list[Any]) -> dict[str, Any]:
    """The scripted server's rules for the desk: each framework hands off with its own tool, so each example
    passes the replies that name its tools."""
    return {
        "rules": [
            {"match": "ROLE_TRIAGE.", "replies": triage},
            {"match": "ROLE_BILLING.", "replies": billing},
            {"match": "ROLE_REVIEWER.", "replies": reviewer},
            # --solo: one agent with one tool (every framework calls tools alike)
            {"match": "ROLE_CLERK.", "replies": [{"tool": "lookup_order", "args": {"order_id": "A17"}}, CLERK_ANSWER]},
        ],
        "default": "I cannot help with that.",
    }


@dataclass
class Record:
    """The framework's own account of a run: who spoke in order, every message (sender, text; a turn that only
    called tools is the tool names, comma-separated), the handoffs (from, to), the tool calls (agent, tool) other
    than handoffs, and the final output."""

    framework: str
    messages: list[tuple[str, str]] = field(default_factory=list)
    handoffs: list[tuple[str, str]] = field(default_factory=list)
    tools: list[tuple[str, str]] = field(default_factory=list)
    final_output: str = ""

    @property
    def agents(self) -> list[str]:
        """The agents that spoke, in order (repeats collapsed); the task's sender, ``user``, excluded."""
        out: list[str] = []
        for sender, _ in self.messages:
            if sender != "user" and (not out or out[-1] != sender):
                out.append(sender)
        return out

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "agents": self.agents}


def parse(description: str, argv: Sequence[str] | None, content_help: str) -> argparse.Namespace:
    """The shared command line (``--base-url``, ``--model``, ``--api-key``, ``--console``) plus ``--content``
    (the framework's capture switch: ``content_help`` says what each choice sets) and ``--record``."""

    def more(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--content", choices=CONTENT_CHOICES, default="default", help=content_help)
        parser.add_argument("--solo", action="store_true", help="one agent (clerk) with one tool, not the desk")
        parser.add_argument("--record", type=Path, default=None, metavar="PATH",
                            help="write the framework's own record of the run here (JSON)")  # fmt: skip

    return parse_args(description, argv, more)


def tracing(args: argparse.Namespace, service: str) -> Any:
    """The global tracer provider the framework writes to: one printing spans with ``--console``, else OTLP/gRPC to
    ``$OTEL_EXPORTER_OTLP_ENDPOINT`` (default localhost:4317), as ``$OTEL_SERVICE_NAME`` (default ``service``).
    With ``OTEL_LOGS_EXPORTER=otlp`` the log records the framework writes through OpenTelemetry's logs API (message
    text, where its settings put it there) go to the same endpoint (the global logger provider)."""
    from opentelemetry import trace

    if args.console:
        console_tracing()
        return trace.get_tracer_provider()
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    name = os.environ.get("OTEL_SERVICE_NAME") or service
    resource = Resource.create({"service.name": name})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(insecure=True)))
    trace.set_tracer_provider(provider)
    if os.environ.get("OTEL_LOGS_EXPORTER") == "otlp":
        _logging(resource)
    return provider


def _logging(resource: Any) -> None:
    """The global logger provider, exporting OTLP/gRPC (flushed when the process exits)."""
    from opentelemetry._logs import set_logger_provider
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

    logs = LoggerProvider(resource=resource)
    logs.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter(insecure=True)))
    set_logger_provider(logs)


def finish(args: argparse.Namespace, record: Record, provider: Any) -> int:
    """Print the final output, write the record if asked, and export what is buffered before the process exits."""
    print(f"{record.agents[-1] if record.agents else '?'}: {record.final_output}")
    if args.record is not None:
        args.record.write_text(json.dumps(record.as_json(), indent=1) + "\n", encoding="utf-8")
    shutdown: Callable[[], Any] | None = getattr(provider, "shutdown", None)
    if shutdown is not None:
        shutdown()
    return 0


Run = Callable[[str, str, str], Coroutine[Any, Any, Record]]


def run_desk(args: argparse.Namespace, script: dict[str, Any], run: Run, solo: Run | None = None) -> Record:
    """The desk's ``run(base_url, model, api_key)`` (``solo`` with ``--solo``) against the scripted server
    (default) or ``--base-url``."""
    api_key = args.api_key or os.environ.get("OPENAI_API_KEY") or "unused"
    chosen = solo if args.solo else run
    if chosen is None:
        raise SystemExit("--solo: this example has no solo run")
    with endpoint(args.base_url, script) as base_url:
        return asyncio.run(chosen(base_url, args.model or "gpt-4o-mini", api_key))
