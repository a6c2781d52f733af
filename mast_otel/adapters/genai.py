"""OpenTelemetry GenAI conventions, as frameworks write them about themselves -> a conversation.

For Google ADK, Strands Agents, Pydantic AI and Microsoft Agent Framework (../shared/notes/genai-conventions.md
and docs/adapters.md list what each writes), and any other framework that writes the same conventions.

Read:

- the root: the outermost ``invoke_workflow`` (ADK), ``invoke_swarm`` / ``invoke_graph`` (Strands),
  ``invoke_agent`` (Pydantic AI), ADK's legacy ``invocation`` (no attribute: known by its name) or Agent
  Framework's ``workflow.run`` (``workflow.id``, no ``gen_ai.*`` attribute);
- agents: ``gen_ai.agent.name``, inherited from the nearest span that names one where a framework leaves it off
  the model and tool spans (Strands, Agent Framework);
- each agent's messages: the output of its LLM spans (``chat``, ``generate_content``, ``text_completion``) in
  start order (every framework rewrites the history it passes on, so an agent's own words are its outputs); an
  answer recorded as empty text parts alone (Mastra's answers that only call tools) called the ``execute_tool``
  spans its step ran next (its siblings after it, before the next answer). The task is the
  first user input a span records, else (no span records one: Mastra) the user's message in the root agent
  run's own ``<namespace>.input`` attribute (:func:`._genai_content.agent_input_text`). Content is read from
  attributes, the ``gen_ai.client.inference.operation.details`` event and the older per-message events
  (:mod:`._genai_content`);
- tool calls: ``execute_tool`` spans (``gen_ai.tool.name``, ``.call.arguments``, ``.call.result``), except
  transfers and delegations (a tool whose span holds another agent's ``invoke_agent``), which are handoffs; in a
  run where no span is a tool's (CrewAI under OpenLLMetry), the ``tool_call`` parts of the model answers, each
  with the ``tool_call_response`` a later model call was sent for its id. A span recording the task it was
  assigned (``<namespace>.task.description``) gives the task before any model's first user message;
- handoffs (from, to, and the reason where recorded): named transfers (ADK's ``transfer_to_agent`` with
  ``agent_name`` / ``transfer_reason``, Strands' ``handoff_to_agent`` with ``agent_name`` / ``message``, a
  ``handoff_to_<agent>`` tool call, Agent Framework's ``edge_group.process`` / ``message.send`` between two
  agents), else a change of agent between ``invoke_agent`` spans, siblings (ADK, Strands Graph) or nested (an
  agent run inside another agent's tool: Pydantic AI's delegation); the way back from a delegation is a handoff
  too, read from a change of speaker between model answers (the delegating agent answers again).

Fewer than two agents is not a conversation (:class:`NotAConversation`). A run whose framework recorded no
content is still adapted (agents, handoffs and tool calls are structure, for the signals) and carries
``no_content``: the reason the judge cannot read it, naming the switch of each instrumentation that wrote it.

What the conventions cannot provide: recipients (a message goes back to the agent that invoked the speaker, or
the user), the termination reason, and a handoff's reason unless the transfer tool's arguments were captured.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord

from . import _evidence
from ._bounds import json_of
from ._conversation import SOURCE_ATTRIBUTE, Adapted, ConversationBuilder, NotAConversation
from ._evidence import content_switches, framework_of_run, is_transfer, name_or_none, transfer
from ._genai_content import (
    agent_input_text,
    assigned_task,
    first_user_text,
    output,
    records_content,
    requested_calls,
    tool_responses,
)
from ._tree import Tree, text

SOURCE = "genai"
# Strands' multi-agent roots name their operation after the pattern (not a published value).
ROOT_OPERATIONS = frozenset({sc.OP_INVOKE_WORKFLOW, sc.OP_INVOKE_AGENT, "invoke_swarm", "invoke_graph"})
_LLM_OPERATIONS = frozenset({sc.OP_CHAT, sc.OP_GENERATE_CONTENT, sc.OP_TEXT_COMPLETION})
# Google ADK's legacy schema (ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1) roots a run in a span with no attribute,
# known by (instrumentation scope, span name): a span of that name from any other scope is no root.
ROOT_NAMES = frozenset({("gcp.vertex.agent", "invocation")})
# ... and records each model call twice: its own call_llm span (content in gcp.vertex.agent.llm_*) holds the
# generate_content span of the model client.
_ADK_V1_LLM = "call_llm"
_ADK_TOOL_ARGS = "gcp.vertex.agent.tool_call_args"
_ADK_TOOL_RESPONSE = "gcp.vertex.agent.tool_response"
# Agent Framework's workflow spans carry no gen_ai.* attribute (agent_framework.observability.OtelAttr).
WORKFLOW_ID = "workflow.id"
_WORKFLOW_NAME = "workflow.name"
_EDGE_SOURCE = "message.source_id"
_EDGE_TARGET = "message.target_id"
_SEND_DESTINATION = "message.destination_executor_id"
_RUNTIME = "<runtime>"  # recipient of a tool call: the framework runs it
_USER = "user"



def recognises(span: SpanRecord) -> bool:
    return sc.GEN_AI_OPERATION_NAME in span.attributes or WORKFLOW_ID in span.attributes


def is_root(span: SpanRecord) -> bool:
    # _operation: an operation written as an array (bad data) is no operation, not an unhashable set member.
    return (_operation(span) in ROOT_OPERATIONS or span.get(WORKFLOW_ID) is not None
            or (span.scope_name, span.name) in ROOT_NAMES)  # fmt: skip


def framework_of(spans: list[SpanRecord]) -> str:
    """The framework: the instrumentation scope's (root first); for spans with no scope, what the framework
    leaves on them (one pass over the attributes)."""
    found = framework_of_run(spans[0], spans[1:]) if spans else None
    if found is not None:
        return found
    for s in spans:
        system = s.get(sc.GEN_AI_PROVIDER_NAME) or s.get(sc.GEN_AI_SYSTEM)
        if system == "strands-agents" or s.get(sc.GEN_AI_OPERATION_NAME) in ("invoke_swarm", "invoke_graph"):
            return "strands"
        if system == "gcp.vertex.agent":
            return "google-adk"
        if system == "microsoft.agent_framework" or WORKFLOW_ID in s.attributes:
            return "agent-framework"
        for key in s.attributes:
            if key.startswith("gcp.vertex.agent."):
                return "google-adk"
            if key.startswith(("pydantic_ai.", "logfire.")):
                return "pydantic-ai"
    return "unknown"


def _operation(span: SpanRecord) -> str:
    op = span.attributes.get(sc.GEN_AI_OPERATION_NAME)  # (read many times per span: the dict, not the method)
    return op if isinstance(op, str) else ""


def _is_agent_span(span: SpanRecord) -> bool:
    return _operation(span) == sc.OP_INVOKE_AGENT


def _is_llm(span: SpanRecord) -> bool:
    op = _operation(span)
    return op in _LLM_OPERATIONS or (not op and span.name.split(" ", 1)[0] in (*_LLM_OPERATIONS, _ADK_V1_LLM))


@dataclass(frozen=True, slots=True)
class _Acting:
    """Who a span acts for: the agent's name, the agent that invoked that agent (None: the user), and the run of
    structure it was invoked through, if any (an orchestrator: its answers go back there, as they went)."""

    agent: str
    caller: str | None
    via: str | None = None

    @property
    def recipient(self) -> str:
        """Whom its answers go to: the orchestrator that ran it, else the agent that invoked it, else the user."""
        return self.via or self.caller or _USER


def _acting(tree: Tree, root: SpanRecord, structure: Collection[str] = ()) -> dict[str, _Acting]:
    """Each span's agent, top-down once: a span's own ``gen_ai.agent.name``, else its parent's (an invocation that
    is structure, in ``structure``, names no agent: what runs in it acts for the agent above)."""
    out: dict[str, _Acting] = {}
    # A workflow root may carry its first agent's name (ADK's invoke_workflow); only an agent root speaks for one.
    own = (name_or_none(root.get(sc.GEN_AI_AGENT_NAME)) or "") if _operation(root) == sc.OP_INVOKE_AGENT else ""
    out[root.span_id] = _Acting(own, None)
    queue = deque([root])
    while queue:
        parent = queue.popleft()
        above = out[parent.span_id]
        for child in tree.children.get(parent.span_id, ()):
            if child.span_id in out:
                continue  # a cycle in bad data
            name = name_or_none(child.get(sc.GEN_AI_AGENT_NAME))  # (an id names no agent)
            if child.span_id in structure:
                out[child.span_id] = dataclasses.replace(above, via=name)
            elif name and name != above.agent:
                out[child.span_id] = _Acting(name, above.agent or None, above.via)
            else:
                out[child.span_id] = above
            queue.append(child)
    return out


@dataclass(frozen=True, slots=True)
class _Turns:
    """How each agent run speaks, where no model call of its own says it (span ids).

    ``structure``: agent runs that never speak, only run other agents (an orchestrator such as ADK's
    SequentialAgent, a wrapper such as langgraph-supervisor's ``call_agent`` whose output is the inner agent's):
    not speakers, and what runs inside them acts for the agent above. ``answers_at_end``: agent runs with no model
    call of their own whose answer is their own output, said when they end. ``asked_by_tool``: the tool runs of
    such agent runs, each standing for the unrecorded answer that asked for it."""

    structure: set[str]
    answers_at_end: set[str]
    asked_by_tool: set[str]


def _turns(tree: Tree, root: SpanRecord, below: list[SpanRecord], recorded: bool) -> _Turns:
    """A speaker is an agent that produced an answer of its own: a model call's output, or else its own recorded
    output. An agent run without a model call of its own (an instrumentation that writes agent and tool spans
    only) answers by its tool runs and, last, by its output; one whose turn ended in a transfer of control (a
    transfer tool with no agent run inside it) said nothing after it; one that only ran other agents and records no
    output of its own is structure. ``recorded``: the run records content at all; where it does not (content
    capture off), an agent run's end is its answer, unrecorded."""
    invocation = tree.nearest(_is_agent_span)
    steps: dict[str, list[SpanRecord]] = {}  # agent run -> its own model calls and tool runs, in start order
    talks: set[str] = set()  # agent runs with a model call of their own
    for s in below:
        owner = invocation.get(s.span_id)
        if owner is None:
            continue
        if _is_llm(s):
            talks.add(owner.span_id)
            steps.setdefault(owner.span_id, []).append(s)
        elif _operation(s) == sc.OP_EXECUTE_TOOL:
            steps.setdefault(owner.span_id, []).append(s)
    runs_agents = tree.holding(_is_agent_span)
    structure: set[str] = set()
    at_end: set[str] = set()
    by_tool: set[str] = set()
    for run in (root, *below):
        if not _is_agent_span(run) or run.span_id in talks or not name_or_none(run.get(sc.GEN_AI_AGENT_NAME)):
            continue
        own = steps.get(run.span_id, [])
        author = _output_author(run)
        its_own = author is not None and author in ("", run.get(sc.GEN_AI_AGENT_NAME))  # an output of its own
        if not own and run.span_id in runs_agents and not its_own:
            structure.add(run.span_id)
            continue
        by_tool.update(s.span_id for s in own)
        last = own[-1] if own else None
        handed_on = last is not None and is_transfer(_tool_name(last)) and last.span_id not in runs_agents
        if not handed_on and (its_own or not recorded):
            at_end.add(run.span_id)
    return _Turns(structure, at_end, by_tool)


