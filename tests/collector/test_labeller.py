"""Verdict -> span protobuf edits: exactly the attributes, events and links design.md names."""

from __future__ import annotations

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from mast_otel import semconv as sc
from mast_otel.collector.release.labeller import label_spans, root_attributes, verdict_span
from mast_otel.judge.model import ModeLabel, Verdict
from mast_otel.spans import any_value

TRACE = bytes(range(16))
ROOT, MSG, OTHER = b"\x01" * 8, b"\x02" * 8, b"\x03" * 8


def attrs(span: Span) -> dict[str, object]:
    return {kv.key: any_value(kv.value) for kv in span.attributes}


def body(span_id: bytes, **kw: object) -> bytes:
    span = Span(trace_id=TRACE, span_id=span_id, name="s")
    span.attributes.add(key="keep.me", value={"string_value": "x"})
    return span.SerializeToString()


VERDICT = Verdict(
    status=sc.JUDGE_OK,
    source=sc.SOURCE_LLM,
    modes=(
        ModeLabel("1.3", (MSG.hex(),), "said twice"),
        ModeLabel("3.2", (MSG.hex(), ROOT.hex()), "never checked"),
    ),
    summary="loops",
    task_completed=False,
    model="judge-model",
    tokens_in=1200,
    tokens_out=80,
)


def test_root_and_evidence_labels() -> None:
    # test
    out = label_spans(VERDICT, root_id=ROOT, bodies={ROOT: body(ROOT), MSG: body(MSG), OTHER: body(OTHER)},
                      judge_name="j", now_ns=5)  # fmt: skip
    # verify: only root and evidence change, other attributes kept
    assert set(out) == {ROOT, MSG}
    root, msg = Span.FromString(out[ROOT]), Span.FromString(out[MSG])
    a = attrs(root)
    assert a["keep.me"] == "x"
    assert a[sc.JUDGE_STATUS] == "ok" and a[sc.LABEL_SOURCE] == "llm" and a[sc.JUDGE_MODEL] == "judge-model"
    assert a[sc.FAILED] is True and a[sc.FAILURE_MODES] == ("1.3", "3.2")
    assert a[sc.fm_attribute("1.3")] is True and a[sc.fm_attribute("3.2")] is True
    assert a[sc.TASK_COMPLETED] is False and a[sc.JUDGE_TOKENS_IN] == 1200 and a[sc.JUDGE_TOKENS_OUT] == 80
    assert a[sc.VERDICT_SUMMARY] == "loops"
    m = attrs(msg)
    assert m[sc.FAILURE_MODE] == ("1.3", "3.2")
    assert m[sc.FAILURE_MODE_NAME] == ("Step repetition", "No or incomplete verification")
    assert [e.name for e in msg.events] == [sc.EVAL_EVENT_NAME] * 2
    event = {kv.key: any_value(kv.value) for kv in msg.events[0].attributes}
    assert event[sc.GEN_AI_EVALUATION_NAME] == "MAST 1.3 Step repetition"
    assert event[sc.GEN_AI_EVALUATION_EXPLANATION] == "said twice"
    assert event[sc.GEN_AI_EVALUATION_SCORE_LABEL] == "present"
    # the root is evidence of 3.2 as well: a single mode is a plain string
    assert a[sc.FAILURE_MODE] == "3.2"


def test_error_verdict_invents_no_failure() -> None:
    a = root_attributes(Verdict.error(sc.SOURCE_LLM, "timeout"), "j")
    assert a[sc.JUDGE_STATUS] == "error" and a[sc.JUDGE_STATUS_REASON] == "timeout"
    assert sc.FAILED not in a and sc.FAILURE_MODES not in a


def test_skipped_verdict_says_why() -> None:
    a = root_attributes(Verdict.skipped("sampled out"), "j")
    assert a == {sc.JUDGE_STATUS: "skipped", sc.LABEL_SOURCE: "none", sc.JUDGE_STATUS_REASON: "sampled out"}


