"""What a released conversation sends downstream and keeps in the store (docs/collector.md, "Labels and delivery
modes"), read from the OTLP requests the downstream receives and from ``mast-otel report --store``'s reader.

- hold: the root carries the labels and the structural signals, evidence spans their modes, no span is added;
- passthrough, or hold without the root: one ``mast.verdict`` span, child of the root (or where the missing root
  will be), with the conversation's resource and the collector's scope, spanning the judging;
- a trace another instrumentation wrote never gets a span it did not send; spans that are no conversation leave
  exactly as they came, and no verdict is stored for them;
- the stored verdict names the framework, and remembers the conversation ids, so a late span is not judged again.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import semconv as sc
from mast_otel.collector.release import builder as release_builder
from mast_otel.collector.report.store import load_store
from mast_otel.judge.model import Verdict
from mast_otel.recorder import Recorder
from mast_otel.spans import SpanRecord, from_readable_span
from mast_otel.version import __version__
from tests.collector.conftest import FakeClock, FakeJudge, flag_messages, provider, recorded
from tests.collector.in_process import Delivered, InProcess, in_process
from tests.collector.test_foreign_genai import adk_spans

_REPEATED = "Here is the full plan again: parse input, compute the total, print the result, then stop."


def looping() -> list[ReadableSpan]:
    """A conversation in which two agents repeat themselves: a confident structural signal (repeated_message)."""
    memory = InMemorySpanExporter()
    tp = provider(memory)
    rec = Recorder(tracer_provider=tp, framework="custom")
    with rec.conversation("looping"):
        for sender in ("planner", "coder", "planner", "coder"):
            with rec.agent_turn(sender):
                rec.message(sender, ["team"], _REPEATED)
        rec.terminate(sc.TERMINATION_COMPLETED)
    tp.shutdown()
    return list(memory.get_finished_spans())


def records(spans: Sequence[ReadableSpan]) -> list[SpanRecord]:
    return [from_readable_span(s) for s in spans]


def root_of(spans: Sequence[ReadableSpan]) -> ReadableSpan:
    (root,) = (s for s in spans if (s.attributes or {}).get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_CONVERSATION)
    return root


def span_id(span: ReadableSpan) -> bytes:
    return int(span.context.span_id).to_bytes(8, "big")


def ids(spans: Sequence[ReadableSpan]) -> list[bytes]:
    return sorted(span_id(s) for s in spans)


def messages(spans: Sequence[ReadableSpan]) -> set[bytes]:
    return {span_id(s) for s in spans if (s.attributes or {}).get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_MESSAGE}


def verdict_spans(got: Sequence[Delivered]) -> list[Delivered]:
    return [d for d in got if d.name == sc.VERDICT_SPAN_NAME]


def slow_judge(clock: FakeClock, seconds: float, mode_id: str = "1.3") -> FakeJudge:
    """Flags every message as ``mode_id`` after ``seconds`` on the injected clock."""
    flag = flag_messages(mode_id)

    def judge(spans: Sequence[SpanRecord], partial: bool) -> Verdict:
        clock.advance(seconds)
        return flag(spans, partial)

    return FakeJudge(on_judge=judge)


def with_service(request: ExportTraceServiceRequest, service: str) -> ExportTraceServiceRequest:
    """The request with every resource's ``service.name`` set to ``service``."""
    for rs in request.resource_spans:
        for kv in rs.resource.attributes:
            if kv.key == "service.name":
                kv.value.string_value = service
    return request


