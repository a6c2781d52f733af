"""Adapter outputs pinned against what the framework itself recorded, for the paths the shared fixture test does
not reach: AG2's built-in tool calls, the tree walks the adapters share, and the edges of each adapter's input
(a refusal's reason, a long message list, a recorded previous speaker that differs from the speaking order)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
from collections.abc import Mapping

from mast_otel import semconv as sc
from mast_otel.adapters import (
    SOURCE_ATTRIBUTE,
    Adapted,
    ConversationBuilder,
    NotAConversation,
    Tree,
    adapt,
    foreign_units,
)
from mast_otel.spans import SpanRecord
from tests.adapters._fixtures import fixture, handoffs, messages, recipients
from tests.adapters.runs import SUPERVISOR_SCRIPT

_SELECTED = "ag2.speaker_selection.selected"  # AG2 sets it once its speaker selection returns
_PATH = "traceloop.entity.path"  # OpenLLMetry: the LangGraph node a span runs in, first
_GOTO = "langgraph.command.goto_node"  # OpenLLMetry: the node a LangGraph Command went to


def test_ag2_tool_calls_are_the_calls_the_group_made() -> None:
    """AG2's built-in tracing on a group whose researcher's model asks for two tool calls in one reply and whose
    executor runs them: the conversation has the group's messages, speaker order and recipients, the request is a
    tool-call message naming the tools, and each executed call carries the executor, the model's arguments and
    the result AG2 returned."""
    spans, oracle = fixture("ag2_builtin_tools")
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted) and adapted.source == "ag2-builtin"
    assert messages(adapted.records) == oracle["messages"]
    assert handoffs(adapted.records) == oracle["handoffs"]
    assert sorted({(s, r) for s, rs in recipients(adapted.records) for r in rs}) == oracle["recipients"]
    requests = [m for m in adapted.messages if m.get(sc.MESSAGE_KIND) == sc.KIND_TOOL_CALL]
    assert [(str(m.get(sc.MESSAGE_SENDER)), name.strip()) for m in requests
            for name in str(m.get(sc.MESSAGE_TOOL_CALLS)).split(",")] == oracle["tool_calls"]  # fmt: skip
    assert all(m.get(sc.MESSAGE_TOOL_CALLS) is None for m in adapted.messages if m not in requests)
    calls = [r for r in adapted.records if r.span_type == sc.SPAN_TYPE_TOOL_CALL]
    assert [(str(c.get(sc.GEN_AI_TOOL_NAME)), str(c.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS))) for c in calls] == oracle[
        "tool_arguments"
    ]
    assert [(str(c.get(sc.GEN_AI_AGENT_NAME)), str(c.get(sc.GEN_AI_TOOL_CALL_RESULT))) for c in calls] == oracle[
        "tool_results"
    ]
    assert all(c.get(sc.TOOL_SUCCESS) is True and not c.error for c in calls)
    # Each event's evidence is the AG2 span it was read from: the tool call its execute_tool span.
    by_id = {s.span_id: s for s in spans}
    assert [by_id[adapted.original(c.span_id)].name for c in calls] == [
        f"execute_tool {t}" for t, _ in oracle["tool_arguments"]
    ]
    # The conversation's root: the task the initiator gave, under the name of AG2's conversation span.
    root = next(s for s in spans if s.parent_span_id is None)
    task_sender, task = oracle["messages"][0]
    assert root.name == f"conversation {task_sender}"
    assert adapted.records[0].get(sc.CONVERSATION_TASK) == task
    assert adapted.records[0].get(sc.GEN_AI_WORKFLOW_NAME) == root.name


def _without(spans: list[SpanRecord], *names: str) -> list[SpanRecord]:
    """The spans less the named ones and everything under them (agents that were not instrumented)."""
    tree = Tree(spans)
    gone = {x.span_id for s in spans if s.name in names for x in (s, *tree.below(s))}
    return [s for s in spans if s.span_id not in gone]


def test_two_ag2_agents_are_a_conversation_and_one_is_not() -> None:
    """Two agents that reply to each other are a multi-agent conversation; a conversation in which only one agent
    replied is refused (never judged), and the refusal says so."""
    spans, oracle = fixture("ag2_builtin_tools")
    two = adapt(_without(spans, "invoke_agent writer"))
    assert isinstance(two, Adapted)
    assert messages(two.records) == [(s, m) for s, m in oracle["messages"] if s != "writer"]
    one = adapt(_without(spans, "invoke_agent writer", "invoke_agent executor"))
    assert one == NotAConversation("ag2-builtin", "1 agent(s) replied; not a multi-agent conversation")


def test_ag2_initiator_is_user_when_the_conversation_names_none() -> None:
    """AG2's parallel ``a_initiate_chats`` span names no agent: the task is then the user's."""
    spans, oracle = fixture("ag2_builtin_tools")
    root = next(s for s in spans if s.parent_span_id is None)
    unnamed = [dataclasses.replace(s, attributes={k: v for k, v in s.attributes.items() if k != sc.GEN_AI_AGENT_NAME})
               if s is root else s for s in spans]  # fmt: skip
    adapted = adapt(unnamed)
    assert isinstance(adapted, Adapted)
    assert messages(adapted.records)[0] == ("user", oracle["messages"][0][1])


def test_ag2_task_names_no_recipient_when_no_agent_is_directly_under_the_root() -> None:
    """When another library's span sits between AG2's conversation span and the chat manager, the adapter cannot
    tell who received the task: the task message names no recipient rather than an empty or made-up one."""
    spans, oracle = fixture("ag2_builtin_tools")
    root = next(s for s in spans if s.parent_span_id is None)
    manager = next(s for s in spans if s.name == "invoke_agent chat_manager")
    between = SpanRecord(root.trace_id, "00000000000000ee", root.span_id, "HTTP POST", manager.start_ns - 1,
                         manager.end_ns, {"http.request.method": "POST"})  # fmt: skip
    moved = [dataclasses.replace(s, parent_span_id=between.span_id) if s is manager else s for s in spans]
    adapted = adapt([*moved, between])
    assert isinstance(adapted, Adapted)
    first = min(adapted.messages, key=lambda m: m.get(sc.MESSAGE_INDEX))
    assert (first.get(sc.MESSAGE_CONTENT), first.get(sc.MESSAGE_RECIPIENTS)) == (oracle["messages"][0][1], ())


def test_ag2_tool_run_outside_any_agent_names_no_agent() -> None:
    """A tool AG2 ran outside any agent's span (directly under the conversation) is still a tool call, by an
    agent the trace does not name ("?")."""
    spans, _ = fixture("ag2_builtin_tools")
    root = next(s for s in spans if s.parent_span_id is None)
    moved = [dataclasses.replace(s, parent_span_id=root.span_id) if s.name.startswith("execute_tool") else s
             for s in spans]  # fmt: skip
    adapted = adapt(moved)
    assert isinstance(adapted, Adapted)
    calls = [r for r in adapted.records if r.span_type == sc.SPAN_TYPE_TOOL_CALL]
    assert len(calls) == 2 and {c.get(sc.GEN_AI_AGENT_NAME) for c in calls} == {"?"}


def test_an_empty_ag2_reply_is_a_message_not_a_tool_call() -> None:
    """An agent that answered with no text and called no tool (a user proxy's empty auto-reply) sent a message."""
    spans, _ = fixture("ag2_builtin_tools")
    empty = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": ""}]}])
    adapted = adapt(_replaced(spans, "invoke_agent writer", **{sc.GEN_AI_OUTPUT_MESSAGES: empty}))
    assert isinstance(adapted, Adapted)
    last = max(adapted.messages, key=lambda m: m.get(sc.MESSAGE_INDEX))
    assert (last.get(sc.MESSAGE_SENDER), last.get(sc.MESSAGE_CONTENT)) == ("writer", "")
    assert (last.get(sc.MESSAGE_KIND), last.get(sc.MESSAGE_TOOL_CALLS)) == (sc.KIND_MESSAGE, None)


def test_ag2_selections_give_the_speaker_order_when_a_member_is_not_traced() -> None:
    """An AutoPattern group whose coder was not instrumented (its replies are missing): the speaker selections
    still record each turn passing, so the handoffs are the group's speaker order, each from the agent that held
    the turn; the messages are the group's less the coder's."""
    spans, oracle = fixture("ag2_builtin_auto")
    adapted = adapt(_without(spans, "invoke_agent coder"))
    assert isinstance(adapted, Adapted)
    assert messages(adapted.records) == [(s, m) for s, m in oracle["messages"] if s != "coder"]
    assert handoffs(adapted.records) == oracle["handoffs"]


def test_an_ag2_selection_that_chose_no_one_passes_no_turn() -> None:
    """AG2 sets the selected speaker only once the selector returns: a selection span without it (the selector
    failed) hands the turn to no one; the group's speaker order still comes from who replied."""
    spans, oracle = fixture("ag2_builtin_auto")
    first = next(s for s in spans if s.name == "speaker_selection")
    failed = [dataclasses.replace(s, attributes={k: v for k, v in s.attributes.items() if k != _SELECTED})
              if s is first else s for s in spans]  # fmt: skip
    adapted = adapt(failed)
    assert isinstance(adapted, Adapted)
    assert handoffs(adapted.records) == oracle["handoffs"]
    assert all(h.get(sc.HANDOFF_TO) for h in adapted.handoffs)


def _random_trace(rnd: random.Random) -> list[SpanRecord]:
    """A trace as a collector may receive it: parents that arrive or not (a dangling parent id), clocks skewed
    between services (a child may start before its parent), and a leaf span delivered twice (an exporter's retry)."""
    spans: list[SpanRecord] = []
    for n in range(rnd.randint(1, 12)):
        pick = rnd.random()
        parent = None if pick < 0.2 or not spans else "dead0000000000ff" if pick < 0.3 else rnd.choice(spans).span_id
        spans.append(SpanRecord("t" * 32, f"{n + 1:016x}", parent, f"s{n}", rnd.randint(0, 50), 100, {}))
    parents = {s.parent_span_id for s in spans}
    leaves = [s for s in spans if s.span_id not in parents]
    if rnd.random() < 0.5:
        spans.append(rnd.choice(leaves))
    rnd.shuffle(spans)
    return spans


def _chain(span: SpanRecord, by_id: dict[str, SpanRecord]) -> list[SpanRecord]:
    """The span's ancestors, nearest first, followed by parent ids (the definition the walks must agree with)."""
    out = []
    while span.parent_span_id in by_id:
        span = by_id[span.parent_span_id]
        out.append(span)
    return out


def test_tree_walks_agree_with_the_parent_chain() -> None:
    """Tree (exported with the adapters) answers every walk in one pass over a parent-first order; on traces with
    skewed clocks, missing parents and a span delivered twice, each answer equals the one read off each span's
    parent chain: which agent a span acts for, which spans hold an agent, the outermost roots, a root's subtree."""
    rnd = random.Random(24)
    for _ in range(400):
        spans = _random_trace(rnd)
        chosen = {s.span_id for s in spans if rnd.random() < 0.4}

        def match(span: SpanRecord, chosen: set[str] = chosen) -> bool:
            return span.span_id in chosen

        tree = Tree(spans)
        by_id = {s.span_id: s for s in spans}
        order = [s.span_id for s in tree.top_down()]
        assert sorted(order) == sorted(by_id)  # every span once
        for s in spans:
            if s.parent_span_id in by_id:
                assert order.index(s.parent_span_id) < order.index(s.span_id)  # each after its parent
            assert tree.parent(s) is by_id.get(s.parent_span_id or "")
            assert tree.ancestors(s) == _chain(s, by_id)
        nearest = tree.nearest(match)
        assert nearest == {s.span_id: next((a for a in _chain(s, by_id) if match(a)), None) for s in spans}
        holders = {a.span_id for s in spans if match(s) for a in _chain(s, by_id)}
        dangling = {s.parent_span_id for s in spans if s.parent_span_id and s.parent_span_id not in by_id}
        held = tree.holding(match)
        assert held - dangling == holders
        assert held & dangling == {
            a.parent_span_id for s in spans if match(s) for a in [s, *_chain(s, by_id)] if a.parent_span_id in dangling
        }
        starts = sorted(spans, key=lambda s: (s.start_ns, s.span_id))
        outer = [s for s in starts if match(s) and not any(match(a) for a in _chain(s, by_id))]
        assert tree.outermost(match) == outer
        for root in spans:
            under = [s for s in starts if root in _chain(s, by_id)]
            assert tree.below(root) == [
                s for n, s in enumerate(under) if s.span_id not in {u.span_id for u in under[:n]}
            ]


def test_a_span_with_no_id_does_not_hide_the_conversation_root() -> None:
    """Malformed OTLP can carry a span with an empty id; a root candidate of that kind beside the AG2 conversation
    (started after it) left the conversation's own root out of the outermost spans, so it was never judged."""
    spans, oracle = fixture("ag2_builtin_tools")
    root = next(s for s in spans if s.parent_span_id is None)
    stray = dataclasses.replace(root, span_id="", start_ns=root.end_ns + 1, end_ns=root.end_ns + 2)
    assert Tree([*spans, stray]).outermost(lambda s: s.parent_span_id is None) == [root, stray]
    units = foreign_units([*spans, stray])
    assert [unit[0] for unit in units] == [root, stray]
    adapted = adapt(units[0])
    assert isinstance(adapted, Adapted) and messages(adapted.records) == oracle["messages"]


def _replaced(spans: list[SpanRecord], name: str, **attributes: object) -> list[SpanRecord]:
    """The spans with the named span's attributes updated (what another version of the framework might write)."""
    return [dataclasses.replace(s, attributes={**s.attributes, **attributes}) if s.name == name else s for s in spans]


def test_a_reply_is_the_text_parts_of_its_output_messages_in_order() -> None:
    """GenAI output messages (AG2's ``gen_ai.output.messages``) may hold several text parts, reasoning parts (the
    model's thinking, not what it said) and entries another writer got wrong: the message is the text parts,
    joined line by line in order, and nothing else."""
    spans, _ = fixture("ag2_builtin_tools")
    output = [
        "not a message",
        {"role": "assistant", "parts": [
            {"type": "reasoning", "content": "The user wants a report."},
            "not a part",
            {"type": "text", "content": "Report: 42."},
            {"type": "text", "content": ""},
            {"type": "text", "content": "TERMINATE"},
        ]},
    ]  # fmt: skip
    adapted = adapt(_replaced(spans, "invoke_agent writer", **{sc.GEN_AI_OUTPUT_MESSAGES: json.dumps(output)}))
    assert isinstance(adapted, Adapted)
    assert messages(adapted.records)[-1] == ("writer", "Report: 42.\nTERMINATE")


def test_a_numeric_tool_result_is_kept_as_its_text() -> None:
    """An attribute may be a number (OpenTelemetry allows int values): a tool that returned 42 reads as "42"."""
    spans, _ = fixture("ag2_builtin_tools")
    adapted = adapt(_replaced(spans, "execute_tool lookup", **{sc.GEN_AI_TOOL_CALL_RESULT: 42}))
    assert isinstance(adapted, Adapted)
    calls = [r for r in adapted.records if r.span_type == sc.SPAN_TYPE_TOOL_CALL]
    assert [c.get(sc.GEN_AI_TOOL_CALL_RESULT) for c in calls] == ["42", "42"]


def _chats_of(spans: list[SpanRecord], agent: str) -> set[str]:
    """The span ids of the model calls an OpenLLMetry LangGraph node made (its entity path starts with it)."""
    return {s.span_id for s in spans if s.name == "ChatOpenAI.chat" and s.get(_PATH, "").split(".")[0] == agent}


def test_a_langgraph_run_where_one_node_spoke_is_refused_with_the_count() -> None:
    """OpenLLMetry on a LangGraph supervisor whose researcher's model calls were lost: one node spoke, so it is not
    a multi-agent conversation, and the refusal (what the collector reports instead of a verdict) says so; with
    no model call at all, zero."""
    spans, _ = fixture("openllmetry_langgraph")
    researcher = _chats_of(spans, "researcher")
    alone = [s for s in spans if s.span_id not in researcher]
    assert adapt(alone) == NotAConversation("openllmetry", "1 agent(s) replied; not a multi-agent conversation")
    silent = [s for s in alone if s.span_id not in _chats_of(spans, "supervisor")]
    assert adapt(silent) == NotAConversation("openllmetry", "0 agent(s) replied; not a multi-agent conversation")


def test_a_langgraph_conversation_is_named_after_its_graph() -> None:
    """The conversation is named as OpenLLMetry names the workflow (the compiled graph's name, ``LangGraph``), and
    a message goes to the runtime exactly when it only calls tools."""
    spans, oracle = fixture("openllmetry_langgraph")
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted)
    workflow = next(s for s in spans if s.get("traceloop.span.kind") == "workflow")
    assert adapted.records[0].get(sc.GEN_AI_WORKFLOW_NAME) == workflow.get("traceloop.workflow.name") == "LangGraph"
    assert adapted.records[0].get(sc.MAST_FRAMEWORK) == "langgraph"
    replies = sorted(adapted.messages, key=lambda m: m.get(sc.MESSAGE_INDEX))[1:]
    assert [r.get(sc.MESSAGE_RECIPIENTS) == ("<runtime>",) for r in replies] == [
        r.get(sc.MESSAGE_KIND) == sc.KIND_TOOL_CALL for r in replies]  # fmt: skip
    # A reply is a tool call exactly when the script made the model call a tool (its text is then the tool's name).
    tools = {
        reply["tool"] for rule in SUPERVISOR_SCRIPT["rules"] for reply in rule["replies"] if isinstance(reply, dict)
    }
    called = [content in tools for _, content in oracle["messages"][1:]]
    assert [r.get(sc.MESSAGE_KIND) == sc.KIND_TOOL_CALL for r in replies] == called
    assert [bool(r.get(sc.MESSAGE_TOOL_CALLS)) for r in replies] == called


