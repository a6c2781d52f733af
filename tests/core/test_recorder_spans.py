"""The spans the recorder emits, read back from an in-memory exporter: names, kinds, parents and every attribute
docs/spans.md documents, with the values worked out by hand from the calls the test makes.

The first test pins one home-grown run completely (each span's whole attribute set, so an attribute that goes
missing, changes value or appears where it should not fails it); the others pin one behaviour each: the optional
attributes, the counters, joining and nesting, termination, the handoff's bookkeeping, tool results, the
content switches, and that recording never changes the program (its exceptions come back as the same objects, a
recording failure is counted under its entry point's name and logged once).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.trace import SpanKind, StatusCode

import mast_otel
from mast_otel import CaptureConfig, Recorder
from mast_otel import semconv as sc
from mast_otel._safety import reset_recording_failures
from mast_otel.redaction import REDACTED
from tests.span_query import Spans, attr, parent_id, span_id

SECRET = "sk-proj-" + "Wm8" * 10
T0 = 1_700_000_000_000_000_000


@pytest.fixture(autouse=True)
def fresh_counts() -> Iterator[None]:
    reset_recording_failures()
    yield
    reset_recording_failures()


def _recorder(tracer_provider: TracerProvider, framework: str = "custom", **config: Any) -> Recorder:
    """A recorder whose configuration comes from the arguments only (the machine's environment cannot leak in)."""
    settings: dict[str, Any] = {"openinference": False, **config}
    return Recorder(tracer_provider=tracer_provider, config=CaptureConfig.from_env(environ={}, **settings),
                    framework=framework)  # fmt: skip


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in (span.attributes or {}).items()}


def _one(spans: Spans, name: str) -> ReadableSpan:
    (found,) = [s for s in spans.all if s.name == name]
    return found


# -- one run, every span whole -----------------------------------------------------------------------------------


def test_a_home_grown_run_emits_the_documented_spans_whole(tracer_provider: TracerProvider, span_exporter: Any) -> None:
    rec = _recorder(tracer_provider, framework="my-mas")
    with rec.conversation("triage", task="Fix the build", conversation_id="c-1", max_rounds=10):
        with rec.agent_turn("planner") as turn:
            assert turn is not None
            assert rec.message("planner", ["coder", "reviewer"], "Run the tests first.") == 0
            turn.span.set_attribute("program.own", 1)  # the handle's span is the exported one
        rec.handoff("planner", "coder", reason=sc.HANDOFF_DELEGATION, candidates=["coder", "reviewer"])
        with rec.agent_turn("coder"):
            with rec.tool_call("run_tests", arguments={"path": "tests/"}, call_id="t1") as call:
                assert call is not None
                call.set_result("3 failed", success=False)
            assert rec.message("coder", "planner", "3 tests fail.", kind=sc.KIND_TOOL_RESULT) == 1
        rec.terminate(sc.TERMINATION_MAX_ROUNDS, detail="round limit", agent="coder")

    spans = Spans(span_exporter)
    assert len(spans.all) == 7
    root = _one(spans, "invoke_workflow triage")
    planner = _one(spans, "invoke_agent planner")
    coder = _one(spans, "invoke_agent coder")
    first = _one(spans, "message planner -> coder")
    second = _one(spans, "message coder -> planner")
    handoff = _one(spans, "handoff planner -> coder")
    tool = _one(spans, "execute_tool run_tests")

    assert _attrs(root) == {
        "gen_ai.operation.name": "invoke_workflow",
        "mast.span.type": "conversation",
        "gen_ai.conversation.id": "c-1",
        "gen_ai.workflow.name": "triage",
        "mast.framework": "my-mas",
        "mast.conversation.task": "Fix the build",
        "mast.conversation.max_rounds": 10,
        "mast.termination.reason": "max_rounds",
        "mast.termination.detail": "round limit",
        "mast.termination.agent": "coder",
        "mast.conversation.rounds": 2,
        "mast.conversation.handoffs": 1,
        "mast.conversation.agents": ["planner", "coder", "reviewer"],
    }
    for turn_span, agent in ((planner, "planner"), (coder, "coder")):
        expected: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "mast.span.type": "agent_turn",
            "gen_ai.agent.name": agent,
            "gen_ai.conversation.id": "c-1",
        }
        if agent == "planner":
            expected["program.own"] = 1
        assert _attrs(turn_span) == expected
    assert _attrs(first) == {
        "mast.span.type": "message",
        "gen_ai.conversation.id": "c-1",
        "mast.message.sender": "planner",
        "mast.message.recipients": ["coder", "reviewer"],
        "mast.message.index": 0,
        "mast.message.kind": "message",
        "mast.message.content": "Run the tests first.",
    }
    assert _attrs(second) == {
        "mast.span.type": "message",
        "gen_ai.conversation.id": "c-1",
        "mast.message.sender": "coder",
        "mast.message.recipients": ["planner"],
        "mast.message.index": 1,
        "mast.message.kind": "tool_result",
        "mast.message.content": "3 tests fail.",
    }
    assert _attrs(handoff) == {
        "mast.span.type": "handoff",
        "gen_ai.conversation.id": "c-1",
        "mast.handoff.from": "planner",
        "mast.handoff.to": "coder",
        "mast.handoff.candidates": ["coder", "reviewer"],
        "mast.handoff.reason": "delegation",
        "mast.handoff.index": 0,
    }
    assert _attrs(tool) == {
        "gen_ai.operation.name": "execute_tool",
        "mast.span.type": "tool_call",
        "gen_ai.conversation.id": "c-1",
        "gen_ai.tool.name": "run_tests",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.id": "t1",
        "gen_ai.tool.call.arguments": '{"path": "tests/"}',
        "gen_ai.tool.call.result": "3 failed",
        "mast.tool.success": False,
    }
    # Tree: turns, handoffs and messages outside a turn under the root; a turn's messages and tools under it.
    assert parent_id(root) is None
    assert [parent_id(s) for s in (planner, coder, handoff)] == [span_id(root)] * 3
    assert (parent_id(first), parent_id(second), parent_id(tool)) == (span_id(planner), span_id(coder), span_id(coder))
    assert {s.context.trace_id for s in spans.all} == {root.context.trace_id}
    assert {s.kind for s in spans.all} == {SpanKind.INTERNAL}
    assert tool.status.status_code is StatusCode.ERROR and tool.status.description == "tool reported failure"
    others = [root, planner, coder, first, second, handoff]
    assert {s.status.status_code for s in others} == {StatusCode.UNSET}
    scopes = {s.instrumentation_scope for s in spans.all}
    assert [(x.name, x.version, x.schema_url) for x in scopes if x is not None] == [
        ("mast_otel", mast_otel.__version__, "https://opentelemetry.io/schemas/1.37.0")
    ]
    assert trace.get_current_span() is trace.INVALID_SPAN  # every scope detached