def counted(c: InProcess, name: str, **labels: str) -> float:
    """The sum of a metric's samples whose labels include ``labels``."""
    return sum(
        s.value
        for m in c.service.metrics.registry.collect()
        for s in m.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


# -- hold mode ---------------------------------------------------------------------------------------------------


def test_hold_mode_labels_the_root_and_the_evidence_and_adds_no_span(tmp_path: Path) -> None:
    spans = recorded(1)
    with in_process(tmp_path, judge=FakeJudge(on_judge=flag_messages("1.3"))) as c:
        c.send(spans)
        c.release()
        released_at = c.clock.now
        got = c.downstream.spans()
    assert sorted(d.span.span_id for d in got) == ids(spans)  # every span once, nothing added
    by_id = {d.span.span_id: d for d in got}
    root = by_id[span_id(root_of(spans))].attributes
    assert root[sc.JUDGE_STATUS] == sc.JUDGE_OK and root[sc.FAILED] is True and root[sc.FAILURE_MODES] == ("1.3",)
    assert root[sc.JUDGE_MODEL] == "fake-model"
    for sid in messages(spans):
        evidence = by_id[sid]
        assert evidence.attributes[sc.FAILURE_MODE] == "1.3"
        (event,) = evidence.span.events
        assert event.name == sc.EVAL_EVENT_NAME
        assert abs(event.time_unix_nano - released_at * 1e9) < 1e3  # when the verdict was released
    others = [d for sid, d in by_id.items() if sid not in messages(spans) and sid != span_id(root_of(spans))]
    assert others and not any(sc.JUDGE_STATUS in d.attributes or sc.FAILURE_MODE in d.attributes for d in others)


def test_the_root_carries_the_structural_signals_and_each_span_they_point_at_is_flagged(tmp_path: Path) -> None:
    spans = looping()
    expected = release_builder.compute_signals_of(records(spans))  # the detector run on the spans as sent
    assert any(s.confident for s in expected)
    with in_process(tmp_path) as c:
        c.send(spans)
        c.release()
        got = {d.span.span_id.hex(): d for d in c.downstream.spans()}
        for s in expected:  # each signal counted once for the conversation, under its service and framework
            labels = {"signal": s.name, "mode": s.mode_id, "service": "shop", "framework": "custom"}
            assert c.metric("mast_signal_total", labels) == 1
    root = got[span_id(root_of(spans)).hex()].attributes
    assert root[sc.JUDGE_STATUS] == sc.JUDGE_OK  # the fake judge's clean verdict
    assert root[sc.SIGNALS] == tuple(dict.fromkeys(s.name for s in expected))
    for s in expected:
        assert root[sc.signal_attribute(s.name)] is True
        for sid in s.evidence_span_ids:
            assert got[sid].attributes[sc.signal_attribute(s.name)] is True


def test_a_detector_failure_costs_the_signals_never_the_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(spans: Sequence[SpanRecord]) -> list[object]:
        raise RuntimeError("detector bug")

    monkeypatch.setattr(release_builder, "compute_signals_of", broken)
    spans = looping()
    with in_process(tmp_path, judge=FakeJudge(on_judge=flag_messages("1.3"))) as c:
        c.send(spans)
        c.release()
        got = c.downstream.spans()
        assert c.metric("mast_judge_errors_total", {"reason": "signals"}) == 1
    assert sorted(d.span.span_id for d in got) == ids(spans)
    (root,) = (d for d in got if d.span.span_id == span_id(root_of(spans)))
    assert root.attributes[sc.FAILURE_MODES] == ("1.3",)  # the verdict is there
    assert not any(k.startswith(sc.SIGNAL_PREFIX) or k == sc.SIGNALS for d in got for k in d.attributes)
    # the operator's one line names the trace and what was lost
    trace = f"{root_of(spans).context.trace_id:032x}"
    (line,) = [r.getMessage() for r in caplog.records if "structural signals" in r.getMessage()]
    assert line.startswith("structural signals failed on trace ") and trace in line and "without them" in line


def test_a_conversation_judged_without_its_root_gets_a_verdict_span_where_the_root_will_be(tmp_path: Path) -> None:
    spans = recorded(1)
    root = root_of(spans)
    conversation_id = (root.attributes or {})[sc.GEN_AI_CONVERSATION_ID]
    with in_process(tmp_path, judge=FakeJudge(on_judge=flag_messages("1.3"))) as c:
        c.send([s for s in spans if s is not root])
        c.release(61)  # past max_trace_age (60 s): judged partial
        got = c.downstream.spans()
        assert counted(c, "mast_conversations_judged_total", status=sc.JUDGE_PARTIAL, service="shop") == 1
    (verdict,) = verdict_spans(got)
    assert verdict.span.parent_span_id == span_id(root) and verdict.span.trace_id == root.context.trace_id.to_bytes(
        16, "big"
    )
    assert verdict.attributes[sc.JUDGE_STATUS] == sc.JUDGE_PARTIAL
    assert verdict.attributes[sc.GEN_AI_CONVERSATION_ID] == conversation_id
    assert verdict.service == "shop" and verdict.scope.name == "mast_otel.collector"
    assert {link.span_id for link in verdict.span.links} == messages(spans)
    assert sorted(d.span.span_id for d in got if d is not verdict) == ids([s for s in spans if s is not root])


# -- passthrough -------------------------------------------------------------------------------------------------


def test_passthrough_sends_one_verdict_span_under_the_root_spanning_the_judging(tmp_path: Path) -> None:
    spans = recorded(2)
    clock = FakeClock()
    with in_process(tmp_path, judge=slow_judge(clock, 2.5), clock=clock, mode="passthrough",
                    judge_concurrency=1) as c:  # fmt: skip
        c.send(spans)
        assert c.service.flush(timeout=10)
        forwarded = c.downstream.spans()
        submitted = clock.now + 1.0
        c.release()
        got = c.downstream.spans()
    assert sorted(d.span.span_id for d in forwarded) == ids(spans)  # at once, as they came
    assert not any(sc.JUDGE_STATUS in d.attributes for d in forwarded)
    verdicts = verdict_spans(got)
    assert len(got) == len(spans) + 2 and len(verdicts) == 2
    roots = {span_id(s): s for s in spans if (s.attributes or {}).get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_CONVERSATION}
    assert {v.span.parent_span_id for v in verdicts} == set(roots)
    for v in verdicts:
        root = roots[v.span.parent_span_id]
        assert v.span.trace_id == root.context.trace_id.to_bytes(16, "big")
        assert v.scope.name == "mast_otel.collector" and v.scope.version == __version__
        assert v.service == "shop"
        assert v.attributes[sc.GEN_AI_CONVERSATION_ID] == (root.attributes or {})[sc.GEN_AI_CONVERSATION_ID]
        assert v.attributes[sc.FAILURE_MODES] == ("1.3",)
        conversation = [s for s in spans if s.context.trace_id == root.context.trace_id]
        assert {link.span_id for link in v.span.links} == messages(conversation)
        # from the conversation's release to its verdict: each judge call took 2.5 s, one after the other
        assert abs(v.span.start_time_unix_nano - submitted * 1e9) < 1e3
        assert v.span.end_time_unix_nano - v.span.start_time_unix_nano in {int(2.5e9), int(5e9)}


def nested() -> list[ReadableSpan]:
    """A conversation ("z-outer") with a nested chat ("a-inner", its id sorting first) run during a turn."""
    memory = InMemorySpanExporter()
    tp = provider(memory)
    rec = Recorder(tracer_provider=tp, framework="custom")
    with rec.conversation("outer", conversation_id="z-outer"):  # the inner id sorts first
        with rec.agent_turn("planner"):
            rec.message("planner", ["coder"], "Delegate the sum to the math team.")
            # a nested chat: a conversation started during the planner's turn
            with rec.conversation("inner", conversation_id="a-inner"), rec.agent_turn("math"):
                rec.message("math", ["checker"], "2 + 3 = 5")
        rec.terminate(sc.TERMINATION_COMPLETED)
    tp.shutdown()
    return list(memory.get_finished_spans())


def test_the_verdict_span_names_the_outer_conversation_when_a_nested_one_ran_inside(tmp_path: Path) -> None:
    spans = nested()
    with in_process(tmp_path, judge=FakeJudge(on_judge=flag_messages("1.3")), mode="passthrough") as c:
        c.send(spans)
        c.release()
        (verdict,) = verdict_spans(c.downstream.spans())  # one conversation, judged once
    assert {(s.attributes or {}).get(sc.GEN_AI_CONVERSATION_ID) for s in spans} == {"z-outer", "a-inner"}
    assert verdict.attributes[sc.GEN_AI_CONVERSATION_ID] == "z-outer"


def test_spans_that_only_pretend_to_be_mast_otels_are_released_once(tmp_path: Path) -> None:
    # A root candidate over a span typed as a message, with no conversation id anywhere: judged, released once,
    # never retried (nothing is retried forever).
    memory = InMemorySpanExporter()
    tp = provider(memory)
    tracer = tp.get_tracer("crafted")
    with (
        tracer.start_as_current_span(
            "invoke_workflow crafted", attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_WORKFLOW}
        ),
        tracer.start_as_current_span("message", attributes={sc.MAST_SPAN_TYPE: sc.SPAN_TYPE_MESSAGE}),
    ):
        pass
    tp.shutdown()
    spans = list(memory.get_finished_spans())
    with in_process(tmp_path, judge=FakeJudge(on_judge=flag_messages("1.3")), mode="passthrough") as c:
        c.send(spans)
        c.release()
        got = c.downstream.spans()
        assert c.metric("mast_judge_errors_total", {"reason": "store"}) == 0
        assert c.metric("mast_judge_in_flight") == 0
    (verdict,) = verdict_spans(got)
    assert sc.GEN_AI_CONVERSATION_ID not in verdict.attributes and len(got) == len(spans) + 1


