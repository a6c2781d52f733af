"""The public recorder API, used directly as a home-grown MAS would."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

from mast_otel import CaptureConfig, Recorder
from mast_otel import semconv as sc


def by_type(exporter: Any, span_type: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if (s.attributes or {}).get(sc.MAST_SPAN_TYPE) == span_type]


def test_home_grown_mas_in_a_few_calls(tracer_provider: Any, span_exporter: Any) -> None:
    rec = Recorder(tracer_provider=tracer_provider, framework="my-mas")
    with rec.conversation("triage", task="Fix the build", max_rounds=10) as conv:
        assert conv is not None
        with rec.agent_turn("planner"):
            rec.message("planner", ["coder"], "Run the tests first.")
        rec.handoff("planner", "coder", reason=sc.HANDOFF_DELEGATION, candidates=["coder", "reviewer"])
        with rec.agent_turn("coder"):
            with rec.tool_call("run_tests", arguments={"path": "tests/"}, call_id="t1") as call:
                assert call is not None
                call.set_result("3 failed", success=False)
            rec.message("coder", "planner", "3 tests fail.")
        rec.terminate(sc.TERMINATION_MAX_ROUNDS, detail="round limit")

    (root,) = by_type(span_exporter, sc.SPAN_TYPE_CONVERSATION)
    attrs = root.attributes or {}
    assert root.name == "invoke_workflow triage"
    assert attrs[sc.MAST_FRAMEWORK] == "my-mas"
    assert attrs[sc.CONVERSATION_TASK] == "Fix the build"
    assert attrs[sc.TERMINATION_REASON] == sc.TERMINATION_MAX_ROUNDS
    assert attrs[sc.CONVERSATION_ROUNDS] == 2
    assert attrs[sc.CONVERSATION_HANDOFFS] == 1
    assert list(attrs[sc.CONVERSATION_AGENTS]) == ["planner", "coder"]
    (handoff,) = by_type(span_exporter, sc.SPAN_TYPE_HANDOFF)
    assert handoff.name == "handoff planner -> coder"
    assert handoff.attributes[sc.HANDOFF_REASON] == sc.HANDOFF_DELEGATION
    (tool,) = by_type(span_exporter, sc.SPAN_TYPE_TOOL_CALL)
    assert tool.attributes[sc.TOOL_SUCCESS] is False
    assert tool.status.status_code.name == "ERROR"
    coder_turn = next(s for s in by_type(span_exporter, sc.SPAN_TYPE_AGENT_TURN) if "coder" in s.name)
    assert tool.parent is not None and tool.parent.span_id == coder_turn.get_span_context().span_id


def test_first_termination_reason_wins(tracer_provider: Any, span_exporter: Any) -> None:
    rec = Recorder(tracer_provider=tracer_provider)
    with rec.conversation("c"):
        rec.terminate(sc.TERMINATION_MAX_AUTO_REPLIES)
        rec.terminate(sc.TERMINATION_NO_REPLY)
    (root,) = by_type(span_exporter, sc.SPAN_TYPE_CONVERSATION)
    assert root.attributes[sc.TERMINATION_REASON] == sc.TERMINATION_MAX_AUTO_REPLIES


def test_nothing_is_recorded_outside_a_conversation(tracer_provider: Any, span_exporter: Any) -> None:
    rec = Recorder(tracer_provider=tracer_provider)
    assert rec.message("a", "b", "hi") is None
    assert rec.start_agent_turn("a") is None
    assert rec.start_tool_call("t") is None
    assert span_exporter.get_finished_spans() == ()


def test_entry_point_inside_entry_point_joins_but_inside_a_turn_nests(tracer_provider: Any, span_exporter: Any) -> None:
    rec = Recorder(tracer_provider=tracer_provider)
    with rec.conversation("outer") as outer:
        with rec.conversation("same-run") as joined:
            assert joined is outer
        with rec.agent_turn("lead"), rec.conversation("nested") as nested:
            assert nested is not None and nested is not outer
    roots = by_type(span_exporter, sc.SPAN_TYPE_CONVERSATION)
    assert sorted(r.name for r in roots) == ["invoke_workflow nested", "invoke_workflow outer"]


def test_asyncio_gather_keeps_each_agent_under_its_own_turn(tracer_provider: Any, span_exporter: Any) -> None:
    rec = Recorder(tracer_provider=tracer_provider)

    async def agent(name: str) -> None:
        with rec.agent_turn(name):
            await asyncio.sleep(0)
            rec.message(name, "all", f"{name} done")
            await asyncio.sleep(0)

    async def run() -> None:
        with rec.conversation("parallel"):
            await asyncio.gather(*(agent(n) for n in ("a", "b", "c")))

    asyncio.run(run())
    turns = {s.attributes[sc.GEN_AI_AGENT_NAME]: s for s in by_type(span_exporter, sc.SPAN_TYPE_AGENT_TURN)}
    for msg in by_type(span_exporter, sc.SPAN_TYPE_MESSAGE):
        sender = msg.attributes[sc.MESSAGE_SENDER]
        assert msg.parent is not None and msg.parent.span_id == turns[sender].get_span_context().span_id
    indices = sorted(m.attributes[sc.MESSAGE_INDEX] for m in by_type(span_exporter, sc.SPAN_TYPE_MESSAGE))
    assert indices == [0, 1, 2]


def test_threads_with_copied_context_keep_the_conversation(tracer_provider: Any, span_exporter: Any) -> None:
    rec = Recorder(tracer_provider=tracer_provider)
    with rec.conversation("threaded"):
        ctx = contextvars.copy_context()
        worker = threading.Thread(target=ctx.run, args=(rec.message, "worker", "lead", "from a thread"))
        worker.start()
        worker.join()
    (msg,) = by_type(span_exporter, sc.SPAN_TYPE_MESSAGE)
    (root,) = by_type(span_exporter, sc.SPAN_TYPE_CONVERSATION)
    assert msg.parent is not None and msg.parent.span_id == root.get_span_context().span_id


def test_error_in_conversation_marks_root(tracer_provider: Any, span_exporter: Any) -> None:
    rec = Recorder(tracer_provider=tracer_provider)
    with pytest.raises(KeyError), rec.conversation("failing"):
        raise KeyError("missing")
    (root,) = by_type(span_exporter, sc.SPAN_TYPE_CONVERSATION)
    assert root.attributes[sc.TERMINATION_REASON] == sc.TERMINATION_ERROR
    assert root.attributes[sc.ERROR_TYPE] == "KeyError"
    assert trace.get_current_span() is trace.INVALID_SPAN, "context restored after the error"


def test_suppressed_block_records_nothing(tracer_provider: Any, span_exporter: Any) -> None:
    rec = Recorder(tracer_provider=tracer_provider)
    with rec.conversation("c") as conv:
        with rec.suppressed():
            assert rec.message("a", "b", "internal") is None
            assert rec.current() is None
            assert rec.current(include_suppressed=True) is conv
        rec.message("a", "b", "visible")
    assert [m.attributes[sc.MESSAGE_CONTENT] for m in by_type(span_exporter, sc.SPAN_TYPE_MESSAGE)] == ["visible"]


def test_capture_off_on_the_recorder(tracer_provider: Any, span_exporter: Any) -> None:
    rec = Recorder(tracer_provider=tracer_provider, config=CaptureConfig(capture_content=False))
    with rec.conversation("c", task="secret task"):
        rec.message("a", "b", "secret text", tool_calls=[{"name": "x"}])
    for s in span_exporter.get_finished_spans():
        assert "secret" not in str(dict(s.attributes or {}))


def test_exception_text_is_redacted_like_content(tracer_provider: Any, span_exporter: Any) -> None:
    """Errors quote keys and payloads: status, exception event and termination detail are redacted."""
    secret = "sk-proj-QwErTyUiOpAsDfGhJkLzXcVbNm12345678"
    rec = Recorder(tracer_provider=tracer_provider)
    with pytest.raises(RuntimeError), rec.conversation("c"), rec.agent_turn("worker"):
        raise RuntimeError(f"auth failed with {secret}")
    spans = span_exporter.get_finished_spans()
    assert len(spans) == 2
    for s in spans:
        assert s.status.status_code.name == "ERROR"
        dumped = repr((dict(s.attributes or {}), s.status.description, [dict(e.attributes or {}) for e in s.events]))
        assert secret not in dumped
        assert "[REDACTED]" in dumped


def test_concurrent_recording_keeps_ordinals_unique_gap_free_and_parents_right(
    tracer_provider: Any, span_exporter: Any
) -> None:
    """Threads and asyncio tasks record into one conversation at once (a group chat run with parallel agents)."""
    import sys

    from tests.span_query import Spans, attr, parent_id, span_id

    rec = Recorder(tracer_provider=tracer_provider)
    per_worker = 100
    workers = [f"thread{i}" for i in range(6)]
    tasks = [f"task{i}" for i in range(4)]
    barrier = threading.Barrier(len(workers))

    def speak(agent: str, conv: Any) -> None:
        with rec.agent_turn(agent):
            for n in range(per_worker):
                rec.message(agent, ["all"], f"{agent} {n}")
                conv.pending_handoff_reason = f"reason-{agent}-{n}"
                rec.handoff(agent, "next")

    def in_thread(agent: str, conv: Any) -> None:
        sys.settrace(_switch_between_opcodes_in_the_recorder)
        barrier.wait()
        speak(agent, conv)

    async def in_tasks(conv: Any) -> None:
        async def one(agent: str) -> None:
            await asyncio.sleep(0)
            speak(agent, conv)

        await asyncio.gather(*(one(a) for a in tasks))

    # Widen every race window: the worker threads give up the GIL between any two opcodes of the conversation's
    # and the handoff's methods (a trace function sleeps there), so a read-modify-write without its lock loses
    # updates and a reason read and cleared in two steps is taken twice.
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with rec.conversation("crowd") as conv:
            threads = [
                threading.Thread(target=contextvars.copy_context().run, args=(in_thread, a, conv)) for a in workers
            ]
            for t in threads:
                t.start()
            asyncio.run(in_tasks(conv))
            for t in threads:
                t.join()
    finally:
        sys.setswitchinterval(old)

    spans = Spans(span_exporter)
    total = (len(workers) + len(tasks)) * per_worker
    assert sorted(attr(m, sc.MESSAGE_INDEX) for m in spans.messages) == list(range(total))
    assert sorted(attr(h, sc.HANDOFF_INDEX) for h in spans.handoffs) == list(range(total))
    root = spans.root
    assert attr(root, sc.CONVERSATION_ROUNDS) == total
    assert attr(root, sc.CONVERSATION_HANDOFFS) == total
    turns = {attr(t, sc.GEN_AI_AGENT_NAME): span_id(t) for t in spans.turns}
    assert set(turns) == set(workers) | set(tasks)
    assert {parent_id(t) for t in spans.turns} == {span_id(root)}
    for span in spans.messages + spans.handoffs:
        agent = attr(span, sc.MESSAGE_SENDER) or attr(span, sc.HANDOFF_FROM)
        assert parent_id(span) == turns[agent], span.name
    # A parked reason is taken by one handoff only (read and cleared under the lock): no reason appears twice.
    taken = [attr(h, sc.HANDOFF_REASON) for h in spans.handoffs if attr(h, sc.HANDOFF_REASON) != sc.HANDOFF_ROUTING]
    assert taken and all(r.startswith("reason-") for r in taken)
    assert len(taken) == len(set(taken)), "a parked handoff reason was consumed twice"


def _switch_between_opcodes_in_the_recorder(frame: Any, event: str, arg: Any) -> Any:
    if not frame.f_code.co_qualname.startswith(("Conversation.", "Handoff.")):
        return None
    frame.f_trace_opcodes = True
    return _opcode_tick


def _opcode_tick(frame: Any, event: str, arg: Any) -> Any:
    if event == "opcode":
        time.sleep(0)  # releases the GIL: another thread runs between these two opcodes
    return _opcode_tick