def test_openinference_handoffs_come_from_the_agent_that_handed_off() -> None:
    """The OpenAI Agents SDK's instrumentor records on each agent span the agent that handed it the turn
    (``graph.node.parent_id``). When the orders agent's model calls are missing (it spoke through none the trace
    kept), the refund specialist was still handed the turn by the orders agent, not by the triage agent that
    spoke before it; the handoff's evidence is the transfer itself, the orders agent's ``handoff to`` tool span."""
    spans, oracle = fixture("openinference_openai_agents")
    tree = Tree(spans)
    orders = next(s for s in spans if s.name == "orders_agent")
    silent = {s.span_id for s in tree.below(orders) if s.get(sc.OI_SPAN_KIND) == sc.OI_KIND_LLM}
    adapted = adapt([s for s in spans if s.span_id not in silent])
    assert isinstance(adapted, Adapted)
    assert handoffs(adapted.records) == [(a, b) for a, b in oracle["handoffs"] if b != "orders_agent"]
    by_id = {s.span_id: s for s in spans}
    assert [by_id[adapted.original(h.span_id)].name for h in adapted.handoffs] == ["handoff to refund_specialist"]


def _renumbered(span: SpanRecord, prefix: str, entries: list[dict[str, str]]) -> SpanRecord:
    """The span with its flattened OpenInference list under ``prefix`` replaced by ``entries``."""
    kept = {k: v for k, v in span.attributes.items() if not k.startswith(prefix)}
    flat = {f"{prefix}{n}.{key}": value for n, entry in enumerate(entries) for key, value in entry.items()}
    return dataclasses.replace(span, attributes={**kept, **flat})