def test_the_verdict_span_carries_the_root_attributes_signals_and_judge_name_included(tmp_path: Path) -> None:
    spans = looping()
    expected = release_builder.compute_signals_of(records(spans))
    with in_process(tmp_path, judge=FakeJudge(), mode="passthrough") as c:  # its verdict names no model
        c.send(spans)
        c.release()
        (verdict,) = verdict_spans(c.downstream.spans())
        # one span more than arrived left, and the exporter counted it as one
        assert c.metric("mast_collector_spans_exported_total") == len(spans) + 1
    assert verdict.attributes[sc.JUDGE_MODEL] == "fake"  # the judge's name stands in for the model
    assert verdict.attributes[sc.SIGNALS] == tuple(dict.fromkeys(s.name for s in expected))
    assert all(verdict.attributes[sc.signal_attribute(s.name)] is True for s in expected)


def test_the_verdict_span_has_the_roots_resource_when_the_conversation_spans_services(tmp_path: Path) -> None:
    spans = recorded(1)
    root = root_of(spans)
    agents = with_service(encode_spans([s for s in spans if s is not root]), "worker")
    orchestrator = with_service(encode_spans([root]), "orchestrator")
    with in_process(tmp_path, judge=FakeJudge(on_judge=flag_messages("1.3")), mode="passthrough") as c:
        c.send(agents)  # the first resource the conversation's spans came under is not the root's
        c.send(orchestrator)
        c.release()
        (verdict,) = verdict_spans(c.downstream.spans())
        assert counted(c, "mast_conversations_judged_total", status=sc.JUDGE_OK, service="orchestrator") == 1
        assert counted(c, "mast_conversations_judged_total", service="worker") == 0
    assert verdict.service == "orchestrator" and verdict.span.parent_span_id == span_id(root)