def _tool_name(span: SpanRecord) -> str:
    """A tool span's tool: ``gen_ai.tool.name``, else its span's name after the operation (``execute_tool <name>``)."""
    return text(span.get(sc.GEN_AI_TOOL_NAME)) or span.name.removeprefix("execute_tool ").strip()


def _output_author(span: SpanRecord) -> str | None:
    """Who wrote an agent run's recorded output: the ``name`` its output messages give (the same on each), "" when
    it records an output that names nobody (its own), None when it records none."""
    messages = json_of(span.get(sc.GEN_AI_OUTPUT_MESSAGES))
    if not isinstance(messages, list) or not messages:
        return None
    names = {text(m.get("name")) for m in messages if isinstance(m, dict)}
    return names.pop() if len(names) == 1 else ""


@dataclass(slots=True)
class _Transfer:
    """A named transfer seen, waiting for its target agent to start (its target is unknown without content)."""

    source: str
    target: str | None
    reason: str | None
    origin: SpanRecord


def adapt(tree: Tree, root: SpanRecord) -> Adapted | NotAConversation:
    below = tree.below(root)
    # The run records content (its text is on some span, or in events or log records): an agent run that answered
    # without a model call of its own says so in its output; else (content off) its end is its answer, unrecorded.
    recorded = any(records_content(s) or first_user_text(s) for s in (root, *below))
    turns = _turns(tree, root, below, recorded)
    acting = _acting(tree, root, turns.structure)
    invoked = (acting[s.span_id].agent for s in (root, *below)
               if _operation(s) == sc.OP_INVOKE_AGENT and s.span_id not in turns.structure)  # fmt: skip
    speaking = (acting[s.span_id].agent for s in below if _is_llm(s))  # (a speaker is an agent, invoked or not)
    agents = dict.fromkeys(name for name in (*invoked, *speaking) if name)
    if len(agents) < 2:
        return NotAConversation(SOURCE, f"{len(agents)} agent(s); not a multi-agent conversation")
    framework = framework_of([root, *below])
    conv = ConversationBuilder(SOURCE, framework, root)
    task, task_origin = "", root
    # The task a span records it was assigned (<namespace>.task.description) is the framework's own record of the
    # request; the model's first user message may be a prompt built around it (CrewAI's "Current Task: ...").
    for read in (assigned_task, first_user_text):
        found = next(((t, s) for s in (root, *below) if (t := read(s))), None)
        if found is not None:
            task, task_origin = found
            break
    if not task:  # no span records the user's input the GenAI way: the root agent run's own record of it
        task, task_origin = agent_input_text(root), root
    content_seen = bool(task)
    if task:
        first = next((acting[s.span_id].agent for s in below if _is_llm(s) and acting[s.span_id].agent), "")
        conv.message(_USER, [first or next(iter(agents))], task, origin=task_origin)
    for name in agents:  # (after the user, who speaks first: the agents in the order they took part)
        conv.agent(name)

    # A tool that runs another agent is a delegation (Pydantic AI): the nested agent's handoff, not a tool call.
    delegations = tree.holding(_is_agent_span)
    # A model call inside a model call is the same answer recorded twice (ADK's legacy call_llm holds the model
    # client's generate_content): the outer one speaks.
    inner_llm = {s.span_id for s in below if (p := tree.parent(s)) is not None and _is_llm(p)}
    current: str | None = acting[root.span_id].agent if _operation(root) == sc.OP_INVOKE_AGENT else None
    # No span of the run is a tool's (CrewAI under OpenLLMetry: the OpenAI instrumentor writes the model calls, none
    # the tools): each tool call a model answer asks for is a tool call, its result the one a later model call was
    # sent for its id.
    spanless = not any(_operation(s) == sc.OP_EXECUTE_TOOL for s in below)
    responses: dict[str, str] = {}
    for span in below if spanless else ():
        if _is_llm(span):
            for call_id, response in tool_responses(span).items():
                responses.setdefault(call_id, response)
    pending: _Transfer | None = None

    def hand(source: str, target: str, origin: SpanRecord, reason: str | None = None) -> None:
        if source and target and source != target:
            conv.handoff(source, target, origin=origin, reason=reason)

    def came_back(who: _Acting, span: SpanRecord) -> None:
        """An agent answers after another agent's turn, with no agent started in between: the turn came back (a
        delegating agent answers again after the agent it ran inside its tool)."""
        nonlocal current
        if current and current != who.agent and pending is None:
            hand(current, who.agent, span)
        current = who.agent

    # Each span where it starts; an agent run that answers by its own output (no model call of its own), also
    # where it ends.
    events = [(s.start_ns, 1, n, s, False) for n, s in enumerate(below)]
    events += [(s.end_ns, 0, n, s, True) for n, s in enumerate(below) if s.span_id in turns.answers_at_end]
    if root.span_id in turns.answers_at_end:
        events.append((root.end_ns, 2, len(below), root, True))
    events.sort(key=lambda e: e[:3])
    for _, _, _, span, ending in events:
        op = _operation(span)
        who = acting[span.span_id]
        if ending:
            content = output(span)[0] if recorded else ""
            came_back(who, span)
            content_seen = content_seen or bool(content)
            conv.message(who.agent, [who.recipient], content, origin=span)
            continue
        if op == sc.OP_EXECUTE_TOOL and span.span_id in turns.asked_by_tool:
            # no model call of this agent's is recorded: the tool run stands for the answer that asked for it
            came_back(who, span)
            asked = _tool_name(span)
            conv.message(who.agent, [_RUNTIME], asked, origin=span, kind=sc.KIND_TOOL_CALL, tool_calls=asked)
        if span.span_id in turns.structure:
            continue
        if op == sc.OP_INVOKE_AGENT and who.agent:
            if pending is not None and pending.target in (None, who.agent):
                hand(pending.source, who.agent, pending.origin, pending.reason)
                pending = None
            elif current != who.agent:
                hand(current or who.caller or "", who.agent, span)
            current = who.agent
        elif op == sc.OP_EXECUTE_TOOL:
            tool = _tool_name(span)
            # (a transfer recorded outside any agent's run, a graph's goto, comes from the agent whose turn it is)
            transfer = _transfer(tool, span, who.agent or current or "", agents)
            if transfer is not None:
                pending = _merge(pending, transfer)
            elif span.span_id not in delegations:
                arguments = span.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS, span.get(_ADK_TOOL_ARGS))
                result = span.get(sc.GEN_AI_TOOL_CALL_RESULT, span.get(_ADK_TOOL_RESPONSE))
                conv.tool_call(who.agent or "?", tool, text(arguments), text(result), origin=span)
        elif span.get(_EDGE_SOURCE) is not None or span.get(_SEND_DESTINATION) is not None:
            edge = _edge(span, current, agents)
            if edge is not None:
                pending = _merge(pending, edge)
        elif _is_llm(span) and who.agent and span.span_id not in inner_llm:
            came_back(who, span)
            content, calls = output(span)
            if not content and not calls and _recorded_empty(span):
                calls = _tools_run_after(tree, span)
            content_seen = content_seen or bool(content)  # tool names alone are structure, not content
            for name in calls:  # a handoff recorded only as the model's tool call (Agent Framework)
                called = _transfer(name, span, who.agent, agents)
                if called is not None and called.target in agents:
                    pending = _merge(pending, dataclasses.replace(called, reason=None))
            names = ", ".join(calls)
            kind = sc.KIND_TOOL_CALL if calls and not content else sc.KIND_MESSAGE
            to = [_RUNTIME] if calls else [who.recipient]
            conv.message(who.agent, to, content or names, origin=span, kind=kind, tool_calls=names or None)
            for name, call_id, args in requested_calls(span) if spanless else ():
                # (a tool named as an agent of the run runs that agent: smolagents' managed agents, agents as
                # tools; a delegation, whose handoff the agent's own run records)
                if name not in agents and _evidence.transfer(name, _evidence.arguments(args), agents) is None:
                    conv.tool_call(who.agent, name, args, responses.get(call_id, ""), origin=span)
    if pending is not None and pending.target:
        hand(pending.source, pending.target, pending.origin, pending.reason)
    answered = conv.senders - {_USER}
    if len(answered) < 2:  # agents were invoked, but fewer than two answered: no multi-agent conversation
        return NotAConversation(SOURCE, f"{len(answered)} agent(s) replied; not a multi-agent conversation")
    no_content = None
    if not content_seen:
        switches = "; ".join(content_switches([root, *below], framework))
        no_content = f"{framework} recorded no message content, so the judge cannot read the conversation: {switches}"
    name = text(root.get(sc.GEN_AI_WORKFLOW_NAME)) or text(root.get(_WORKFLOW_NAME)) or root.name
    return conv.build(task=task, name=name, no_content=no_content)


