"""Every span name, attribute key and enum value mast-otel emits, in one place.

OpenTelemetry GenAI semantic conventions (all still "Development") are used wherever they define a name: every
``gen_ai.*`` and ``error.*`` constant here is checked against the published ``opentelemetry-semantic-conventions``
package (tests/core/test_semconv.py), and everything the conventions lack lives under the one project prefix
``mast.``. The ``gen_ai.transfer.*`` handoff attributes exist only in an open proposal (PR #447): they are written
only on request (``CaptureConfig.proposed_semconv``), and ``mast.handoff.*`` is the stable contract. This module
is the contract: integrations, the collector and the judge import from here and never spell a key by hand; the
test also checks that every name docs/spans.md quotes is defined here.
"""

from __future__ import annotations

import re
from typing import Final

from openinference.semconv import trace as _oi

# --- instrumentation scope -------------------------------------------------
SCOPE_NAME: Final = "mast_otel"
SCHEMA_URL: Final = "https://opentelemetry.io/schemas/1.37.0"

# --- GenAI semantic conventions ---------------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_WORKFLOW_NAME: Final = "gen_ai.workflow.name"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_SYSTEM: Final = "gen_ai.system"  # deprecated for gen_ai.provider.name; older instrumentations still write it
ERROR_TYPE: Final = "error.type"

# Proposal stage only (semantic-conventions PR #447, not published): written when CaptureConfig.proposed_semconv is
# set, next to the stable mast.handoff.* attributes, never instead of them.
GEN_AI_TRANSFER_TARGET_NAME: Final = "gen_ai.transfer.target.name"
GEN_AI_TRANSFER_TARGET_TYPE: Final = "gen_ai.transfer.target.type"
GEN_AI_TRANSFER_MODE: Final = "gen_ai.transfer.mode"
PROPOSED_ATTRIBUTES: Final = (GEN_AI_TRANSFER_TARGET_NAME, GEN_AI_TRANSFER_TARGET_TYPE, GEN_AI_TRANSFER_MODE)

# gen_ai.operation.name values
OP_INVOKE_WORKFLOW: Final = "invoke_workflow"
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_EXECUTE_TOOL: Final = "execute_tool"
OP_CHAT: Final = "chat"
OP_GENERATE_CONTENT: Final = "generate_content"
OP_TEXT_COMPLETION: Final = "text_completion"

# The semconv event a judge verdict is mirrored to, parented to the cited span (an event name: the Python package
# publishes attribute names only).
EVAL_EVENT_NAME: Final = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"

# --- mast.*: what the conventions lack --------------------------------------
MAST_SPAN_TYPE: Final = "mast.span.type"
MAST_FRAMEWORK: Final = "mast.framework"


def framework_name(name: str) -> str:
    """The one spelling of a framework's name in ``mast.framework``, whether instrumented or read from another
    instrumentation: its package name normalized as package indexes compare names (PEP 503: lower case, each run of
    ``-``, ``_``, ``.`` and spaces one dash), so ``autogen_agentchat``, ``autogen-agentchat`` and
    ``Autogen.AgentChat`` are one framework, and one series in the metrics."""
    return _SEPARATORS.sub("-", name.strip()).strip("-").lower()


_SEPARATORS = re.compile(r"[-_.\s]+")
MAST_SOURCE: Final = "mast.source"  # the adapter that read a conversation another instrumentation recorded

# mast.span.type values: one per recorder call, so the collector and the judge
# never have to guess a span's role from its name.
SPAN_TYPE_CONVERSATION: Final = "conversation"
SPAN_TYPE_AGENT_TURN: Final = "agent_turn"
SPAN_TYPE_MESSAGE: Final = "message"
SPAN_TYPE_HANDOFF: Final = "handoff"
SPAN_TYPE_TOOL_CALL: Final = "tool_call"
SPAN_TYPE_VERDICT: Final = "verdict"

