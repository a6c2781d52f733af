"""OpenInference (Arize / Phoenix instrumentors) -> a conversation.

Read: ``openinference.span.kind`` AGENT / CHAIN / TOOL, ``agent.name`` (else ``graph.node.id``, else the span
name's first word), ``graph.node.parent_id`` (the previous speaker, where the instrumentor sets it),
``input.value`` / ``output.value``, ``tool.name``. The root is the outermost AGENT or CHAIN span; a reply is an
AGENT span with no AGENT span under it (an AG2 chat manager or a team span holds its members' replies), sent to
the agent whose span holds it. Where no span is of kind AGENT (LlamaIndex's AgentWorkflow), a step span that
names its agent in its input (``current_agent_name``) and holds a model answer speaks for that agent; so does a
graph-node span (its ``metadata`` names it the ``langgraph_node``: LangGraph.js's instrumentation writes every
node CHAIN) that holds a model answer and is not a generic step (``agent``, ``tools``, ``__start__``): the agent is
the node, as Python's AGENT ``agent`` span speaks for the node that encloses it. A model
answer is an LLM span that records one (output messages, finish reason, token counts). A transfer, handoff or
delegation TOOL span (any naming, :func:`._evidence.transfer`) is a handoff to the agent its arguments or name
designate, with the reason its arguments give; so is a TOOL span whose run is another agent's turn (an AGENT span
directly inside it: BeeAI's HandoffTool), to that agent, the reason the task its arguments give; other TOOL spans
are tool calls, by the agent whose span holds them, else by the agent whose model answer asked for them. An LLM span
with no output messages says its answer in ``output.value`` (a list of tool calls names the tools called). A model
answer's call of a final-answer tool (``final_answer`` in any naming: BeeAI's, smolagents') is the agent saying its
answer: the call's text argument is the message, to whom the agent answers (the tool's own span is still a tool
call). Where no model answer is recorded at all (an instrumentor that wraps tasks and tools only: CrewAI's by
default), a delegation to an agent with no span of its own is that agent's turn (its result the delegate's reply,
the tools run inside it the delegate's); in such a run each tool run stands for the answer that asked for it, and an
agent span's reply comes when the span ends. The tasks the root records it was given (``crew_tasks``), given to no
agent, are the user's request; each given to an
agent, they are the run's plan (the goal, no opening message).

What OpenInference cannot provide: handoff reasons (no attribute exists: only a transfer tool's arguments say
why; ``graph.node.parent_id`` gives only from -> to, and where neither is there the handoffs are read from the
order of replies), the termination reason
(at best a serialized result in the root's ``output.value``), and message recipients beyond the enclosing agent.
Content is there only when the instrumentor captures it: text it was told to hide (``OPENINFERENCE_HIDE_*``:
its ``__REDACTED__`` placeholder) is skipped, never read as text, and a run left with no message text carries
``no_content`` naming the switches that hid it.

The general rules (:mod:`._evidence`) apply: the framework is the instrumentation scope's, never ``llm.system``
(the model's provider); a value that looks like an id names no agent (a ``graph.node.parent_id`` that is an id
is resolved through the ``graph.node.id`` it points at); the task is the user's, never the lead agent talking to
itself; a transfer, handoff or delegation tool in any naming is a handoff, not a tool call.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord

from ._bounds import NOT_JSON, json_of
from ._conversation import Adapted, ConversationBuilder, NotAConversation
from ._evidence import (
    HIDDEN,
    arguments,
    final_answer_text,
    framework_of_run,
    hidden,
    is_final_answer,
    is_langgraph_root,
    looks_like_id,
    name_or_none,
    transfer,
    transfer_reason,
)
from ._tree import Tree, text

SOURCE = "openinference"
SPAN_KIND = sc.OI_SPAN_KIND
_ROOT_KINDS = (sc.OI_KIND_AGENT, sc.OI_KIND_CHAIN)
_KIND_LLM = sc.OI_KIND_LLM
_START = "start"  # graph.node.parent_id of the first agent (autogen-agentchat)
_RUNTIME = "<runtime>"  # recipient of a tool call: the framework runs it
_GENERIC = frozenset({"agent", "call_agent"})  # LangGraph span names that say nothing of which agent it is
_GRAPH_STEPS = _GENERIC | {"tools", "call_model"}  # LangGraph node names that are a step of an agent, not one


def recognises(span: SpanRecord) -> bool:
    return SPAN_KIND in span.attributes


def is_root(span: SpanRecord) -> bool:
    return span.get(SPAN_KIND) in _ROOT_KINDS


def _is_agent(span: SpanRecord) -> bool:
    return bool(span.get(SPAN_KIND) == sc.OI_KIND_AGENT)


def _is_llm(span: SpanRecord) -> bool:
    """A model answer: an LLM span that records one (output messages, a finish reason, token counts, or the
    placeholder of a hidden output). An LLM span that records none is a step around the model (LlamaIndex's
    ``_prepare_chat_with_tools``), not an answer."""
    if span.get(SPAN_KIND) != _KIND_LLM:
        return False
    return hidden(span.get(sc.OI_OUTPUT_VALUE)) or any(k.startswith(_ANSWER_KEYS) for k in span.attributes)


_ANSWER_KEYS = (sc.OI_LLM_OUTPUT_MESSAGES, sc.OI_LLM_FINISH_REASON, sc.OI_LLM_TOKEN_COUNT_TOTAL.rsplit(".", 1)[0])
# A step span (not of kind AGENT) that names the agent it runs for in its input: ``current_agent_name='x'``,
# ``"agent_name": "x"`` (LlamaIndex's AgentWorkflow steps carry AgentSetup(..., current_agent_name='x')).
_STEP_AGENT = re.compile(
    r"""\b(?:current_agent_name|current_agent|agent_name)["']?\s*[=:]\s*["']([^"'\n]{1,200})["']"""
)