def test_a_conversation_is_counted_under_its_roots_service_even_when_that_names_none(tmp_path: Path) -> None:
    # The root's resource is the conversation's; one without service.name is "unknown", never borrowed from an agent
    spans = recorded(1)
    root = root_of(spans)
    orchestrator = encode_spans([root])
    for rs in orchestrator.resource_spans:
        kept = [kv for kv in rs.resource.attributes if kv.key != "service.name"]
        del rs.resource.attributes[:]
        rs.resource.attributes.extend(kept)
    with in_process(tmp_path, judge=FakeJudge(on_judge=flag_messages("1.3"))) as c:
        c.send(with_service(encode_spans([s for s in spans if s is not root]), "worker"))
        c.send(orchestrator)
        c.release()
        assert counted(c, "mast_conversations_judged_total", status=sc.JUDGE_OK, service="unknown") == 1
        assert counted(c, "mast_conversations_judged_total", service="worker") == 0


def test_a_conversation_without_its_root_or_a_service_name_is_released_under_unknown(tmp_path: Path) -> None:
    spans = recorded(1)
    root = root_of(spans)
    request = encode_spans([s for s in spans if s is not root])
    for rs in request.resource_spans:
        del rs.resource.attributes[:]  # a client that names no service
    with in_process(tmp_path, judge=FakeJudge(on_judge=flag_messages("1.3"))) as c:
        c.send(request)
        c.release(61)
        (verdict,) = verdict_spans(c.downstream.spans())
        assert counted(c, "mast_conversations_judged_total", status=sc.JUDGE_PARTIAL, service="unknown") == 1
        assert c.metric("mast_judge_in_flight") == 0
    assert verdict.span.parent_span_id == span_id(root) and verdict.service is None