# conversation (root) span
CONVERSATION_TASK: Final = "mast.conversation.task"
CONVERSATION_PARENT_ID: Final = "mast.conversation.parent_id"
CONVERSATION_ROUNDS: Final = "mast.conversation.rounds"
CONVERSATION_MAX_ROUNDS: Final = "mast.conversation.max_rounds"
CONVERSATION_HANDOFFS: Final = "mast.conversation.handoffs"
CONVERSATION_BROADCASTS: Final = "mast.conversation.broadcast_copies"
CONVERSATION_AGENTS: Final = "mast.conversation.agents"
# The framework's own session key when it has one (LangGraph's ``thread_id``): runs of one thread share it.
CONVERSATION_THREAD_ID: Final = "mast.conversation.thread_id"
# How the framework orders its agents when it says so itself (CrewAI's ``Process``: sequential, hierarchical).
CONVERSATION_PROCESS: Final = "mast.conversation.process"
TERMINATION_REASON: Final = "mast.termination.reason"
TERMINATION_DETAIL: Final = "mast.termination.detail"
TERMINATION_AGENT: Final = "mast.termination.agent"

# mast.termination.reason values. MAST modes 1.5 (unaware of termination) and
# 3.1 (premature termination) turn on which of these ended a run.
TERMINATION_MESSAGE: Final = "termination_message"
TERMINATION_MAX_ROUNDS: Final = "max_rounds"
TERMINATION_MAX_TURNS: Final = "max_turns"
TERMINATION_MAX_AUTO_REPLIES: Final = "max_auto_replies"
TERMINATION_NO_REPLY: Final = "no_reply"
TERMINATION_NO_SPEAKER: Final = "no_eligible_speaker"
TERMINATION_USER_EXIT: Final = "user_exit"
# The run paused for a person (LangGraph ``interrupt()`` / breakpoints): not finished, waiting on input.
TERMINATION_HUMAN_INPUT: Final = "human_input"
TERMINATION_HANDOFF: Final = "handoff_terminate"
TERMINATION_IDLE: Final = "idle"
TERMINATION_BUDGET: Final = "budget_exceeded"
TERMINATION_ERROR: Final = "error"
TERMINATION_COMPLETED: Final = "completed"
TERMINATION_GUARDRAIL: Final = "guardrail"  # a guardrail's tripwire stopped the run (OpenAI Agents SDK)
# AG2 1.x channels: a tool returned ``Finish``; the channel was closed by a participant; its TTL ran out; an
# expectation (an acknowledgement or reply deadline) was violated and the hub closed it.
TERMINATION_FINISH: Final = "finish"
TERMINATION_CLOSED: Final = "closed"
TERMINATION_EXPIRED: Final = "expired"
TERMINATION_EXPECTATION: Final = "expectation_violated"
TERMINATION_REASONS: Final = (
    TERMINATION_MESSAGE,
    TERMINATION_MAX_ROUNDS,
    TERMINATION_MAX_TURNS,
    TERMINATION_MAX_AUTO_REPLIES,
    TERMINATION_NO_REPLY,
    TERMINATION_NO_SPEAKER,
    TERMINATION_USER_EXIT,
    TERMINATION_HUMAN_INPUT,
    TERMINATION_HANDOFF,
    TERMINATION_IDLE,
    TERMINATION_BUDGET,
    TERMINATION_ERROR,
    TERMINATION_COMPLETED,
    TERMINATION_GUARDRAIL,
    TERMINATION_FINISH,
    TERMINATION_CLOSED,
    TERMINATION_EXPIRED,
    TERMINATION_EXPECTATION,
)

# agent turn span
TURN_REPLIED: Final = "mast.turn.replied"
TURN_ACTION: Final = "mast.turn.action"  # the action a role ran in this turn (MetaGPT's Action name)

# message span
MESSAGE_SENDER: Final = "mast.message.sender"
MESSAGE_RECIPIENTS: Final = "mast.message.recipients"
MESSAGE_INDEX: Final = "mast.message.index"
MESSAGE_KIND: Final = "mast.message.kind"
MESSAGE_CONTENT: Final = "mast.message.content"
MESSAGE_TOOL_CALLS: Final = "mast.message.tool_calls"
MESSAGE_BROADCAST_TO: Final = "mast.message.broadcast_to"
MESSAGE_CAUSE: Final = "mast.message.cause"
MESSAGE_TRUNCATED: Final = "mast.message.truncated"
MESSAGE_REDACTED: Final = "mast.message.redacted"

