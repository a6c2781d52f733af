"""The labels a backend receives, checked against docs/collector.md "Labels and delivery modes", docs/judge.md
(decisive step, structural signals) and design.md "Labels".

The oracle is the documented attribute names and value types, spelled out here as strings (not taken from
``semconv``), and the span protobufs the labeller returns, decoded field by field: which ``AnyValue`` kind each
attribute has is what a backend's tag search sees (``mast.fm.1_3=true`` is a boolean, tokens are integers).
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from mast_otel.collector.release import labeller
from mast_otel.collector.release.labeller import label_spans, root_attributes, verdict_span, verdict_span_id
from mast_otel.judge.model import DecisiveStep, ModeLabel, Verdict
from mast_otel.judge.signals import Signal

TRACE = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
ROOT, MSG, TOOL, OTHER = (bytes([n]) * 8 for n in (1, 2, 3, 4))
JUDGED = ("ok", "partial", "truncated")
# the attributes docs/collector.md says a conversation carries only when it was actually judged
FAILURE_KEYS = ("mast.failed", "mast.failure_modes", "mast.task_completed", "mast.verdict.summary")



@pytest.fixture(autouse=True)
def _encoded_labels_computed_afresh() -> None:
    """Labels appended to a span's bytes come from a cache of encoded attributes: each test checks the encoding
    made for it, not one an earlier test (or the process that forked this one) left there."""
    labeller._attribute_field.cache_clear()

def typed(span_or_attrs: Any) -> dict[str, tuple[str, object]]:
    """key -> (AnyValue kind, value) of a span's, event's or link's attributes; arrays as tuples of strings."""
    out: dict[str, tuple[str, object]] = {}
    for kv in span_or_attrs.attributes:
        kind = str(kv.value.WhichOneof("value"))
        if kind == "array_value":
            out[kv.key] = (kind, tuple(v.string_value for v in kv.value.array_value.values))
        else:
            out[kv.key] = (kind, getattr(kv.value, kind))
    return out


def values(span_or_attrs: Any) -> dict[str, object]:
    return {k: v for k, (_, v) in typed(span_or_attrs).items()}


def stored(span_id: bytes, **attributes: str) -> bytes:
    """A span as it arrived: one attribute of the application's own, which must leave unchanged."""
    span = Span(trace_id=TRACE, span_id=span_id, name="agent.message", start_time_unix_nano=10, end_time_unix_nano=20)
    span.attributes.add(key="app.attr", value={"string_value": "kept"})
    for key, value in attributes.items():
        span.attributes.add(key=key, value={"string_value": value})
    return span.SerializeToString()


def label(verdict: Verdict, *, signals: tuple[Signal, ...] = (), root: bytes | None = ROOT) -> dict[bytes, Span]:
    bodies = {sid: stored(sid) for sid in (ROOT, MSG, TOOL, OTHER)}
    out = label_spans(verdict, root_id=root, bodies=bodies, judge_name="judge-name", now_ns=777, signals=signals)
    return {sid: Span.FromString(body) for sid, body in out.items()}


def failed(status: str = "ok", **kw: object) -> Verdict:
    fields: dict[str, object] = {
        "modes": (ModeLabel("3.2", (MSG.hex(),), "never ran the tests"), ModeLabel("1.3", (MSG.hex(), TOOL.hex()))),
        "summary": "looped, then stopped unverified",
        "task_completed": False,
        "model": "gpt-judge",
        "tokens_in": 1500,
        "tokens_out": 90,
        **kw,
    }
    return Verdict(status=status, source="llm", **fields)  # type: ignore[arg-type]


