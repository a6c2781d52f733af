"""``mast-otel replay FILE``: recorded MAS traces (step-list JSON, see ``mast_otel.steplist``) sent as live spans.

Each record is replayed through the same :class:`~mast_otel.recorder.Recorder` a live run uses, so a recorded
trace yields the span shapes an instrumented run yields, and the collector and the judge cannot tell them apart
except by the ``mast.replay.*`` attributes. Uses: demos, load tests, judge evaluation against reference labels::

    mast-otel replay ../shared/mast-data/parsers_output/ag2_output_mad.json --limit 20 --rate 2
    mast-otel replay FILE --endpoint http://127.0.0.1:4318/v1/traces     # OTLP/HTTP instead of OTLP/gRPC
    mast-otel replay ../shared/whowhen/algorithm-generated                # Who&When runs (mast_otel.whowhen)
    mast-otel replay Who\\&When/Hand-Crafted                               # Who&When's Magentic-One runs

Library use: :func:`replay_records` (records into any recorder) and :func:`spans_for_record` (one record as
``SpanRecord``\\ s, in memory, no network: what ``mast-otel judge`` reads step-list files with).

How a record becomes spans. The step lists keep who spoke, what, and in which order, and nothing else; where
the data is silent the choice is made here and stated:

- **Root**: one conversation per record, named after ``mas_name``, ``mast.framework`` = ``mas_name``
  lowercased, task = the first step's content. The root also carries the record's origin
  (``mast.replay.trace_key``, ``.mad_trace_key``, ``.trace_id``, ``.record_index``, ``.benchmark``, ``.llm``)
  and its reference labels: ``mast.reference.fm.1_3`` = true/false for every labelled mode and
  ``mast.reference.failure_modes`` (the present ones).
- **Steps**: the first step is the initiator stating the task, recorded as a message with no agent turn, as
  ``initiate_chat`` / MetaGPT's ``Team.run(idea)`` send it live. Every later step is an agent turn
  (``invoke_agent``) followed by its message span, siblings under the root as the AG2 integration records them.
  Kinds map one to one (message, tool_call, tool_result); any other recorded kind (the AG2 MMLU traces' group
  manager introduction is ``system``) becomes a message carrying ``mast.replay.step_kind``.
- **Recipients** (the data names none): a step is addressed to the next agent after it that is not its sender,
  i.e. whoever reacts to it; steps after the last change of speaker are addressed to the previous other agent
  (the one they answer); a ``system`` step is addressed to every other agent.
- **Handoffs**: one whenever the speaking agent changes, reason ``routing`` (the data does not say how the next
  speaker was chosen; MetaGPT routes by watch/send_to and an AG2 two-agent chat replies to the sender, both
  routing), candidates = the record's agents.
- **Termination is inferred**, and ``mast.termination.detail`` says so and why: the last message contains
  ``TERMINATE``, or satisfies an AG2 termination condition the recorded systems used (MathChat: a ``\\boxed{}``
  answer with no code; the MMLU group: ``SOLUTION_FOUND``) -> ``termination_message``; ``n_turns`` at the
  framework's known maximum (MetaGPT: 6, the requirement plus ``n_round=5``) -> ``max_rounds``; otherwise
  ``completed``.
- **Magentic-One** (Who&When's hand-crafted runs, ``mas_name`` ``Magentic-One``): the log says more than a step
  list (the orchestrator's role names its act and the instruction's addressee), so it is replayed by
  :mod:`mast_otel.magentic_one` as the autogen-agentchat integration records a live Magentic-One run; the rules
  above (recipients, routing handoffs, inferred termination) are for the other records.
- **Time**: the data has no timestamps; spans are created now, in order (``mast.message.index`` is the step
  order), so only the order is the recording's.

About 450 lines, a third of them this docstring: the step-list rules, the OTLP sending (rate, endpoint) and the
CLI are one path a reader follows top to bottom; Who&When's formats live in :mod:`mast_otel.whowhen` and
:mod:`mast_otel.magentic_one`.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util.types import AttributeValue

from . import magentic_one
from . import semconv as sc
from .config import CaptureConfig
from .recorder import Recorder
from .spans import SpanRecord, from_readable_span
from .steplist import StepListError, StepRecord, load_steplist
from .whowhen import WhoWhenError, is_whowhen_document, load_whowhen, parse_run, to_step_record

__all__ = [
    "DEFAULT_ENDPOINT",
    "DEFAULT_SERVICE_NAME",
    "exporter_for_endpoint",
    "infer_termination",
    "load_records",
    "recipients_for",
    "register",
    "replay_record",
    "replay_records",
    "root_attributes",
    "spans_for_record",
]

DEFAULT_ENDPOINT = "http://127.0.0.1:4317"
DEFAULT_SERVICE_NAME = "mast-otel-replay"
_DEFAULT_GRPC_PORT = 4317
_HTTP_PATH = "/v1/traces"

# Recorded step kinds -> mast.message.kind; anything else is a message tagged with its recorded kind.
_KINDS = {"message": sc.KIND_MESSAGE, "tool_call": sc.KIND_TOOL_CALL, "tool_result": sc.KIND_TOOL_RESULT}
_ANNOUNCEMENT = "system"  # a group manager's introduction, addressed to everyone
# Known round limits, in steps (the initial message included), by framework. MetaGPT's multi-agent example, which
# the MAD MetaGPT traces come from, runs Team.run(n_round=5): the requirement plus five messages.
KNOWN_MAX_TURNS: dict[str, int] = {"metagpt": 6}
_BOXED_ANSWER = re.compile(r"\\boxed\{")
_CODE_BLOCK = re.compile(r"```\s*(python|wolfram)", re.IGNORECASE)


# -- input -------------------------------------------------------------------------------
def load_records(path: str | Path) -> list[StepRecord]:
    """Records from a step-list JSON file, a Who&When run file, or a directory of Who&When runs.

    Raises :class:`StepListError` or :class:`WhoWhenError` for malformed input, ``OSError`` if unreadable.
    """
    source = Path(path)
    if source.is_dir():
        return [to_step_record(run, i) for i, run in enumerate(load_whowhen(source))]
    text = source.read_text(encoding="utf-8")
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise WhoWhenError(f"{source.name}: not JSON ({exc.msg} at line {exc.lineno})") from None
        if is_whowhen_document(data):
            return [to_step_record(parse_run(data, source.name))]
    return load_steplist(source)


# -- one record -> recorder calls ------------------------------------------------------
def recipients_for(record: StepRecord) -> list[list[str]]:
    """Each step's recipients, by the rule in the module docstring (the data records none)."""
    steps = record.steps
    out: list[list[str]] = [[] for _ in steps]
    following: str | None = None  # the nearest later agent that differs, scanning backwards
    for i in range(len(steps) - 1, -1, -1):
        if i + 1 < len(steps) and steps[i + 1].agent != steps[i].agent:
            following = steps[i + 1].agent
        if following is not None and following != steps[i].agent:
            out[i] = [following]
    preceding: str | None = None
    for i, step in enumerate(steps):
        if i > 0 and steps[i - 1].agent != step.agent:
            preceding = steps[i - 1].agent
        if not out[i] and preceding is not None and preceding != step.agent:
            out[i] = [preceding]
        if step.kind == _ANNOUNCEMENT:
            out[i] = [a for a in record.agents if a != step.agent]
    return out