# mast.message.kind values
KIND_MESSAGE: Final = "message"
KIND_TOOL_CALL: Final = "tool_call"
KIND_TOOL_RESULT: Final = "tool_result"
KIND_BROADCAST: Final = "broadcast"
MESSAGE_KINDS: Final = (KIND_MESSAGE, KIND_TOOL_CALL, KIND_TOOL_RESULT, KIND_BROADCAST)

# handoff span
HANDOFF_FROM: Final = "mast.handoff.from"
HANDOFF_TO: Final = "mast.handoff.to"
HANDOFF_CANDIDATES: Final = "mast.handoff.candidates"
HANDOFF_REASON: Final = "mast.handoff.reason"
HANDOFF_INDEX: Final = "mast.handoff.index"
# What the selection said beyond its reason: an LLM's transfer tool call arguments, a stated reason (AG2 1.x
# ``Handoff.reason``), the graph condition that fired. Content, redacted.
HANDOFF_DETAIL: Final = "mast.handoff.detail"

# mast.handoff.reason values
HANDOFF_ROUND_ROBIN: Final = "round_robin"
HANDOFF_RANDOM: Final = "random"
HANDOFF_MANUAL: Final = "manual"
HANDOFF_LLM_SELECTION: Final = "llm_selection"
HANDOFF_CUSTOM: Final = "custom_function"
HANDOFF_INITIAL: Final = "initial_agent"
HANDOFF_AFTER_WORK: Final = "after_work"
HANDOFF_LLM_CONDITION: Final = "llm_condition"
HANDOFF_CONTEXT_CONDITION: Final = "context_condition"
HANDOFF_TOOL_RESULT: Final = "tool_result_target"
HANDOFF_TOOL_CALL: Final = "tool_call"
HANDOFF_TOOL_RETURN: Final = "tool_return"
HANDOFF_USER_RETURN: Final = "user_return"
HANDOFF_ROUTING: Final = "routing"
HANDOFF_DELEGATION: Final = "delegation"
HANDOFF_REASONS: Final = (
    HANDOFF_ROUND_ROBIN,
    HANDOFF_RANDOM,
    HANDOFF_MANUAL,
    HANDOFF_LLM_SELECTION,
    HANDOFF_CUSTOM,
    HANDOFF_INITIAL,
    HANDOFF_AFTER_WORK,
    HANDOFF_LLM_CONDITION,
    HANDOFF_CONTEXT_CONDITION,
    HANDOFF_TOOL_RESULT,
    HANDOFF_TOOL_CALL,
    HANDOFF_TOOL_RETURN,
    HANDOFF_USER_RETURN,
    HANDOFF_ROUTING,
    HANDOFF_DELEGATION,
)
# A handoff whose target is "end the conversation" has no agent to name.
HANDOFF_TO_TERMINATE: Final = "<terminate>"
# True when no agent decided the handoff: the framework added it (langgraph-supervisor's "transfer back").
HANDOFF_SYNTHETIC: Final = "mast.handoff.synthetic"

# tool span
TOOL_SUCCESS: Final = "mast.tool.success"
# A guardrail check recorded as a tool call (``gen_ai.tool.type=guardrail``): did its tripwire fire?
TOOL_TYPE_GUARDRAIL: Final = "guardrail"
GUARDRAIL_TRIGGERED: Final = "mast.guardrail.triggered"

