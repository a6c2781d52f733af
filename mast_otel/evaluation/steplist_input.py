"""Judge input from files: step-list records (the MAD restructuring) and OTLP JSON, as conversations to judge.

Step-list records are replayed through the real recorder by :func:`mast_otel.replay.spans_for_record`, so a
recorded trace yields exactly the span shapes a live one does and the judge reads one transcript format. OTLP
JSON is split into conversations by their recorder roots, as the collector does.

Keys: a step-list record is ``StepRecord.trace_key`` (``{mad_trace_key}_{trace_id}``, the key replay writes on the
root and the judge baseline uses; ``trace_id`` alone repeats across trace sets); an
OTLP conversation is ``{trace id}:{root span id}`` (a trace may hold several conversations).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, Ignored, SpanMapping, adapt, foreign_units, screen
from mast_otel.config import CaptureConfig
from mast_otel.spans import SpanRecord, conversation_roots, from_otlp_json, subtree
from mast_otel.steplist import StepRecord, parse_steplist
from mast_otel.taxonomy import MODE_IDS

from .mad_input import LabelFormat, detect_format, records_from_mad

__all__ = ["Conversation", "label_format", "load_conversations", "record_key", "record_to_spans"]


@dataclass(frozen=True, slots=True)
class Conversation:
    """One unit to judge: its key, its spans, and reference labels when the input carries them."""

    trace_key: str
    spans: list[SpanRecord]
    reference: dict[str, bool] = field(default_factory=dict)  # mode id -> present (step-list mast_annotation)
    framework: str | None = None
    adapted: Adapted | None = None  # recorded by another instrumentation: ``spans`` are the adapter's synthetic ones
    # OTLP attribute values left out, nested too deep or too large to read (:mod:`mast_otel.adapters._bounds`)
    ignored: tuple[Ignored, ...] = ()


def record_key(record: StepRecord) -> str:
    return record.trace_key


def record_to_spans(record: StepRecord) -> list[SpanRecord]:
    """Replay one record through the recorder (content capped and redacted as in a live run)."""
    from mast_otel.replay import spans_for_record

    return spans_for_record(record, config=CaptureConfig.from_env())


def label_format(path: str | Path) -> LabelFormat:
    """What kind of labelled file ``path`` is (see :mod:`mast_otel.evaluation.mad_input`); OTLP JSON is "otlp"."""
    text = Path(path).read_text(encoding="utf-8")
    if not text.lstrip().startswith("["):
        return LabelFormat("otlp", True, "reference labels from mast.reference.* on the roots")
    return detect_format(json.loads(text)) or LabelFormat("steplist", True)


def load_conversations(
    path: str | Path, *, limit: int | None = None, mappings: Sequence[SpanMapping] = (), run_keys: Sequence[str] = ()
) -> Iterator[Conversation]:
    """Every conversation in a step-list, MAD (rebuilt or human-labelled) or OTLP JSON file, or a Who&When run
    file or directory (detected). An OTLP file's foreign runs are read as the collector reads them, with the
    user's span ``mappings`` and the span attributes that declare a run id (``run_keys``)."""
    if Path(path).is_dir() or _is_whowhen(path):
        from mast_otel.replay import load_records

        whowhen = load_records(path)
        for record in whowhen[:limit] if limit is not None else whowhen:
            yield Conversation(trace_key=record_key(record), spans=record_to_spans(record), framework=record.framework)
        return
    text = Path(path).read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        data = json.loads(text)
        fmt = detect_format(data)
        if fmt is not None and fmt.name in ("mad-full", "mad-full-1242", "mad-human"):
            records = records_from_mad(data[:limit] if limit is not None else data, fmt).records
        else:
            records = parse_steplist(data)
        for record in records[:limit] if limit is not None else records:
            yield Conversation(
                trace_key=record_key(record),
                spans=record_to_spans(record),
                reference=dict(record.mast_annotation),
                framework=record.framework,
            )
        return
    spans = otlp_spans(text)
    roots = conversation_roots(spans)
    for n, root in enumerate(roots):
        if limit is not None and n >= limit:
            return
        reference = {
            m: bool(root.attributes[sc.reference_fm_attribute(m)])
            for m in MODE_IDS
            if sc.reference_fm_attribute(m) in root.attributes
        }  # a replayed recording carries its reference labels on the root
        framework = root.attributes.get(sc.MAST_FRAMEWORK)
        screened = screen(subtree(spans, root))  # as the collector reads a conversation, whoever wrote it
        yield Conversation(
            trace_key=f"{root.trace_id}:{root.span_id}",
            spans=screened.spans,
            reference=reference,
            framework=framework if isinstance(framework, str) else None,
            ignored=screened.ignored,
        )
    yield from _foreign(spans, None if limit is None else limit - len(roots), mappings, run_keys)


def _is_whowhen(path: str | Path) -> bool:
    """A Who&When run: one JSON object with ``history`` and ``mistake_agent`` (an OTLP document has neither)."""
    from mast_otel.whowhen import is_whowhen_document

    with Path(path).open("rb") as fh:
        head = fh.read(1024)
    if head.lstrip()[:1] != b"{" or b"resourceSpans" in head:
        return False  # not an object, or OTLP: not parsed twice
    try:
        return is_whowhen_document(json.loads(Path(path).read_text(encoding="utf-8")))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False


def _foreign(spans: list[SpanRecord], limit: int | None, mappings: Sequence[SpanMapping] = (),
             run_keys: Sequence[str] = ()) -> Iterator[Conversation]:  # fmt: skip
    """Conversations another instrumentation recorded (traces with no mast-otel root), as the collector reads them."""
    if limit is not None and limit <= 0:
        return
    for unit in foreign_units(spans, run_keys, mappings):
        adapted = adapt(unit, mappings)
        if not isinstance(adapted, Adapted):
            continue  # not a multi-agent conversation: never judged
        yield Conversation(trace_key=f"{adapted.records[0].trace_id}:{adapted.root_span_id}",
                           spans=list(adapted.records), framework=adapted.framework, adapted=adapted,
                           ignored=adapted.ignored)  # fmt: skip
        if limit is not None:
            limit -= 1
            if limit <= 0:
                return


def otlp_spans(text: str) -> list[SpanRecord]:
    """OTLP JSON: one ``{"resourceSpans": ...}`` document, or one per line (the file exporter's JSON Lines). A
    document nested past what the JSON and protobuf parsers read (an attribute's array or map value about 50
    levels deep) cannot be read at all, as the collector refuses it: ``ValueError`` saying so, not a traceback."""
    from google.protobuf.json_format import ParseError

    try:
        try:
            return from_otlp_json(text)
        except json.JSONDecodeError:
            out: list[SpanRecord] = []
            for line in text.splitlines():
                if line.strip():
                    out.extend(from_otlp_json(line))
            return out
    except (RecursionError, ParseError) as exc:
        raise ValueError(f"not OTLP JSON that can be read: {type(exc).__name__}: {str(exc)[:200]}") from None