def _step_agent(span: SpanRecord) -> str | None:
    """The agent a step span names in its input (not an id), or None."""
    value = span.get(sc.OI_INPUT_VALUE)
    found = _STEP_AGENT.search(value) if isinstance(value, str) else None
    return name_or_none(found.group(1)) if found else None


def _graph_node(span: SpanRecord) -> str | None:
    """The graph node a span is, when its ``metadata`` JSON names it the ``langgraph_node`` (the node's own span,
    not a step run inside it) and the node is not a generic step (``agent``, ``tools``, ``__start__``), or None."""
    raw = span.get(sc.OI_METADATA)
    if not isinstance(raw, str) or _GRAPH_NODE not in raw:
        return None
    metadata = json_of(raw)
    node = metadata.get(_GRAPH_NODE) if isinstance(metadata, dict) else None
    if node != span.name or node in _GRAPH_STEPS or node.startswith("__"):
        return None
    return name_or_none(node)


_GRAPH_NODE = "langgraph_node"


def agent_name(span: SpanRecord, parent: SpanRecord | None = None) -> str:
    """The agent an AGENT span speaks for: its agent / graph-node attribute that is not an id, else its name's
    first word; a generically named span (LangGraph's ReAct ``agent`` node) speaks for the graph node that
    encloses it."""
    for key in (sc.OI_AGENT_NAME, sc.OI_GRAPH_NODE_ID, sc.OI_GRAPH_NODE_NAME):
        found = name_or_none(span.get(key))
        if found:
            return found
    if span.name in _GENERIC and parent is not None:
        return parent.name
    return span.name.split(".", 1)[0].split(" ", 1)[0]


def framework_of(root: SpanRecord, spans: list[SpanRecord]) -> str:
    """The framework: the instrumentation scope's (root first), LangGraph's on a LangGraph graph
    (:func:`._evidence.framework_of_run`: ``langchain-js`` on a LangGraph.js graph is ``langgraph-js``). A run
    with no scope (a file written without one) falls back on what the framework's instrumentor leaves; never
    ``llm.system``, which names the model's provider."""
    found = framework_of_run(root, spans)
    if found is not None:
        return found
    if any(k.startswith("ag2.") for s in spans for k in s.attributes):
        return "ag2"
    if root.name == "Agent workflow":  # the OpenAI Agents SDK's default trace name
        return "openai-agents"
    if root.get("team_id") is not None or root.name.endswith(".run_stream"):  # an autogen-agentchat team
        return "autogen-agentchat"
    if is_langgraph_root(root):
        return "langgraph"
    if any(k.startswith("smolagents.") for k in root.attributes):
        return "smolagents"
    if root.get("crew_id") is not None:
        return "crewai"
    return "unknown"


