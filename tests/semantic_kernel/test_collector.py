"""Semantic Kernel's own telemetry, live, through a real collector process: its orchestrations write a trace per
runtime message and AgentGroupChat a trace per turn, with the model's text in log records only; each run is one
judged conversation, labelled once, on its first agent's turn, with nothing lost and nothing added.

The program is set up as Semantic Kernel's telemetry docs show (the switches, a tracer provider and a logger
provider with batch processors and OTLP/HTTP exporters, the logging handler for Semantic Kernel's loggers), at the
SDK's default batch delays, against a collector with the default quiet period: the timing a user's run has. The
runs are the capture recorder's (tests/captures/record_semantic_kernel.py), so the oracle is Semantic Kernel's
own record of each run. Runs in ``nox -s semantic_kernel``; skipped elsewhere."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from pathlib import Path

from tests.adapters._require import framework

os.environ.update({  # read when Semantic Kernel is first imported (the check below imports it)
    "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS": "true",
    "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE": "true",
})  # fmt: skip
framework("semantic_kernel", "semantic_kernel", "opentelemetry.exporter.otlp.proto.http")

from opentelemetry import trace  # noqa: E402
from opentelemetry._logs import set_logger_provider  # noqa: E402
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler  # noqa: E402
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from examples.scripted_openai import ScriptedOpenAI  # noqa: E402
from mast_otel import semconv as sc  # noqa: E402
from tests.captures import record_semantic_kernel as runs  # noqa: E402
from tests.collector.sink import OtlpSink  # noqa: E402
from tests.collector.test_durability import CollectorProcess  # noqa: E402
from tests.frameworks import main_python_that_imports  # noqa: E402
from tests.judge.fake_openai import citing, fake_openai  # noqa: E402

_LINE = re.compile(r"^\[M\d+\] (?P<sender>\S+) -> ", re.MULTILINE)


def test_each_run_is_one_conversation_through_a_collector(tmp_path: Path) -> None:
    # prepare: a collector with the default quiet period and an LLM judge (a scripted model recording what it is
    # sent), and the program's telemetry pointed at it; what the program exported is kept too, to compare
    python = main_python_that_imports("mast_otel.collector.service", "the collector")
    sent = InMemorySpanExporter()
    with fake_openai([citing({"3.2": r"^Reviewer -> "})] * 3) as judge:
        sink = OtlpSink().start()
        env = {"MAST_OTEL_JUDGE_BASE_URL": judge.base_url, "MAST_OTEL_JUDGE_MODEL": "scripted-judge"}
        collector = CollectorProcess(tmp_path, sink, judge="llm", python=python, env=env,
                                     extra=["--quiet-period", "10", "--poll-interval", "0.25"])  # fmt: skip
        collector.start()
        endpoint = f"http://127.0.0.1:{collector.http_port}"
        resource = Resource.create({"service.name": "sk-desk"})
        tracer_provider = TracerProvider(resource=resource)
        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
        tracer_provider.add_span_processor(SimpleSpanProcessor(sent))
        trace.set_tracer_provider(tracer_provider)
        logger_provider = LoggerProvider(resource=resource)
        logger_provider.add_log_record_processor(
            BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{endpoint}/v1/logs"))
        )
        set_logger_provider(logger_provider)
        handler = LoggingHandler(logger_provider=logger_provider)
        handler.addFilter(logging.Filter("semantic_kernel"))
        logging.getLogger().addHandler(handler)
        logging.getLogger().setLevel(logging.INFO)
        try:
            # test: three runs, one after the other, in one program, at the SDK's default batch delays
            expected = {}
            with ScriptedOpenAI(runs.SCRIPT) as server:
                for name, run in (("agent-group-chat", runs.run_agent_group_chat), ("handoff", runs.run_handoff),
                                  ("group-chat", runs.run_group_chat)):  # fmt: skip
                    expected[name] = asyncio.run(run(server.base_url))
            tracer_provider.force_flush()
            logger_provider.force_flush()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # each run is judged a quiet period (10 s) after its last span
                if sum(sc.JUDGE_STATUS in s.attributes for s in sink.spans()) >= len(expected):
                    break
                time.sleep(0.5)
            time.sleep(1.0)  # anything extra would arrive with the rest
            got = sink.spans()
        finally:
            logging.getLogger().removeHandler(handler)
            tracer_provider.shutdown()
            logger_provider.shutdown()
            collector.stop()
            sink.stop()
        prompts = ["\n".join(str(m.get("content")) for m in body.get("messages", [])) for body in judge.bodies()]
    # verify: nothing lost, nothing added
    program = {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in sent.get_finished_spans()}
    assert sorted(s.key for s in got) == sorted(program)
    # one verdict per run, on its first agent's turn, the framework named by its telemetry's scope
    labelled = sorted((s for s in got if sc.JUDGE_STATUS in s.attributes), key=lambda s: s.end_ns)
    assert len(labelled) == len(expected) == 3
    for span, (name, expect) in zip(labelled, expected.items(), strict=True):
        assert span.name == f"invoke_agent {expect.agents[0]}", name
        assert (span.attributes[sc.MAST_FRAMEWORK], span.attributes[sc.MAST_SOURCE]) == ("semantic-kernel", "genai")
        assert span.attributes[sc.JUDGE_STATUS] == sc.JUDGE_OK
    # each judged transcript is the run's as Semantic Kernel recorded it: the user's request and each answer (their
    # number), its speakers in the order the turn passed
    assert len(prompts) == 3
    judged = sorted([m.group("sender") for m in _LINE.finditer(p)] for p in prompts)
    assert sorted(len(senders) for senders in judged) == sorted(e.messages for e in expected.values())
    assert sorted(_turns(senders) for senders in judged) == sorted(
        ["user", e.agents[0], *(target for _, target in e.handoffs)] for e in expected.values()
    )


def _turns(senders: list[str]) -> list[str]:
    """The speakers with consecutive repeats folded (an agent's tool call and its answer are one turn)."""
    return [s for i, s in enumerate(senders) if i == 0 or senders[i - 1] != s]
