"""The adapters' general rules (issue 41), each named by the kind of evidence it reads, not by a framework:

- an adapter whose root holds no conversation lets the next one try the spans other instrumentations wrote (a
  GenAI run holding one OpenInference CHAIN span under a tool is still the GenAI run);
- the framework comes from the instrumentation scope, never from the model provider;
- ids are never names;
- a transfer, handoff or delegation tool in any naming is a handoff;
- hidden content is skipped, naming the switch;
- a run that begins after another run's root has ended is its own.

The real captures (tests/data/genai, tests/data/captures) are the data; each case changes one thing in them.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, NotAConversation, adapt, foreign_units
from mast_otel.adapters._evidence import looks_like_id, scope_framework, transfer
from mast_otel.spans import SpanRecord, from_otlp_json
from tests.adapters._fixtures import handoffs, messages
from tests.adapters.test_genai import GENAI, capture

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"
GENAI_CAPTURES = sorted(p.stem for p in GENAI.glob("*.json"))


def _capture(framework: str, run: str) -> tuple[list[SpanRecord], dict[str, Any]]:
    data = json.loads((CAPTURES / framework / f"{run}.json").read_text(encoding="utf-8"))
    return from_otlp_json(json.dumps(data["otlp"])), data["expect"]


def _summary(adapted: Adapted | NotAConversation | None) -> tuple[Any, ...]:
    assert isinstance(adapted, Adapted)
    tools = [(r.get(sc.GEN_AI_AGENT_NAME), r.get(sc.GEN_AI_TOOL_NAME)) for r in adapted.records
             if r.span_type == sc.SPAN_TYPE_TOOL_CALL]  # fmt: skip
    root = adapted.records[0]
    return (adapted.source, adapted.framework, adapted.root_span_id, messages(adapted.records),
            handoffs(adapted.records), tools, root.get(sc.CONVERSATION_TASK), adapted.no_content)  # fmt: skip


@pytest.mark.parametrize("name", GENAI_CAPTURES)
def test_a_genai_run_holding_an_openinference_chain_under_a_tool_is_still_adapted(name: str) -> None:
    """A LangChain retriever traced by OpenInference inside a Strands or ADK tool: the OpenInference adapter
    takes the CHAIN span as its root and finds no agent; the GenAI adapter then reads the run as before (it was
    refused, "0 agent(s) replied", for all twelve captures)."""
    spans, _, _ = capture(name)
    tool = next(s for s in spans if s.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_EXECUTE_TOOL)
    chain = SpanRecord(tool.trace_id, "00000000000000c1", tool.span_id, "RetrievalQA", tool.start_ns + 1,
                       max(tool.start_ns + 2, tool.end_ns - 1),
                       {sc.OI_SPAN_KIND: sc.OI_KIND_CHAIN, sc.OI_INPUT_VALUE: "refund policy"},
                       scope_name="openinference.instrumentation.langchain")  # fmt: skip
    before = [adapt(unit) for unit in foreign_units(spans)]
    after = [adapt(unit) for unit in foreign_units([*spans, chain])]  # held in the GenAI root's unit
    assert sum(isinstance(a, Adapted) for a in before) == 1
    assert [_summary(a) for a in after if isinstance(a, Adapted)] == [_summary(a) for a in before
                                                                      if isinstance(a, Adapted)]  # fmt: skip
    (held,) = [unit for unit in foreign_units([*spans, chain]) if chain in unit]
    assert isinstance(adapt([s for s in held if s is not chain]), Adapted)


def test_the_framework_is_the_scopes_never_the_model_providers() -> None:
    assert scope_framework("openinference.instrumentation.agno") == "agno"
    assert scope_framework("openinference.instrumentation.llama_index") == "llama-index"
    assert scope_framework("opentelemetry.instrumentation.langchain") == "langchain"
    assert scope_framework("gcp.vertex.agent") == "google-adk"
    assert scope_framework("strands.telemetry.tracer") == "strands"
    assert scope_framework("agent_framework") == "agent-framework"
    assert scope_framework("openinference.instrumentation.openai") is None  # a model client: no framework
    assert scope_framework(None) is None
    spans, _ = _capture("agno", "team")
    assert {s.get(sc.OI_LLM_SYSTEM) for s in spans if s.get(sc.OI_LLM_SYSTEM)} == {"openai"}
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted) and adapted.framework == "agno"
    assert adapted.records[0].get(sc.MAST_FRAMEWORK) == "agno"


def test_an_id_is_never_an_agents_name() -> None:
    """Agno's ``graph.node.parent_id`` is the parent's ``graph.node.id`` (16 hex digits): resolved to that agent's
    name, and an id that names no agent of the run is no agent at all."""
    assert looks_like_id("1d49f171d22259fd") and looks_like_id("0b5c8f0e-5c1a-4f43-9d7e-2a8f3b1c9d10")
    assert not looks_like_id("Researcher") and not looks_like_id("billing_agent") and not looks_like_id("cafe")
    spans, expect = _capture("agno", "team")
    assert any(looks_like_id(str(s.get(sc.OI_GRAPH_NODE_PARENT_ID) or "")) for s in spans)
    team = next(s for s in spans if s.parent_span_id is None)
    orphaned = [dataclasses.replace(s, attributes={**s.attributes, sc.OI_GRAPH_NODE_PARENT_ID: "ffffffffffffffff"})
                if s.get(sc.OI_GRAPH_NODE_PARENT_ID) else s for s in spans]  # fmt: skip
    for variant in (spans, orphaned):
        adapted = adapt([s for s in variant if s.start_ns <= team.end_ns])
        assert isinstance(adapted, Adapted)
        names = {str(a) for a in adapted.records[0].get(sc.CONVERSATION_AGENTS) or ()}
        assert not any(looks_like_id(n) for n in names)
        assert handoffs(adapted.records) == [tuple(h) for h in expect["handoffs"]]
    unnamed = [dataclasses.replace(s, attributes={k: v for k, v in s.attributes.items() if k not in (
        sc.OI_AGENT_NAME, sc.OI_GRAPH_NODE_NAME)}) for s in spans]  # fmt: skip
    adapted = adapt(unnamed)  # only ids left: the span names speak
    assert isinstance(adapted, Adapted)
    assert not any(looks_like_id(str(a)) for a in adapted.records[0].get(sc.CONVERSATION_AGENTS) or ())


@pytest.mark.parametrize(
    ("tool", "args", "target"),
    [
        ("transfer_to_billing", {}, "billing"),
        ("Handoff-transfer_to_billing", {}, "billing"),
        ("handoff to billing", {}, "billing"),
        ("handoff_to_billing", {}, "billing"),
        ("handoff", {"to_agent": "billing", "reason": "a billing matter"}, "billing"),
        ("transfer_to_agent", {"agent_name": "billing"}, "billing"),
        ("delegate_task_to_member", {"member_id": "web-researcher", "task": "find it"}, "Web Researcher"),
        ("Delegate work to coworker", {"coworker": "Billing", "task": "refund"}, "billing"),
        ("transfer_to_agent", {}, None),  # no content captured: the next agent to speak is the target
        ("delegate_task_to_members", {"task": "everyone"}, None),
        ("assign_task_to_member", {"member_id": "billing", "task": "refund"}, "billing"),
        ("route_to_billing", {}, "billing"),
        ("Route", {"agent": "triage"}, "triage"),
    ],
)
def test_a_transfer_handoff_or_delegation_tool_in_any_naming_is_a_handoff(
    tool: str, args: dict[str, Any], target: str | None
) -> None:
    found = transfer(tool, args, ["triage", "billing", "Web Researcher"])
    assert found is not None and found[0] == target
    assert transfer("lookup_order", {"order_id": "A17"}, ["billing"]) is None
    assert transfer("handoff_to_nobody", {}, ["billing"]) is None  # named for no agent of the run: a plain tool
    assert transfer("transfer_funds", {"to": "ACC-17", "amount": 5}, ["billing"]) is None  # about something else
    assert transfer("route_request", {"to": "billing"}, ["billing"]) is None  # a routing tool about a request
    assert transfer("assign_ticket", {"agent": "billing"}, ["billing"]) is None
    assert transfer("handoff", {"to": "ACC-17"}, ["billing"]) == (None, None)  # "to" names no agent of the run


def test_a_delegation_is_a_handoff_not_a_tool_call() -> None:
    """Agno's leader delegates with ``delegate_task_to_member``; LlamaIndex's agents call ``handoff``: neither is a
    tool call, each is a handoff with the reason the call gave."""
    for framework, run in (("agno", "team"), ("llama_index", "desk")):
        spans, expect = _capture(framework, run)
        adapted = adapt(spans)
        assert isinstance(adapted, Adapted)
        called = {r.get(sc.GEN_AI_TOOL_NAME) for r in adapted.records if r.span_type == sc.SPAN_TYPE_TOOL_CALL}
        assert called.isdisjoint({"delegate_task_to_member", "handoff"})
        assert handoffs(adapted.records) == [tuple(h) for h in expect["handoffs"]]
        assert adapted.handoffs[0].get(sc.HANDOFF_REASON)


def test_the_task_comes_from_the_user() -> None:
    """The team's root is an AGENT span named for the team, which also answers first: the request is the user's,
    not the lead agent's to itself."""
    spans, expect = _capture("agno", "team")
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted)
    first = min(adapted.messages, key=lambda m: m.get(sc.MESSAGE_INDEX))
    assert (first.get(sc.MESSAGE_SENDER), first.get(sc.MESSAGE_CONTENT)) == ("user", expect["task"])
    assert first.get(sc.MESSAGE_RECIPIENTS) == ("Support Team",)


