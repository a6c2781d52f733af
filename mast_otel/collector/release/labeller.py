"""Verdict -> edits of the stored span protobufs (the labels design.md "Labels" describes).

- The conversation root gets ``mast.judge.status`` (+ ``status_reason``), ``mast.label.source``,
  ``mast.judge.model``, tokens in/out and, when the conversation was actually judged (ok, partial, truncated),
  ``mast.failed``, ``mast.failure_modes`` (string array), one ``mast.fm.<x_y>=true`` per present mode,
  ``mast.task_completed`` and ``mast.verdict.summary``. An error or skipped verdict carries no failure
  attributes at all: never an invented "no failure".
- Each span cited as evidence gets ``mast.failure_mode`` and ``mast.failure_mode.name`` (a string, or a string
  array when several modes cite it), ``mast.fm.<x_y>=true``, and one ``gen_ai.evaluation.result`` event per mode.
- Structural signals (facts, never verdicts; :mod:`mast_otel.judge.signals`) go on whatever the verdict: the root
  gets ``mast.signals`` (names) and per signal ``mast.signal.<name>=true``, ``.mode`` (the MAST mode it hints at)
  and ``.detail``; each span a signal points at gets ``mast.signal.<name>=true``.
- A ``mast.verdict`` span (child of the root, same trace) carries the root attributes, one evaluation event per
  mode and a link to every evidence span: in passthrough mode (the spans already left), and in hold mode when the
  root never arrived (a partial conversation has no root to label).

Spans are edited as protobufs (``opentelemetry.proto.trace.v1.Span``) so resource, scope and every field the
collector does not touch leave exactly as they came.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from mast_otel import semconv as sc
from mast_otel.collector.encoding import RawSpan, field
from mast_otel.judge.foreign import EXTRA_FRAMEWORK, EXTRA_SOURCE
from mast_otel.judge.model import ModeLabel, Verdict
from mast_otel.judge.signals import Signal
from mast_otel.taxonomy import mode

__all__ = ["AttrValue", "label_spans", "root_attributes", "verdict_span", "verdict_span_id"]

AttrValue = str | bool | int | float | Sequence[str]
_JUDGED = (sc.JUDGE_OK, sc.JUDGE_PARTIAL, sc.JUDGE_TRUNCATED)
_SCORE_PRESENT = "present"
_ATTRIBUTES = 9  # Span.attributes


def _mode_name(mode_id: str) -> str:
    try:
        return mode(mode_id).name
    except KeyError:
        return "unknown"


def _modes(verdict: Verdict) -> list[ModeLabel]:
    """Present modes, one per id (first wins), in id order."""
    seen: dict[str, ModeLabel] = {}
    for m in verdict.modes:
        seen.setdefault(m.mode_id, m)
    return [seen[k] for k in sorted(seen)]


def signal_attributes(signals: Sequence[Signal]) -> dict[str, AttrValue]:
    """The root's signal attributes: the names, and per signal a flag, the mode it hints at and what was seen."""
    if not signals:
        return {}
    attrs: dict[str, AttrValue] = {sc.SIGNALS: list(dict.fromkeys(s.name for s in signals))}
    for s in signals:
        key = sc.signal_attribute(s.name)
        attrs[key] = True
        attrs[f"{key}.mode"] = s.mode_id
        attrs[f"{key}.detail"] = s.detail
    return attrs


def _signals_by_span(signals: Sequence[Signal]) -> dict[bytes, list[str]]:
    out: dict[bytes, list[str]] = {}
    for s in signals:
        for ref in s.evidence_span_ids:
            try:
                sid = bytes.fromhex(ref)
            except ValueError:
                continue
            if len(sid) == 8:
                out.setdefault(sid, []).append(s.name)
    return out


