"""The span adapters' time on a large flat foreign trace, against a baseline measured in the same run.

Issue 23: OpenLLMetry's adapter took 2.9 s on one LangGraph trace of 4,000 ``chat`` and 4,000 ``execute_tool``
spans under one workflow span (a step in it was quadratic). Old and new code cannot both run in one process after
the fix, so each adapter's time is printed as a ratio against a baseline measured on the same spans in the same
run: decoding them from the OTLP protobuf the collector stored into span records, which the collector does for
every conversation before an adapter runs. A linear adapter stays a small constant multiple of the baseline
however many spans there are; a quadratic one grows with the size, which the ``--sizes`` sweep shows. The
before figure, measured on the code before the fix, is in docs/benchmarks.md.

Workloads (synthetic, in each source's real shapes, see tests/data/adapters and ../shared/notes/genai-conventions.md):

- **openllmetry**: ``LangGraph.workflow`` with N ``chat`` spans (``gen_ai.output.messages``) and N ``execute_tool``
  spans, alternating between two graph nodes;
- **openllmetry+openinference**: the same plus one OpenInference LLM span (the mixed run issue 23 describes;
  OpenInference recognises a span, finds no root, and OpenLLMetry's adapter takes over);
- **genai**: an ``invoke_workflow`` root with N/2 ``invoke_agent`` spans of two agents, each with a ``chat`` span
  and an ``execute_tool`` span (content in attributes);
- **genai+logs**: the same spans with their content in log records instead, as Semantic Kernel and the GenAI
  conventions after OTEP 4430 write it (a ``gen_ai.user.message`` and a ``gen_ai.choice`` on each chat span, a
  ``gen_ai.tool.message`` on each tool span: as many records as spans). Its time is the collector's join of the
  records to their spans (``with_log_events``) plus the adapter; its baseline decodes the records too. Issue 41
  asks for 10,000 spans plus 10,000 log records adapted in under 0.5 s: ``--sizes 6666``.

The ``screen s`` column is the part of the adapter's time spent checking every attribute value against the bounds
on what is read (``mast_otel.adapters.screen``: nesting, size; issue 45); the collector runs it three times per
conversation (its own copy, the verdict's adapt, the signals' adapt).

Run from the repository root::

    .venv/bin/python benchmarks/bench_adapters.py [--sizes 1000 2000 4000] [--repeat 3]

Not a timed assertion: it prints figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence

from mast_otel.adapters import Adapted, adapt, screen
from mast_otel.collector.judge.log_events import with_log_events
from mast_otel.collector.store.api import LogRow
from mast_otel.spans import SpanRecord, from_otlp_request

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def _id(n: int) -> str:
    return f"{n + 1:016x}"


def _output(text: str) -> str:
    return json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}])


def openllmetry_trace(n: int, *, openinference_llm: bool = False) -> list[SpanRecord]:
    """A LangGraph workflow traced by OpenLLMetry: n chat spans and n tool spans, flat under the root."""
    root = SpanRecord(TRACE, _id(0), None, "LangGraph.workflow", 0, 10 * n + 10, {
        "traceloop.span.kind": "workflow", "traceloop.workflow.name": "LangGraph",
        "traceloop.entity.input": json.dumps({"inputs": {"messages": [{"role": "user", "content": "task"}]}}),
    })  # fmt: skip
    spans = [root]
    for i in range(n):
        node = ("researcher", "writer")[i % 2]
        spans.append(SpanRecord(TRACE, _id(1 + 2 * i), root.span_id, "chat", 10 * i + 1, 10 * i + 2, {
            "gen_ai.operation.name": "chat", "traceloop.entity.path": f"{node}.call_agent",
            "gen_ai.output.messages": _output(f"reply {i}"),
        }))  # fmt: skip
        spans.append(SpanRecord(TRACE, _id(2 + 2 * i), root.span_id, "execute_tool search", 10 * i + 3, 10 * i + 4, {
            "gen_ai.operation.name": "execute_tool", "traceloop.entity.path": f"{node}.tools",
            "gen_ai.tool.name": "search", "gen_ai.tool.call.arguments": '{"inputs": {"q": 1}}',
            "gen_ai.tool.call.result": "found",
        }))  # fmt: skip
    if openinference_llm:
        spans.append(SpanRecord(TRACE, _id(2 * n + 1), root.span_id, "ChatCompletion", 10 * n + 5, 10 * n + 6,
                                {"openinference.span.kind": "LLM", "llm.system": "openai"}))  # fmt: skip
    return spans


def genai_trace(n: int) -> list[SpanRecord]:
    """An ADK-shaped trace: n/2 invoke_agent spans of two agents, each with one chat and one tool span."""
    root = SpanRecord(TRACE, _id(0), None, "invoke_workflow coordinator", 0, 40 * n + 10, {
        "gen_ai.operation.name": "invoke_workflow", "gen_ai.agent.name": "coordinator"})  # fmt: skip
    spans = [root]
    sid = 1
    for i in range(n // 2):
        agent = ("researcher", "writer")[i % 2]
        base = 40 * i
        inv = SpanRecord(TRACE, _id(sid), root.span_id, f"invoke_agent {agent}", base + 1, base + 30, {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent})  # fmt: skip
        chat = SpanRecord(TRACE, _id(sid + 1), inv.span_id, "chat", base + 2, base + 3, {
            "gen_ai.operation.name": "chat", "gen_ai.output.messages": _output(f"reply {i}")})  # fmt: skip
        tool = SpanRecord(TRACE, _id(sid + 2), inv.span_id, "execute_tool search", base + 4, base + 5, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"})  # fmt: skip
        spans += [inv, chat, tool]
        sid += 3
    return spans


def genai_logs(spans: Sequence[SpanRecord]) -> list[LogRow]:
    """The content of ``genai_trace``'s spans as log records (one per span; the root gets one too)."""
    rows = []
    for i, s in enumerate(spans):
        operation = s.attributes.get("gen_ai.operation.name")
        if operation == "chat":
            choice = {"index": 0, "finish_reason": "stop", "message": {"content": f"reply {i}"}}
            rows.append(_log_row(s, "gen_ai.user.message", json.dumps({"content": f"step {i}"})))
            rows.append(_log_row(s, "gen_ai.choice", json.dumps(choice)))
        elif operation == "execute_tool":
            rows.append(_log_row(s, "gen_ai.tool.message", json.dumps({"content": f"found {i}", "id": f"call_{i}"})))
    while len(rows) < len(spans):  # as many records as spans: the root and the agents' spans carry one each
        rows.append(_log_row(spans[len(rows) % len(spans)], "", "agent started"))
    return rows[: len(spans)]