# --- additions for autogen-agentchat (teams, Magentic-One) ---------------------
# Termination reasons a team's stop condition or its caller can give (values of mast.termination.reason).
TERMINATION_CANCELLED: Final = "cancelled"  # the caller cancelled the run (CancellationToken, task.cancel())
TERMINATION_TIMEOUT: Final = "timeout"  # a time limit (autogen's TimeoutTermination)
TERMINATION_EXTERNAL: Final = "external"  # stopped from outside by the program (autogen's ExternalTermination)
TERMINATION_FUNCTION_CALL: Final = "function_call"  # a named tool ran (autogen's FunctionCallTermination)
TERMINATION_SOURCE_MATCH: Final = "source_match"  # a named agent spoke (autogen's SourceMatchTermination)
TERMINATION_CUSTOM: Final = "custom_condition"  # a user-defined stop condition
TERMINATION_GRAPH_COMPLETE: Final = "graph_complete"  # a workflow graph ran out of ready nodes
# The framework's own class(es) of the stop condition that fired, e.g. ["TextMentionTermination"].
TERMINATION_CONDITION: Final = "mast.termination.condition"

# Why control moved, for team types the reasons above do not name.
HANDOFF_GRAPH_EDGE: Final = "graph_edge"  # a workflow graph's edge (its condition, if any, in the detail)
HANDOFF_PROGRESS_LEDGER: Final = "progress_ledger"  # an orchestrator's ledger named the next speaker
HANDOFF_ONLY_CANDIDATE: Final = "only_candidate"  # one eligible speaker left: no selection was made
HANDOFF_SAME_SPEAKER: Final = "same_speaker"  # no handoff was requested, the current speaker keeps the turn
HANDOFF_STATED_REASON: Final = "mast.handoff.stated_reason"  # the selecting LLM's own words on why
HANDOFF_ATTEMPTS: Final = "mast.handoff.attempts"  # LLM selection attempts used

# Conversation root: what the team is.
CONVERSATION_TEAM_TYPE: Final = "mast.conversation.team_type"
CONVERSATION_PARTICIPANTS: Final = "mast.conversation.participants"
# Span events on the conversation root for an orchestrator's planning (Magentic-One's outer loop).
EVENT_STALL: Final = "mast.orchestrator.stall"
EVENT_REPLAN: Final = "mast.orchestrator.replan"
EVENT_PLAN: Final = "mast.orchestrator.plan"
ORCHESTRATOR_STALLS: Final = "mast.orchestrator.stalls"
ORCHESTRATOR_MAX_STALLS: Final = "mast.orchestrator.max_stalls"
ORCHESTRATOR_REASON: Final = "mast.orchestrator.reason"
ORCHESTRATOR_FACTS: Final = "mast.orchestrator.facts"
ORCHESTRATOR_PLAN: Final = "mast.orchestrator.plan"

# Message and turn details that are not messages of their own.
MESSAGE_TYPE: Final = "mast.message.type"  # the framework's message class, e.g. "HandoffMessage"
MESSAGE_THOUGHT: Final = "mast.message.thought"  # the model's reasoning text behind the message
TURN_STREAM_CHUNKS: Final = "mast.turn.stream_chunks"  # streamed model chunks during the turn

# --- recorded traces replayed by `mast-otel replay` ---------------------------
# On the conversation root: where the record came from, so the judge eval can pair a verdict with it.
REPLAY_TRACE_KEY: Final = "mast.replay.trace_key"  # "{mad_trace_key}_{trace_id}": unique per record
REPLAY_MAD_TRACE_KEY: Final = "mast.replay.mad_trace_key"  # the MAD trace set, e.g. "AG2_GSM_Plus_GPT4o"
REPLAY_TRACE_ID: Final = "mast.replay.trace_id"  # the record's trace_id (reused across trace sets), as a string
REPLAY_RECORD_INDEX: Final = "mast.replay.record_index"  # position of the record in the replayed file
REPLAY_BENCHMARK: Final = "mast.replay.benchmark"  # benchmark_name, e.g. "GSM"
REPLAY_LLM: Final = "mast.replay.llm"  # llm_name: the model the recorded MAS ran on
# On a message span whose recorded kind has no mast.message.kind equivalent (e.g. "system").
REPLAY_STEP_KIND: Final = "mast.replay.step_kind"
# On a message span: the sender's role as the log wrote it, when it says more than the sender (Who&When's
# Magentic-One runs: "Orchestrator (thought)", "Orchestrator (-> WebSurfer)", "Orchestrator (termination condition)").
REPLAY_ROLE: Final = "mast.replay.role"
# Reference labels shipped with a recorded trace (MAD: the released o1 labels, a noisy reference). One boolean
# per labelled mode, present or not (``mast.reference.fm.1_3``), plus the list of the present ones.
REFERENCE_FM_PREFIX: Final = "mast.reference.fm."
REFERENCE_FAILURE_MODES: Final = "mast.reference.failure_modes"
REFERENCE_PREFIX: Final = "mast.reference."
# Who&When's human labels: the agent, the message (its mast.message.index) and the reason found decisive.
REFERENCE_DECISIVE_AGENT: Final = "mast.reference.decisive_agent"
REFERENCE_DECISIVE_STEP: Final = "mast.reference.decisive_step"
REFERENCE_DECISIVE_REASON: Final = "mast.reference.decisive_reason"