def infer_termination(record: StepRecord) -> tuple[str, str]:
    """(``mast.termination.reason``, detail) inferred from the record, as the module docstring describes."""
    last = record.steps[-1]
    said = f"the last message ({last.agent})"
    if "TERMINATE" in last.content:
        return sc.TERMINATION_MESSAGE, f"inferred: {said} contains TERMINATE"
    if record.framework == "ag2":
        if "SOLUTION_FOUND" in last.content:
            return sc.TERMINATION_MESSAGE, f"inferred: {said} contains SOLUTION_FOUND"
        if _BOXED_ANSWER.search(last.content) and not _CODE_BLOCK.search(last.content):
            return sc.TERMINATION_MESSAGE, f"inferred: {said} gives a \\boxed{{}} answer with no code (MathChat)"
    limit = KNOWN_MAX_TURNS.get(record.framework)
    if limit is not None and record.n_turns >= limit:
        return sc.TERMINATION_MAX_ROUNDS, f"inferred: {record.n_turns} turns, the known maximum for {record.mas_name}"
    return sc.TERMINATION_COMPLETED, "inferred: no termination signal in the record"


def root_attributes(record: StepRecord) -> dict[str, AttributeValue]:
    """The record's origin and reference labels, for its conversation root."""
    attrs: dict[str, AttributeValue] = {
        sc.REPLAY_TRACE_KEY: record.trace_key,
        sc.REPLAY_MAD_TRACE_KEY: record.mad_trace_key,
        sc.REPLAY_TRACE_ID: record.trace_id,
        sc.REPLAY_RECORD_INDEX: record.index,
    }
    if record.benchmark_name is not None:
        attrs[sc.REPLAY_BENCHMARK] = record.benchmark_name
    if record.llm_name is not None:
        attrs[sc.REPLAY_LLM] = record.llm_name
    if record.mast_annotation:
        for mode, present in record.mast_annotation.items():
            attrs[sc.reference_fm_attribute(mode)] = present
        attrs[sc.REFERENCE_FAILURE_MODES] = list(record.reference_modes)
    for key, value in record.references.items():
        attrs[sc.REFERENCE_PREFIX + key] = value
    return attrs