# -- the conversation root -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", JUDGED)
def test_a_judged_root_carries_the_documented_failure_labels_with_their_types(status: str) -> None:
    root = typed(label(failed(status, status_reason="why"))[ROOT])
    assert root["app.attr"] == ("string_value", "kept")
    assert root["mast.judge.status"] == ("string_value", status)
    assert root["mast.judge.status_reason"] == ("string_value", "why")
    assert root["mast.label.source"] == ("string_value", "llm")
    assert root["mast.judge.model"] == ("string_value", "gpt-judge")
    assert root["mast.judge.tokens_in"] == ("int_value", 1500)
    assert root["mast.judge.tokens_out"] == ("int_value", 90)
    assert root["mast.failed"] == ("bool_value", True)
    assert root["mast.failure_modes"] == ("array_value", ("1.3", "3.2"))  # in id order
    assert root["mast.fm.1_3"] == ("bool_value", True)
    assert root["mast.fm.3_2"] == ("bool_value", True)
    assert root["mast.task_completed"] == ("bool_value", False)
    assert root["mast.verdict.summary"] == ("string_value", "looped, then stopped unverified")
    assert not {k for k in root if k.startswith("mast.fm.")} - {"mast.fm.1_3", "mast.fm.3_2"}


@pytest.mark.parametrize("status", ["error", "skipped"])
def test_an_error_or_skipped_verdict_carries_no_failure_attributes_even_with_modes(status: str) -> None:
    # a verdict object that (wrongly) lists modes must still not put an invented answer on the spans
    spans = label(failed(status, status_reason="judge timed out"))
    root = values(spans[ROOT])
    assert root["mast.judge.status"] == status and root["mast.judge.status_reason"] == "judge timed out"
    assert not [k for k in root if k in FAILURE_KEYS or k.startswith(("mast.fm.", "mast.decisive"))]
    assert set(spans) == {ROOT}  # no evidence span is touched
    assert not spans[ROOT].events


def test_an_error_verdict_still_says_which_judge_and_what_it_cost() -> None:
    root = typed(label(failed("error", status_reason="invalid output"))[ROOT])
    assert root["mast.judge.model"] == ("string_value", "gpt-judge")
    assert root["mast.judge.tokens_in"] == ("int_value", 1500) and root["mast.judge.tokens_out"] == ("int_value", 90)


def test_a_skipped_verdict_names_no_model_and_no_tokens() -> None:
    root = values(label(Verdict.skipped("sampled out (judge_fraction=0.25)"))[ROOT])
    assert root == {"app.attr": "kept", "mast.judge.status": "skipped", "mast.label.source": "none",
                    "mast.judge.status_reason": "sampled out (judge_fraction=0.25)"}  # fmt: skip


def test_the_model_defaults_to_the_judges_name_and_optional_fields_are_left_out() -> None:
    verdict = Verdict(status="ok", source="rules", tokens_in=0, tokens_out=0)
    root = typed(label(verdict)[ROOT])
    assert root["mast.judge.model"] == ("string_value", "judge-name")
    assert root["mast.failed"] == ("bool_value", False) and root["mast.failure_modes"] == ("array_value", ())
    assert root["mast.judge.tokens_in"] == ("int_value", 0)
    # no reason, no task answer, no summary: nothing invented for them
    assert "mast.judge.status_reason" not in root
    assert "mast.task_completed" not in root and "mast.verdict.summary" not in root


def test_task_completed_true_is_a_boolean() -> None:
    assert typed(label(failed(task_completed=True))[ROOT])["mast.task_completed"] == ("bool_value", True)


def test_a_mode_reported_twice_is_labelled_once_with_the_first_reason() -> None:
    twice = (ModeLabel("2.1", (MSG.hex(),), "first"), ModeLabel("2.1", (TOOL.hex(),), "second"))
    verdict = Verdict(status="ok", source="llm", modes=twice)
    spans = label(verdict)
    assert values(spans[ROOT])["mast.failure_modes"] == ("2.1",)
    assert set(spans) == {ROOT, MSG}  # the second (dropped) label's evidence is not used
    (event,) = spans[MSG].events
    assert values(event)["gen_ai.evaluation.explanation"] == "first"


def test_a_foreign_conversation_names_the_adapter_and_framework() -> None:
    root = values(label(failed(extra={"source": "openinference", "framework": "ag2"}))[ROOT])
    assert root["mast.source"] == "openinference" and root["mast.framework"] == "ag2"
    no_framework = values(label(failed(extra={"source": "genai"}))[ROOT])
    assert no_framework["mast.source"] == "genai" and "mast.framework" not in no_framework
    own = values(label(failed(extra={"framework": "ag2"}))[ROOT])  # mast-otel's own trace: its spans say it already
    assert "mast.source" not in own and "mast.framework" not in own


