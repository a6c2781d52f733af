"""OpenLLMetry (Traceloop's instrumentations: LangChain/LangGraph, Agno, CrewAI...) -> the GenAI conventions -> a
conversation.

A translator, like :mod:`.ai_sdk` and the user's mappings: each span is read as the GenAI span it is
(:func:`as_genai`), and the GenAI reader (:mod:`.genai`) reconstructs the run with the rules every convention
shares (speakers, handoffs, delegations, tool calls, the task). OpenLLMetry's vocabulary:

- ``traceloop.span.kind``: a ``workflow`` span is the run's root (``invoke_workflow``; OpenLLMetry also writes
  ``invoke_agent`` on it), or the team's own run where it names a team (``<namespace>.team.name``: a team whose
  leader answers as the team); an ``agent`` span is that agent's run; a ``tool`` span a tool run, named by
  ``traceloop.entity.name`` where ``gen_ai.tool.name`` is missing;
- ``traceloop.entity.input`` / ``.output``: a workflow's input is the task (a graph's ``{"inputs": {"messages":
  [...]}}``, or plain text where the run is no graph); a tool's are its arguments (LangChain's serialized call:
  its ``inputs``) and result; ``traceloop.workflow.name`` names the run;
- in a graph's run (model calls with an entity path) a model call and a tool run speak for the top-level graph
  node their ``traceloop.entity.path`` starts with (``supervisor.supervisor.agent...`` is the supervisor): the
  graph's ``invoke_agent <node>`` spans sit beside the node's work, not above it;
- a ``goto <node>`` span (``langgraph.command.goto_node``) is a transfer of control to that node, written as the
  transfer tool every reader knows; with the transfer tool's own call and span it is one handoff.

What it cannot provide: handoff reasons (the goto span's source is the ``tools`` node, not a reason; the transfer
tool's arguments are in its tool call), the termination reason.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord

from . import genai
from ._bounds import NOT_JSON, json_of
from ._conversation import Adapted, NotAConversation
from ._evidence import framework_of_run, name_or_none
from ._messages import dumps, genai_messages
from ._tree import Tree, text

SOURCE = "openllmetry"
SPAN_KIND = "traceloop.span.kind"
_PATH = "traceloop.entity.path"
_GOTO = "langgraph.command.goto_node"
_TRANSFER_TOOL = "transfer_to_agent"  # the transfer tool every reader knows: a goto is written as its call


def recognises(span: SpanRecord) -> bool:
    return SPAN_KIND in span.attributes or "traceloop.workflow.name" in span.attributes


def is_root(span: SpanRecord) -> bool:
    return bool(span.get(SPAN_KIND) == "workflow")


def _framework(root: SpanRecord, below: list[SpanRecord]) -> str:
    """The instrumentation scope's framework (never ``gen_ai.provider.name``: a model's vendor, though OpenLLMetry
    writes its framework there on workflow spans), LangGraph's on a LangGraph graph
    (:func:`._evidence.framework_of_run`); a run with no scope is taken for LangGraph's, the only workflow this
    adapter reads."""
    return framework_of_run(root, below) or "langgraph"


def _node(span: SpanRecord) -> str:
    """The top-level graph node a span runs in: the first part of its entity path ("" outside a graph)."""
    return text(span.get(_PATH)).split(".", 1)[0]


def _team(span: SpanRecord) -> str | None:
    """The team a span is the run of (``<namespace>.team.name``: a team whose leader answers as the team)."""
    return next((n for k, v in span.attributes.items() if k.endswith(".team.name") and (n := name_or_none(v))), None)


def adapt(tree: Tree, root: SpanRecord) -> Adapted | NotAConversation:
    """OpenLLMetry's vocabulary translated into the GenAI conventions (:func:`as_genai`), the run read by the GenAI
    reader (:mod:`.genai`), as every convention's is."""
    below = tree.below(root)
    # In a graph's run each model call speaks for the graph node its entity path starts with.
    graph = any(_node(s) for s in below if s.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_CHAT)
    return genai.read_translated(tree, root, lambda s: as_genai(s, graph), SOURCE, _framework(root, below))