# The switch that writes OpenInference's placeholder into each attribute (openinference-instrumentation's
# TraceConfig.mask): input/output values, and the text of LLM messages.
_SWITCHES = (
    (sc.OI_INPUT_VALUE, "OPENINFERENCE_HIDE_INPUTS"),
    (sc.OI_OUTPUT_VALUE, "OPENINFERENCE_HIDE_OUTPUTS"),
    (sc.OI_LLM_INPUT_MESSAGES, "OPENINFERENCE_HIDE_INPUT_TEXT"),
    (sc.OI_LLM_OUTPUT_MESSAGES, "OPENINFERENCE_HIDE_OUTPUT_TEXT"),
)


def _hidden_by(spans: list[SpanRecord]) -> list[str]:
    """The switches whose placeholder the spans carry, in the order above (one pass over the attributes)."""
    found: set[str] = set()
    for s in spans:
        for key, value in s.attributes.items():
            if isinstance(value, str) and value in HIDDEN:
                found.update(switch for prefix, switch in _SWITCHES if key.startswith(prefix))
    return [switch for _, switch in _SWITCHES if switch in found]


_NO_CONTENT = "the OpenInference instrumentor recorded no message content, so the judge cannot read the conversation"


class _Transfer:
    """A transfer tool's call, waiting for its target to speak (the target may be unknown)."""

    __slots__ = ("origin", "reason", "source", "target")

    def __init__(self, source: str, target: str | None, reason: str | None, origin: SpanRecord) -> None:
        self.source, self.target, self.reason, self.origin = source, target, reason, origin