def replay_record(record: StepRecord, recorder: Recorder) -> None:
    """Replay one record as one conversation, in a fresh context: it never joins a conversation already open."""
    token = otel_context.attach(Context())
    try:
        _replay(record, recorder)
    finally:
        otel_context.detach(token)


def _replay(record: StepRecord, recorder: Recorder) -> None:
    if record.mas_name == magentic_one.MAS_NAME:
        magentic_one.replay(record, recorder, root_attributes(record))
        return
    recipients = recipients_for(record)
    candidates = list(record.agents)
    with recorder.conversation(
        record.mas_name,
        task=record.task,
        max_rounds=KNOWN_MAX_TURNS.get(record.framework),
        framework=record.framework,
        attributes=root_attributes(record),
    ):
        for i, step in enumerate(record.steps):
            if i > 0:
                previous = record.steps[i - 1].agent
                if step.agent != previous:
                    recorder.handoff(previous, step.agent, reason=sc.HANDOFF_ROUTING, candidates=candidates)
                turn = recorder.start_agent_turn(step.agent)
                if turn is not None:
                    turn.end(replied=True)
            kind = _KINDS.get(step.kind)
            recorder.message(
                step.agent,
                recipients[i],
                step.content,
                kind=kind or sc.KIND_MESSAGE,
                attributes=None if kind else {sc.REPLAY_STEP_KIND: step.kind},
            )
        reason, detail = infer_termination(record)
        recorder.terminate(reason, detail=detail)


def replay_records(
    records: Iterable[StepRecord],
    recorder: Recorder,
    *,
    rate: float = 0.0,
    after_each: Callable[[StepRecord], bool | None] | None = None,
) -> int:
    """Replay records in order, at most ``rate`` conversations per second (0: as fast as possible).

    ``after_each`` runs after every record; returning False stops the replay. Returns the number replayed.
    """
    start = time.monotonic()
    count = 0
    for record in records:
        if rate > 0:
            delay = start + count / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        replay_record(record, recorder)
        count += 1
        if after_each is not None and after_each(record) is False:
            break
    return count


def spans_for_record(
    record: StepRecord, *, config: CaptureConfig | None = None, service_name: str = DEFAULT_SERVICE_NAME
) -> list[SpanRecord]:
    """One record's spans, made in memory by the recorder: the root first, then in the order they ended.

    ``config`` defaults to ``CaptureConfig.from_env()`` (content on, 8192-character cap, redaction), as in a
    live run; pass ``CaptureConfig.from_env(max_content_length=0)`` to keep every character.
    """
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}), shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    replay_record(record, Recorder(tracer_provider=provider, config=config, framework=record.framework))
    provider.shutdown()
    spans = [from_readable_span(s) for s in exporter.get_finished_spans()]
    return sorted(spans, key=lambda s: not s.is_conversation_root)  # stable: the rest keep their order


# -- export ----------------------------------------------------------------------------
def exporter_for_endpoint(endpoint: str, *, timeout: float = 10.0) -> SpanExporter:
    """``http://host:port`` (or ``host:port``) -> OTLP/gRPC; a URL ending in ``/v1/traces`` -> OTLP/HTTP."""
    url = endpoint.strip()
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"endpoint {endpoint!r}: use http://host:port (OTLP/gRPC) or a URL ending in {_HTTP_PATH}")
    if parts.path.rstrip("/").endswith(_HTTP_PATH):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HTTPExporter

        return HTTPExporter(endpoint=url, timeout=timeout)
    if parts.path not in ("", "/"):
        raise ValueError(
            f"endpoint {endpoint!r} has a path but not {_HTTP_PATH}: use http://host:port for OTLP/gRPC "
            f"or a URL ending in {_HTTP_PATH} for OTLP/HTTP"
        )
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GRPCExporter

    port = parts.port or _DEFAULT_GRPC_PORT
    return GRPCExporter(endpoint=f"{parts.hostname}:{port}", insecure=parts.scheme == "http", timeout=timeout)


def _address(endpoint: str) -> tuple[str, int]:
    """The (host, port) an endpoint accepted by :func:`exporter_for_endpoint` connects to."""
    parts = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    if parts.port is not None:
        port = parts.port
    elif parts.path.rstrip("/").endswith(_HTTP_PATH):
        port = 443 if parts.scheme == "https" else 80
    else:
        port = _DEFAULT_GRPC_PORT
    return parts.hostname or "127.0.0.1", port