def test_a_stored_verdict_names_no_framework_it_does_not_know(tmp_path: Path) -> None:
    spans = recorded(1)  # without its root, nothing says which framework recorded it
    with in_process(tmp_path, judge=FakeJudge(on_judge=flag_messages("1.3"))) as c:
        c.send([s for s in spans if s is not root_of(spans)])
        c.release(61)
        (stored,) = load_store(c.store)
    assert stored.status == sc.JUDGE_PARTIAL and stored.framework == "unknown"


# -- other instrumentations' traces ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["hold", "passthrough"])
def test_a_trace_another_instrumentation_wrote_gets_no_span_it_did_not_send(tmp_path: Path, mode: str) -> None:
    spans = adk_spans()
    with in_process(tmp_path, judge=FakeJudge(on_judge=flag_messages("1.3")), mode=mode) as c:
        c.send(spans)
        c.release()
        got = c.downstream.spans()
        (stored,) = load_store(c.store)
        # and in the metrics, under the framework the adapter recognised
        labels = {"status": sc.JUDGE_OK, "service": "adk-desk", "version": "unknown", "framework": "google-adk"}
        assert c.metric("mast_conversations_judged_total", labels) == 1
    assert sorted(d.span.span_id for d in got) == ids(spans)
    assert stored.status == sc.JUDGE_OK and stored.framework == "google-adk"  # the verdict is in the store


def test_spans_that_hold_no_conversation_leave_as_they_came_and_store_no_verdict(tmp_path: Path) -> None:
    memory = InMemorySpanExporter()
    tp = provider(memory, "solo-desk")
    tracer = tp.get_tracer("gcp.vertex.agent")
    agent = {sc.GEN_AI_AGENT_NAME: "solo", sc.GEN_AI_CONVERSATION_ID: "session-1"}
    workflow = {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_WORKFLOW, **agent}
    with tracer.start_as_current_span("invoke_workflow solo", attributes=workflow):  # one agent: no conversation
        with tracer.start_as_current_span(
            "invoke_agent solo", attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, **agent}
        ):
            pass
    tp.shutdown()
    spans = list(memory.get_finished_spans())
    sent = {s.span_id: s for rs in encode_spans(spans).resource_spans for ss in rs.scope_spans for s in ss.spans}
    judge = FakeJudge()
    with in_process(tmp_path, judge=judge) as c:
        c.send(spans)
        c.release()
        got = c.downstream.spans()
        assert c.metric("mast_collector_spans_unassigned_total", {"reason": "not_a_conversation"}) == len(spans)
        assert load_store(c.store) == []
        c.send(spans)  # a client's retry after the release: known, dropped as duplicates
        c.release(61)
        assert len(c.downstream.spans()) == len(spans)
        assert c.metric("mast_collector_spans_duplicated_total") == len(spans)
    assert {d.span.span_id: d.span for d in got} == sent  # byte for byte the spans sent
    assert judge.calls == []