def _log_row(span: SpanRecord, event: str, body: str) -> LogRow:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

    trace_id, span_id = bytes.fromhex(span.trace_id), bytes.fromhex(span.span_id)
    record = LogRecord(time_unix_nano=span.start_ns, trace_id=trace_id, span_id=span_id,
                       body=AnyValue(string_value=body))  # fmt: skip
    if event:
        record.attributes.append(KeyValue(key="event.name", value=AnyValue(string_value=event)))
    return LogRow(trace_id, span_id, 0.0, record.SerializeToString())


def _stripped(spans: Sequence[SpanRecord]) -> list[SpanRecord]:
    """``spans`` without their content attributes (it is in the log records)."""
    return [SpanRecord(s.trace_id, s.span_id, s.parent_span_id, s.name, s.start_ns, s.end_ns,
                       {k: v for k, v in s.attributes.items() if k != "gen_ai.output.messages"})
            for s in spans]  # fmt: skip


def encoded(spans: Sequence[SpanRecord]) -> bytes:
    """The spans as the OTLP request the collector received them in."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for s in spans:
        span = scope.spans.add(trace_id=bytes.fromhex(s.trace_id), span_id=bytes.fromhex(s.span_id),
                               parent_span_id=bytes.fromhex(s.parent_span_id or ""), name=s.name,
                               start_time_unix_nano=s.start_ns, end_time_unix_nano=s.end_ns)  # fmt: skip
        span.attributes.extend(KeyValue(key=k, value=AnyValue(string_value=str(v))) for k, v in s.attributes.items())
    return request.SerializeToString()


def baseline(raw: bytes) -> list[SpanRecord]:
    """What the collector does with a conversation's spans before any adapter runs: decode the stored OTLP
    protobuf into span records (``Loaded.records``)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    return list(from_otlp_request(ExportTraceServiceRequest.FromString(raw)))