# -- evidence spans ------------------------------------------------------------------------------------------------


def test_evidence_spans_get_mode_ids_names_flags_and_one_event_per_mode() -> None:
    spans = label(failed())
    assert set(spans) == {ROOT, MSG, TOOL}  # OTHER is cited by nothing
    msg, tool = typed(spans[MSG]), typed(spans[TOOL])
    assert msg["app.attr"] == ("string_value", "kept")
    assert msg["mast.failure_mode"] == ("array_value", ("1.3", "3.2"))
    assert msg["mast.failure_mode.name"] == ("array_value", ("Step repetition", "No or incomplete verification"))
    assert msg["mast.fm.1_3"] == ("bool_value", True) and msg["mast.fm.3_2"] == ("bool_value", True)
    assert tool["mast.failure_mode"] == ("string_value", "1.3")  # one mode: a plain string
    assert tool["mast.failure_mode.name"] == ("string_value", "Step repetition")
    assert tool["mast.fm.1_3"] == ("bool_value", True) and "mast.fm.3_2" not in tool
    assert "mast.judge.status" not in msg  # root attributes stay on the root
    events = [(e.name, e.time_unix_nano, values(e)) for e in spans[MSG].events]
    assert events == [
        ("gen_ai.evaluation.result", 777, {"gen_ai.evaluation.name": "MAST 1.3 Step repetition",
                                           "gen_ai.evaluation.score.label": "present", "mast.failure_mode": "1.3"}),
        ("gen_ai.evaluation.result", 777, {"gen_ai.evaluation.name": "MAST 3.2 No or incomplete verification",
                                           "gen_ai.evaluation.score.label": "present", "mast.failure_mode": "3.2",
                                           "gen_ai.evaluation.explanation": "never ran the tests"}),
    ]  # fmt: skip


@pytest.mark.parametrize("status", JUDGED)
def test_evidence_is_labelled_for_every_judged_status(status: str) -> None:
    assert set(label(failed(status))) == {ROOT, MSG, TOOL}


def test_a_span_cited_twice_by_one_mode_gets_one_event() -> None:
    verdict = Verdict(status="ok", source="llm", modes=(ModeLabel("1.1", (MSG.hex(), MSG.hex())),))
    spans = label(verdict)
    assert [values(e)["mast.failure_mode"] for e in spans[MSG].events] == ["1.1"]
    assert values(spans[MSG])["mast.failure_mode"] == "1.1"


@pytest.mark.parametrize("ref", ["zz" * 8, "02" * 7, "02" * 9, "", "0x" + "02" * 7])
def test_evidence_that_is_not_a_span_id_is_ignored(ref: str) -> None:
    verdict = Verdict(status="ok", source="llm", modes=(ModeLabel("1.1", (ref, TOOL.hex())),))
    spans = label(verdict)
    assert set(spans) == {ROOT, TOOL}
    assert values(spans[ROOT])["mast.failure_modes"] == ("1.1",)


def test_a_root_cited_as_evidence_gets_both_label_sets() -> None:
    verdict = Verdict(status="ok", source="llm", modes=(ModeLabel("2.6", (ROOT.hex(),), "reason"),))
    root = values(label(verdict)[ROOT])
    assert root["mast.judge.status"] == "ok" and root["mast.failure_modes"] == ("2.6",)
    assert root["mast.failure_mode"] == "2.6" and root["mast.fm.2_6"] is True


def test_evidence_without_a_root_labels_only_the_evidence() -> None:
    spans = label(failed(), root=None)
    assert set(spans) == {MSG, TOOL}
    assert "mast.judge.status" not in values(spans[MSG])


def test_the_span_bytes_outside_the_labels_are_unchanged() -> None:
    # every field the labeller does not touch leaves as it arrived (docs: "byte for byte")
    spans = label(failed())
    for sid in (ROOT, MSG):
        got, original = spans[sid], Span.FromString(stored(sid))
        got.ClearField("attributes")
        got.ClearField("events")
        original.ClearField("attributes")
        assert got == original