# -- what the store keeps ----------------------------------------------------------------------------------------


def test_the_stored_verdict_names_the_framework_for_report(tmp_path: Path) -> None:
    spans = recorded(1)
    with in_process(tmp_path, judge=FakeJudge(on_judge=flag_messages("1.3"))) as c:
        c.send(spans)
        c.release()
        (stored,) = load_store(c.store)
        c.send(spans)  # a client's retry after the release: every span known, dropped as a duplicate
        c.release()
        assert len(c.downstream.spans()) == len(spans)
        assert c.metric("mast_collector_spans_duplicated_total") == len(spans)
    assert stored.trace_id == f"{root_of(spans).context.trace_id:032x}"
    assert stored.framework == "custom" and stored.status == sc.JUDGE_OK and stored.modes == ("1.3",)


def test_a_framework_has_one_spelling_in_the_series_and_the_store_whichever_recorder_wrote_it(tmp_path: Path) -> None:
    """A root an older recorder wrote with the module's spelling (``autogen_agentchat``) is counted and stored under
    the one spelling the adapters read the same framework by (``autogen-agentchat``)."""
    spans = [_with_framework(s, "autogen_agentchat") if s.attributes.get(sc.MAST_FRAMEWORK) else s
             for s in recorded(1)]  # fmt: skip
    with in_process(tmp_path, judge=FakeJudge(on_judge=flag_messages("1.3"))) as c:
        c.send(spans)
        c.release()
        labels = {"mode": "1.3", "category": "FC1", "service": "shop", "version": "unknown"}
        assert c.metric("mast_failure_mode_total", {**labels, "framework": "autogen-agentchat"}) == 1
        assert c.metric("mast_failure_mode_total", {**labels, "framework": "autogen_agentchat"}) == 0
    (stored,) = load_store(c.store)
    assert stored.framework == "autogen-agentchat"


def _with_framework(span: ReadableSpan, framework: str) -> ReadableSpan:
    attributes = {**(span.attributes or {}), sc.MAST_FRAMEWORK: framework}
    return ReadableSpan(name=span.name, context=span.context, parent=span.parent, resource=span.resource,
                        attributes=attributes, events=span.events, links=span.links, kind=span.kind,
                        status=span.status, start_time=span.start_time, end_time=span.end_time,
                        instrumentation_scope=span.instrumentation_scope)  # fmt: skip


@pytest.mark.parametrize("conversation", ["z-outer", "a-inner"])
def test_a_late_span_of_a_released_conversation_is_not_judged_again(tmp_path: Path, conversation: str) -> None:
    # A span whose parent never arrived, carrying the id of the conversation (or of the chat nested in it): the
    # tombstone's conversation ids place it.
    spans = nested()
    request = encode_spans(spans)
    (message,) = [
        s
        for s in request.resource_spans[0].scope_spans[0].spans
        if s.span_id in messages(spans)
        and any(kv.key == sc.GEN_AI_CONVERSATION_ID and kv.value.string_value == conversation for kv in s.attributes)
    ][:1]
    late = ExportTraceServiceRequest()
    late.CopyFrom(request)
    scope = late.resource_spans[0].scope_spans[0]
    del scope.spans[:]
    stray = scope.spans.add()
    stray.CopyFrom(message)
    stray.span_id, stray.parent_span_id = os.urandom(8), os.urandom(8)
    judge = FakeJudge(on_judge=flag_messages("1.3"))
    with in_process(tmp_path, judge=judge) as c:
        c.send(spans)
        c.release()
        c.send(late)
        c.release(120)  # past max_trace_age: a span held as a conversation of its own would be judged by now
        got = c.downstream.spans()
        assert c.metric("mast_collector_spans_late_total") == 1
    assert len(judge.calls) == 1
    (out,) = [d for d in got if d.span.span_id == stray.span_id]
    assert sc.JUDGE_STATUS not in out.attributes and sc.FAILURE_MODE not in out.attributes
    assert len(got) == len(spans) + 1 and not verdict_spans(got)