def as_genai(span: SpanRecord, graph: bool) -> SpanRecord:
    """The span in the GenAI conventions' words: OpenLLMetry's kinds are operations (a workflow that names a team
    is the team's run, any other a workflow; an agent's span its run; a tool's span a tool run), a ``goto``
    span is a transfer of control to its node, a graph's model call speaks for its node, and the values it keeps
    in its own attributes (``traceloop.entity.input`` / ``.output``, the tool's name) are the GenAI ones."""
    kind = span.get(SPAN_KIND)
    found: dict[str, Any] = {}
    replaced: dict[str, Any] = {}
    if kind == "workflow":
        team = _team(span)
        # OpenLLMetry writes invoke_agent on a graph's workflow span too: a workflow is no agent
        replaced[sc.GEN_AI_OPERATION_NAME] = sc.OP_INVOKE_AGENT if team else sc.OP_INVOKE_WORKFLOW
        found[sc.GEN_AI_AGENT_NAME] = team
        found[sc.GEN_AI_WORKFLOW_NAME] = span.get("traceloop.workflow.name")
        task = _task(span.get("traceloop.entity.input"), plain=not graph)
        found[sc.GEN_AI_INPUT_MESSAGES] = dumps(genai_messages(task, "user")) if task else None
    elif kind == "agent":
        found[sc.GEN_AI_OPERATION_NAME] = sc.OP_INVOKE_AGENT
    elif kind == "tool" or span.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_EXECUTE_TOOL:
        op = span.get(sc.GEN_AI_OPERATION_NAME)
        found[sc.GEN_AI_OPERATION_NAME] = sc.OP_EXECUTE_TOOL
        entity = "" if op == sc.OP_EXECUTE_TOOL else text(span.get("traceloop.entity.name"))
        found[sc.GEN_AI_TOOL_NAME] = entity or span.name
        raw = span.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS) or span.get("traceloop.entity.input")
        if raw is not None:  # (OpenLLMetry writes LangChain's serialized call there: its inputs are the arguments)
            replaced[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = _inputs(raw)
        found[sc.GEN_AI_TOOL_CALL_RESULT] = span.get("traceloop.entity.output")
        if graph and span.get(sc.GEN_AI_AGENT_NAME) is None and _node(span):
            found[sc.GEN_AI_AGENT_NAME] = _node(span)
    elif span.get(sc.GEN_AI_OPERATION_NAME) == "goto" and span.get(_GOTO):
        replaced[sc.GEN_AI_OPERATION_NAME] = sc.OP_EXECUTE_TOOL
        replaced[sc.GEN_AI_TOOL_NAME] = _TRANSFER_TOOL
        replaced[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = json.dumps({"agent_name": text(span.get(_GOTO))})
    elif graph and span.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_CHAT and _node(span):
        found[sc.GEN_AI_AGENT_NAME] = _node(span)
    added = {k: v for k, v in found.items() if v is not None and k not in span.attributes}
    changes = {**added, **replaced}
    return dataclasses.replace(span, attributes={**span.attributes, **changes}) if changes else span


def _inputs(value: Any) -> str:
    """A tool's arguments: the ``inputs`` of the serialized call (the rest is LangChain's run metadata)."""
    raw = text(value)
    parsed = json_of(raw)
    inputs = parsed.get("inputs") if isinstance(parsed, dict) else None
    return json.dumps(inputs) if inputs is not None else raw


def _task(value: Any, *, plain: bool = False) -> str:
    """The first input message of the workflow (``{"inputs": {"messages": [{"role", "content"}]}}``); with
    ``plain`` (a run that is no graph), an input that is no JSON is the request itself, as plain text."""
    parsed = json_of(text(value), NOT_JSON)
    if parsed is NOT_JSON:
        return text(value).strip() if plain else ""
    inputs = parsed.get("inputs") if isinstance(parsed, dict) else None
    messages = inputs.get("messages") if isinstance(inputs, dict) else None
    if isinstance(messages, list) and messages and isinstance(messages[0], dict):
        return text(messages[0].get("content"))
    return ""