def adapt(tree: Tree, root: SpanRecord) -> Adapted | NotAConversation:
    below = tree.below(root)
    unit = [root, *below]
    holding_llms = tree.holding(_is_llm)
    # Who speaks: an AGENT span, else a step span that names its agent and holds a model answer (no AGENT span
    # at all in LlamaIndex's AgentWorkflow); the run's root is the run, never one of its steps.
    steps = {
        s.span_id: name
        for s in below
        if not _is_agent(s) and s.span_id in holding_llms and (name := _step_agent(s)) is not None
    }
    # No AGENT span either (LangGraph.js: every graph node is CHAIN): a graph node that holds a model answer speaks
    # for itself (the nearest one holding the answer is its speaker, as the node above Python's AGENT ``agent``).
    if not any(_is_agent(s) for s in unit):
        steps.update({s.span_id: name for s in below if s.span_id in holding_llms and (name := _graph_node(s))})
    # No model answer recorded at all (an instrumentor that wraps the framework's tasks and tools, not its model
    # calls): a delegation to an agent that has no span of its own is that agent's turn, its result the delegate's
    # reply; and since such turns leave no other trace, each tool run in the run stands for the answer that asked
    # for it. (An agent span that replies by its output, AG2's, is a recorded answer: its tools add none.)
    unrecorded = not any(s.get(SPAN_KIND) == _KIND_LLM for s in below)
    delegates = _unseen_delegates(below, {agent_name(s, tree.parent(s)) for s in below if _is_agent(s)},
                                  set(steps.values())) if unrecorded else {}  # fmt: skip
    steps.update(delegates)
    unrecorded = bool(delegates)

    def speaks(span: SpanRecord) -> bool:
        return _is_agent(span) or span.span_id in steps

    def speaker(span: SpanRecord) -> str:
        return steps.get(span.span_id) or agent_name(span, tree.parent(span))

    owners = tree.nearest(speaks)  # the agent a span acts for: its nearest speaking ancestor

    def owner(span: SpanRecord) -> SpanRecord | None:
        return owners.get(span.span_id)

    agents = [s for s in unit if speaks(s)]
    # (a delegate's turn inside an agent's span leaves that agent a leaf: it still replies by its output)
    holding_agents = tree.holding(lambda s: speaks(s) and s.span_id not in delegates)
    leaves = [s for s in agents if s.span_id not in holding_agents]
    # An agent speaks through its model calls (OpenAI Agents SDK, autogen-agentchat, LangGraph, smolagents); a
    # leaf agent span with no model call under it carries its reply in output.value instead (AG2), said when the
    # span ends where other spans ran inside it first (a delegate's turn, a tool it ran).
    by_output = [s for s in leaves if s.get(sc.OI_OUTPUT_VALUE) is not None and s.span_id not in holding_llms]
    calls = [(s, o) for s in below if _is_llm(s) and (o := owner(s)) is not None]
    asks = [(s, o) for s in below if unrecorded and s.get(SPAN_KIND) == sc.OI_KIND_TOOL and (o := owner(s))]
    late = {s.span_id for s in by_output if tree.children.get(s.span_id) or s.span_id in delegates}

    def at(pair: tuple[SpanRecord, SpanRecord]) -> tuple[int, str]:
        span = pair[0]
        return (span.end_ns if span.span_id in late else span.start_ns, span.span_id)

    turns = sorted([*((s, s) for s in by_output), *calls, *asks], key=at)
    runs_agent = _tools_running_agents(tree, agents, speaks, speaker)
    speakers = {speaker(agent) for _, agent in turns}
    if len(speakers) < 2:
        return NotAConversation(SOURCE, f"{len(speakers)} agent(s) replied; not a multi-agent conversation")
    known = dict.fromkeys([*(speaker(a) for a in agents), *sorted(speakers)])
    # graph.node.parent_id points at another span's graph.node.id, which may be an id rather than a name.
    by_node = {text(a.get(sc.OI_GRAPH_NODE_ID)): speaker(a) for a in agents if a.get(sc.OI_GRAPH_NODE_ID)}
    conv = ConversationBuilder(SOURCE, framework_of(root, unit), root)
    first = text(root.get("ag2.recipient.name")) or speaker(turns[0][1])
    # The task comes from the user; a root agent that names itself opens the run only when it is not the agent
    # that answers first (AG2's initiator), else it is the lead agent receiving the user's request.
    initiator = agent_name(root) if _is_agent(root) and name_or_none(root.get(sc.OI_AGENT_NAME)) else "user"
    if initiator == first:
        initiator = "user"
    written = _visible(root.get(sc.OI_INPUT_VALUE))
    # The tasks the run's root records it was given (a crew's): given to no agent (a hierarchical crew's manager
    # takes them), they are the user's request, before a model's first prompt (which wraps the request in the
    # framework's template); each given to an agent, they are the crew's plan: the judge's goal, no message.
    plan, requested = _crew_tasks(root.get("crew_tasks"))
    task = _task(written) or (plan if requested else "") or _first_user_message(below) or written
    content_seen = False  # an agent's words
    if task:
        conv.message(initiator, [first], task, origin=root)
    names = root.get("participant_names")
    team = [text(n) for n in names] if isinstance(names, (list, tuple)) else []
    turn_of = {span.span_id: agent for span, agent in turns if span.get(SPAN_KIND) != sc.OI_KIND_TOOL}
    asked_by = {span.span_id: agent for span, agent in asks}
    replies = {span.span_id for span in by_output}
    # Each span where it starts; a reply that ends a span with other spans inside it, where that span ends (a
    # delegation tool's span also starts, as a tool call, where it starts).
    events = [(s.start_ns, s.span_id, s, s.span_id not in late) for s in below if s.span_id not in late]
    events += [(s.end_ns, s.span_id, s, False) for s in below if s.span_id in late]
    events += [(s.start_ns, s.span_id, s, True) for s in below if s.span_id in late and s.span_id in delegates]
    events.sort(key=lambda e: (e[0], e[1]))
    previous: str | None = None
    pending: _Transfer | None = None
    started: set[str] = set()  # agent spans that have spoken
    asked: dict[str, str] = {}  # tool name -> the agent whose model answer last asked for it

    def turn(span: SpanRecord, agent: SpanRecord) -> str:
        """The agent's turn: the handoff that brought it, if any (the sender)."""
        nonlocal previous, pending
        sender = speaker(agent)
        # The turn passed: a transfer tool named its target; else graph.node.parent_id names the previous agent
        # where the instrumentor records it (on the agent's first turn); else the previous speaker did.
        recorded = _node_name(agent.get(sc.OI_GRAPH_NODE_PARENT_ID), by_node) if agent.span_id not in started else ""
        source = previous if not recorded or recorded == _START else recorded
        if pending is not None and sender != pending.source:
            if pending.target in (None, sender):
                conv.handoff(pending.source, sender, origin=pending.origin, reason=pending.reason)
                source = sender
            pending = None
        if source is not None and source != sender:
            conv.handoff(source, sender, origin=agent if agent.span_id not in started else span)
        started.add(agent.span_id)
        previous = sender
        return sender

    for _, _, span, opening in events:
        if opening and span.get(SPAN_KIND) == sc.OI_KIND_TOOL:
            acting = owner(span)
            tool = text(span.get(sc.OI_TOOL_NAME)) or span.name
            if span.span_id in asked_by:  # the answer that asked for this tool (no model answer recorded)
                turn(span, asked_by[span.span_id])
                conv.message(speaker(acting) if acting else "?", [_RUNTIME], tool, origin=span,
                             kind=sc.KIND_TOOL_CALL, tool_calls=tool)  # fmt: skip
            # A tool run outside any agent's span (LangGraph's tools node, LlamaIndex's call_tool step) is the
            # agent's whose model asked for it; "?" when no model answer did.
            who = speaker(acting) if acting else asked.get(tool, "?")
            args = _visible(span.get(sc.OI_INPUT_VALUE))
            handed = transfer(tool, arguments(args), known)
            if handed is None and span.span_id in runs_agent and runs_agent[span.span_id] != who:
                # a tool whose run is another agent's turn (BeeAI's HandoffTool, an agent wrapped as a tool)
                handed = runs_agent[span.span_id], _reason(arguments(args))
            if handed is not None:  # a transfer or a delegation: a handoff, not a tool call
                pending = _Transfer(who if who != "?" else previous or who, handed[0], handed[1], span)
                continue
            conv.tool_call(who, tool, args, _visible(span.get(sc.OI_OUTPUT_VALUE)), origin=span)
            continue
        agent = span if span.span_id in replies else turn_of.get(span.span_id)
        if agent is None:
            continue
        sender = turn(span, agent)
        if span is agent:  # the reply is the agent span's output
            holder = owner(span)
            recipient = text(span.get("ag2.sender.name")) or (speaker(holder) if holder else initiator)
            reply = _reply(_visible(span.get(sc.OI_OUTPUT_VALUE)))
            content_seen = content_seen or bool(reply)
            conv.message(sender, [recipient], reply, origin=span)
            continue
        content, tools = _llm_output(span)
        asked.update(dict.fromkeys(tools, sender))
        content_seen = content_seen or bool(content)
        # A final-answer tool's call is the agent saying its answer (its text is the content), asking for nothing:
        # a message to whom the agent answers, not a tool call sent to the runtime (its TOOL span still is one).
        asking = [t for t in tools if not is_final_answer(t)]
        kind = sc.KIND_TOOL_CALL if asking and not content else sc.KIND_MESSAGE
        # A team's (autogen-agentchat) messages go to every other participant; otherwise back to the user.
        to = [p for p in team if p != sender] or [initiator]
        conv.message(sender, [_RUNTIME] if asking else to, content or ", ".join(asking), origin=span, kind=kind,
                     tool_calls=", ".join(asking) or None)  # fmt: skip
    if pending is not None and pending.target and pending.target != pending.source:
        conv.handoff(pending.source, pending.target, origin=pending.origin, reason=pending.reason)
    # No agent's words: hidden (the request alone gives the judge nothing to label), or never recorded (answers
    # that only call tools still show what each agent did, with the request).
    no_content = None
    switches = _hidden_by(unit) if not content_seen else []
    if switches:
        no_content = (f"OpenInference hid the message content ({', '.join(switches)} set): the judge cannot read the "
                      "conversation; unset them to have it judged")  # fmt: skip
    elif not content_seen and not task:
        no_content = _NO_CONTENT
    return conv.build(task=task or plan, name=text(root.name),
                      termination_detail=_stop_reason(root.get(sc.OI_OUTPUT_VALUE)), no_content=no_content)  # fmt: skip