def test_openinference_reads_long_message_lists_to_the_end() -> None:
    """The SDK's root carries no input: the task is the first user message a model was sent, however long the
    preamble before it (70 instructions); and a model answer that calls 70 tools at once names all 70, in order."""
    spans, oracle = fixture("openinference_openai_agents")
    first, second = [s for s in spans if s.get(sc.OI_SPAN_KIND) == sc.OI_KIND_LLM][:2]
    task = oracle["messages"][0][1]
    preamble = [{"message.role": "system", "message.content": f"rule {n}"} for n in range(70)]
    asked = _renumbered(first, "llm.input_messages.", [*preamble, {"message.role": "user", "message.content": task}])
    names = [f"lookup_{n}" for n in range(70)]
    fanned = _renumbered(second, "llm.output_messages.0.message.tool_calls.",
                         [{"tool_call.function.name": name} for name in names])  # fmt: skip
    adapted = adapt([asked if s is first else fanned if s is second else s for s in spans])
    assert isinstance(adapted, Adapted)
    assert adapted.records[0].get(sc.CONVERSATION_TASK) == task
    by_origin = {adapted.original(m.span_id): m for m in adapted.messages}
    assert by_origin[second.span_id].get(sc.MESSAGE_TOOL_CALLS) == ", ".join(names)


_CONVERSATIONS = ("ag2_builtin", "ag2_builtin_auto", "ag2_builtin_tools", "openinference_openai_agents",
                  "openinference_autogen_agentchat", "openllmetry_langgraph")  # fmt: skip


def test_synthetic_spans_are_well_formed_and_the_same_on_every_read() -> None:
    """What the judge and the collector rely on in every adapted conversation: valid, distinct 16-hex span ids in
    the foreign trace, all under the root (which keeps the foreign root's id, times, error and service); start
    times strictly increasing in the adapter's order, none ending before it starts; messages and handoffs
    numbered 0, 1, 2... in order, their counts and the agents (in order of first message) on the root; and the
    same ids from a second read of the same spans."""
    for name in _CONVERSATIONS:
        spans, _ = fixture(name)
        adapted = adapt(spans)
        assert isinstance(adapted, Adapted)
        root, *events = adapted.records
        foreign = {s.span_id: s for s in spans}[adapted.root_span_id]
        assert (root.span_id, root.parent_span_id, root.trace_id) == (foreign.span_id, None, foreign.trace_id)
        # (OpenLLMetry's conversation is rooted on its workflow span, then labelled on the span above it)
        timed = next((s for s in spans if s.get("traceloop.span.kind") == "workflow"), foreign)
        assert (root.start_ns, root.end_ns, root.error, root.service_name) == (
            timed.start_ns, timed.end_ns, timed.error, timed.service_name)  # fmt: skip
        assert root.get(sc.GEN_AI_CONVERSATION_ID) == (timed.get(sc.GEN_AI_CONVERSATION_ID) or timed.span_id)
        assert root.name == f"invoke_workflow {root.get(sc.GEN_AI_WORKFLOW_NAME)}"
        ids = [r.span_id for r in adapted.records]
        assert len(set(ids)) == len(ids) and all(len(i) == 16 and int(i, 16) >= 0 for i in ids)
        assert all(i == i.lower() for i in ids)
        assert {(r.trace_id, r.parent_span_id) for r in events} == {(root.trace_id, root.span_id)}
        starts = [r.start_ns for r in events]
        assert all(a < b for a, b in itertools.pairwise(starts)) and all(r.end_ns >= r.start_ns for r in events)
        assert all(r.service_name == foreign.service_name for r in events)
        msgs, hands = adapted.messages, adapted.handoffs
        assert [m.get(sc.MESSAGE_INDEX) for m in msgs] == list(range(len(msgs)))
        assert [h.get(sc.HANDOFF_INDEX) for h in hands] == list(range(len(hands)))
        assert root.get(sc.CONVERSATION_HANDOFFS) == len(hands)
        senders = [str(m.get(sc.MESSAGE_SENDER)) for m in msgs]
        assert root.get(sc.CONVERSATION_AGENTS) == tuple(dict.fromkeys(senders))
        for m in msgs:
            to = m.get(sc.MESSAGE_RECIPIENTS)
            assert m.name == f"message {m.get(sc.MESSAGE_SENDER)} -> {to[0] if to else '*'}"
        assert all(h.name == f"handoff {h.get(sc.HANDOFF_FROM)} -> {h.get(sc.HANDOFF_TO)}" for h in hands)
        again = adapt(spans)
        assert isinstance(again, Adapted) and again.records == adapted.records and again.origin == adapted.origin


