"""Conversations built with the real recorder into memory, as SpanRecords: the judge tests' inputs."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import semconv as sc
from mast_otel.config import CaptureConfig
from mast_otel.recorder import Recorder
from mast_otel.redaction import Redactor
from mast_otel.spans import SpanRecord, from_readable_span


def record(body: Callable[[Recorder], None], *, task: str = "Add 2 and 3.", max_rounds: int | None = None,
           redact: bool = False) -> list[SpanRecord]:
    """Run ``body`` inside one conversation and return the finished spans (root included).

    In-process redaction is off by default so tests can prove the *judge* redacts before calling a model.
    """
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    config = CaptureConfig(capture_content=True, redactor=Redactor(max_length=0, builtin=redact))
    rec = Recorder(provider, config, framework="test")
    with rec.conversation("scenario", task=task, max_rounds=max_rounds):
        body(rec)
    provider.shutdown()
    return [from_readable_span(s) for s in exporter.get_finished_spans()]


def dialogue(turns: Sequence[tuple[str, str, str]], *, termination: str | None = None,
             max_rounds: int | None = None, task: str = "Add 2 and 3.") -> list[SpanRecord]:
    """A conversation of (sender, recipient, content) messages, each in its sender's turn."""

    def body(rec: Recorder) -> None:
        for i, (sender, recipient, content) in enumerate(turns):
            if i:
                rec.handoff(turns[i - 1][0], sender, reason=sc.HANDOFF_ROUND_ROBIN)
            with rec.agent_turn(sender):
                rec.message(sender, [recipient], content)
        if termination:
            rec.terminate(termination)

    return record(body, max_rounds=max_rounds, task=task)


def message_ids(spans: Sequence[SpanRecord]) -> list[str]:
    """Message span ids in conversation order (M1, M2, ... in the transcript)."""
    msgs = [s for s in spans if s.span_type == sc.SPAN_TYPE_MESSAGE]
    return [s.span_id for s in sorted(msgs, key=lambda s: s.attributes[sc.MESSAGE_INDEX])]


def simple() -> list[SpanRecord]:
    return dialogue(
        [
            ("user", "solver", "Please add 2 and 3 and reply with the result."),
            ("solver", "user", "2 + 3 = 5. The answer is 5."),
            ("user", "solver", "Thanks."),
        ],
        termination=sc.TERMINATION_MESSAGE,
    )