def test_clean_verdict_says_not_failed() -> None:
    a = root_attributes(Verdict(status=sc.JUDGE_OK, source=sc.SOURCE_RULES), "rules")
    assert a[sc.FAILED] is False and a[sc.FAILURE_MODES] == [] and a[sc.JUDGE_MODEL] == "rules"


def test_verdict_span_carries_root_labels_events_and_links() -> None:
    raw = verdict_span(VERDICT, trace_id=TRACE, unit_key=ROOT.hex(), parent_id=ROOT, conversation_id="c1",
                       judge_name="j", start_ns=1, end_ns=2, linkable={MSG, ROOT})  # fmt: skip
    span = Span.FromString(raw)
    a = attrs(span)
    assert span.name == sc.VERDICT_SPAN_NAME and span.parent_span_id == ROOT and span.trace_id == TRACE
    assert a[sc.MAST_SPAN_TYPE] == sc.SPAN_TYPE_VERDICT and a[sc.GEN_AI_CONVERSATION_ID] == "c1"
    assert a[sc.FAILURE_MODES] == ("1.3", "3.2")
    assert len(span.events) == 2
    links = {link.span_id: {kv.key: any_value(kv.value) for kv in link.attributes} for link in span.links}
    assert links[MSG][sc.FAILURE_MODE] == ("1.3", "3.2") and links[ROOT][sc.FAILURE_MODE] == "3.2"
    # deterministic id: judging again after a crash yields the same span
    again = verdict_span(VERDICT, trace_id=TRACE, unit_key=ROOT.hex(), parent_id=ROOT, conversation_id="c1",
                         judge_name="j", start_ns=1, end_ns=2, linkable=set())  # fmt: skip
    assert Span.FromString(again).span_id == span.span_id


def test_evidence_outside_the_conversation_is_ignored() -> None:
    verdict = Verdict(status=sc.JUDGE_OK, source="llm", modes=(ModeLabel("2.1", ("not-hex", "ff" * 8)),))
    out = label_spans(verdict, root_id=ROOT, bodies={ROOT: body(ROOT)}, judge_name="j", now_ns=1)
    assert set(out) == {ROOT}


def test_a_root_labelled_by_appending_keeps_its_bytes_and_reads_as_a_decoded_edit() -> None:
    """Attributes-only labels are appended to the stored bytes: the original bytes are a prefix (unknown fields
    included), and the result parses to the span a full decode-and-edit would give."""
    span = Span(trace_id=TRACE, span_id=ROOT, name="s")
    span.attributes.add(key="keep.me", value={"string_value": "x"})
    stored = span.SerializeToString() + b"\xf8\x07\x01"  # + an unknown varint field (number 127): kept as is
    skipped = Verdict.skipped("no model")
    out = label_spans(skipped, root_id=ROOT, bodies={ROOT: stored}, judge_name="signals", now_ns=5)
    assert out[ROOT].startswith(stored)
    got = Span.FromString(out[ROOT])
    assert attrs(got) == {"keep.me": "x", **root_attributes(skipped, "signals")}
    assert [kv.key for kv in got.attributes] == ["keep.me", *root_attributes(skipped, "signals")]


def test_a_root_that_already_has_a_label_key_gets_it_replaced_not_repeated() -> None:
    span = Span(trace_id=TRACE, span_id=ROOT, name="s")
    span.attributes.add(key=sc.JUDGE_STATUS, value={"string_value": "forged"})
    out = label_spans(Verdict.skipped("no model"), root_id=ROOT, bodies={ROOT: span.SerializeToString()},
                      judge_name="signals", now_ns=5)  # fmt: skip
    keys = [kv.key for kv in Span.FromString(out[ROOT]).attributes]
    assert keys.count(sc.JUDGE_STATUS) == 1
    assert attrs(Span.FromString(out[ROOT]))[sc.JUDGE_STATUS] == sc.JUDGE_SKIPPED