def read_translated(tree: Tree, root: SpanRecord, translate: Callable[[SpanRecord], SpanRecord], source: str,
                    framework: str | None = None) -> Adapted | NotAConversation:  # fmt: skip
    """A run another convention wrote, read by this reader: each span ``translate``d into the GenAI conventions,
    the conversation named after the translator (``source``) and after ``framework`` where the translator knows
    it better than the scopes say. Every translator (the AI SDK's, OpenLLMetry's, the user's mappings) reads
    through here."""
    read = Tree(translate(s) for s in tree.spans)
    adapted = adapt(read, read.by_id[root.span_id])
    if isinstance(adapted, NotAConversation):
        return NotAConversation(source, adapted.reason)
    framework = framework or adapted.framework
    first = adapted.records[0]
    labelled = dataclasses.replace(first, attributes={**first.attributes, SOURCE_ATTRIBUTE: source,
                                                      sc.MAST_FRAMEWORK: sc.framework_name(framework)})  # fmt: skip
    return dataclasses.replace(adapted, source=source, framework=framework, records=(labelled, *adapted.records[1:]))


def _recorded_empty(span: SpanRecord) -> bool:
    """A model answer recorded with an empty text part and nothing else (``gen_ai.output.messages``
    ``[{"role": "assistant", "parts": [{"type": "text", "content": ""}]}]``): the framework wrote the answer out,
    and it had no text, so it only called tools it did not list. (An output not recorded, redacted, or with no
    part at all is no such answer: the calls are then unknown.)"""
    messages = json_of(span.get(sc.GEN_AI_OUTPUT_MESSAGES))
    listed = [m.get("parts") for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
    parts = [p for found in listed if isinstance(found, list) for p in found]
    return bool(parts) and all(isinstance(p, dict) and p.get("type") == "text" and p.get("content") == ""
                               for p in parts)  # fmt: skip


def _tools_run_after(tree: Tree, span: SpanRecord) -> list[str]:
    """The tools a model answer asked for when its output names none (an empty text part: Mastra's): the
    ``execute_tool`` spans its step ran after it (its parent's children, after it and before the next model
    answer), in start order."""
    parent = tree.parent(span)
    names: list[str] = []
    for sibling in tree.children.get(parent.span_id, ()) if parent is not None else ():
        if sibling.start_ns < span.start_ns or sibling is span:
            continue
        if _is_llm(sibling):
            break
        if _operation(sibling) == sc.OP_EXECUTE_TOOL:
            names.append(_tool_name(sibling))
    return names


def _arguments(span: SpanRecord) -> dict[str, Any]:
    parsed = json_of(span.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS, span.get(_ADK_TOOL_ARGS)))
    return parsed if isinstance(parsed, dict) else {}