def test_message_and_handoff_spans_are_zero_length_and_dated_by_the_framework(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    opened = rec.start_conversation("dated", start_time=T0)
    assert opened is not None
    turn = rec.start_agent_turn("a", start_time=T0 + 1)
    assert turn is not None
    rec.message("a", "b", "hi", timestamp=T0 + 2)
    handoff = rec.start_handoff("a", start_time=T0 + 3)
    assert handoff is not None
    handoff.end("b", end_time=T0 + 4)
    call = rec.start_tool_call("t", start_time=T0 + 5)
    assert call is not None
    call.end(end_time=T0 + 6)
    turn.end(end_time=T0 + 7)
    rec.end_conversation(*opened, end_time=T0 + 8)
    spans = Spans(span_exporter)
    times = {s.name: (s.start_time - T0, s.end_time - T0) for s in spans.all}  # type: ignore[operator]
    assert times == {
        "invoke_workflow dated": (0, 8),
        "invoke_agent a": (1, 7),
        "message a -> b": (2, 2),
        "handoff a -> b": (3, 4),
        "execute_tool t": (5, 6),
    }


# -- conversation root -------------------------------------------------------------------------------------------


def test_defaults_the_root_fills_in_and_optional_attributes_it_leaves_out(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider, framework="crew")
    with rec.conversation("bare"):
        rec.message("a", "b", "hi")
    with rec.conversation("other", framework="override", attributes={"mast.conversation.thread_id": "th-9"}):
        pass
    bare, other = Spans(span_exporter).roots
    attrs = _attrs(bare)
    assert attrs["mast.framework"] == "crew" and attrs["mast.termination.reason"] == "completed"
    generated = attrs["gen_ai.conversation.id"]
    assert isinstance(generated, str) and generated
    assert attr(Spans(span_exporter).messages[0], "gen_ai.conversation.id") == generated
    optional = ("mast.conversation.task", "mast.conversation.max_rounds", "mast.conversation.parent_id",
                "mast.conversation.broadcast_copies", "mast.termination.detail", "mast.termination.agent")  # fmt: skip
    assert not set(optional) & set(attrs)
    assert _attrs(other)["mast.framework"] == "override"
    assert _attrs(other)["mast.conversation.thread_id"] == "th-9"
    assert _attrs(other)["gen_ai.conversation.id"] != generated
    assert _attrs(other)["mast.conversation.agents"] == [] and _attrs(other)["mast.conversation.rounds"] == 0


def test_broadcast_copies_are_counted_on_the_root_and_listed_on_the_message(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    with rec.conversation("group"):
        rec.message("alice", "manager", "hello", broadcast_to=["bob", "carol"], cause="reply")
        rec.broadcast_copy()
        rec.broadcast_copy()
    rec.broadcast_copy()  # outside: nothing to count, no failure
    spans = Spans(span_exporter)
    root, (message,) = _attrs(spans.root), spans.messages
    assert root["mast.conversation.broadcast_copies"] == 2 and root["mast.conversation.rounds"] == 1
    assert _attrs(message)["mast.message.broadcast_to"] == ["bob", "carol"]
    assert _attrs(message)["mast.message.cause"] == "reply"
    assert mast_otel.recording_failures() == {}


def test_agents_are_listed_once_in_order_of_first_appearance_turns_included_without_pseudo_addresses(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    with rec.conversation("c"):
        with rec.agent_turn("silent"):  # its turn produced no message (it crashed, or was skipped): it took part
            pass
        with rec.agent_turn("lead"):
            rec.message("lead", ["<all>"], "kick-off")
        rec.message("worker", ["lead", "critic"], "done")
        rec.message("critic", "worker", "again")
    assert _attrs(Spans(span_exporter).root)["mast.conversation.agents"] == ["silent", "lead", "worker", "critic"]


def test_a_conversation_inside_a_turn_is_a_child_run_and_one_at_conversation_level_joins(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    with rec.conversation("outer", conversation_id="out") as outer:
        with rec.conversation("joined", max_rounds=7) as joined:  # a framework entry point calling another
            assert joined is outer
            rec.message("lead", "helper", "joined message")
        with rec.conversation("ignored", max_rounds=99):  # the first max_rounds learnt is kept
            pass
        with rec.agent_turn("lead"), rec.conversation("inner", conversation_id="in") as inner:
            assert inner is not None and inner is not outer and rec.current() is inner
            rec.message("helper", "lead", "nested message")
        assert rec.current() is outer
    spans = Spans(span_exporter)
    by_id = {attr(r, "gen_ai.conversation.id"): r for r in spans.roots}
    assert set(by_id) == {"out", "in"}
    outer_root, inner_root = _attrs(by_id["out"]), _attrs(by_id["in"])
    assert outer_root["mast.conversation.max_rounds"] == 7 and outer_root["mast.conversation.rounds"] == 1
    assert "mast.conversation.parent_id" not in outer_root
    assert inner_root["mast.conversation.parent_id"] == "out" and inner_root["mast.conversation.rounds"] == 1
    (turn,) = spans.turns
    assert parent_id(by_id["in"]) == span_id(turn)
    nested = next(m for m in spans.all if m.name == "message helper -> lead")
    assert attr(nested, "gen_ai.conversation.id") == "in" and parent_id(nested) == span_id(by_id["in"])
    assert attr(nested, "mast.message.index") == 0  # each conversation counts its own messages


def test_max_rounds_learnt_by_a_joined_entry_point_does_not_replace_the_roots_own(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    with rec.conversation("outer", max_rounds=3), rec.conversation("joined", max_rounds=8):
        pass
    assert _attrs(Spans(span_exporter).root)["mast.conversation.max_rounds"] == 3


def test_the_first_termination_wins_with_its_detail_and_agent(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    rec.terminate(sc.TERMINATION_IDLE, detail="outside")  # no conversation: ignored, no failure
    with rec.conversation("c"):
        rec.terminate(sc.TERMINATION_NO_REPLY, detail="nobody answered", agent="bob")
        rec.terminate(sc.TERMINATION_MAX_ROUNDS, detail="later", agent="alice")
    root = _attrs(Spans(span_exporter).root)
    assert (root["mast.termination.reason"], root["mast.termination.detail"], root["mast.termination.agent"]) == (
        "no_reply", "nobody answered", "bob")  # fmt: skip
    assert mast_otel.recording_failures() == {}


@pytest.mark.parametrize("earlier", [None, sc.TERMINATION_COMPLETED, sc.TERMINATION_MAX_ROUNDS])
def test_an_error_ends_the_run_as_error_unless_an_earlier_cause_was_recorded(
    earlier: str | None, tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    own = KeyError(f"token {SECRET}")
    with pytest.raises(KeyError) as caught, rec.conversation("failing"):
        if earlier is not None:
            rec.terminate(earlier, detail="earlier detail")
        raise own
    assert caught.value is own and caught.value.__context__ is None
    root = Spans(span_exporter).root
    attrs = _attrs(root)
    assert root.status.status_code is StatusCode.ERROR and attrs["error.type"] == "KeyError"
    assert [e.name for e in root.events] == ["exception"]
    if earlier == sc.TERMINATION_MAX_ROUNDS:
        assert (attrs["mast.termination.reason"], attrs["mast.termination.detail"]) == ("max_rounds", "earlier detail")
    else:
        assert attrs["mast.termination.reason"] == "error"
        assert attrs["mast.termination.detail"] == f"KeyError: 'token {REDACTED}'"
    assert trace.get_current_span() is trace.INVALID_SPAN and Recorder.current() is None


def test_events_go_on_the_root_of_the_current_conversation(tracer_provider: TracerProvider, span_exporter: Any) -> None:
    rec = _recorder(tracer_provider)
    with rec.conversation("team"), rec.agent_turn("orchestrator"):
        rec.event(sc.EVENT_STALL, {sc.ORCHESTRATOR_STALLS: 2}, content={sc.ORCHESTRATOR_REASON: f"key {SECRET}"})
        rec.event(sc.EVENT_REPLAN)
    root = Spans(span_exporter).root
    stall, replan = root.events
    assert (stall.name, dict(stall.attributes or {})) == (
        sc.EVENT_STALL, {sc.ORCHESTRATOR_STALLS: 2, sc.ORCHESTRATOR_REASON: f"key {REDACTED}"})  # fmt: skip
    assert (replan.name, dict(replan.attributes or {})) == (sc.EVENT_REPLAN, {})
    assert not Spans(span_exporter).turns[0].events


# -- agent turns -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("replied", [True, False, None])
def test_a_turn_says_whether_the_agent_replied_only_when_told(
    replied: bool | None, tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    with rec.conversation("c"):
        turn = rec.start_agent_turn("a")
        assert turn is not None and trace.get_current_span() is turn.span
        turn.end(replied)
        assert trace.get_current_span() is not turn.span  # the turn's scope ends with it
    (span,) = Spans(span_exporter).turns
    assert attr(span, "mast.turn.replied") is replied
    assert Spans(span_exporter).root.end_time >= span.end_time  # type: ignore[operator]


def test_a_failed_turn_is_an_error_span_and_the_program_gets_its_own_exception(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    own = ValueError("bad plan")
    with rec.conversation("c"):
        with pytest.raises(ValueError) as caught, rec.agent_turn("planner"):
            raise own
        assert caught.value is own and caught.value.__context__ is None
        assert rec.message("planner", "b", "after") == 0  # the turn's context was restored: parent is the root
    spans = Spans(span_exporter)
    (turn,) = spans.turns
    assert turn.status.status_code is StatusCode.ERROR and turn.status.description == "ValueError: bad plan"
    assert attr(turn, "error.type") == "ValueError" and turn.end_time is not None
    assert parent_id(spans.messages[0]) == span_id(spans.root)
    assert spans.root.status.status_code is StatusCode.UNSET  # the program handled it: the run did not fail


def test_a_failed_tool_call_is_an_error_span_and_the_exception_passes_through(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    own = TimeoutError("tool timed out")
    with rec.conversation("c"), rec.agent_turn("a"):
        with pytest.raises(TimeoutError) as caught, rec.tool_call("slow"):
            raise own
        assert caught.value is own
        assert trace.get_current_span().name == "invoke_agent a"  # type: ignore[attr-defined]  # the turn again
    (tool,) = Spans(span_exporter).tools
    assert tool.status.status_code is StatusCode.ERROR and attr(tool, "error.type") == "TimeoutError"
    assert "mast.tool.success" not in _attrs(tool)


def test_outside_a_conversation_the_blocks_run_and_nothing_is_recorded(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    ran = []
    with rec.agent_turn("a") as turn, rec.tool_call("t") as call:
        ran.append((turn, call))
    assert rec.start_handoff("a") is None and rec.handoff("a", "b") is None
    assert ran == [(None, None)] and span_exporter.get_finished_spans() == ()
    own = OSError("x")
    with pytest.raises(OSError) as caught, rec.agent_turn("a"):
        raise own
    assert caught.value is own and mast_otel.recording_failures() == {}


def test_suppressed_records_nothing_and_opens_no_conversation(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    with rec.suppressed():
        assert rec.start_conversation("internal") is None
        with rec.conversation("internal") as conv:
            assert conv is None
            assert rec.start_agent_turn("a") is None and rec.start_tool_call("t") is None
            assert rec.message("a", "b", "x") is None
    with rec.conversation("outer") as outer, rec.suppressed():
        assert rec.current() is None and rec.current(include_suppressed=True) is outer
        assert rec.start_conversation("nested") is None
        rec.handoff("a", "b")
        rec.event("e")
        rec.terminate(sc.TERMINATION_IDLE)
    root = Spans(span_exporter).root
    assert [s.name for s in Spans(span_exporter).all] == ["invoke_workflow outer"]
    assert _attrs(root)["mast.termination.reason"] == "completed" and not root.events


# -- messages --------------------------------------------------------------------------------------------------


def test_message_flags_tool_calls_and_the_program_attributes(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider, max_content_length=40)
    with rec.conversation("c"):
        rec.message("a", [], f"key {SECRET}", tool_calls=[{"q": SECRET}])
        rec.message("a", "b", "y" * 100, attributes={"mast.message.kind": "broadcast", "program.note": "n"})
        rec.message("a", "b", "plain", tool_calls=[])
    redacted, truncated, plain = (_attrs(m) for m in Spans(span_exporter).messages)
    assert redacted["mast.message.content"] == f"key {REDACTED}" and redacted["mast.message.redacted"] is True
    assert "mast.message.truncated" not in redacted and redacted["mast.message.recipients"] == []
    assert redacted["mast.message.tool_calls"] == f'[{{"q": "{REDACTED}"}}]'
    assert truncated["mast.message.truncated"] is True and len(truncated["mast.message.content"]) == 40
    assert "mast.message.redacted" not in truncated
    assert (truncated["mast.message.kind"], truncated["program.note"]) == ("broadcast", "n")
    assert not {"mast.message.redacted", "mast.message.truncated", "mast.message.tool_calls"} & set(plain)
    assert [m.name for m in Spans(span_exporter).messages] == ["message a -> *", "message a -> b", "message a -> b"]


def test_message_indices_count_from_zero_per_conversation(tracer_provider: TracerProvider, span_exporter: Any) -> None:
    rec = _recorder(tracer_provider)
    with rec.conversation("c") as conv:
        assert [rec.message("a", "b", str(n)) for n in range(3)] == [0, 1, 2]
        assert conv is not None and conv.messages == 3
    assert [attr(m, "mast.message.index") for m in Spans(span_exporter).messages] == [0, 1, 2]
    assert [attr(m, "mast.message.content") for m in Spans(span_exporter).messages] == ["0", "1", "2"]


# -- handoffs --------------------------------------------------------------------------------------------------


def test_a_handoff_to_nobody_ends_the_run_and_indices_count_per_conversation(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    with rec.conversation("c") as conv:
        rec.handoff("a", "b")
        rec.handoff("b", None, reason=sc.HANDOFF_AFTER_WORK)
        assert conv is not None and conv.handoffs == 2
    first, last = Spans(span_exporter).handoffs
    assert first.name == "handoff a -> b" and last.name == "handoff b -> <terminate>"
    assert (attr(first, "mast.handoff.index"), attr(last, "mast.handoff.index")) == (0, 1)
    assert attr(first, "mast.handoff.reason") == "routing"  # nothing said why: plain routing
    assert (attr(last, "mast.handoff.to"), attr(last, "mast.handoff.reason")) == ("<terminate>", "after_work")
    assert attr(first, "mast.handoff.candidates") == ()


def test_a_parked_reason_is_used_by_the_next_handoff_only_and_an_explicit_reason_wins(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    with rec.conversation("c") as conv:
        assert conv is not None and conv.pending_handoff_reason is None
        conv.pending_handoff_reason = sc.HANDOFF_LLM_SELECTION
        assert conv.pending_handoff_reason == sc.HANDOFF_LLM_SELECTION
        rec.handoff("a", "b")
        assert conv.pending_handoff_reason is None
        rec.handoff("b", "c")
        conv.pending_handoff_reason = sc.HANDOFF_RANDOM
        rec.handoff("c", "a", reason=sc.HANDOFF_MANUAL)  # explicit: the parked one is still consumed
        rec.handoff("a", "b")
    reasons = [attr(h, "mast.handoff.reason") for h in Spans(span_exporter).handoffs]
    assert reasons == ["llm_selection", "routing", "manual", "routing"]


def test_a_handoff_is_dated_and_parented_where_selection_started(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    with rec.conversation("c"):
        with rec.agent_turn("manager"):
            handoff = rec.start_handoff("manager", candidates=["x", "y"], detail="pick y: it knows SQL")
            assert handoff is not None and handoff.span is None  # nothing exported until the target is known
        with rec.agent_turn("other"):
            handoff.end("y", attributes={"mast.handoff.synthetic": True})
        assert handoff.span is not None
    spans = Spans(span_exporter)
    manager = next(t for t in spans.turns if attr(t, "gen_ai.agent.name") == "manager")
    (recorded,) = spans.handoffs
    assert parent_id(recorded) == span_id(manager)
    assert recorded.start_time <= manager.end_time <= recorded.end_time  # type: ignore[operator]
    assert _attrs(recorded) == {
        "mast.span.type": "handoff",
        "gen_ai.conversation.id": attr(spans.root, "gen_ai.conversation.id"),
        "mast.handoff.from": "manager",
        "mast.handoff.to": "y",
        "mast.handoff.candidates": ["x", "y"],
        "mast.handoff.reason": "routing",
        "mast.handoff.index": 0,
        "mast.handoff.detail": "pick y: it knows SQL",
        "mast.handoff.synthetic": True,
    }


@pytest.mark.parametrize(("target", "target_type"), [("coder", "agent"), ("search", "tool"), (None, "workflow")])
def test_proposed_semconv_adds_the_transfer_attributes(
    target: str | None, target_type: str, tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider, proposed_semconv=True)
    with rec.conversation("c"):
        handoff = rec.start_handoff("lead")
        assert handoff is not None
        if target == "search":
            handoff.end(target, target_type="tool")
        else:
            handoff.end(target)  # the default: the target is an agent (None: the run ends, a workflow target)
    (recorded,) = Spans(span_exporter).handoffs
    name = target or "<terminate>"
    assert attr(recorded, "gen_ai.transfer.mode") == "pass_control"
    assert (attr(recorded, "gen_ai.transfer.target.name"), attr(recorded, "gen_ai.transfer.target.type")) == (
        name, target_type)  # fmt: skip
    assert attr(recorded, "mast.handoff.to") == name


def test_without_proposed_semconv_no_transfer_attributes(tracer_provider: TracerProvider, span_exporter: Any) -> None:
    rec = _recorder(tracer_provider)
    with rec.conversation("c"):
        rec.handoff("a", "b")
    assert not [k for k in _attrs(Spans(span_exporter).handoffs[0]) if k.startswith("gen_ai.transfer.")]


def test_a_failed_selection_is_an_error_handoff_and_drops_the_parked_reason(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    with rec.conversation("c") as conv, rec.agent_turn("manager"):
        assert conv is not None
        handoff = rec.start_handoff("manager", candidates=["x"])
        assert handoff is not None
        conv.pending_handoff_reason = sc.HANDOFF_LLM_SELECTION
        own = RuntimeError("selector crashed")
        handoff.fail(own)
        assert conv.pending_handoff_reason is None  # AG2's integration reads "no reason parked" as `is None`
        rec.handoff("manager", "x")
    spans = Spans(span_exporter)
    failed = _one(spans, "handoff manager -> ?")
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.status.description == "RuntimeError: selector crashed"
    assert attr(failed, "mast.handoff.from") == "manager" and attr(failed, "mast.handoff.candidates") == ("x",)
    assert parent_id(failed) == span_id(spans.turns[0]) and failed.end_time is not None
    later = _one(spans, "handoff manager -> x")
    assert attr(later, "mast.handoff.reason") == "routing"
    assert attr(later, "mast.handoff.index") == 0  # a failed selection is not a handoff


def test_handoff_content_is_redacted_and_only_with_capture_on(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    for capture in (True, False):
        rec = _recorder(tracer_provider, capture_content=capture)
        with rec.conversation("c"):
            handoff = rec.start_handoff("a", detail={"to": "b", "key": SECRET})
            assert handoff is not None
            handoff.end("b", content={sc.HANDOFF_STATED_REASON: ["b", "knows"]}, attributes={"n": 1})
    on, off = Spans(span_exporter).handoffs
    assert attr(on, "mast.handoff.detail") == f'{{"to": "b", "key": "{REDACTED}"}}'
    assert attr(on, sc.HANDOFF_STATED_REASON) == '["b", "knows"]'
    assert sc.HANDOFF_STATED_REASON not in _attrs(off) and "mast.handoff.detail" not in _attrs(off)
    assert attr(off, "n") == 1 and attr(on, "n") == 1


# -- tool calls ------------------------------------------------------------------------------------------------


def test_tool_results_success_and_late_arguments(tracer_provider: TracerProvider, span_exporter: Any) -> None:
    rec = _recorder(tracer_provider, openinference=True)
    with rec.conversation("c"):
        with rec.tool_call("lookup") as call:
            assert call is not None
            call.set_arguments({"id": 7})
            call.set_result({"rows": 1})
        opened = rec.start_tool_call("guard", tool_type=sc.TOOL_TYPE_GUARDRAIL)
        assert opened is not None
        opened.end()
    lookup, guard = Spans(span_exporter).tools
    assert lookup.status.status_code is StatusCode.UNSET
    attrs = _attrs(lookup)
    assert attrs["mast.tool.success"] is True and attrs["gen_ai.tool.call.result"] == '{"rows": 1}'
    assert attrs["gen_ai.tool.call.arguments"] == '{"id": 7}' == attrs["input.value"]
    assert attrs["output.value"] == '{"rows": 1}' and attrs["openinference.span.kind"] == "TOOL"
    assert attrs["tool.name"] == "lookup" and "gen_ai.tool.call.id" not in attrs
    assert attr(guard, "gen_ai.tool.type") == "guardrail" and "mast.tool.success" not in _attrs(guard)
    assert "input.value" not in _attrs(guard) and "gen_ai.tool.call.arguments" not in _attrs(guard)


def test_without_content_capture_a_tool_says_only_whether_it_succeeded(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider, capture_content=False, openinference=True)
    with rec.conversation("c"), rec.tool_call("t", arguments={"q": "secret"}) as call:
        assert call is not None
        call.set_result("secret rows", success=True)
    attrs = _attrs(Spans(span_exporter).tools[0])
    assert attrs["mast.tool.success"] is True
    assert not {"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "input.value", "output.value"} & set(attrs)


# -- content switches and OpenInference ------------------------------------------------------------------------


def test_openinference_values_follow_content(tracer_provider: TracerProvider, span_exporter: Any) -> None:
    for capture in (True, False):
        rec = _recorder(tracer_provider, openinference=True, capture_content=capture)
        with rec.conversation("c", task="the task"):
            rec.message("a", "b", "said")
        with rec.conversation("no task"):
            rec.message("a", "b", None)
    roots, messages = Spans(span_exporter).roots, Spans(span_exporter).of_type("message")
    assert [attr(r, "input.value") for r in roots] == ["the task", None, None, None]
    assert [attr(m, "output.value") for m in messages] == ["said", "", None, None]
    assert [attr(r, "openinference.span.kind") for r in roots] == ["CHAIN"] * 4
    assert [attr(m, "openinference.span.kind") for m in messages] == ["CHAIN"] * 4


def test_the_agent_graph_follows_handoffs_and_turns(tracer_provider: TracerProvider, span_exporter: Any) -> None:
    rec = _recorder(tracer_provider, openinference=True)
    with rec.conversation("c"):
        for agent in ("a", "b"):
            with rec.agent_turn(agent):
                pass
        rec.handoff("a", "c")  # control handed to c by a, although b spoke last
        with rec.agent_turn("c"):
            pass
        rec.handoff("c", "x")  # a handoff to someone else does not decide d's parent: the previous turn does
        with rec.agent_turn("d"):
            pass
        with rec.agent_turn("d"):  # the same agent again: no edge to itself
            pass
    parents = [(attr(t, "gen_ai.agent.name"), attr(t, "graph.node.parent_id")) for t in Spans(span_exporter).turns]
    assert parents == [("a", None), ("b", "a"), ("c", "a"), ("d", "c"), ("d", None)]


# -- recording never changes the program -----------------------------------------------------------------------


_FAILURE_TEXT = "failure text quoting content: password=hunter22"


def _broken(*_: Any, **__: Any) -> Any:
    raise RuntimeError(_FAILURE_TEXT)


def _start_conversation(rec: Recorder) -> Any:
    return rec.start_conversation("c")


def _conversation_with(rec: Recorder, call: Any) -> Any:
    with rec.conversation("c"):
        return call(rec)


ENTRY_POINTS: dict[str, Callable[[Recorder], Any]] = {
    "recorder.start_conversation": _start_conversation,
    "recorder.start_agent_turn": lambda rec: _conversation_with(rec, lambda r: r.start_agent_turn("a")),
    "recorder.message": lambda rec: _conversation_with(rec, lambda r: r.message("a", "b", "hi")),
    "recorder.start_tool_call": lambda rec: _conversation_with(rec, lambda r: r.start_tool_call("t")),
    "recorder.handoff.end": lambda rec: _conversation_with(rec, lambda r: r.handoff("a", "b")),
}


@pytest.mark.parametrize("kind", ENTRY_POINTS)
def test_a_broken_tracer_is_counted_under_the_entry_point_and_logged_once(
    kind: str, tracer_provider: TracerProvider, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    rec = _recorder(tracer_provider)
    real = rec.tracer.start_span

    def only_the_entry_point(name: str, *args: Any, **kwargs: Any) -> Any:
        if kind != "recorder.start_conversation" and name.startswith("invoke_workflow"):
            return real(name, *args, **kwargs)
        return _broken()

    monkeypatch.setattr(rec.tracer, "start_span", only_the_entry_point)
    with caplog.at_level(logging.WARNING, logger="mast_otel"):
        results = [ENTRY_POINTS[kind](rec) for _ in range(3)]
    assert results == [None, None, None]
    assert mast_otel.recording_failures() == {kind: 3}
    logged = [r.getMessage() for r in caplog.records if r.name == "mast_otel"]
    assert len(logged) == 1 and kind in logged[0] and _FAILURE_TEXT not in logged[0]


@pytest.mark.parametrize("kind", ["recorder.turn.end", "recorder.span.end"])
def test_a_span_that_fails_to_close_is_counted_and_the_context_still_restored(
    kind: str, tracer_provider: TracerProvider, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    rec = _recorder(tracer_provider)
    with rec.conversation("c"), caplog.at_level(logging.WARNING, logger="mast_otel"):
        root = trace.get_current_span()
        turn = rec.start_agent_turn("a")
        assert turn is not None
        monkeypatch.setattr(turn.span, "set_attribute" if kind == "recorder.turn.end" else "end", _broken)
        turn.end(replied=True)
        assert trace.get_current_span() is root
    assert mast_otel.recording_failures() == {kind: 1}
    (logged,) = [r.getMessage() for r in caplog.records if r.name == "mast_otel"]
    assert f"recording failed in {kind} (RuntimeError)" in logged and "_broken" in logged  # where it failed


def test_ending_a_turn_or_tool_twice_changes_nothing_and_logs_no_error(
    tracer_provider: TracerProvider, span_exporter: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Integrations close from several hooks (a framework's own finally, then the wrapper's): a second close is a
    no-op for the context, with no error logged by OpenTelemetry for a stale context token (the SDK's own warning
    about ending an ended span is its business)."""
    rec = _recorder(tracer_provider)
    with caplog.at_level(logging.DEBUG), rec.conversation("c"):
        root = trace.get_current_span()
        turn = rec.start_agent_turn("a")
        call = rec.start_tool_call("t")
        assert turn is not None and call is not None
        call.end()
        call.end()
        turn.fail(ValueError("x"))
        turn.end(replied=False)
        assert trace.get_current_span() is root
        rec.message("a", "b", "after")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    spans = Spans(span_exporter)
    assert len(spans.all) == 4 and parent_id(spans.messages[0]) == span_id(spans.root)
    assert mast_otel.recording_failures() == {}


def test_a_failed_turn_keeps_the_frameworks_end_time(tracer_provider: TracerProvider, span_exporter: Any) -> None:
    rec = _recorder(tracer_provider)
    with rec.conversation("c"):
        turn = rec.start_agent_turn("a", start_time=T0)
        assert turn is not None
        turn.fail(ValueError("x"), end_time=T0 + 5)
    (span,) = Spans(span_exporter).turns
    assert (span.start_time, span.end_time) == (T0, T0 + 5)
    assert span.status.status_code is StatusCode.ERROR


def test_the_conversation_handle_reports_the_run_so_far(tracer_provider: TracerProvider) -> None:
    """What ``rec.conversation()`` yields: its name, id and limit, and nothing about termination until one is
    recorded (an integration settles the reason only when none is set yet)."""
    rec = _recorder(tracer_provider)
    with rec.conversation("triage", conversation_id="c-7", max_rounds=4) as conv:
        assert conv is not None
        assert (conv.name, conv.id, conv.max_rounds) == ("triage", "c-7", 4)
        assert (conv.termination, conv.termination_detail, conv.termination_agent) == (None, None, None)
        assert (conv.messages, conv.handoffs, conv.broadcasts, list(conv.agents)) == (0, 0, 0, [])
        rec.message("a", ["b"], "x")
        rec.handoff("a", "b")
        rec.broadcast_copy()
        rec.terminate(sc.TERMINATION_IDLE, detail="quiet", agent="a")
        assert (conv.messages, conv.handoffs, conv.broadcasts, list(conv.agents)) == (1, 1, 1, ["a", "b"])
        assert (conv.termination, conv.termination_detail, conv.termination_agent) == ("idle", "quiet", "a")


def test_late_content_and_results_that_fail_are_counted_under_their_own_names(
    tracer_provider: TracerProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _recorder(tracer_provider)
    with rec.conversation("c") as conv:
        assert conv is not None
        call = rec.start_tool_call("t")
        handoff = rec.start_handoff("a")
        assert call is not None and handoff is not None
        for span in (conv.span, call.span):
            monkeypatch.setattr(span, "set_attribute", _broken)
            monkeypatch.setattr(span, "set_attributes", _broken)
        monkeypatch.setattr(rec.tracer, "start_span", _broken)
        results = [
            rec.set_task(conv, "task"),
            call.set_arguments({"a": 1}),
            call.set_result("r"),
            handoff.fail(RuntimeError("x")),
        ]
        call.end()
        monkeypatch.setattr(conv.span, "add_event", _broken)
        rec.event("e")
        rec.terminate(sc.TERMINATION_IDLE)
    assert results == [None] * 4
    failures = mast_otel.recording_failures()
    assert failures == {
        "recorder.set_task": 1,
        "recorder.tool.set_arguments": 1,
        "recorder.tool.set_result": 1,
        "recorder.handoff.fail": 1,
        "recorder.event": 1,
        "recorder.end_conversation": 1,
    }
    assert trace.get_current_span() is trace.INVALID_SPAN


def test_the_conversation_id_a_program_passes_is_kept_verbatim(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    with rec.conversation("c", conversation_id="thread-42/run-1"), rec.agent_turn("a"):
        rec.message("a", "b", "x")
        rec.handoff("a", "b")
        with rec.tool_call("t"):
            pass
    ids = {attr(s, "gen_ai.conversation.id") for s in Spans(span_exporter).all}
    assert ids == {"thread-42/run-1"}


def test_a_recorder_built_with_defaults_names_its_framework_custom_and_reads_the_environment(
    tracer_provider: TracerProvider, span_exporter: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "false")
    rec = Recorder(tracer_provider=tracer_provider)
    with rec.conversation("c", task="secret task"):
        rec.message("a", "b", "secret text")
    spans = Spans(span_exporter)
    assert attr(spans.root, "mast.framework") == "custom"
    assert "mast.conversation.task" not in _attrs(spans.root)
    assert "mast.message.content" not in _attrs(spans.messages[0])


def test_the_integrations_facts_about_a_handoff_are_on_its_span(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    with rec.conversation("c"):
        rec.handoff("supervisor", "worker", attributes={sc.HANDOFF_SYNTHETIC: True})
        handoff = rec.start_handoff("worker", attributes={sc.HANDOFF_ATTEMPTS: 2})
        assert handoff is not None
        handoff.end("supervisor")
    synthetic, attempted = Spans(span_exporter).handoffs
    assert attr(synthetic, "mast.handoff.synthetic") is True and attr(synthetic, "mast.handoff.to") == "worker"
    assert attr(attempted, "mast.handoff.attempts") == 2 and attr(attempted, "mast.handoff.index") == 1


def test_a_handoff_whose_candidates_cannot_be_read_is_counted_not_raised(
    tracer_provider: TracerProvider, span_exporter: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A framework's lazy agent list that fails while the recorder reads it (an agent without a name)."""

    class Names(list[str]):
        def __iter__(self) -> Iterator[str]:
            yield "worker"
            raise AttributeError("agent has no name")

    def names() -> Names:
        return Names(["worker", "?"])

    rec = _recorder(tracer_provider)
    with caplog.at_level(logging.WARNING, logger="mast_otel"), rec.conversation("c"):
        for _ in range(2):
            assert rec.start_handoff("lead", candidates=names()) is None
        rec.handoff("lead", "worker", candidates=names())
        rec.message("lead", "worker", "still recorded")
    assert mast_otel.recording_failures() == {"recorder.start_handoff": 3}
    (logged,) = [r.getMessage() for r in caplog.records if r.name == "mast_otel"]
    assert "recorder.start_handoff (AttributeError)" in logged
    spans = Spans(span_exporter)
    assert not spans.handoffs and len(spans.messages) == 1


def test_inside_a_tool_call_the_tool_is_the_parent_and_a_team_run_as_a_tool_is_a_child_run(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = _recorder(tracer_provider)
    with rec.conversation("outer", conversation_id="out"), rec.tool_call("ask_team") as call:
        assert call is not None and trace.get_current_span() is call.span
        rec.message("lead", "team", "question")
        with rec.conversation("team", conversation_id="team") as team:
            assert team is not None and team.id == "team"
    spans = Spans(span_exporter)
    (tool,) = spans.tools
    roots = {attr(r, "gen_ai.conversation.id"): r for r in spans.roots}
    assert parent_id(spans.messages[0]) == span_id(tool)
    assert parent_id(roots["team"]) == span_id(tool) and attr(roots["team"], "mast.conversation.parent_id") == "out"
    assert trace.get_current_span() is trace.INVALID_SPAN


class _StartAttributes(SpanProcessor):
    """What a span processor (or a sampler) sees when a span starts."""

    def __init__(self) -> None:
        self.seen: dict[str, dict[str, Any]] = {}

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.seen[span.name] = dict(span.attributes or {})


def test_what_is_known_when_a_span_starts_is_on_it_from_the_start() -> None:
    """Processors and samplers see a span's attributes at its start: everything the recorder already knows then."""
    provider = TracerProvider()
    started = _StartAttributes()
    provider.add_span_processor(started)
    rec = _recorder(provider, framework="f")
    with rec.conversation("run", task="the task", conversation_id="c", max_rounds=4), rec.agent_turn("a"):
        with rec.tool_call("t", arguments="args", call_id="id-1"):
            pass
    root = started.seen["invoke_workflow run"]
    assert {k: root.get(k) for k in ("gen_ai.conversation.id", "mast.framework", "mast.conversation.task",
                                      "mast.conversation.max_rounds")} == {
        "gen_ai.conversation.id": "c", "mast.framework": "f", "mast.conversation.task": "the task",
        "mast.conversation.max_rounds": 4}  # fmt: skip
    assert started.seen["invoke_agent a"]["gen_ai.agent.name"] == "a"
    tool = started.seen["execute_tool t"]
    assert (tool["gen_ai.tool.name"], tool["gen_ai.tool.call.id"], tool["gen_ai.tool.call.arguments"]) == (
        "t", "id-1", "args")  # fmt: skip


def test_facts_the_integration_learns_at_the_end_of_selection_replace_the_opening_ones(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    """Candidates known only once selection finished (a selector that filtered the roster) win over the roster."""
    rec = _recorder(tracer_provider)
    with rec.conversation("c"):
        handoff = rec.start_handoff("manager", candidates=["a", "b", "c"])
        assert handoff is not None
        handoff.end("b", attributes={sc.HANDOFF_CANDIDATES: ["b", "c"]})
    assert attr(Spans(span_exporter).handoffs[0], "mast.handoff.candidates") == ("b", "c")