def _unseen_delegates(spans: list[SpanRecord], agents: set[str], steps: set[str]) -> dict[str, str]:
    """Delegation tool spans whose delegate has no span of its own, by span id: the delegate's name."""
    out = {}
    for s in spans:
        if s.get(SPAN_KIND) != sc.OI_KIND_TOOL:
            continue
        tool = text(s.get(sc.OI_TOOL_NAME)) or s.name
        handed = transfer(tool, arguments(_visible(s.get(sc.OI_INPUT_VALUE))), agents | steps)
        if handed is not None and handed[0] and handed[0] not in agents and handed[0] not in steps:
            out[s.span_id] = handed[0]
    return out


def _tools_running_agents(tree: Tree, agents: list[SpanRecord], speaks: Callable[[SpanRecord], bool],
                          speaker: Callable[[SpanRecord], str]) -> dict[str, str]:  # fmt: skip
    """TOOL spans whose run is an agent's turn, by span id: that agent (the first speaking span whose nearest
    speaking-or-tool ancestor is the tool span: an agent span directly inside the tool's run)."""
    out: dict[str, str] = {}
    for agent in agents:
        for above in tree.ancestors(agent):
            if above.get(SPAN_KIND) == sc.OI_KIND_TOOL:
                out.setdefault(above.span_id, speaker(agent))
                break
            if speaks(above):
                break
    return out


