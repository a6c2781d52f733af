"""Recorded traces replayed through the Recorder: span shapes checked against the records they came from."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

from mast_otel import semconv as sc
from mast_otel.config import CaptureConfig
from mast_otel.recorder import Recorder
from mast_otel.redaction import Redactor
from mast_otel.replay import recipients_for, replay_record, replay_records, spans_for_record
from mast_otel.spans import SpanRecord, from_readable_span
from mast_otel.steplist import Step, StepRecord, parse_steplist
from tests.mad_data import AG2_SAMPLE_INDICES

# Exact content comparisons: no length cap, no secret patterns (MetaGPT code has "password = ..." lines).
Replayed = Callable[[], list[ReadableSpan]]

VERBATIM = CaptureConfig(capture_content=True, redactor=Redactor(max_length=0, builtin=False))


def _attr(span: ReadableSpan | SpanRecord, key: str) -> object:
    if isinstance(span, SpanRecord):
        return span.get(key)
    return (span.attributes or {}).get(key)


@pytest.fixture
def replayed(tracer_provider: TracerProvider, span_exporter: object, picked: list[StepRecord]) -> Replayed:
    count = replay_records(picked, Recorder(tracer_provider=tracer_provider, config=VERBATIM))
    assert count == len(picked)
    return lambda: list(span_exporter.get_finished_spans())  # type: ignore[attr-defined]


def _by_trace(spans: list[ReadableSpan]) -> dict[int, list[ReadableSpan]]:
    out: dict[int, list[ReadableSpan]] = {}
    for s in spans:
        out.setdefault(s.get_span_context().trace_id, []).append(s)
    return out


def _of_type(spans: list[ReadableSpan], span_type: str) -> list[ReadableSpan]:
    return [s for s in spans if _attr(s, sc.MAST_SPAN_TYPE) == span_type]


def _root(spans: list[ReadableSpan]) -> ReadableSpan:
    (root,) = _of_type(spans, sc.SPAN_TYPE_CONVERSATION)
    return root


def _record_of(root: ReadableSpan, picked: list[StepRecord]) -> StepRecord:
    (record,) = [r for r in picked if r.trace_key == _attr(root, sc.REPLAY_TRACE_KEY)]
    return record


def test_one_root_and_one_trace_per_record(replayed: Replayed, picked: list[StepRecord]) -> None:
    traces = _by_trace(replayed())
    assert len(traces) == len(picked)
    assert sorted(str(_attr(_root(spans), sc.REPLAY_TRACE_KEY)) for spans in traces.values()) == sorted(
        r.trace_key for r in picked
    )
    for spans in traces.values():
        root = _root(spans)
        assert root.parent is None
        assert all(s.parent is not None and s.parent.span_id == root.context.span_id for s in spans if s is not root)


def test_messages_match_steps_one_to_one(replayed: Replayed, picked: list[StepRecord]) -> None:
    for spans in _by_trace(replayed()).values():
        record = _record_of(_root(spans), picked)
        messages = sorted(_of_type(spans, sc.SPAN_TYPE_MESSAGE), key=lambda s: int(_attr(s, sc.MESSAGE_INDEX)))  # type: ignore[arg-type]
        assert len(messages) == len(record.steps)
        for index, (span, step) in enumerate(zip(messages, record.steps, strict=True)):
            assert _attr(span, sc.MESSAGE_INDEX) == index
            assert _attr(span, sc.MESSAGE_SENDER) == step.agent
            assert _attr(span, sc.MESSAGE_CONTENT) == step.content
            expected_kind = step.kind if step.kind in ("message", "tool_call", "tool_result") else sc.KIND_MESSAGE
            assert _attr(span, sc.MESSAGE_KIND) == expected_kind
            assert _attr(span, sc.REPLAY_STEP_KIND) == (None if step.kind == expected_kind else step.kind)
        # spans are made in step order, so start times never go backwards along the message index
        starts = [s.start_time or 0 for s in messages]
        assert starts == sorted(starts)


def test_handoff_wherever_the_speaker_changes(replayed: Replayed, picked: list[StepRecord]) -> None:
    for spans in _by_trace(replayed()).values():
        record = _record_of(_root(spans), picked)
        steps = record.steps
        changes = [(a.agent, b.agent) for a, b in pairwise(steps) if a.agent != b.agent]
        handoffs = sorted(_of_type(spans, sc.SPAN_TYPE_HANDOFF), key=lambda s: int(_attr(s, sc.HANDOFF_INDEX)))  # type: ignore[arg-type]
        assert [(_attr(h, sc.HANDOFF_FROM), _attr(h, sc.HANDOFF_TO)) for h in handoffs] == changes
        assert {_attr(h, sc.HANDOFF_REASON) for h in handoffs} <= {sc.HANDOFF_ROUTING}
        for h in handoffs:
            assert list(_attr(h, sc.HANDOFF_CANDIDATES)) == list(record.agents)  # type: ignore[arg-type]
        root = _root(spans)
        assert _attr(root, sc.CONVERSATION_HANDOFFS) == len(changes) == record.extra["n_agent_switches"]


def test_every_step_but_the_task_is_an_agent_turn(replayed: Replayed, picked: list[StepRecord]) -> None:
    for spans in _by_trace(replayed()).values():
        record = _record_of(_root(spans), picked)
        turns = sorted(_of_type(spans, sc.SPAN_TYPE_AGENT_TURN), key=lambda s: s.start_time or 0)
        assert [_attr(t, sc.GEN_AI_AGENT_NAME) for t in turns] == [s.agent for s in record.steps[1:]]
        assert all(_attr(t, sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_AGENT for t in turns)


def test_root_carries_origin_reference_labels_and_task(replayed: Replayed, picked: list[StepRecord]) -> None:
    roots = {str(_attr(_root(s), sc.REPLAY_TRACE_KEY)): _root(s) for s in _by_trace(replayed()).values()}
    mmlu = roots["AG2_MMLU_GPT4o_Mini_3"]
    assert mmlu.name == "invoke_workflow AG2"
    assert _attr(mmlu, sc.MAST_FRAMEWORK) == "ag2"
    assert _attr(mmlu, sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_WORKFLOW
    assert _attr(mmlu, sc.REPLAY_MAD_TRACE_KEY) == "AG2_MMLU_GPT4o_Mini"
    assert _attr(mmlu, sc.REPLAY_TRACE_ID) == "3"
    assert _attr(mmlu, sc.REPLAY_RECORD_INDEX) == AG2_SAMPLE_INDICES.index(226)  # its position in the sample file
    assert _attr(mmlu, sc.REPLAY_BENCHMARK) == "MMLU"
    assert _attr(mmlu, sc.REPLAY_LLM) == "GPT-4o"
    assert _attr(mmlu, "mast.reference.fm.2_2") is True
    assert _attr(mmlu, "mast.reference.fm.2_3") is True
    assert _attr(mmlu, "mast.reference.fm.1_3") is False
    assert list(_attr(mmlu, sc.REFERENCE_FAILURE_MODES)) == ["2.2", "2.3"]  # type: ignore[arg-type]
    for root in roots.values():
        record = _record_of(root, picked)
        assert _attr(root, sc.CONVERSATION_TASK) == record.steps[0].content
        assert _attr(root, sc.CONVERSATION_ROUNDS) == len(record.steps)
        for mode, present in record.mast_annotation.items():
            assert _attr(root, sc.reference_fm_attribute(mode)) is present
    metagpt = roots["MetaGPT_ProgramDev_GPT4o_0"]
    assert _attr(metagpt, sc.MAST_FRAMEWORK) == "metagpt"
    assert metagpt.name == "invoke_workflow MetaGPT"


def test_termination_is_inferred_and_says_so(replayed: Replayed, picked: list[StepRecord]) -> None:
    roots = {str(_attr(_root(s), sc.REPLAY_TRACE_KEY)): _root(s) for s in _by_trace(replayed()).values()}
    # AG2 MathChat ends on a \boxed{} answer; the MMLU group on SOLUTION_FOUND: both termination messages.
    for key in ("AG2_GSM_Plus_GPT4o_0", "AG2_GSM_Plus_Claude_0", "AG2_MMLU_GPT4o_Mini_3", "AG2_Olympiad_GPT4o_185"):
        assert _attr(roots[key], sc.TERMINATION_REASON) == sc.TERMINATION_MESSAGE, key
    assert "SOLUTION_FOUND" in str(_attr(roots["AG2_MMLU_GPT4o_Mini_3"], sc.TERMINATION_DETAIL))
    # MetaGPT: 6 steps is the round limit; the short runs ended on their own.
    full = roots["MetaGPT_ProgramDev_GPT4o_0"]
    assert _attr(full, sc.TERMINATION_REASON) == sc.TERMINATION_MAX_ROUNDS
    assert _attr(full, sc.CONVERSATION_MAX_ROUNDS) == 6
    short = [r for k, r in roots.items() if k.startswith("MetaGPT_ProgramDev2")]
    assert len(short) == 2 and {_attr(r, sc.TERMINATION_REASON) for r in short} == {sc.TERMINATION_COMPLETED}
    assert all(str(_attr(r, sc.TERMINATION_DETAIL)).startswith("inferred") for r in roots.values())


def test_terminate_in_the_last_message_is_a_termination_message() -> None:
    (record,) = parse_steplist(
        [
            {
                "steps": [
                    {"agent": "user", "content": "Add 2 and 2."},
                    {"agent": "coder", "content": "4. TERMINATE"},
                ],
                "metadata": {"mas_name": "MetaGPT", "mad_trace_key": "custom"},
            }
        ]
    )
    (root,) = [s for s in spans_for_record(record) if s.is_conversation_root]
    assert root.get(sc.TERMINATION_REASON) == sc.TERMINATION_MESSAGE
    assert root.get(sc.REFERENCE_FAILURE_MODES) is None  # no labels in the record: no reference attributes


def _step(agent: str, kind: str = "message") -> Step:
    return Step(agent=agent, content=f"{agent} says", kind=kind, index=0)


@pytest.mark.parametrize(
    ("agents", "expected"),
    [
        # two agents alternating: each speaks to the other
        (["u", "a", "u", "a"], [["a"], ["u"], ["a"], ["u"]]),
        # a run of one agent goes to whoever speaks next; the tail answers the previous other agent
        (["u", "a", "a", "b", "b"], [["a"], ["b"], ["b"], ["a"], ["a"]]),
        # a single speaker has nobody to address
        (["u", "u"], [[], []]),
    ],
)
def test_recipient_rule(agents: list[str], expected: list[list[str]]) -> None:
    record = StepRecord(index=0, steps=tuple(_step(a) for a in agents), trace_id="0", mad_trace_key="k", mas_name="X")
    assert recipients_for(record) == expected


def test_system_step_is_addressed_to_everyone_else(picked: list[StepRecord]) -> None:
    mmlu = picked[2]
    assert mmlu.steps[1].kind == "system"
    assert recipients_for(mmlu)[1] == [a for a in mmlu.agents if a != "chat_manager"]


def test_spans_for_record_root_first_and_same_shape_as_replay(picked: list[StepRecord]) -> None:
    record = picked[2]
    spans = spans_for_record(record, config=VERBATIM)
    assert spans[0].is_conversation_root
    assert spans[0].service_name == "mast-otel-replay"
    assert sum(1 for s in spans if s.is_conversation_root) == 1
    assert {s.trace_id for s in spans} == {spans[0].trace_id}
    messages = [s for s in spans if s.span_type == sc.SPAN_TYPE_MESSAGE]
    assert [m.get(sc.MESSAGE_CONTENT) for m in messages] == [s.content for s in record.steps]
    turns = [s for s in spans if s.span_type == sc.SPAN_TYPE_AGENT_TURN]
    handoffs = [s for s in spans if s.span_type == sc.SPAN_TYPE_HANDOFF]
    assert len(spans) == 1 + len(messages) + len(turns) + len(handoffs)


def test_replay_inside_an_open_conversation_still_makes_its_own_root(
    tracer_provider: TracerProvider, span_exporter: object, picked: list[StepRecord]
) -> None:
    recorder = Recorder(tracer_provider=tracer_provider)
    with recorder.conversation("outer"):
        replay_record(picked[0], recorder)
    spans = [from_readable_span(s) for s in span_exporter.get_finished_spans()]  # type: ignore[attr-defined]
    roots = [s for s in spans if s.is_conversation_root]
    assert len(roots) == 2 and len({r.trace_id for r in roots}) == 2


def test_rate_paces_conversations(tracer_provider: TracerProvider, picked: list[StepRecord]) -> None:
    import time

    started = time.monotonic()
    replay_records(picked[:3], Recorder(tracer_provider=tracer_provider), rate=20.0)
    assert time.monotonic() - started >= 2 / 20.0  # three conversations at 20/s: at least two gaps of 50 ms


def test_after_each_can_stop_the_replay(tracer_provider: TracerProvider, picked: list[StepRecord]) -> None:
    seen: list[str] = []

    def stop_after_two(record: StepRecord) -> bool:
        seen.append(record.trace_key)
        return len(seen) < 2

    assert replay_records(picked, Recorder(tracer_provider=tracer_provider), after_each=stop_after_two) == 2