def test_a_failed_tool_is_a_failed_tool_call() -> None:
    """A tool whose span has an error status (it raised) is reported failed, on a span marked as an error."""
    spans, _ = fixture("ag2_builtin_tools")
    failed = [dataclasses.replace(s, error=True) if s.name.startswith("execute_tool") else s for s in spans]
    for trace, ok in ((spans, True), (failed, False)):
        adapted = adapt(trace)
        assert isinstance(adapted, Adapted)
        calls = [r for r in adapted.records if r.span_type == sc.SPAN_TYPE_TOOL_CALL]
        assert calls and all((c.get(sc.TOOL_SUCCESS), c.error) == (ok, not ok) for c in calls)
        assert all(c.name == f"execute_tool {c.get(sc.GEN_AI_TOOL_NAME)}" for c in calls)


def test_a_conversation_id_the_framework_recorded_is_kept() -> None:
    """When the foreign root records ``gen_ai.conversation.id`` the conversation keeps it (so it can be found by
    the id the framework gave it); else the root's span id stands in."""
    spans, _ = fixture("openllmetry_langgraph")
    workflow = next(s for s in spans if s.get("traceloop.span.kind") == "workflow")
    tagged = [_replaced([s], s.name, **{sc.GEN_AI_CONVERSATION_ID: "thread-7"})[0] if s is workflow else s
              for s in spans]  # fmt: skip
    adapted = adapt(tagged)
    assert isinstance(adapted, Adapted) and adapted.records[0].get(sc.GEN_AI_CONVERSATION_ID) == "thread-7"


def test_the_builder_puts_what_an_adapter_knows_on_the_root() -> None:
    """ConversationBuilder (exported for adapters): the termination reason and detail, the rounds, the task and
    the reason content is missing go where the recorder puts them; a handoff's reason and detail on the handoff;
    an agent that took part without a message is still one of the conversation's agents."""
    root = SpanRecord("a" * 32, "00000000000000a1", None, "run", 10, 90, {})
    step = SpanRecord("a" * 32, "00000000000000a2", root.span_id, "step", 5, 7, {}, service_name="svc")
    conv = ConversationBuilder("test", "fw", root)
    conv.message("alice", [], "hi", origin=step, tool_calls="search")
    conv.agent("carol")
    conv.handoff("alice", "bob", origin=step, reason="needs review", detail='["bob"]')
    conv.handoff("bob", "alice", origin=step)
    conv.handoff("alice", "carol", origin=step)  # a third event from the same span: its clock passes the span's end
    assert conv.message_count == 1
    adapted = conv.build(task="t", name="n", termination="max_turns", termination_detail="10 rounds", rounds=0,
                         no_content="capture is off")  # fmt: skip
    top, message, first, second, third = adapted.records
    assert third.start_ns == step.end_ns + 1 == third.end_ns  # never ending before it starts
    assert (top.get(sc.TERMINATION_REASON), top.get(sc.TERMINATION_DETAIL)) == ("max_turns", "10 rounds")
    assert (top.get(sc.CONVERSATION_ROUNDS), top.get(sc.CONVERSATION_TASK)) == (0, "t")
    assert (top.get(sc.MAST_FRAMEWORK), top.get(SOURCE_ATTRIBUTE), adapted.no_content) == (
        "fw",
        "test",
        "capture is off",
    )
    assert top.get(sc.CONVERSATION_AGENTS) == ("alice", "carol")
    assert (message.name, message.get(sc.MESSAGE_TOOL_CALLS), message.get(sc.MESSAGE_KIND)) == (
        "message alice -> *", "search", sc.KIND_MESSAGE)  # fmt: skip
    assert (first.get(sc.HANDOFF_REASON), first.get(sc.HANDOFF_DETAIL)) == ("needs review", '["bob"]')
    assert sc.HANDOFF_REASON not in second.attributes and sc.HANDOFF_DETAIL not in second.attributes
    # Each event starts after the previous one even when its foreign span started earlier, and ends no earlier.
    assert message.start_ns == step.start_ns and first.start_ns == step.start_ns + 1 < second.start_ns
    assert first.end_ns == step.end_ns and second.end_ns == second.start_ns
    bare = ConversationBuilder("test", "fw", root).build()
    assert bare.records[0].name == "invoke_workflow fw"
    assert not {sc.TERMINATION_REASON, sc.TERMINATION_DETAIL, sc.CONVERSATION_ROUNDS, sc.CONVERSATION_TASK,
                sc.GEN_AI_WORKFLOW_NAME} & set(bare.records[0].attributes)  # fmt: skip


def _langgraph(**changes: Mapping[str, object]) -> Adapted:
    """The OpenLLMetry LangGraph fixture adapted with some spans' attributes changed (span name -> attributes),
    as another OpenLLMetry or LangChain version might write them."""
    spans, _ = fixture("openllmetry_langgraph")
    for name, attributes in changes.items():
        spans = _replaced(spans, name, **attributes)
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted)
    return adapted


def test_langgraph_task_is_the_first_input_message_or_none() -> None:
    """The task is the first message the workflow was started with; a start with no messages (another graph
    state, or input that is not JSON) is no task: the task is then, as in every convention, the first user message
    a model was sent (here the same request), never the graph's state."""
    spans, oracle = fixture("openllmetry_langgraph")
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted) and adapted.records[0].get(sc.CONVERSATION_TASK) == oracle["messages"][0][1]
    for start in ("not json", '{"inputs": {"topic": "GDP"}}', '{"inputs": {"messages": []}}', "[1]"):
        adapted = _langgraph(**{"LangGraph.workflow": {"traceloop.entity.input": start}})
        assert adapted.records[0].get(sc.CONVERSATION_TASK) == oracle["messages"][0][1]
        assert messages(adapted.records) == oracle["messages"]


def test_langgraph_tool_arguments_not_in_langchains_run_shape_are_kept_verbatim() -> None:
    """Tool arguments are the serialized run's ``inputs``; arguments in any other shape are kept as written."""
    for written in ('{"q": "GDP"}', "q=GDP", '["GDP"]'):
        adapted = _langgraph(**{"execute_tool search": {sc.GEN_AI_TOOL_CALL_ARGUMENTS: written}})
        calls = {c.get(sc.GEN_AI_TOOL_NAME): c for c in adapted.records if c.span_type == sc.SPAN_TYPE_TOOL_CALL}
        assert calls["search"].get(sc.GEN_AI_TOOL_CALL_ARGUMENTS) == written


def test_langgraph_tool_with_no_name_or_node_is_still_a_tool_call() -> None:
    """A tool span without ``gen_ai.tool.name`` is named by its span (``execute_tool <name>``: the name after the
    operation); one outside any graph node has no agent."""
    adapted = _langgraph(**{"execute_tool search": {sc.GEN_AI_TOOL_NAME: "", _PATH: ""}})
    calls = [c for c in adapted.records if c.span_type == sc.SPAN_TYPE_TOOL_CALL]
    unnamed = [c for c in calls if c.get(sc.GEN_AI_TOOL_NAME) == "search"]
    assert len(unnamed) == 1 and unnamed[0].get(sc.GEN_AI_AGENT_NAME) == "?"


def test_langgraph_parallel_calls_and_empty_answers() -> None:
    """A model answer that calls two tools at once names both (in order) and is a tool call; an answer with no
    text and no call is an (empty) message."""
    spans, _ = fixture("openllmetry_langgraph")
    first, *_, last = [s for s in spans if s.name == "ChatOpenAI.chat"]
    both = [{"role": "assistant", "parts": [{"type": "tool_call", "name": "search"},
                                            {"type": "tool_call", "name": "transfer_to_researcher"}]}]  # fmt: skip
    empty = [{"role": "assistant", "parts": [{"type": "text", "content": ""}]}]
    changed = [
        _replaced([s], s.name, **{sc.GEN_AI_OUTPUT_MESSAGES: json.dumps(both if s is first else empty)})[0]
        if s in (first, last) else s
        for s in spans
    ]  # fmt: skip
    adapted = adapt(changed)
    assert isinstance(adapted, Adapted)
    by_origin = {adapted.original(m.span_id): m for m in adapted.messages}
    called, said = by_origin[first.span_id], by_origin[last.span_id]
    assert [n.strip() for n in str(called.get(sc.MESSAGE_TOOL_CALLS)).split(",")] == [
        "search",
        "transfer_to_researcher",
    ]
    assert called.get(sc.MESSAGE_KIND) == sc.KIND_TOOL_CALL
    assert (said.get(sc.MESSAGE_KIND), said.get(sc.MESSAGE_CONTENT), said.get(sc.MESSAGE_TOOL_CALLS)) == (
        sc.KIND_MESSAGE, "", None)  # fmt: skip


