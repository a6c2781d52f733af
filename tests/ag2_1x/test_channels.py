"""Discussion (round-robin order), conversation with a ``delegate`` call into a child consulting conversation,
and a turn that fails: spans against AG2's own record."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ag2_1x.conftest import SKIP_REASON

pytest.importorskip("ag2.network", reason=SKIP_REASON)

import mast_otel
from mast_otel import semconv as sc
from tests.ag2_1x import scenarios
from tests.ag2_1x.oracle import (
    assert_messages_match,
    handoffs_of,
    of_conversation,
    recorded_run,
    root_of,
    wal_record,
)
from tests.span_query import attr, parent_id, span_id


async def test_discussion_round_robin(instrumentor: Any, span_exporter: Any) -> None:
    record, spans = await recorded_run(span_exporter, scenarios.discussion)
    channel_id = record.channel_id

    assert_messages_match(spans, record)
    order = list(record.participants)
    # AG2's rotation: after each speaker, the next in channel order; the WAL's next sender for all but the last.
    expected = [(m.sender, order[(order.index(m.sender) + 1) % len(order)]) for m in record.messages]
    assert [e[1] for e in expected[:-1]] == record.senders[1:]
    assert [(h[0], h[1], h[2]) for h in handoffs_of(spans, channel_id)] == [
        (a, b, sc.HANDOFF_ROUND_ROBIN) for a, b in expected
    ]
    root = root_of(spans, channel_id)
    assert record.close_reason == "moderator closed the discussion"
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_CLOSED
    assert attr(root, sc.TERMINATION_DETAIL) == record.close_reason
    assert attr(root, "mast.conversation.type") == "discussion"


async def test_delegate_opens_a_child_conversation(instrumentor: Any, span_exporter: Any) -> None:
    hub = await scenarios.open_hub()
    channel_id = await scenarios.delegation(hub)
    consulting = [c for c in await hub.list_channels() if c.manifest.type == "consulting"]
    (child_meta,) = consulting
    parent_record = await wal_record(hub, channel_id)
    child_record = await wal_record(hub, child_meta.channel_id)
    await hub.close()
    spans = span_exporter.get_finished_spans()

    assert_messages_match(spans, parent_record)
    assert_messages_match(spans, child_record)
    parent, child = root_of(spans, channel_id), root_of(spans, child_meta.channel_id)
    assert attr(child, sc.CONVERSATION_PARENT_ID) == channel_id
    assert child.context.trace_id == parent.context.trace_id
    (tool,) = [
        t
        for t in of_conversation(spans, channel_id, sc.SPAN_TYPE_TOOL_CALL)
        if attr(t, sc.GEN_AI_TOOL_NAME) == "delegate"
    ]
    assert parent_id(child) == span_id(tool), "the consulting channel was opened by the delegate call"
    assert attr(tool, sc.GEN_AI_TOOL_CALL_RESULT) == child_record.messages[-1].text
    assert handoffs_of(spans, channel_id) == [("coordinator", "expert", sc.HANDOFF_DELEGATION, None)]
    assert child_record.close_reason == "consulting_complete"
    assert attr(child, sc.TERMINATION_REASON) == sc.TERMINATION_COMPLETED
    assert attr(child, "mast.conversation.type") == "consulting"
    (expert_turn,) = of_conversation(spans, child_meta.channel_id, sc.SPAN_TYPE_AGENT_TURN)
    assert attr(expert_turn, sc.GEN_AI_AGENT_NAME) == "expert"
    assert attr(parent, sc.TERMINATION_REASON) == sc.TERMINATION_CLOSED


async def test_failed_turn_is_the_termination_cause(instrumentor: Any, span_exporter: Any) -> None:
    hub = await scenarios.open_hub()
    channel_id = await scenarios.failing_turn(hub)
    failure = await scenarios.until_turn_failed(hub, channel_id)  # AG2's audit record of the failed turn
    record = await wal_record(hub, channel_id)
    await hub.close()
    spans = span_exporter.get_finished_spans()

    assert_messages_match(spans, record)
    (turn,) = of_conversation(spans, channel_id, sc.SPAN_TYPE_AGENT_TURN)
    assert attr(turn, sc.GEN_AI_AGENT_NAME) == hub.name_for(failure["agent_id"]) == "flaky"
    assert attr(turn, sc.ERROR_TYPE) == failure["exc_type"] == "ConnectionError"
    root = root_of(spans, channel_id)
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_ERROR
    assert (
        attr(root, sc.TERMINATION_DETAIL) == f"flaky's turn raised ConnectionError; then closed: {record.close_reason}"
    )


async def test_a_tool_that_raises(instrumentor: Any, span_exporter: Any) -> None:
    record, spans = await recorded_run(span_exporter, scenarios.failing_tool)

    assert_messages_match(spans, record)
    assert record.messages[-1].text == "I could not reach the order service.", "AG2 went on after the tool failed"
    (tool,) = of_conversation(spans, record.channel_id, sc.SPAN_TYPE_TOOL_CALL)
    assert attr(tool, sc.GEN_AI_TOOL_NAME) == "lookup_order"
    assert attr(tool, sc.ERROR_TYPE) == "LookupError"
    assert attr(tool, sc.TOOL_SUCCESS) is False
    assert attr(tool, sc.GEN_AI_TOOL_CALL_RESULT) == "order service unavailable for A-17"
    assert mast_otel.recording_failures() == {}