def _reason(args: dict[str, Any]) -> str | None:
    """Why a tool hands an agent the turn: the task it is given (BeeAI records the call as ``{"input": {...},
    "options": ...}``)."""
    inner = args.get("input")
    return transfer_reason(inner if isinstance(inner, dict) else args)


def _visible(value: Any) -> str:
    """An attribute's text, or "" when the instrumentor hid it (its placeholder is no text)."""
    return "" if hidden(value) else text(value)


def _node_name(value: Any, by_node: dict[str, str]) -> str:
    """The agent a ``graph.node.*`` reference names: the node's agent when it is an id of one, else the value
    itself unless it is an id."""
    ref = text(value)
    if ref in by_node:
        return by_node[ref]
    return "" if looks_like_id(ref) else ref


def _reply(value: Any) -> str:
    """An agent span's reply: the text, or a CrewAI ``TaskOutput``'s ``raw`` answer when it is serialized."""
    raw = text(value)
    if raw.startswith("{"):
        parsed = json_of(raw)
        if isinstance(parsed, dict) and isinstance(parsed.get("raw"), str):
            return str(parsed["raw"])
    return raw


def _crew_tasks(value: Any) -> tuple[str, bool]:
    """A CrewAI crew's task descriptions, in order (the root's ``crew_tasks`` JSON), each after the role of the
    agent it was given to, and whether it was given to no agent at all (a hierarchical crew's tasks: its manager
    takes them). A task given to no agent is its description alone (a role recorded as null or as the text
    ``None`` is none)."""
    tasks = json_of(value)
    if not isinstance(tasks, list):
        return "", False
    lines = []
    unassigned = []
    for t in tasks:
        if not isinstance(t, dict):
            continue
        role = name_or_none(t.get("agent_role")) if t.get("agent_role") != "None" else None
        description = text(t.get("description"))
        lines.append(f"{role}: {description}" if role else description)
        unassigned.append(role is None)
    return "\n".join(lines), bool(unassigned) and all(unassigned)


def _stop_reason(value: Any) -> str | None:
    """autogen-agentchat's ``TaskResult.stop_reason``, from the team span's serialized result (a detail only:
    the sentence is the termination condition's, not one of mast-otel's termination reasons)."""
    parsed = json_of(value)
    reason = parsed.get("stop_reason") if isinstance(parsed, dict) else None
    return reason if isinstance(reason, str) and reason else None


