"""The OpenInference adapter's rules that the CrewAI captures (tests/data/captures/crewai) called for, each named
by the kind of evidence it reads; each case changes one thing in a real capture, and fails without its rule:

- the tasks a run's root records it was given, given to no agent, are the user's request (the task and the
  opening message), not the first prompt a model was sent (which wraps the request in the framework's template);
  tasks each given to an agent are a plan (the judge's goal), not a message;
- an LLM span with no output messages says its answer in ``output.value``: a list of tool calls names the tools;
- where no model answer is recorded at all, a delegation to an agent with no span of its own is that agent's turn
  (its result the delegate's reply, the tools run inside it the delegate's); in such a run each tool run stands
  for the answer that asked for it, and an agent span's reply comes when it ends, after what ran inside it (where
  agent spans record the answers, AG2's, a tool run adds none).

And those the BeeAI captures (tests/data/captures/beeai) called for: a final-answer tool's text argument is what
the agent says; a tool whose run is another agent's turn (HandoffTool) is a handoff, not also a tool call.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, adapt
from mast_otel.spans import SpanRecord, from_otlp_json
from tests.adapters._fixtures import fixture, handoffs, messages

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"
TASK = "I was charged twice for order A17. Please refund the duplicate charge."


def _capture(run: str) -> tuple[list[SpanRecord], dict[str, Any]]:
    data = json.loads((CAPTURES / "crewai" / f"{run}.json").read_text(encoding="utf-8"))
    return from_otlp_json(json.dumps(data["otlp"])), data["expect"]


def _adapted(spans: list[SpanRecord]) -> Adapted:
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted)
    return adapted


def _root(spans: list[SpanRecord]) -> SpanRecord:
    return next(s for s in spans if not s.parent_span_id)


def _without(spans: list[SpanRecord], span: SpanRecord, key: str) -> list[SpanRecord]:
    changed = dataclasses.replace(span, attributes={k: v for k, v in span.attributes.items() if k != key})
    return [changed if s is span else s for s in spans]


def test_tasks_given_to_no_agent_are_the_users_request() -> None:
    spans, _ = _capture("hierarchical-events")
    adapted = _adapted(spans)
    assert adapted.records[0].get(sc.CONVERSATION_TASK) == TASK
    assert messages(adapted.records)[0] == ("user", TASK)
    # Without the root's tasks, the request is the manager's first prompt: CrewAI's template around it.
    prompt = _adapted(_without(spans, _root(spans), "crew_tasks")).records[0].get(sc.CONVERSATION_TASK)
    assert TASK in str(prompt) and prompt != TASK


def test_tasks_each_given_to_an_agent_are_a_plan_not_a_message() -> None:
    spans, oracle = fixture("openinference_crewai")  # a sequential crew: each task has its agent
    adapted = _adapted(spans)
    assert messages(adapted.records) == oracle["messages"]  # no opening message from the user
    assert str(adapted.records[0].get(sc.CONVERSATION_TASK)).startswith("Researcher: ")


def test_an_answer_recorded_only_in_output_value_names_the_tools_it_called() -> None:
    spans, _ = _capture("hierarchical-events")
    llm = [s for s in spans if s.get(sc.OI_SPAN_KIND) == sc.OI_KIND_LLM]
    assert not any(k.startswith(sc.OI_LLM_OUTPUT_MESSAGES) for s in llm[:2] for k in s.attributes)
    said = messages(_adapted(spans).records)
    assert said[1:3] == [("Manager", "delegate_work_to_coworker"), ("Researcher", "lookup_order")]
    calls = [r for r in _adapted(spans).records if r.get(sc.MESSAGE_KIND) == sc.KIND_TOOL_CALL]
    assert [r.get(sc.MESSAGE_TOOL_CALLS) for r in calls] == ["delegate_work_to_coworker", "lookup_order",
                                                             "delegate_work_to_coworker"]  # fmt: skip


def test_with_no_model_answer_recorded_tools_and_unseen_delegates_make_the_turns() -> None:
    spans, expect = _capture("hierarchical")  # the instrumentor's default: tasks and tools, no model calls
    assert not any(s.get(sc.OI_SPAN_KIND) == sc.OI_KIND_LLM for s in spans)
    adapted = _adapted(spans)
    assert messages(adapted.records) == [
        ("user", TASK),
        ("Manager", "Delegate work to coworker"),  # the answer that asked for the delegation
        ("Researcher", "lookup_order"),  # run inside the delegation: the delegate's
        ("Researcher", "Order A17 was charged 49.00 EUR twice on 2026-11-02."),  # the delegation's result
        ("Manager", "Delegate work to coworker"),
        ("Writer", "Dear customer, the duplicate charge on order A17 is refunded."),
        ("Manager", "The duplicate 49.00 EUR charge on A17 is refunded; the customer has been told."),  # at its end
    ]
    assert handoffs(adapted.records) == [tuple(h) for h in expect["handoffs"]]
    tools = [(r.get(sc.GEN_AI_AGENT_NAME), r.get(sc.GEN_AI_TOOL_NAME)) for r in adapted.records
             if r.span_type == sc.SPAN_TYPE_TOOL_CALL]  # fmt: skip
    assert tools == [("Researcher", "lookup_order")]


def test_a_delegate_with_a_span_of_its_own_speaks_through_it() -> None:
    """The same crew traced with the instrumentor's event listener: each coworker has its AGENT span and its
    model calls, so the delegation's span is a handoff only (the coworker's reply is not said twice)."""
    spans, expect = _capture("hierarchical-events")
    adapted = _adapted(spans)
    assert len(messages(adapted.records)) == expect["messages"]
    assert [m for m in messages(adapted.records) if m[0] == "Writer"] == [
        ("Writer", "Dear customer, the duplicate charge on order A17 is refunded.")
    ]


def test_a_tool_run_adds_no_answer_where_agent_spans_record_the_answers() -> None:
    """AG2's agent spans reply by their output (no LLM span, no delegation): a tool run inside one (its
    ``execute_function``) was asked for by a recorded answer, so it adds a tool call and no message."""
    spans, oracle = fixture("openinference_ag2")
    leaf = max((s for s in spans if s.get(sc.OI_SPAN_KIND) == sc.OI_KIND_AGENT), key=lambda s: s.start_ns)
    tool = SpanRecord(leaf.trace_id, "00000000000000d1", leaf.span_id, "lookup", leaf.start_ns + 1,
                      max(leaf.start_ns + 2, leaf.end_ns - 1),
                      {sc.OI_SPAN_KIND: sc.OI_KIND_TOOL, sc.OI_TOOL_NAME: "lookup", sc.OI_INPUT_VALUE: '{"q": "x"}'},
                      scope_name=leaf.scope_name)  # fmt: skip
    adapted = _adapted([*spans, tool])
    assert messages(adapted.records) == oracle["messages"]
    assert [r.get(sc.GEN_AI_TOOL_NAME) for r in adapted.records if r.span_type == sc.SPAN_TYPE_TOOL_CALL] == ["lookup"]


def test_the_users_message_object_among_the_roots_arguments_is_the_task() -> None:
    """A root whose ``input.value`` is the run's arguments, the user's message among them as a message object
    (Google ADK's ``Runner.run_async``: ``new_message``, ``{"role": "user", "parts": [{"text": ...}]}``), has that
    message's text as the task, not the arguments' JSON (google_adk_openinference/desk)."""
    data = json.loads((CAPTURES / "google_adk_openinference" / "desk.json").read_text(encoding="utf-8"))
    spans = from_otlp_json(json.dumps(data["otlp"]))
    adapted = _adapted(spans)
    assert adapted.records[0].get(sc.CONVERSATION_TASK) == TASK
    assert messages(adapted.records)[0] == ("user", TASK)
    # The same message said by the model is no request of the user's: the task is then the arguments as written.
    root = _root(spans)
    arguments = json.loads(str(root.get(sc.OI_INPUT_VALUE)))
    arguments["new_message"]["role"] = "model"
    changed = dataclasses.replace(root, attributes={**root.attributes, sc.OI_INPUT_VALUE: json.dumps(arguments)})
    task = _adapted([changed if s is root else s for s in spans]).records[0].get(sc.CONVERSATION_TASK)
    assert task != TASK and TASK in str(task)


# --- rules the BeeAI captures (tests/data/captures/beeai) called for ---------------------------------------------

BILLING_SAYS = "A17 was charged 49.00 EUR twice; I refunded one."


def _beeai(run: str) -> list[SpanRecord]:
    data = json.loads((CAPTURES / "beeai" / f"{run}.json").read_text(encoding="utf-8"))
    return from_otlp_json(json.dumps(data["otlp"]))


def _renamed_call(spans: list[SpanRecord], old: str, new: str) -> list[SpanRecord]:
    """The capture with every model answer's call of ``old`` calling ``new`` instead (same arguments)."""
    out = []
    for s in spans:
        attributes = {k: (new if k.endswith("tool_call.function.name") and v == old else v)
                      for k, v in s.attributes.items()}  # fmt: skip
        out.append(dataclasses.replace(s, attributes=attributes))
    return out


def _said(adapted: Adapted, sender: str) -> list[tuple[str, tuple[str, ...], str | None]]:
    """(content, recipients, tool calls) of a sender's messages, in order."""
    found = sorted(adapted.messages, key=lambda m: m.get(sc.MESSAGE_INDEX))
    return [(str(m.get(sc.MESSAGE_CONTENT)), tuple(m.get(sc.MESSAGE_RECIPIENTS) or ()), m.get(sc.MESSAGE_TOOL_CALLS))
            for m in found if m.get(sc.MESSAGE_SENDER) == sender]  # fmt: skip


def test_a_final_answer_tools_text_argument_is_what_the_agent_says() -> None:
    """A final-answer tool (``final_answer``, ``FinalAnswer``: any naming): its text argument is the agent's words,
    a message to whom it answers, not a call sent to the runtime; any other tool's call is the tool's name."""
    spans = _beeai("handoff")
    for name in ("final_answer", "FinalAnswer"):
        said = _said(_adapted(_renamed_call(spans, "final_answer", name)), "billing")
        assert said[-1] == (BILLING_SAYS, ("user",), None)
        # (the tool's own span is still a tool call, as BeeAI's record has it)
    said = _said(_adapted(_renamed_call(spans, "final_answer", "send_reply")), "billing")
    assert said[-1] == ("send_reply", ("<runtime>",), "send_reply")


def test_a_tool_whose_run_is_another_agents_turn_is_a_handoff_not_a_tool_call() -> None:
    """BeeAI's HandoffTool: a TOOL span holding another agent's AGENT span is the handoff to that agent (why: the
    task its arguments give), not also a tool call (BeeAI's record counts it a delegation, not one of the tools)."""
    adapted = _adapted(_beeai("handoff"))
    calls = [(r.get(sc.GEN_AI_AGENT_NAME), r.get(sc.GEN_AI_TOOL_NAME)) for r in adapted.records
             if r.span_type == sc.SPAN_TYPE_TOOL_CALL]  # fmt: skip
    assert ("triage", "billing") not in calls and ("billing", "lookup_order") in calls
    assert handoffs(adapted.records) == [("triage", "billing"), ("billing", "triage")]
    passed = [r for r in adapted.records if r.span_type == sc.SPAN_TYPE_HANDOFF]
    first = min(passed, key=lambda r: r.get(sc.HANDOFF_INDEX))
    assert first.get(sc.HANDOFF_REASON) == "Refund the duplicate charge on order A17."