def baseline_logs(raw: bytes, rows: Sequence[LogRow]) -> list[object]:
    """The spans' baseline plus decoding each stored log record, which the join does too."""
    from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

    return [*baseline(raw), *(LogRecord.FromString(r.data) for r in rows)]


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000],
                        help="chat spans (and as many tool spans) per trace")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the best is kept")
    args = parser.parse_args(argv)
    workloads: dict[str, Callable[[int], list[SpanRecord]]] = {
        "openllmetry": openllmetry_trace,
        "openllmetry+openinference": lambda n: openllmetry_trace(n, openinference_llm=True),
        "genai": genai_trace,
    }
    print(f"{'workload':<28}{'spans':>8}{'decode s':>10}{'adapt s':>10}{'ratio':>8}{'screen s':>10}  result")
    ratios: dict[str, list[float]] = {}
    for name, build in workloads.items():
        for n in args.sizes:
            spans = build(n)
            raw = encoded(spans)
            base = best_of(args.repeat, lambda raw=raw: baseline(raw))  # type: ignore[misc]
            result = adapt(spans)
            took = best_of(args.repeat, lambda spans=spans: adapt(spans))  # type: ignore[misc]
            screened = best_of(args.repeat, lambda spans=spans: screen(spans))  # type: ignore[misc]
            _row(name, len(spans), base, took, result, ratios, screened=screened)
    for n in args.sizes:  # genai+logs: the content in log records, joined to the spans, then adapted
        spans = _stripped(genai_trace(n))
        rows = genai_logs(genai_trace(n))
        raw = encoded(spans)
        base = best_of(args.repeat, lambda raw=raw, rows=rows: baseline_logs(raw, rows))  # type: ignore[misc]
        result = adapt(with_log_events(spans, rows))
        took = best_of(args.repeat, lambda s=spans, r=rows: adapt(with_log_events(s, r)))  # type: ignore[misc]
        joined = with_log_events(spans, rows)
        screened = best_of(args.repeat, lambda joined=joined: screen(joined))  # type: ignore[misc]
        _row("genai+logs", len(spans), base, took, result, ratios, records=len(rows), screened=screened)
    print("\nA linear adapter keeps its ratio as the trace grows; a quadratic one's ratio grows with the size.")
    for name, values in ratios.items():
        print(f"{name}: ratio at the largest size / at the smallest = {values[-1] / values[0]:.2f} "
              f"(median ratio {statistics.median(values):.1f})")  # fmt: skip


def _row(name: str, spans: int, base: float, took: float, result: object, ratios: dict[str, list[float]],
         records: int = 0, screened: float = 0.0) -> None:  # fmt: skip
    ratio = took / base
    ratios.setdefault(name, []).append(ratio)
    what = f"{len(result.messages)} messages" if isinstance(result, Adapted) else repr(result)[:40]
    if records:
        what += f", {records} log records"
    print(f"{name:<28}{spans:>8}{base:>10.3f}{took:>10.3f}{ratio:>8.2f}{screened:>10.3f}  {what}")


if __name__ == "__main__":
    main()