def test_langgraph_framework_is_the_scopes_never_the_provider_the_root_names() -> None:
    """The framework is the instrumentation scope's (OpenLLMetry's LangChain instrumentation), LangGraph when the
    workflow is the graph; ``gen_ai.provider.name``, which OpenLLMetry sets to ``langchain`` or ``langgraph`` on
    workflow spans, names a model's vendor in the conventions and is not read. A chain that is no graph is
    LangChain's; a run with no scope is taken for LangGraph's, the only workflow this adapter reads."""
    root = "LangGraph.workflow"
    assert _langgraph(**{root: {sc.GEN_AI_PROVIDER_NAME: "langchain"}}).framework == "langgraph"
    assert _langgraph(**{root: {sc.GEN_AI_PROVIDER_NAME: ""}}).framework == "langgraph"
    assert _langgraph(**{root: {"traceloop.workflow.name": "RunnableSequence"}}).framework == "langchain"


def test_a_langgraph_goto_with_no_target_passes_no_turn() -> None:
    """A ``goto`` span that names no node (OpenLLMetry writes the target only when LangGraph's Command has one)
    hands the turn to no one; the handoffs then come from the order in which the nodes spoke."""
    spans, oracle = fixture("openllmetry_langgraph")
    blind = [dataclasses.replace(s, attributes={k: v for k, v in s.attributes.items() if k != _GOTO})
             if s.name.startswith("goto ") else s for s in spans]  # fmt: skip
    adapted = adapt(blind)
    assert isinstance(adapted, Adapted)
    assert handoffs(adapted.records) == oracle["handoffs"]


def test_a_lone_openllmetry_model_call_is_refused_as_openllmetrys() -> None:
    """One model call OpenLLMetry traced outside any workflow (it carries ``traceloop.workflow.name`` but no span
    kind): no conversation, and the refusal names the instrumentation that wrote it."""
    spans, _ = fixture("openllmetry_langgraph")
    call = next(s for s in spans if s.name == "ChatOpenAI.chat")
    lone = dataclasses.replace(call, parent_span_id=None)
    assert adapt([lone]) == NotAConversation("openllmetry", "no agent or workflow span to root a conversation")


def _any_value(value: object) -> bytes:
    """An attribute value serialized as OTLP's AnyValue (what the collector's ingest reads)."""
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue

    if isinstance(value, bool):
        return AnyValue(bool_value=value).SerializeToString()
    if isinstance(value, int):
        return AnyValue(int_value=value).SerializeToString()
    if isinstance(value, float):
        return AnyValue(double_value=value).SerializeToString()
    return AnyValue(string_value=str(value)).SerializeToString()


def test_files_hold_the_spans_the_collector_holds() -> None:
    """``mast-otel judge FILE`` (foreign_units) holds as a conversation's root exactly the spans the collector's
    ingest holds, whatever the attribute's type: a root kind written as a number is no root to either, and ADK's
    legacy ``invocation`` span is one to both by its name within ADK's scope, and to neither from any other."""
    from mast_otel.collector.receive.ingest import span_facts

    keys = ["ag2.span.type", sc.OI_SPAN_KIND, "traceloop.span.kind", sc.GEN_AI_OPERATION_NAME, "workflow.id"]
    values: list[object] = [
        "conversation",
        "AGENT",
        "CHAIN",
        "workflow",
        "invoke_agent",
        "wf-1",
        "LLM",
        "",
        7,
        1.5,
        True,
    ]
    names = ("invocation", "invocation.step", "step")
    scopes = ("gcp.vertex.agent", "my.app", "")
    for n, (key, value, name, scope) in enumerate(itertools.product(keys, values, names, scopes)):
        span = SpanRecord("b" * 32, f"{n + 1:016x}", None, name, 1, 2, {key: value}, scope_name=scope or None)
        held = bool(foreign_units([span]))
        facts = span_facts({key: _any_value(value)}, name.encode(), scope.encode())
        assert held == facts[0], (key, value, name, scope)
    # The name is a marker only within its scope; nowhere does it need an attribute.
    for scope, expected in (("gcp.vertex.agent", True), ("my.app", False), ("", False)):
        span = SpanRecord("b" * 32, "1" * 16, None, "invocation", 1, 2, {}, scope_name=scope or None)
        assert bool(foreign_units([span])) is expected, scope
        assert span_facts({}, b"invocation", scope.encode())[0] is expected, scope


def test_files_find_the_foreign_conversation_in_every_trace() -> None:
    """A file holding a run traced by mast-otel (judged from its own spans) and then two foreign runs: each
    foreign trace is a unit of its own, whatever came before it."""
    native, _ = fixture("mixed_ag2")
    first, _ = fixture("ag2_builtin_tools")
    second, _ = fixture("openllmetry_langgraph")
    units = foreign_units([*native, *first, *second])
    assert [{s.trace_id for s in unit} for unit in units] == [{first[0].trace_id}, {second[0].trace_id}]
    assert [len(unit) for unit in units] == [len(first), len(second)]


def test_spans_no_adapter_reads_are_refused_as_unknown() -> None:
    """Spans from no known instrumentation are never judged, and the refusal says why."""
    web = SpanRecord("c" * 32, "00000000000000c1", None, "GET /orders", 1, 2, {"http.request.method": "GET"})
    assert adapt([web]) == NotAConversation("unknown", "no adapter recognises these spans")


def test_openinference_task_is_read_from_each_input_shape() -> None:
    """The root's ``input.value`` as the frameworks write it: a dict keyed ``message`` (AG2), ``task``
    (autogen-agentchat, smolagents), ``input`` or ``content``, a message list (OpenAI style or LangChain's
    ``{"type", "data"}``), a bare message list, or plain text: the task is the text the user gave."""
    spans, oracle = fixture("openinference_autogen_agentchat")
    root = next(s for s in spans if s.parent_span_id is None)
    task = "Write a haiku about tests"
    shapes = [
        {"message": task}, {"task": task, "cancellation_token": None}, {"input": task}, {"content": task},
        {"task": 5, "input": task}, {"messages": [{"role": "user", "content": task}]},
        {"messages": [{"type": "human", "data": {"content": task}}]}, [{"role": "user", "content": task}],
    ]  # fmt: skip
    for written in [*(json.dumps(shape) for shape in shapes), task]:
        adapted = adapt(_replaced(spans, root.name, **{sc.OI_INPUT_VALUE: written}))
        assert isinstance(adapted, Adapted)
        assert adapted.records[0].get(sc.CONVERSATION_TASK) == task, written
        assert messages(adapted.records)[0] == ("user", task)
        assert messages(adapted.records)[1:] == oracle["messages"][1:]
    unknowns: list[dict[str, object]] = [{"topic": "haiku"}, {"messages": []}, {"messages": "x"}, {"messages": [task]}]
    for unknown in unknowns:
        # No field names a task (a serialized object, LlamaIndex's workflow context): the task comes from the
        # user, as the models were sent it, never the object as written.
        written = json.dumps(unknown)
        adapted = adapt(_replaced(spans, root.name, **{sc.OI_INPUT_VALUE: written}))
        assert isinstance(adapted, Adapted) and adapted.records[0].get(sc.CONVERSATION_TASK) == oracle["messages"][0][1]