# -- decisive step (docs/judge.md) ---------------------------------------------------------------------------------


def test_the_decisive_message_and_the_root_say_who_and_when() -> None:
    verdict = failed(decisive=DecisiveStep(span_id=OTHER.hex(), message_index=6, agent="coder", reason="skipped tests"))
    spans = label(verdict)
    assert set(spans) == {ROOT, MSG, TOOL, OTHER}
    root, decisive = typed(spans[ROOT]), typed(spans[OTHER])
    assert root["mast.decisive.agent"] == ("string_value", "coder")
    assert root["mast.decisive.message_index"] == ("int_value", 6)
    assert decisive["mast.decisive"] == ("bool_value", True)
    assert decisive["mast.decisive.reason"] == ("string_value", "skipped tests")
    assert decisive["app.attr"] == ("string_value", "kept")
    assert "mast.decisive" not in typed(spans[MSG]) and "mast.decisive" not in root


def test_a_decisive_step_without_a_reason_sets_only_the_flag() -> None:
    spans = label(failed(decisive=DecisiveStep(span_id=MSG.hex(), message_index=0, agent="a")))
    msg = values(spans[MSG])
    assert msg["mast.decisive"] is True and "mast.decisive.reason" not in msg
    assert msg["mast.failure_mode"] == ("1.3", "3.2")  # still labelled as evidence
    assert values(spans[ROOT])["mast.decisive.message_index"] == 0


@pytest.mark.parametrize("status", ["error", "skipped"])
def test_an_unjudged_verdict_marks_no_decisive_step(status: str) -> None:
    spans = label(failed(status, decisive=DecisiveStep(span_id=OTHER.hex(), message_index=1, agent="a")))
    assert set(spans) == {ROOT}
    assert not [k for k in values(spans[ROOT]) if k.startswith("mast.decisive")]


@pytest.mark.parametrize("ref", ["not hex", "04" * 4])
def test_a_decisive_step_that_names_no_span_labels_no_span(ref: str) -> None:
    spans = label(failed(decisive=DecisiveStep(span_id=ref, message_index=3, agent="a", reason="r")))
    assert set(spans) == {ROOT, MSG, TOOL}
    assert values(spans[ROOT])["mast.decisive.agent"] == "a"


# -- structural signals (docs/judge.md) ----------------------------------------------------------------------------

SIGNALS = (
    Signal("1.3", "repeated_message", "coder sent the same message 3 times", (MSG.hex(), TOOL.hex())),
    Signal("1.5", "round_limit", "ended by max_round=12", ("xyz", "05" * 3, OTHER.hex())),  # bad refs first
)


@pytest.mark.parametrize("verdict", [Verdict.skipped("no model"), Verdict.error("llm", "down"), failed()],
                         ids=["skipped", "error", "ok"])  # fmt: skip
def test_signals_go_on_the_root_and_the_spans_they_point_at_whatever_the_verdict(verdict: Verdict) -> None:
    spans = label(verdict, signals=SIGNALS)
    root = typed(spans[ROOT])
    assert root["mast.signals"] == ("array_value", ("repeated_message", "round_limit"))
    assert root["mast.signal.repeated_message"] == ("bool_value", True)
    assert root["mast.signal.repeated_message.mode"] == ("string_value", "1.3")
    assert root["mast.signal.repeated_message.detail"] == ("string_value", "coder sent the same message 3 times")
    assert root["mast.signal.round_limit"] == ("bool_value", True)
    assert root["mast.signal.round_limit.mode"] == ("string_value", "1.5")
    assert root["mast.signal.round_limit.detail"] == ("string_value", "ended by max_round=12")
    other = typed(spans[OTHER])
    assert other["mast.signal.round_limit"] == ("bool_value", True) and other["app.attr"] == ("string_value", "kept")
    assert "mast.signal.repeated_message" not in other and "mast.signals" not in other
    assert typed(spans[TOOL])["mast.signal.repeated_message"] == ("bool_value", True)
    assert "mast.judge.status" not in other  # a signal span is not a root