def root_attributes(verdict: Verdict, judge_name: str, signals: Sequence[Signal] = ()) -> dict[str, AttrValue]:
    """The attributes a conversation root (or a verdict span) carries for this verdict and these signals."""
    attrs: dict[str, AttrValue] = {sc.JUDGE_STATUS: verdict.status, sc.LABEL_SOURCE: verdict.source}
    if verdict.status_reason:
        attrs[sc.JUDGE_STATUS_REASON] = verdict.status_reason
    if verdict.extra.get(EXTRA_SOURCE):  # a conversation another instrumentation recorded: the adapter that read it
        attrs[sc.MAST_SOURCE] = verdict.extra[EXTRA_SOURCE]
        if verdict.extra.get(EXTRA_FRAMEWORK):
            attrs[sc.MAST_FRAMEWORK] = verdict.extra[EXTRA_FRAMEWORK]
    if verdict.status != sc.JUDGE_SKIPPED:
        attrs[sc.JUDGE_MODEL] = verdict.model or judge_name
        attrs[sc.JUDGE_TOKENS_IN] = verdict.tokens_in
        attrs[sc.JUDGE_TOKENS_OUT] = verdict.tokens_out
    if verdict.status in _JUDGED:
        modes = _modes(verdict)
        attrs[sc.FAILED] = bool(modes)
        attrs[sc.FAILURE_MODES] = [m.mode_id for m in modes]
        for m in modes:
            attrs[sc.fm_attribute(m.mode_id)] = True
        if verdict.task_completed is not None:
            attrs[sc.TASK_COMPLETED] = verdict.task_completed
        if verdict.summary:
            attrs[sc.VERDICT_SUMMARY] = verdict.summary
        if verdict.decisive is not None:  # who and when, so a tag search and a trace view go straight to it
            attrs[sc.DECISIVE_AGENT] = verdict.decisive.agent
            attrs[sc.DECISIVE_MESSAGE_INDEX] = verdict.decisive.message_index
    attrs.update(signal_attributes(signals))
    return attrs


def _decisive_id(verdict: Verdict) -> bytes | None:
    if verdict.decisive is None or verdict.status not in _JUDGED:
        return None
    try:
        sid = bytes.fromhex(verdict.decisive.span_id)
    except ValueError:
        return None
    return sid if len(sid) == 8 else None


def _any_value(value: AttrValue) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    out = AnyValue()
    out.array_value.SetInParent()
    for item in value:
        out.array_value.values.add(string_value=str(item))
    return out


def _set(attributes: object, values: Mapping[str, AttrValue]) -> None:
    """Set (replace or add) attributes on a repeated KeyValue field."""
    existing = {kv.key: kv for kv in attributes}  # type: ignore[attr-defined]
    for key, value in values.items():
        kv = existing.get(key)
        if kv is None:
            kv = attributes.add(key=key)  # type: ignore[attr-defined]
        kv.value.CopyFrom(_any_value(value))


def _append(body: bytes, values: Mapping[str, AttrValue]) -> bytes | None:
    """The span with ``values`` added as attributes without decoding it, or None when it already has one of the
    keys (replacing needs a full decode).

    A repeated field's elements may come anywhere in a serialized message and a parser appends each one it meets,
    so appending ``KeyValue`` fields to the bytes is exactly ``span.attributes.add(...)``: every other field, known
    or not, leaves as it arrived, and the span is never decoded and encoded again (most of a label's cost).
    """
    if not set(RawSpan.FromString(body).attributes).isdisjoint(values):
        return None
    return body + b"".join(
        _attribute_field(key, tuple(value) if isinstance(value, list) else value) for key, value in values.items()
    )


@functools.lru_cache(maxsize=4096, typed=True)  # typed: True and 1 are different attributes
def _attribute_field(key: str, value: AttrValue) -> bytes:
    """One encoded ``Span.attributes`` element; most labels repeat from one conversation to the next."""
    return field(_ATTRIBUTES, KeyValue(key=key, value=_any_value(value)).SerializeToString())


def _evaluation_attrs(m: ModeLabel) -> dict[str, AttrValue]:
    attrs: dict[str, AttrValue] = {
        sc.GEN_AI_EVALUATION_NAME: f"MAST {m.mode_id} {_mode_name(m.mode_id)}",
        sc.GEN_AI_EVALUATION_SCORE_LABEL: _SCORE_PRESENT,
        sc.FAILURE_MODE: m.mode_id,
    }
    if m.reason:
        attrs[sc.GEN_AI_EVALUATION_EXPLANATION] = m.reason
    return attrs


def _add_event(span: Span, m: ModeLabel, time_ns: int) -> None:
    event = span.events.add(name=sc.EVAL_EVENT_NAME, time_unix_nano=time_ns)
    _set(event.attributes, _evaluation_attrs(m))