def _llm_output(span: SpanRecord) -> tuple[str, list[str]]:
    """The text and the called tools' names of an LLM span's first output message (flattened attributes)."""
    prefix = f"{sc.OI_LLM_OUTPUT_MESSAGES}.0."
    content = _visible(span.get(prefix + sc.OI_MESSAGE_CONTENT))
    if not content:  # the message as content parts (LlamaIndex): their text, in order
        parts = []
        for n in itertools.count():
            part = span.get(f"{prefix}{sc.OI_MESSAGE_CONTENTS}.{n}.{sc.OI_MESSAGE_CONTENT_TEXT}")
            if part is None:
                break
            parts.append(_visible(part))
        content = "".join(parts)
    calls = []
    said = []  # what the answer says through a final-answer tool (BeeAI's final_answer, smolagents')
    for n in itertools.count():  # (the flattened list ends at its first missing index)
        call = f"{prefix}{sc.OI_MESSAGE_TOOL_CALLS}.{n}."
        name = span.get(call + sc.OI_TOOL_CALL_FUNCTION_NAME)
        if name is None:
            break
        calls.append(text(name))
        answer = final_answer_text(text(name), arguments(_visible(span.get(call + sc.OI_TOOL_CALL_FUNCTION_ARGUMENTS))))
        if answer:
            said.append(answer)
    content = content or "\n".join(said)
    if not content and not calls:  # no output messages: the answer as output.value has it
        return _output_value(span.get(sc.OI_OUTPUT_VALUE))
    return content, calls


def _output_value(value: Any) -> tuple[str, list[str]]:
    """An LLM span's answer from its ``output.value`` when it records no output messages: a list of tool calls in
    the OpenAI shape (``[{"function": {"name": ...}}]``) is the tools called; other JSON is no answer text (a
    serialized response object says nothing as it stands); plain text is the answer."""
    raw = _visible(value)
    parsed = json_of(raw, NOT_JSON)
    if parsed is NOT_JSON:
        return raw, []
    if isinstance(parsed, list):
        functions = [c.get("function") for c in parsed if isinstance(c, dict)]
        names = [text(f.get("name")) for f in functions if isinstance(f, dict) and f.get("name")]
        return "", names
    return (parsed, []) if isinstance(parsed, str) else ("", [])


def _first_user_message(spans: list[SpanRecord]) -> str:
    """The first user message a model was sent (the SDK's root carries no input)."""
    for s in spans:
        if not _is_llm(s):
            continue
        for n in itertools.count():
            role = s.get(f"{sc.OI_LLM_INPUT_MESSAGES}.{n}.{sc.OI_MESSAGE_ROLE}")
            if role is None:
                break
            if role == "user":
                return _visible(s.get(f"{sc.OI_LLM_INPUT_MESSAGES}.{n}.{sc.OI_MESSAGE_CONTENT}"))
    return ""


def _user_message_text(value: Any) -> str:
    """The text of a user's message object: ``{"role": "user"}`` with its text as ``content`` or as ``parts`` each
    with a ``text`` (the Gemini ``Content`` shape); anything else is no message."""
    if not isinstance(value, dict) or value.get("role") != "user":
        return ""
    if isinstance(value.get("content"), str):
        return str(value["content"])
    parts = value.get("parts")
    if not isinstance(parts, list):
        return ""
    return "".join(text(p["text"]) for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))


def _task(value: Any) -> str:
    """The task from the root's ``input.value``: a message dict, a message list, or plain text."""
    raw = text(value)
    parsed = json_of(raw)
    if isinstance(parsed, dict):
        for key in ("message", "task", "input", "content"):
            if isinstance(parsed.get(key), str):
                return str(parsed[key])
        messages = parsed.get("messages")
        if isinstance(messages, list) and messages and isinstance(messages[0], dict):
            first = messages[0]  # {"role", "content"}, or LangChain's {"type", "data": {"content"}}
            data = first.get("data")
            return text(data.get("content") if isinstance(data, dict) else first.get("content"))
        # A run's arguments with the user's message among them as a message object (Google ADK's Runner.run_async:
        # ``new_message``, the Gemini shape ``{"role": "user", "parts": [{"text": ...}]}``, or ``"content"``).
        for item in parsed.values():
            if request := _user_message_text(item):
                return request
        return ""  # a serialized object (LlamaIndex's workflow context): no request of the user's; the models' is
    if isinstance(parsed, list) and parsed and isinstance(parsed[0], dict):
        return text(parsed[0].get("content"))
    return raw