class _Tally(SpanProcessor):
    """Counts spans ended; with :class:`_CountingExporter`, tells how many are still queued."""

    def __init__(self) -> None:
        self.ended = 0
        self._lock = threading.Lock()

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            self.ended += 1


class _CountingExporter(SpanExporter):
    """Delegates to the real exporter and counts spans delivered and refused."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.exported = 0
        self.failed = 0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        with self._lock:
            if result is SpanExportResult.SUCCESS:
                self.exported += len(spans)
            else:
                self.failed += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


# -- CLI ---------------------------------------------------------------------------------
_QUEUE_SIZE = 8192
_HIGH_WATER = 2048  # spans queued before the replay waits for the exporter (so the queue never drops)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="replay recorded traces (step-list JSON) as live spans to an OTLP endpoint",
        description=(
            "Replay recorded MAS traces (step-list JSON) through the mast-otel recorder as live spans, one "
            "conversation per record, to an OTLP endpoint. Termination reasons are inferred from the records."
        ),
    )
    parser.add_argument(
        "file",
        metavar="FILE",
        help="step-list JSON file (a list of {steps, metadata} records), a Who&When run file, or a directory of them",
    )
    parser.add_argument(
        "--endpoint",
        default=DEFAULT_ENDPOINT,
        metavar="URL",
        help=f"http://host:port for OTLP/gRPC, a URL ending in {_HTTP_PATH} for OTLP/HTTP (default {DEFAULT_ENDPOINT})",
    )
    parser.add_argument("--limit", type=_non_negative_int, default=0, metavar="N", help="replay at most N records")
    parser.add_argument("--offset", type=_non_negative_int, default=0, metavar="N", help="skip the first N records")
    parser.add_argument(
        "--rate", type=_non_negative_float, default=0.0, metavar="N", help="conversations per second (0: unlimited)"
    )
    parser.add_argument("--service-name", default=DEFAULT_SERVICE_NAME, help="service.name of the replayed spans")
    parser.add_argument(
        "--timeout", type=_non_negative_float, default=10.0, metavar="SECONDS", help="per export request"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """The ``replay`` subcommand: 0 on success, 1 if the endpoint refused spans, 2 on a bad file or endpoint."""
    try:
        records = load_records(args.file)
    except (StepListError, WhoWhenError) as exc:
        return _fail(str(exc), 2)
    except OSError as exc:
        return _fail(f"cannot read {args.file}: {exc.strerror or exc}", 2)
    end = args.offset + args.limit if args.limit else None
    selected = records[args.offset : end]
    try:
        exporter = _CountingExporter(exporter_for_endpoint(args.endpoint, timeout=args.timeout))
    except ValueError as exc:
        return _fail(str(exc), 2)
    try:
        with socket.create_connection(_address(args.endpoint), timeout=5.0):
            pass
    except OSError as exc:
        return _fail(f"cannot connect to {args.endpoint}: {exc.strerror or exc}", 1)

    tally = _Tally()
    provider = TracerProvider(resource=Resource.create({"service.name": args.service_name}), shutdown_on_exit=False)
    batch = BatchSpanProcessor(exporter, max_queue_size=_QUEUE_SIZE, schedule_delay_millis=500)
    provider.add_span_processor(tally)
    provider.add_span_processor(batch)
    recorder = Recorder(tracer_provider=provider, framework="replay")

    def after_each(record: StepRecord) -> bool:
        if exporter.failed:
            return False  # the endpoint is refusing: stop rather than retry batch after batch
        if tally.ended - exporter.exported - exporter.failed > _HIGH_WATER:
            batch.force_flush()
        return True

    started = time.monotonic()
    try:
        count = replay_records(selected, recorder, rate=args.rate, after_each=after_each)
        provider.force_flush()
    finally:
        provider.shutdown()
    elapsed = time.monotonic() - started
    if exporter.failed or exporter.exported < tally.ended:
        lost = tally.ended - exporter.exported
        return _fail(
            f"{args.endpoint} did not accept {lost} of {tally.ended} spans "
            f"({count} conversations replayed in {elapsed:.2f} s)",
            1,
        )
    print(f"replayed {count} conversations, {exporter.exported} spans to {args.endpoint} in {elapsed:.2f} s")
    return 0


def _fail(message: str, code: int) -> int:
    print(f"mast-otel replay: error: {message}", file=sys.stderr)
    return code


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value