def test_openinference_agents_are_named_by_whatever_the_instrumentor_wrote() -> None:
    """An agent span names its agent by ``agent.name``, ``graph.node.id`` or ``graph.node.name`` (instrumentor
    versions differ; the attribute wins over the span's name), else by its span name's first word
    (``writer.on_messages_stream``): the speakers are the team's members either way."""
    spans, oracle = fixture("openinference_autogen_agentchat")
    agents = [s for s in spans if s.get(sc.OI_SPAN_KIND) == sc.OI_KIND_AGENT]

    def renamed(key: str | None, name: str = "{}.on_messages_stream") -> list[SpanRecord]:
        out = []
        for s in spans:
            if s in agents:
                member = s.name.split(".")[0]
                attrs = {k: v for k, v in s.attributes.items() if k != sc.OI_GRAPH_NODE_ID}
                if key:
                    attrs[key] = member
                s = dataclasses.replace(s, name=name.format(member), attributes=attrs)
            out.append(s)
        return out

    stream = "{}.on_messages_stream"
    cases: list[tuple[str | None, str]] = [(sc.OI_AGENT_NAME, stream), (sc.OI_GRAPH_NODE_NAME, stream), (None, stream),
                                           (None, "{}.team.on_messages_stream"), (None, "{} agent turn"),
                                           (sc.OI_AGENT_NAME, "worker.on_messages_stream")]  # fmt: skip
    for key, name in cases:
        adapted = adapt(renamed(key, name))
        assert isinstance(adapted, Adapted)
        assert messages(adapted.records) == oracle["messages"], (key, name)
        assert handoffs(adapted.records) == oracle["handoffs"], (key, name)


def test_openinference_framework_comes_from_the_scope_never_the_model_provider() -> None:
    """The framework is the instrumentation scope's (``openinference.instrumentation.openai_agents``), also when the
    root has none of the framework's marks; a run with no scope and no mark is "unknown", never the model provider
    the LLM spans name (``llm.system`` says ``openai``: the vendor of the model, not the framework)."""
    spans, _ = fixture("openinference_openai_agents")
    root = next(s for s in spans if s.parent_span_id is None)
    plain = [dataclasses.replace(s, name="Support run") if s is root else s for s in spans]
    adapted = adapt(plain)
    assert isinstance(adapted, Adapted) and adapted.framework == "openai-agents"
    assert {s.get(sc.OI_LLM_SYSTEM) for s in spans if s.get(sc.OI_LLM_SYSTEM)} == {"openai"}
    unscoped = [dataclasses.replace(s, scope_name=None) for s in plain]
    adapted = adapt(unscoped)
    assert isinstance(adapted, Adapted) and adapted.framework == "unknown"


def test_the_origin_map_covers_the_synthetic_spans_and_passes_other_ids_through() -> None:
    """Evidence the judge cites is mapped back through ``original``: every synthetic span (the root included, also
    when the conversation is labelled on a span above the adapter's root) maps to a span the user has, and an id
    the adapter did not make (a foreign span cited directly) comes back unchanged."""
    for name in ("ag2_builtin_tools", "openllmetry_langgraph"):
        spans, _ = fixture(name)
        adapted = adapt(spans)
        assert isinstance(adapted, Adapted)
        assert set(adapted.origin) == {r.span_id for r in adapted.records}
        assert adapted.original(adapted.root_span_id) == adapted.root_span_id
        assert all(adapted.original(s.span_id) == s.span_id for s in spans if s.span_id not in adapted.origin)


def test_events_are_not_errors_unless_their_span_failed_and_a_failed_root_fails_the_conversation() -> None:
    """Messages and handoffs are never error spans; a conversation whose root span failed (the run raised) is an
    error at its root, as the recorder marks a failed run."""
    spans, _ = fixture("ag2_builtin_tools")
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted)
    assert not any(r.error for r in (*adapted.messages, *adapted.handoffs))
    assert not adapted.records[0].error
    failed = [dataclasses.replace(s, error=True) if s.parent_span_id is None else s for s in spans]
    adapted = adapt(failed)
    assert isinstance(adapted, Adapted) and adapted.records[0].error
    assert not any(r.error for r in (*adapted.messages, *adapted.handoffs))


def _with_root(name: str, *, rename: str | None = None, **attributes: object) -> Adapted:
    """An OpenInference fixture adapted with its root renamed and some root attributes set (None: removed)."""
    spans, _ = fixture(name)
    root = next(s for s in spans if s.parent_span_id is None)
    attrs = {k: v for k, v in {**root.attributes, **attributes}.items() if v is not None}
    changed = dataclasses.replace(root, name=rename or root.name, attributes=attrs)
    adapted = adapt([changed if s is root else s for s in spans])
    assert isinstance(adapted, Adapted)
    return adapted


def test_openinference_framework_is_told_by_each_mark_alone() -> None:
    """Each mark an instrumentor leaves tells the framework on its own: an autogen-agentchat team by its
    ``team_id`` or by its ``.run_stream`` span; a LangGraph run by its ``LangGraph`` span or its metadata."""
    team = "openinference_autogen_agentchat"
    assert _with_root(team, rename="RoundRobinGroupChat.run").framework == "autogen-agentchat"
    assert _with_root(team, team_id=None).framework == "autogen-agentchat"
    graph = "openinference_langgraph"
    assert _with_root(graph, rename="supervisor_graph").framework == "langgraph"
    assert _with_root(graph, **{sc.OI_METADATA: None}).framework == "langgraph"


def test_a_crews_task_reads_each_task_it_can() -> None:
    """The crew's tasks as the judge's goal: a task without a role (none, null, the text ``None``: a hierarchical
    crew's, which its manager takes) is its description alone, a task without a description still counts (nothing
    for the description); tasks that are not a JSON list give no goal."""
    tasks = [{"description": "Find the GDP", "agent_role": "Researcher"}, {"description": "Report it"},
             {"description": "Check it", "agent_role": None}, {"description": "Send it", "agent_role": "None"},
             {"agent_role": "Writer"}, "not a task"]  # fmt: skip
    adapted = _with_root("openinference_crewai", crew_tasks=json.dumps(tasks))
    assert adapted.records[0].get(sc.CONVERSATION_TASK) == (
        "Researcher: Find the GDP\nReport it\nCheck it\nSend it\nWriter: "
    )
    for written in ('{"description": "Find the GDP"}', "Find the GDP"):
        adapted = _with_root("openinference_crewai", crew_tasks=written)
        assert sc.CONVERSATION_TASK not in adapted.records[0].attributes


def test_a_teams_stop_reason_is_kept_only_when_it_says_something() -> None:
    """autogen-agentchat's ``stop_reason`` becomes the termination detail; an empty or non-text one does not."""
    team = "openinference_autogen_agentchat"
    for reason in ("", 5, None):
        adapted = _with_root(team, **{sc.OI_OUTPUT_VALUE: json.dumps({"stop_reason": reason})})
        assert sc.TERMINATION_DETAIL not in adapted.records[0].attributes
    adapted = _with_root(team, **{sc.OI_OUTPUT_VALUE: json.dumps({"stop_reason": "Maximum number of turns 4"})})
    assert adapted.records[0].get(sc.TERMINATION_DETAIL) == "Maximum number of turns 4"


def test_the_task_is_the_first_user_message_of_any_model_call() -> None:
    """The SDK's first model call may carry no user message (only instructions): the task is then the first user
    message of a later call."""
    spans, oracle = fixture("openinference_openai_agents")
    first, second = [s for s in spans if s.get(sc.OI_SPAN_KIND) == sc.OI_KIND_LLM][:2]
    task = oracle["messages"][0][1]
    told = _renumbered(first, "llm.input_messages.", [{"message.role": "system", "message.content": "Route."}])
    asked = _renumbered(second, "llm.input_messages.", [{"message.role": "user", "message.content": task}])
    adapted = adapt([told if s is first else asked if s is second else s for s in spans])
    assert isinstance(adapted, Adapted) and adapted.records[0].get(sc.CONVERSATION_TASK) == task