def evidence_by_span(verdict: Verdict) -> dict[bytes, list[ModeLabel]]:
    """Span id (bytes) -> the modes citing it; ids that are not 16 hex chars are ignored."""
    out: dict[bytes, list[ModeLabel]] = {}
    if verdict.status not in _JUDGED:
        return out
    for m in _modes(verdict):
        for ref in dict.fromkeys(m.evidence_span_ids):
            try:
                sid = bytes.fromhex(ref)
            except ValueError:
                continue
            if len(sid) == 8:
                out.setdefault(sid, []).append(m)
    return out


def label_spans(
    verdict: Verdict,
    *,
    root_id: bytes | None,
    bodies: Mapping[bytes, bytes],
    judge_name: str,
    now_ns: int,
    signals: Sequence[Signal] = (),
) -> dict[bytes, bytes]:
    """Hold mode: the new bodies of the spans that change (root, evidence, signal spans); others stay as stored."""
    evidence = evidence_by_span(verdict)
    pointed = _signals_by_span(signals)
    decisive = _decisive_id(verdict)
    out: dict[bytes, bytes] = {}
    for sid in {*evidence, *pointed, *((root_id,) if root_id is not None else ()), *((decisive,) if decisive else ())}:
        body = bodies.get(sid)
        if body is None:
            continue  # evidence outside this conversation's stored spans: nothing to label
        if sid not in evidence and sid != decisive:  # attributes only: appended to the bytes as they arrived
            added = (root_attributes(verdict, judge_name, signals) if sid == root_id
                     else {sc.signal_attribute(name): True for name in pointed[sid]})  # fmt: skip
            appended = _append(body, added)
            if appended is not None:
                out[sid] = appended
                continue
        span = Span.FromString(body)
        if sid == root_id:
            _set(span.attributes, root_attributes(verdict, judge_name, signals))
        elif sid in pointed:
            _set(span.attributes, {sc.signal_attribute(name): True for name in pointed[sid]})
        modes = evidence.get(sid, [])
        if modes:
            ids = [m.mode_id for m in modes]
            names = [_mode_name(i) for i in ids]
            single = len(ids) == 1
            evidence_attrs: dict[str, AttrValue] = {
                sc.FAILURE_MODE: ids[0] if single else ids,
                sc.FAILURE_MODE_NAME: names[0] if single else names,
            }
            evidence_attrs.update({sc.fm_attribute(i): True for i in ids})
            _set(span.attributes, evidence_attrs)
            for m in modes:
                _add_event(span, m, now_ns)
        if sid == decisive and verdict.decisive is not None:
            decisive_attrs: dict[str, AttrValue] = {sc.DECISIVE: True}
            if verdict.decisive.reason:
                decisive_attrs[sc.DECISIVE_REASON] = verdict.decisive.reason
            _set(span.attributes, decisive_attrs)
        out[sid] = span.SerializeToString()
    return out


def verdict_span_id(trace_id: bytes, unit_key: str) -> bytes:
    """Deterministic, so a conversation judged again after a crash yields the same span (stored once)."""
    return hashlib.blake2b(trace_id + unit_key.encode() + b"/mast.verdict", digest_size=8).digest()


def verdict_span(
    verdict: Verdict,
    *,
    trace_id: bytes,
    unit_key: str,
    parent_id: bytes | None,
    conversation_id: str | None,
    judge_name: str,
    start_ns: int,
    end_ns: int,
    linkable: set[bytes],
    signals: Sequence[Signal] = (),
) -> bytes:
    """The ``mast.verdict`` span (serialized protobuf): root attributes, evaluation events, links to evidence."""
    span = Span(
        trace_id=trace_id,
        span_id=verdict_span_id(trace_id, unit_key),
        parent_span_id=parent_id or b"",
        name=sc.VERDICT_SPAN_NAME,
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=start_ns,
        end_time_unix_nano=max(end_ns, start_ns),
    )
    attrs: dict[str, AttrValue] = {sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_VERDICT}
    if conversation_id:
        attrs[sc.GEN_AI_CONVERSATION_ID] = conversation_id
    attrs.update(root_attributes(verdict, judge_name, signals))
    _set(span.attributes, attrs)
    for m in _modes(verdict) if verdict.status in _JUDGED else ():
        _add_event(span, m, end_ns)
    for sid, modes in evidence_by_span(verdict).items():
        if sid not in linkable:
            continue
        link = span.links.add(trace_id=trace_id, span_id=sid)
        ids = [m.mode_id for m in modes]
        _set(link.attributes, {sc.FAILURE_MODE: ids[0] if len(ids) == 1 else ids})
    return span.SerializeToString()