def test_a_span_two_signals_point_at_gets_both_flags() -> None:
    both = (
        Signal("1.3", "repeated_message", "d", (MSG.hex(),)),
        Signal("3.2", "unverified_approval", "d", (MSG.hex(),)),
    )
    msg = values(label(Verdict.skipped("no model"), signals=both)[MSG])
    assert msg["mast.signal.repeated_message"] is True and msg["mast.signal.unverified_approval"] is True


def test_a_signal_seen_twice_is_named_once() -> None:
    twice = (Signal("1.3", "repeated_message", "first", ()), Signal("1.3", "repeated_message", "second", ()))
    root = values(label(Verdict.skipped("no model"), signals=twice)[ROOT])
    assert root["mast.signals"] == ("repeated_message",)


def test_no_signals_no_signal_attributes() -> None:
    root = values(label(Verdict.skipped("no model"))[ROOT])
    assert not [k for k in root if k.startswith("mast.signal")]


def test_a_forged_signal_flag_on_a_pointed_span_is_replaced_not_repeated() -> None:
    bodies = {ROOT: stored(ROOT), OTHER: stored(OTHER, **{"mast.signal.round_limit": "forged"})}
    out = label_spans(Verdict.skipped("no model"), root_id=ROOT, bodies=bodies, judge_name="j", now_ns=1,
                      signals=SIGNALS)  # fmt: skip
    other = Span.FromString(out[OTHER])
    assert [kv.key for kv in other.attributes].count("mast.signal.round_limit") == 1
    assert typed(other)["mast.signal.round_limit"] == ("bool_value", True)


def test_labels_are_the_same_whether_appended_or_decoded() -> None:
    # the fast path (appending to the bytes) and the decode path give the same attributes for the same verdict
    verdict = Verdict.skipped("no model")
    fresh = label_spans(verdict, root_id=ROOT, bodies={ROOT: stored(ROOT)}, judge_name="j", now_ns=1, signals=SIGNALS)
    forged = label_spans(verdict, root_id=ROOT, bodies={ROOT: stored(ROOT, **{"mast.signals": "x"})}, judge_name="j",
                         now_ns=1, signals=SIGNALS)  # fmt: skip
    assert typed(Span.FromString(fresh[ROOT])) == typed(Span.FromString(forged[ROOT]))


# -- the mast.verdict span -----------------------------------------------------------------------------------------


def make_verdict_span(verdict: Verdict, **kw: object) -> Span:
    args: dict[str, object] = {"trace_id": TRACE, "unit_key": "conv-7", "parent_id": ROOT, "conversation_id": "c-7",
                               "judge_name": "judge-name", "start_ns": 100, "end_ns": 250,
                               "linkable": {MSG, TOOL}, "signals": ()}  # fmt: skip
    args.update(kw)
    return Span.FromString(verdict_span(verdict, **args))  # type: ignore[arg-type]


def test_the_verdict_span_is_a_child_of_the_root_carrying_the_root_labels() -> None:
    span = make_verdict_span(failed(), signals=SIGNALS)
    assert span.name == "mast.verdict" and span.kind == Span.SPAN_KIND_INTERNAL
    assert span.trace_id == TRACE and span.parent_span_id == ROOT and len(span.span_id) == 8
    assert (span.start_time_unix_nano, span.end_time_unix_nano) == (100, 250)
    got = typed(span)
    assert got["mast.span.type"] == ("string_value", "verdict")
    assert got["gen_ai.conversation.id"] == ("string_value", "c-7")
    root = typed(label(failed(), signals=SIGNALS)[ROOT])
    del root["app.attr"]
    assert {k: v for k, v in got.items() if k not in ("mast.span.type", "gen_ai.conversation.id")} == root