def test_openinference_task_goes_to_whom_the_framework_sent_it() -> None:
    """The task's recipient: the agent AG2 recorded as the chat's recipient (its group chat manager), else the
    first agent that spoke; and the initiator is the root agent that started the chat (AG2's ``initiate_chat``
    caller), else the user."""
    spans, oracle = fixture("openinference_ag2")
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted)
    assert recipients(adapted.records)[0] == ("user", ("chat_manager",))
    assert _with_root("openinference_ag2", **{sc.OI_AGENT_NAME: "customer"}).messages[0].get(sc.MESSAGE_SENDER) == (
        "customer"
    )
    for name in ("openinference_autogen_agentchat", "openinference_openai_agents", "openinference_langgraph"):
        spans, oracle = fixture(name)
        adapted = adapt(spans)
        assert isinstance(adapted, Adapted)
        assert recipients(adapted.records)[0] == ("user", (oracle["messages"][1][0],)), name


def test_a_teams_messages_go_to_every_other_member() -> None:
    """autogen-agentchat broadcasts in a team: each member's message goes to the team's other participants."""
    spans, oracle = fixture("openinference_autogen_agentchat")
    root = next(s for s in spans if s.parent_span_id is None)
    members = [str(n) for n in root.get("participant_names") or ()]
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted) and len(members) == 2
    assert recipients(adapted.records)[1:] == [
        (s, tuple(m for m in members if m != s)) for s, _ in oracle["messages"][1:]
    ]


def test_openinference_tool_calls_are_the_tools_the_agents_ran() -> None:
    """The OpenAI Agents SDK run's tools (not its handoffs) are tool calls, each by the agent whose model asked."""
    spans, oracle = fixture("openinference_openai_agents")
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted)
    calls = [(c.get(sc.GEN_AI_AGENT_NAME), c.get(sc.GEN_AI_TOOL_NAME)) for c in adapted.records
             if c.span_type == sc.SPAN_TYPE_TOOL_CALL]  # fmt: skip
    asked = [(s, m) for s, m in oracle["messages"][1:] if not m.startswith("transfer_to") and " " not in m]
    assert calls == asked and calls


def test_a_single_openinference_agent_is_refused_as_openinferences() -> None:
    spans, _ = fixture("openinference_single_agent")
    assert adapt(spans) == NotAConversation("openinference", "1 agent(s) replied; not a multi-agent conversation")


def test_openinference_tool_calls_carry_what_the_tool_span_recorded() -> None:
    """Each tool call carries its span's input and output (the arguments and the result the tool returned) and its
    ``tool.name`` (else the span's name); a tool run outside any agent's span is the agent's whose model answer
    asked for it, and by an agent the trace does not name ("?") when no model answer did."""
    spans, _ = fixture("openinference_openai_agents")
    tools = [s for s in spans if s.get(sc.OI_SPAN_KIND) == sc.OI_KIND_TOOL and not s.name.startswith("handoff to ")]
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted)
    calls = [c for c in adapted.records if c.span_type == sc.SPAN_TYPE_TOOL_CALL]
    assert [(c.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS), c.get(sc.GEN_AI_TOOL_CALL_RESULT)) for c in calls] == [
        (s.get(sc.OI_INPUT_VALUE), s.get(sc.OI_OUTPUT_VALUE)) for s in tools
    ]
    assert all(s.get(sc.OI_INPUT_VALUE) and s.get(sc.OI_OUTPUT_VALUE) for s in tools)
    spans, _ = fixture("openinference_langgraph")  # its root is a CHAIN: a tool directly under it has no agent
    root = next(s for s in spans if s.parent_span_id is None)
    tool = next(s for s in spans if s.get(sc.OI_SPAN_KIND) == sc.OI_KIND_TOOL and s.get(sc.OI_TOOL_NAME) == "search")
    unnamed = {k: v for k, v in tool.attributes.items() if k != sc.OI_TOOL_NAME}
    for name, agent in ((tool.name, "researcher"), ("unasked", "?")):
        loose = dataclasses.replace(tool, name=name, parent_span_id=root.span_id, attributes=unnamed)
        adapted = adapt([loose if s is tool else s for s in spans])
        assert isinstance(adapted, Adapted)
        by_origin = {adapted.original(c.span_id): c for c in adapted.records if c.span_type == sc.SPAN_TYPE_TOOL_CALL}
        call = by_origin[tool.span_id]
        assert (call.get(sc.GEN_AI_AGENT_NAME), call.get(sc.GEN_AI_TOOL_NAME)) == (agent, name)


def test_openinference_message_kinds_follow_the_model_answer() -> None:
    """A model answer that only calls tools is a tool call (its text the tools' names, sent to the runtime); any
    other is a message, in every recorded OpenInference conversation."""
    for name in ("openinference_openai_agents", "openinference_autogen_agentchat", "openinference_langgraph",
                 "openinference_smolagents"):  # fmt: skip
        spans, _ = fixture(name)
        adapted = adapt(spans)
        assert isinstance(adapted, Adapted)
        for m in adapted.messages[1:]:
            called = m.get(sc.MESSAGE_TOOL_CALLS)
            assert (m.get(sc.MESSAGE_KIND) == sc.KIND_TOOL_CALL) == (
                bool(called) and m.get(sc.MESSAGE_CONTENT) == called
            )
            assert (m.get(sc.MESSAGE_RECIPIENTS) == ("<runtime>",)) == bool(called), (name, m.attributes)


def test_openinference_ag2_recipients_match_ag2s_own_tracing() -> None:
    """The same AG2 group chat traced by OpenInference and by AG2's own tracing: each member's reply goes to the
    same agent (the chat manager AG2 records as the sender of each request)."""
    ours, _ = fixture("openinference_ag2")
    theirs, _ = fixture("ag2_builtin")
    by_oi, by_ag2 = adapt(ours), adapt(theirs)
    assert isinstance(by_oi, Adapted) and isinstance(by_ag2, Adapted)
    assert recipients(by_oi.records) == recipients(by_ag2.records)


def test_openinference_ag2_replies_go_to_the_agent_that_asked() -> None:
    """AG2's OpenInference spans name who sent the request each reply answers (``ag2.sender.name``): the reply goes
    to that agent; where a version does not record it, to the agent whose span holds the reply (the manager)."""
    spans, _ = fixture("openinference_ag2")
    replies = [s for s in spans if s.get("ag2.sender.name")]
    asked = dataclasses.replace(replies[0], attributes={**replies[0].attributes, "ag2.sender.name": "critic"})
    adapted = adapt([asked if s is replies[0] else s for s in spans])
    assert isinstance(adapted, Adapted)
    by_origin = {adapted.original(m.span_id): m for m in adapted.messages}
    assert by_origin[asked.span_id].get(sc.MESSAGE_RECIPIENTS) == ("critic",)
    unrecorded = [dataclasses.replace(s, attributes={k: v for k, v in s.attributes.items() if k != "ag2.sender.name"})
                  for s in spans]  # fmt: skip
    adapted = adapt(unrecorded)
    assert isinstance(adapted, Adapted)
    assert {r for _, rs in recipients(adapted.records)[1:] for r in rs} == {"chat_manager"}


def test_openinference_tool_name_and_empty_answers() -> None:
    """A tool span's ``tool.name`` names the tool whatever the span is called; a model answer with no text and no
    tool call is an (empty) message; a tool-call-only answer reads as the tools' names."""
    spans, _ = fixture("openinference_openai_agents")
    tool = next(s for s in spans if s.get(sc.OI_TOOL_NAME))
    llms = [s for s in spans if s.get(sc.OI_SPAN_KIND) == sc.OI_KIND_LLM]
    last = llms[-1]
    empty = _renumbered(last, "llm.output_messages.", [{"message.role": "assistant", "message.content": ""}])
    fanned = _renumbered(llms[0], "llm.output_messages.0.message.tool_calls.",
                         [{"tool_call.function.name": n} for n in ("lookup_order", "refund")])  # fmt: skip
    swapped = {tool.span_id: dataclasses.replace(tool, name="function_call"), last.span_id: empty,
               llms[0].span_id: fanned}  # fmt: skip
    adapted = adapt([swapped.get(s.span_id, s) for s in spans])
    assert isinstance(adapted, Adapted)
    calls = {adapted.original(c.span_id): c for c in adapted.records if c.span_type == sc.SPAN_TYPE_TOOL_CALL}
    assert calls[tool.span_id].get(sc.GEN_AI_TOOL_NAME) == tool.get(sc.OI_TOOL_NAME) != "function_call"
    by_origin = {adapted.original(m.span_id): m for m in adapted.messages}
    said = by_origin[last.span_id]
    assert (said.get(sc.MESSAGE_KIND), said.get(sc.MESSAGE_CONTENT), said.get(sc.MESSAGE_TOOL_CALLS)) == (
        sc.KIND_MESSAGE, "", None)  # fmt: skip
    assert by_origin[llms[0].span_id].get(sc.MESSAGE_CONTENT) == "lookup_order, refund"