def test_hidden_content_is_skipped_and_the_switch_named() -> None:
    spans, expect = _capture("agno", "team-hidden")
    assert any(v == "__REDACTED__" for s in spans for v in s.attributes.values())
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted)
    assert not any("__REDACTED__" in str(m.get(sc.MESSAGE_CONTENT)) for m in adapted.messages)
    assert adapted.no_content is not None
    assert "OPENINFERENCE_HIDE_INPUTS" in adapted.no_content and "OPENINFERENCE_HIDE_OUTPUTS" in adapted.no_content
    assert handoffs(adapted.records) == [tuple(h) for h in expect["handoffs"]]  # the structure is still read
    # Outputs hidden, the request shown (OPENINFERENCE_HIDE_OUTPUTS alone): still nothing of the agents' to judge.
    spans, _ = _capture("agno", "team")
    shown = [dataclasses.replace(s, attributes={
        k: v for k, v in s.attributes.items()
        if not k.startswith(sc.OI_LLM_OUTPUT_MESSAGES)} | ({sc.OI_OUTPUT_VALUE: "__REDACTED__"}
                                                           if sc.OI_OUTPUT_VALUE in s.attributes else {}))
        for s in spans]  # fmt: skip
    adapted = adapt(shown)
    assert isinstance(adapted, Adapted) and adapted.records[0].get(sc.CONVERSATION_TASK) == expect["task"]
    assert adapted.no_content is not None and "OPENINFERENCE_HIDE_OUTPUTS" in adapted.no_content


def test_a_run_begun_after_another_runs_root_ended_is_its_own() -> None:
    """Agno leaves the team's context on the thread: the single agent run afterwards is parented on the team's
    root, which had ended. It is not a fourth agent of the team: it is its own unit, and alone, no conversation."""
    spans, expect = _capture("agno", "team")
    team = next(s for s in spans if s.parent_span_id is None)
    late = [s for s in spans if s.parent_span_id == team.span_id and s.start_ns > team.end_ns]
    assert [s.get(sc.OI_AGENT_NAME) for s in late] == ["Clerk"]
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted)
    assert "Clerk" not in (adapted.records[0].get(sc.CONVERSATION_AGENTS) or ())
    units = foreign_units(spans)
    assert [u[0].get(sc.OI_AGENT_NAME) for u in units] == ["Support Team", "Clerk"]
    assert isinstance(adapt(units[1]), NotAConversation)
    assert len(messages(adapted.records)) == expect["messages"]
