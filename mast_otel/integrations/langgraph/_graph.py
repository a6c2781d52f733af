"""What a LangGraph run means in MAST terms: which nodes are agents, who sent a message, why control moved.

Pure functions over LangGraph's and LangChain's own objects (graphs, tasks, messages, commands); no spans here.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

from mast_otel import semconv as sc

# The node metadata key that marks a node as an agent (True, or the agent's name) or not (False).
AGENT_KEY = "mast_otel.agent"
USER = "user"  # the sender of the run's input messages
START = "__start__"
END = "__end__"
_BRANCH_PREFIX = "branch:to:"
_TASKS_CHANNEL = "__pregel_tasks"
_HANDOFF_BACK = "__is_handoff_back"  # langgraph_supervisor.handoff.METADATA_KEY_IS_HANDOFF_BACK


def _marker(metadata: Mapping[str, Any] | None) -> Any:
    return (metadata or {}).get(AGENT_KEY)


def node_agent_name(name: str, metadata: Mapping[str, Any] | None, has_subgraph: bool) -> str | None:
    """The agent a node stands for, or None: a node marked in its metadata, else any node that runs a graph."""
    mark = _marker(metadata)
    if mark is False:
        return None
    if isinstance(mark, str) and mark:
        return mark
    if mark or has_subgraph:
        return name
    return None


def task_agent(task: Any) -> str | None:
    """The agent a running task stands for (``PregelExecutableTask``), or None."""
    metadata = (getattr(task, "config", None) or {}).get("metadata")
    return node_agent_name(task.name, metadata, bool(getattr(task, "subgraphs", ())))


_AGENTS_OF: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()


def graph_agents(graph: Any) -> dict[str, str]:
    """Node name -> agent name for every agent node of a compiled graph (cached: a compiled graph's nodes are fixed,
    and a subgraph is entered once per parent step)."""
    try:
        return _AGENTS_OF[graph]
    except (KeyError, TypeError):
        pass
    agents = _graph_agents(graph)
    try:
        _AGENTS_OF[graph] = agents
    except TypeError:  # not weakly referenceable: computed each time
        pass
    return agents


def _graph_agents(graph: Any) -> dict[str, str]:
    agents: dict[str, str] = {}
    for name, node in (getattr(graph, "nodes", None) or {}).items():
        agent = node_agent_name(name, getattr(node, "metadata", None), bool(getattr(node, "subgraphs", ())))
        if agent is not None:
            agents[name] = agent
    return agents


def targets(writes: Iterable[tuple[str, Any]]) -> list[str]:
    """The nodes a finished task sent control to, in write order (edges, conditional edges, ``Command.goto``,
    ``Send``): LangGraph writes each as a ``branch:to:NODE`` channel or a ``Send`` packet."""
    found: list[str] = []
    for channel, value in writes:
        node: str | None = None
        if channel.startswith(_BRANCH_PREFIX):
            node = channel[len(_BRANCH_PREFIX) :]
        elif channel == _TASKS_CHANNEL:
            node = getattr(value, "node", None)
        if node and node not in found:
            found.append(node)
    return found


def messages_in(value: Any) -> list[Any]:
    """The LangChain messages a state value or update holds (a message, a list, a state dict), in order."""
    from langchain_core.messages import BaseMessage

    if isinstance(value, BaseMessage):
        return [value]
    if isinstance(value, (list, tuple)):
        return [m for m in value if isinstance(m, BaseMessage)]
    if isinstance(value, Mapping):
        out: list[Any] = []
        for item in value.values():
            if isinstance(item, (BaseMessage, list, tuple)):
                out.extend(messages_in(item))
        return out
    return []


def written_messages(writes: Iterable[tuple[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for channel, value in writes:
        if not channel.startswith(_BRANCH_PREFIX) and channel != _TASKS_CHANNEL:
            out.extend(messages_in(value))
    return out


def input_messages(value: Any) -> list[Any]:
    """The messages of a run's input (message objects, ``{"role": ..., "content": ...}`` dicts, tuples)."""
    raw = value.get("messages") if isinstance(value, Mapping) else None
    if raw is None:
        return messages_in(value)
    from langchain_core.messages import convert_to_messages

    try:
        return list(convert_to_messages(raw if isinstance(raw, (list, tuple)) else [raw]))
    except (ValueError, TypeError, NotImplementedError):
        return []


def task_text(value: Any) -> Any:
    """The run's task for the root: the last human message of the input, else the input itself."""
    humans = [m for m in input_messages(value) if getattr(m, "type", None) == "human"]
    if humans:
        return humans[-1].content
    resume = getattr(value, "resume", None)
    if resume is not None:
        return f"resume: {resume}"
    return value


def is_handoff_back(message: Any) -> bool:
    return bool((getattr(message, "response_metadata", None) or {}).get(_HANDOFF_BACK))


def tool_calls_of(message: Any) -> list[dict[str, Any]]:
    return list(getattr(message, "tool_calls", None) or [])


def sender_of(message: Any, agent: str | None, fallback: str) -> str:
    """Who sent a message: ``AIMessage.name`` when the agent stamped it, else the agent (node) whose turn it is."""
    kind = getattr(message, "type", None)
    name = getattr(message, "name", None)
    if kind == "human":
        return name or USER
    if kind == "tool":
        return name or "tool"
    return name or agent or fallback


def kind_of(message: Any) -> str:
    if getattr(message, "type", None) == "tool":
        return sc.KIND_TOOL_RESULT
    if tool_calls_of(message):
        return sc.KIND_TOOL_CALL
    return sc.KIND_MESSAGE


def describe_call(name: str, args: Any) -> str:
    try:
        rendered = json.dumps(args, default=str, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        rendered = str(args)
    return f"{name}({rendered})"


def command_targets(result: Any) -> list[str]:
    """The nodes a tool's ``Command`` result sends control to (``goto``: a name, a ``Send``, or a list of them)."""
    from langgraph.types import Command

    commands = [r for r in (result if isinstance(result, list) else [result]) if isinstance(r, Command)]
    out: list[str] = []
    for cmd in commands:
        gotos = cmd.goto if isinstance(cmd.goto, (list, tuple)) else [cmd.goto]
        for go in gotos:
            node = go if isinstance(go, str) else getattr(go, "node", None)
            if node and node != END:
                out.append(node)
    return out


def routing_detail(graph: Any, source: str, target: str) -> tuple[str, str]:
    """Why ``source`` sent control to ``target`` when no tool decided it: (reason, detail) from the graph's edges."""
    builder = getattr(graph, "builder", None)
    if (source, target) in (getattr(builder, "edges", None) or ()):
        return sc.HANDOFF_ROUTING, f"edge {source} -> {target}"
    branches = (getattr(builder, "branches", None) or {}).get(source) or {}
    for name, spec in branches.items():
        ends = getattr(spec, "ends", None)
        if ends is None or target in ends.values():
            return sc.HANDOFF_ROUTING, f"conditional edge {name} -> {target}"
    return sc.HANDOFF_ROUTING, f"Command(goto={target!r})"