def test_the_verdict_span_has_one_event_per_mode_and_links_to_evidence_it_may_link() -> None:
    span = make_verdict_span(failed(), linkable={MSG})
    assert [(e.name, e.time_unix_nano, values(e)["mast.failure_mode"]) for e in span.events] == [
        ("gen_ai.evaluation.result", 250, "1.3"), ("gen_ai.evaluation.result", 250, "3.2")]  # fmt: skip
    assert [(link.trace_id, link.span_id, values(link)) for link in span.links] == [
        (TRACE, MSG, {"mast.failure_mode": ("1.3", "3.2")})
    ]
    tool_only = make_verdict_span(failed(), linkable={TOOL, OTHER})
    assert [(link.span_id, values(link)) for link in tool_only.links] == [(TOOL, {"mast.failure_mode": "1.3"})]


@pytest.mark.parametrize("status", ["error", "skipped"])
def test_an_unjudged_verdict_span_has_no_events_or_links(status: str) -> None:
    span = make_verdict_span(failed(status, status_reason="r"))
    assert not span.events and not span.links
    assert values(span)["mast.judge.status"] == status


def test_a_verdict_span_without_a_root_or_conversation_id() -> None:
    # a partial conversation whose root never arrived, recorded without a conversation id
    span = make_verdict_span(failed("partial"), parent_id=None, conversation_id=None)
    assert span.parent_span_id == b""
    assert "gen_ai.conversation.id" not in values(span)
    assert values(span)["mast.judge.status"] == "partial"


def test_a_verdict_span_never_ends_before_it_starts() -> None:
    span = make_verdict_span(failed(), start_ns=500, end_ns=400)
    assert (span.start_time_unix_nano, span.end_time_unix_nano) == (500, 500)


def test_the_verdict_span_id_is_stable_and_distinct_per_conversation() -> None:
    ids = {verdict_span_id(t, u) for t in (TRACE, bytes(16)) for u in ("conv-1", "conv-2")}
    assert len(ids) == 4 and all(len(i) == 8 for i in ids)
    again = make_verdict_span(Verdict.skipped("x"), start_ns=1, end_ns=2)
    assert make_verdict_span(failed()).span_id == again.span_id == verdict_span_id(TRACE, "conv-7")


def test_root_attributes_are_what_the_root_span_gets() -> None:
    # root_attributes (used for the store and the verdict span) matches the labelled root exactly
    verdict = failed(decisive=DecisiveStep(span_id=OTHER.hex(), message_index=2, agent="a"))
    root = values(label(verdict, signals=SIGNALS)[ROOT])
    del root["app.attr"]
    expected = {
        k: tuple(v) if isinstance(v, list) else v for k, v in root_attributes(verdict, "judge-name", SIGNALS).items()
    }
    assert root == expected


def test_a_mode_outside_the_taxonomy_is_named_unknown() -> None:
    # a user judge (--judge MODULE:CALLABLE) may cite an id the taxonomy does not have
    verdict = Verdict(status="ok", source="mine", modes=(ModeLabel("9.9", (MSG.hex(),), "custom"),))
    spans = label(verdict)
    assert values(spans[MSG])["mast.failure_mode.name"] == "unknown"
    assert values(spans[MSG].events[0])["gen_ai.evaluation.name"] == "MAST 9.9 unknown"
    assert values(spans[ROOT])["mast.failure_modes"] == ("9.9",) and values(spans[ROOT])["mast.fm.9_9"] is True


@pytest.mark.parametrize("forged", [False, True], ids=["appended", "decoded"])
def test_token_counts_a_user_judge_gives_as_floats_stay_numbers(forged: bool) -> None:
    # Verdict says int, but a user judge's Verdict is not checked: a float count must still reach the backend,
    # whether the labels are appended to the bytes or set on a decoded span (a root that already had a label key)
    verdict = Verdict(status="ok", source="mine", tokens_in=1200.5, tokens_out=3.25)  # type: ignore[arg-type]
    body = stored(ROOT, **({"mast.judge.status": "forged"} if forged else {}))
    out = label_spans(verdict, root_id=ROOT, bodies={ROOT: body}, judge_name="j", now_ns=1)
    root = typed(Span.FromString(out[ROOT]))
    assert root["mast.judge.tokens_in"] == ("double_value", 1200.5)
    assert root["mast.judge.tokens_out"] == ("double_value", 3.25)