# --- labels the collector adds (judge output) ------------------------------
JUDGE_STATUS: Final = "mast.judge.status"
JUDGE_STATUS_REASON: Final = "mast.judge.status_reason"
JUDGE_MODEL: Final = "mast.judge.model"
JUDGE_TOKENS_IN: Final = "mast.judge.tokens_in"
JUDGE_TOKENS_OUT: Final = "mast.judge.tokens_out"
LABEL_SOURCE: Final = "mast.label.source"
FAILED: Final = "mast.failed"
FAILURE_MODES: Final = "mast.failure_modes"
FAILURE_MODE: Final = "mast.failure_mode"
FAILURE_MODE_NAME: Final = "mast.failure_mode.name"
TASK_COMPLETED: Final = "mast.task_completed"
VERDICT_SUMMARY: Final = "mast.verdict.summary"
FM_PREFIX: Final = "mast.fm."  # + "1_3": one boolean per present mode
# Who and when: on the decisive message span ``mast.decisive=true`` (+ the reason); on the root the agent and the
# message index, so a Jaeger tag search and a trace view go straight to it.
DECISIVE: Final = "mast.decisive"
DECISIVE_REASON: Final = "mast.decisive.reason"
DECISIVE_AGENT: Final = "mast.decisive.agent"
DECISIVE_MESSAGE_INDEX: Final = "mast.decisive.message_index"

# mast.judge.status values
JUDGE_OK: Final = "ok"
JUDGE_ERROR: Final = "error"
JUDGE_SKIPPED: Final = "skipped"
JUDGE_TRUNCATED: Final = "truncated"
JUDGE_PARTIAL: Final = "partial"

# mast.label.source values
SOURCE_LLM: Final = "llm"
SOURCE_RULES: Final = "rules"
SOURCE_NONE: Final = "none"  # a skipped verdict: no judge looked at the conversation

# --- structural signals the collector adds (facts, not verdicts; mast_otel.judge.signals) ------------------
SIGNALS: Final = "mast.signals"  # on the root: the names of the signals seen, e.g. ["round_limit"]
SIGNAL_PREFIX: Final = "mast.signal."  # + name = true on the root and on each span the signal points at;
# on the root also + name + ".mode" (the MAST mode it hints at) and + name + ".detail" (what exactly was seen)

VERDICT_SPAN_NAME: Final = "mast.verdict"


def fm_attribute(mode_id: str) -> str:
    """The per-mode boolean key, e.g. ``"1.3"`` -> ``"mast.fm.1_3"`` (Jaeger tag search needs no dots in values)."""
    return FM_PREFIX + mode_id.replace(".", "_")


def signal_attribute(name: str) -> str:
    """The per-signal boolean key, e.g. ``"round_limit"`` -> ``"mast.signal.round_limit"``."""
    return SIGNAL_PREFIX + name


def reference_fm_attribute(mode_id: str) -> str:
    """The per-mode reference-label key, e.g. ``"1.3"`` -> ``"mast.reference.fm.1_3"``."""
    return REFERENCE_FM_PREFIX + mode_id.replace(".", "_")


def workflow_span_name(name: str) -> str:
    return f"{OP_INVOKE_WORKFLOW} {name}"


def agent_span_name(agent: str) -> str:
    return f"{OP_INVOKE_AGENT} {agent}"


