"""The AI SDK's own telemetry (``ai.*`` span attributes) -> the GenAI conventions it maps onto -> a conversation.

The Vercel AI SDK (``ai``, JavaScript) traces itself when a call sets ``experimental_telemetry: {isEnabled:
true}``: a span per operation, named by ``ai.operationId``, with no ``gen_ai.operation.name`` (its model calls
carry a few ``gen_ai.*`` attributes: ``gen_ai.system``, ``gen_ai.request.model``, ``gen_ai.usage.*``). Each of
its operations is one the GenAI conventions name, as the SDK's own GenAI integration (``@ai-sdk/otel``) maps them:
an agent loop (``ai.generateText``, ``ai.streamText``...: ``invoke_agent``), one model call inside it
(``ai.generateText.doGenerate``, ``ai.streamText.doStream``...: ``chat``), a tool run (``ai.toolCall``:
``execute_tool``). So each span is read as the GenAI span it is (:func:`as_genai`) and the GenAI adapter reads the
run (:mod:`.genai`: agents, delegations to an agent run inside a tool, the way back, tool calls, task):

- **the operation** is ``ai.operationId``'s GenAI operation (:data:`OPERATIONS`); the outermost agent loop roots
  the conversation;
- **the agent** is the function the call names, ``ai.telemetry.functionId`` (the SDK's telemetry docs: "identify
  the function"), inherited by the spans under it;
- **the messages**: a model call's answer is ``ai.response.text`` with ``ai.response.toolCalls`` (the tools it
  calls); what it was given, ``ai.prompt.messages`` (the SDK's model messages); an agent loop's own request,
  ``ai.prompt`` (``{system, prompt, messages}``);
- **a tool run**: ``ai.toolCall.name``, ``ai.toolCall.args``, ``ai.toolCall.result``.

What it cannot provide: an agent's name where the call sets no ``functionId`` (such a run has no agent, so it is
no conversation), the text when ``recordInputs`` / ``recordOutputs`` are off (the structure is read, the reason
names the switch), recipients and the termination reason (as the GenAI conventions).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord

from . import genai
from ._bounds import json_of
from ._conversation import Adapted, NotAConversation
from ._messages import dumps, genai_messages
from ._tree import Tree, text

SOURCE = "ai-sdk"
OPERATION_ID = "ai.operationId"
FUNCTION_ID = "ai.telemetry.functionId"
# ai.operationId -> the GenAI operation it is (the map of @ai-sdk/otel's mapOperationName, with the model calls
# and tool runs inside an operation).
OPERATIONS: Mapping[str, str] = {
    "ai.generateText": sc.OP_INVOKE_AGENT,
    "ai.streamText": sc.OP_INVOKE_AGENT,
    "ai.generateObject": sc.OP_INVOKE_AGENT,
    "ai.streamObject": sc.OP_INVOKE_AGENT,
    "ai.generateText.doGenerate": sc.OP_CHAT,
    "ai.streamText.doStream": sc.OP_CHAT,
    "ai.generateObject.doGenerate": sc.OP_CHAT,
    "ai.streamObject.doStream": sc.OP_CHAT,
    "ai.toolCall": sc.OP_EXECUTE_TOOL,
}
ROOT_OPERATIONS = frozenset(op for op, genai_op in OPERATIONS.items() if genai_op == sc.OP_INVOKE_AGENT)


def recognises(span: SpanRecord) -> bool:
    return OPERATION_ID in span.attributes


def is_root(span: SpanRecord) -> bool:
    return span.get(OPERATION_ID) in ROOT_OPERATIONS


def adapt(tree: Tree, root: SpanRecord) -> Adapted | NotAConversation:
    return genai.read_translated(tree, root, as_genai, SOURCE)


def as_genai(span: SpanRecord) -> SpanRecord:
    """The span with the GenAI attributes its ``ai.*`` ones say (those it already carries are kept as they are)."""
    operation = OPERATIONS.get(text(span.get(OPERATION_ID)))
    if operation is None:
        return span
    found: dict[str, Any] = {sc.GEN_AI_OPERATION_NAME: operation}
    agent = span.get(FUNCTION_ID)
    if isinstance(agent, str) and agent.strip():
        found[sc.GEN_AI_AGENT_NAME] = agent
    if operation == sc.OP_INVOKE_AGENT:
        found[sc.GEN_AI_INPUT_MESSAGES] = _request(span.get("ai.prompt"))
    elif operation == sc.OP_CHAT:
        found[sc.GEN_AI_INPUT_MESSAGES] = _messages(json_of(span.get("ai.prompt.messages")))
        found[sc.GEN_AI_OUTPUT_MESSAGES] = _answer(span.get("ai.response.text"), span.get("ai.response.toolCalls"))
    else:
        found[sc.GEN_AI_TOOL_NAME] = span.get("ai.toolCall.name")
        found[sc.GEN_AI_TOOL_CALL_ID] = span.get("ai.toolCall.id")
        found[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = span.get("ai.toolCall.args")
        found[sc.GEN_AI_TOOL_CALL_RESULT] = span.get("ai.toolCall.result")
    added = {k: v for k, v in found.items() if v is not None and k not in span.attributes}
    return dataclasses.replace(span, attributes={**span.attributes, **added}) if added else span


def _request(value: Any) -> str | None:
    """An agent loop's request (``ai.prompt``: ``{system, prompt, messages}``, ``prompt`` text or model messages)
    as GenAI input messages; None when not recorded."""
    prompt = json_of(value)
    if not isinstance(prompt, dict):
        return None
    given = prompt.get("prompt")
    if isinstance(given, str):
        return dumps(genai_messages(given, "user"))
    return _messages(given if isinstance(given, list) else prompt.get("messages"))


def _messages(messages: Any) -> str | None:
    """The SDK's model messages (``{role, content}``: text, or parts ``text`` / ``tool-call`` / ``tool-result``)
    as GenAI input messages (:mod:`._messages` reads the SDK's shapes); None when not recorded."""
    return dumps(genai_messages(messages, "user")) if isinstance(messages, list) else None


def _answer(response_text: Any, tool_calls: Any) -> str | None:
    """A model call's answer (``ai.response.text``, ``ai.response.toolCalls``) as GenAI output messages; None when
    neither is recorded."""
    calls = json_of(tool_calls)
    if not isinstance(response_text, str) and not isinstance(calls, list):
        return None
    content: list[Any] = [{"type": "text", "text": response_text}] if isinstance(response_text, str) else []
    content += [{"type": "tool-call", **c} for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
    return dumps(genai_messages({"role": "assistant", "content": content}))