def _transfer(tool: str, span: SpanRecord, source: str, agents: dict[str, None]) -> _Transfer | None:
    """A transfer, handoff or delegation tool's call (:func:`._evidence.transfer`, any naming): its target and
    reason from the arguments (recorded only with content on), else the target its name ends with."""
    found = transfer(tool, _arguments(span), agents)
    return None if found is None else _Transfer(source, found[0], found[1], span)


def _edge(span: SpanRecord, current: str | None, agents: dict[str, None]) -> _Transfer | None:
    """Agent Framework's message between two executors, when both are agents (edges also reach other executors)."""
    target = text(span.get(_EDGE_TARGET) or span.get(_SEND_DESTINATION))
    source = text(span.get(_EDGE_SOURCE)) or current or ""
    if source in agents and target in agents and source != target:
        return _Transfer(source, target, None, span)
    return None


def _merge(pending: _Transfer | None, new: _Transfer) -> _Transfer:
    """One transfer recorded several ways (the model's tool call, the tool span, the edge) is one handoff: the
    first record is its origin, later ones fill in what it lacks."""
    if pending is None or pending.source != new.source:
        return new
    if pending.target and new.target and pending.target != new.target:
        return new
    pending.target = pending.target or new.target
    pending.reason = pending.reason or new.reason
    return pending