def test_a_span_that_is_its_own_parent_does_not_hang_the_adapters() -> None:
    """Malformed OTLP can name a span as its own parent: an AG2 conversation span of that kind is a unit of one
    span (no conversation), and reading it ends (the walk below it never did)."""
    spans, _ = fixture("ag2_builtin_tools")
    root = next(s for s in spans if s.parent_span_id is None)
    looped = dataclasses.replace(root, span_id="00000000000000d1", parent_span_id="00000000000000d1")
    assert Tree([looped]).below(looped) == []
    assert foreign_units([looped]) == [[looped]]
    assert adapt([looped]) == NotAConversation("ag2-builtin", "0 agent(s) replied; not a multi-agent conversation")


def _above(spans: list[SpanRecord], span: SpanRecord) -> list[SpanRecord]:
    return Tree(spans).ancestors(span)


def test_a_langgraph_node_that_speaks_again_after_the_supervisor_was_handed_the_turn() -> None:
    """After the supervisor's last answer, the researcher speaks again (a second round): that is a handoff from
    the supervisor to the researcher, even though an earlier ``goto`` had already sent the turn there once."""
    spans, oracle = fixture("openllmetry_langgraph")
    chats = [s for s in spans if s.name == "ChatOpenAI.chat"]
    researcher = next(s for s in chats if s.get(_PATH, "").startswith("researcher"))
    end = max(s.end_ns for s in spans)
    again = dataclasses.replace(researcher, span_id="00000000000000e1", start_ns=end + 1, end_ns=end + 2)
    # (within the run: a span that starts after its root has ended begins another run)
    longer = [dataclasses.replace(s, end_ns=end + 3) if s.span_id in {a.span_id for a in _above(spans, researcher)}
              else s for s in spans]  # fmt: skip
    adapted = adapt([*longer, again])
    assert isinstance(adapted, Adapted)
    assert handoffs(adapted.records) == [*oracle["handoffs"], ("supervisor", "researcher")]


def test_langgraph_task_is_the_first_of_several_input_messages() -> None:
    """A workflow started with several messages: the task is the first one (the later ones follow it up)."""
    _, oracle = fixture("openllmetry_langgraph")
    task = oracle["messages"][0][1]
    start = json.dumps(
        {"inputs": {"messages": [{"role": "user", "content": task}, {"role": "user", "content": "Be brief."}]}}
    )
    adapted = _langgraph(**{"LangGraph.workflow": {"traceloop.entity.input": start}})
    assert adapted.records[0].get(sc.CONVERSATION_TASK) == task


def test_the_conversation_is_labelled_on_the_outermost_span_the_collector_holds() -> None:
    """An application span from another GenAI instrumentation above OpenLLMetry's ``invoke_agent LangGraph``: the
    collector holds the unit from that outermost span, so the conversation's root labels go on it."""
    spans, oracle = fixture("openllmetry_langgraph")
    top = next(s for s in spans if s.parent_span_id is None)
    app = SpanRecord(top.trace_id, "00000000000000f1", None, "invoke_agent assistant", top.start_ns - 1,
                     top.end_ns + 1, {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT})  # fmt: skip
    nested = [dataclasses.replace(s, parent_span_id=app.span_id) if s is top else s for s in spans]
    (unit,) = foreign_units([app, *nested])
    adapted = adapt(unit)
    assert isinstance(adapted, Adapted) and adapted.source == "openllmetry"
    assert unit[0] is app and adapted.root_span_id == app.span_id == adapted.records[0].span_id
    assert messages(adapted.records) == oracle["messages"]


def test_a_native_conversation_whose_root_has_not_arrived_is_still_mast_otels() -> None:
    """A run traced by mast-otel and OpenInference whose mast-otel root span is missing (not exported yet): its
    turns and messages are mast-otel's, judged as they are, never adapted from the OpenInference spans."""
    spans, _ = fixture("mixed_ag2")
    rootless = [s for s in spans if s.span_type != sc.SPAN_TYPE_CONVERSATION]
    assert any(s.span_type == sc.SPAN_TYPE_MESSAGE for s in rootless)
    assert adapt(rootless) is None and foreign_units(rootless) == []


def test_langgraph_task_goes_to_the_first_node_that_spoke_not_the_last() -> None:
    """Without the supervisor's closing answer the researcher speaks last; the task still went to the supervisor."""
    spans, oracle = fixture("openllmetry_langgraph")
    last = [s for s in spans if s.name == "ChatOpenAI.chat"][-1]
    adapted = adapt([s for s in spans if s is not last])
    assert isinstance(adapted, Adapted)
    assert recipients(adapted.records)[0] == ("user", (oracle["messages"][1][0],))


def test_openinference_keeps_a_long_answer_and_generic_node_names() -> None:
    """A model answer is kept whole (long, with its line breaks), and a LangGraph ReAct node named ``call_agent``
    (as generic as ``agent``) speaks for the graph node that encloses it."""
    spans, oracle = fixture("openinference_openai_agents")
    last = [s for s in spans if s.get(sc.OI_SPAN_KIND) == sc.OI_KIND_LLM][-1]
    answer = "Refund issued.\n" + "x" * 300 + "\n"
    long = _renumbered(last, "llm.output_messages.", [{"message.role": "assistant", "message.content": answer}])
    adapted = adapt([long if s is last else s for s in spans])
    assert isinstance(adapted, Adapted) and messages(adapted.records)[-1][1] == answer
    spans, oracle = fixture("openinference_langgraph")
    generic = [s for s in spans if s.name == "agent" and s.get(sc.OI_SPAN_KIND) == sc.OI_KIND_AGENT]
    assert generic
    renamed = [dataclasses.replace(s, name="call_agent") if s in generic else s for s in spans]
    adapted = adapt(renamed)
    assert isinstance(adapted, Adapted) and messages(adapted.records) == oracle["messages"]


def test_each_event_keeps_the_service_that_recorded_it() -> None:
    """Agents in different services (a distributed run): each event carries the service of the span it came from,
    so per-service views count it where it happened."""
    spans, _ = fixture("ag2_builtin_tools")
    moved = [
        dataclasses.replace(s, service_name="tools-svc") if s.name.startswith("execute_tool") else s for s in spans
    ]
    adapted = adapt(moved)
    assert isinstance(adapted, Adapted)
    by_id = {s.span_id: s for s in moved}
    assert all(r.service_name == by_id[adapted.original(r.span_id)].service_name for r in adapted.records[1:])
    assert {r.service_name for r in adapted.records if r.span_type == sc.SPAN_TYPE_TOOL_CALL} == {"tools-svc"}


def test_langgraph_goto_before_anyone_spoke_and_calls_outside_any_node() -> None:
    """A ``goto`` before any node spoke hands the turn from no one (no handoff is made up); a model call outside
    any graph node (no entity path) is no agent's message."""
    spans, oracle = fixture("openllmetry_langgraph")
    first = next(s for s in spans if s.name == "ChatOpenAI.chat")
    workflow = next(s for s in spans if s.get("traceloop.span.kind") == "workflow")
    early = SpanRecord(first.trace_id, "00000000000000e2", workflow.span_id, "goto researcher", workflow.start_ns,
                       workflow.start_ns, {sc.GEN_AI_OPERATION_NAME: "goto", _GOTO: "researcher"})  # fmt: skip
    stray = dataclasses.replace(first, span_id="00000000000000e3", parent_span_id=workflow.span_id,
                                attributes={**first.attributes, _PATH: ""})  # fmt: skip
    adapted = adapt([*spans, early, stray])
    assert isinstance(adapted, Adapted)
    assert handoffs(adapted.records) == oracle["handoffs"]
    assert messages(adapted.records) == oracle["messages"]