def tool_span_name(tool: str) -> str:
    return f"{OP_EXECUTE_TOOL} {tool}"


def message_span_name(sender: str, recipient: str) -> str:
    return f"message {sender} -> {recipient}"


def handoff_span_name(source: str, target: str) -> str:
    return f"handoff {source} -> {target}"


# --- OpenInference (what Phoenix, Arize and Langfuse key on), alongside the GenAI names ----------------------
# Names from openinference-semantic-conventions (a dependency with no dependencies of its own). Written unless
# switched off (MAST_OTEL_OPENINFERENCE=false / instrument(openinference=False)); content ones only with content
# capture on. Kinds: conversation root CHAIN, agent turn AGENT, tool call TOOL, handoff DECISION (a routing
# decision), message CHAIN (a step of the workflow: OpenInference has no kind for an inter-agent message).
OI_SPAN_KIND: Final = _oi.SpanAttributes.OPENINFERENCE_SPAN_KIND
# OpenInference's session: the runs of one chat session carry it (a conversation across traces, adapters._grouping).
OI_SESSION_ID: Final = _oi.SpanAttributes.SESSION_ID
OI_AGENT_NAME: Final = _oi.SpanAttributes.AGENT_NAME
OI_GRAPH_NODE_ID: Final = _oi.SpanAttributes.GRAPH_NODE_ID
OI_GRAPH_NODE_NAME: Final = _oi.SpanAttributes.GRAPH_NODE_NAME
OI_GRAPH_NODE_PARENT_ID: Final = _oi.SpanAttributes.GRAPH_NODE_PARENT_ID
OI_INPUT_VALUE: Final = _oi.SpanAttributes.INPUT_VALUE
OI_OUTPUT_VALUE: Final = _oi.SpanAttributes.OUTPUT_VALUE
OI_TOOL_NAME: Final = _oi.SpanAttributes.TOOL_NAME
OI_KIND_CHAIN: Final = _oi.OpenInferenceSpanKindValues.CHAIN.value
OI_KIND_AGENT: Final = _oi.OpenInferenceSpanKindValues.AGENT.value
OI_KIND_TOOL: Final = _oi.OpenInferenceSpanKindValues.TOOL.value
OI_KIND_DECISION: Final = _oi.OpenInferenceSpanKindValues.DECISION.value
# Read by the OpenInference adapter (mast_otel.adapters.openinference) only, never written.
OI_KIND_LLM: Final = _oi.OpenInferenceSpanKindValues.LLM.value
OI_LLM_SYSTEM: Final = _oi.SpanAttributes.LLM_SYSTEM
OI_METADATA: Final = _oi.SpanAttributes.METADATA
OI_LLM_INPUT_MESSAGES: Final = _oi.SpanAttributes.LLM_INPUT_MESSAGES
OI_LLM_OUTPUT_MESSAGES: Final = _oi.SpanAttributes.LLM_OUTPUT_MESSAGES
OI_MESSAGE_ROLE: Final = _oi.MessageAttributes.MESSAGE_ROLE
OI_MESSAGE_CONTENT: Final = _oi.MessageAttributes.MESSAGE_CONTENT
OI_MESSAGE_CONTENTS: Final = _oi.MessageAttributes.MESSAGE_CONTENTS
OI_MESSAGE_CONTENT_TEXT: Final = _oi.MessageContentAttributes.MESSAGE_CONTENT_TEXT
OI_LLM_FINISH_REASON: Final = _oi.SpanAttributes.LLM_FINISH_REASON
OI_LLM_TOKEN_COUNT_TOTAL: Final = _oi.SpanAttributes.LLM_TOKEN_COUNT_TOTAL
OI_MESSAGE_TOOL_CALLS: Final = _oi.MessageAttributes.MESSAGE_TOOL_CALLS
OI_TOOL_CALL_FUNCTION_NAME: Final = _oi.ToolCallAttributes.TOOL_CALL_FUNCTION_NAME
OI_TOOL_CALL_FUNCTION_ARGUMENTS: Final = _oi.ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON
