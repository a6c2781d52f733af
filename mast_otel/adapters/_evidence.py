"""Rules every adapter applies, each named by the kind of evidence it reads, never by a framework.

- **The framework** comes from the instrumentation scope that wrote the run (its tracer's name), never from a
  model-provider attribute (``llm.system``, ``gen_ai.provider.name`` name the model's vendor): a small table of
  scopes whose name does not say the framework, else the scope's name with the instrumentation prefixes stripped
  (``openinference.instrumentation.agno`` -> ``agno``). Scopes of model-client instrumentations (``openai``,
  ``litellm``...) say nothing of the framework and are passed over. A JavaScript instrumentation's scope is its
  npm package (``@scope/package``): a package that instruments another library
  (``@arizeai/openinference-instrumentation-<x>``, ``@traceloop/instrumentation-<x>``,
  ``@opentelemetry/instrumentation-<x>``) names that library's JavaScript port, ``<x>-js`` (``openai-agents-js``,
  ``langchain-js``: told apart from the Python library that the Python package of the same name instruments); a
  framework's own package (``@mastra/otel-exporter``) names the framework by its npm scope, as it names itself
  (``mastra``); an instrumentation vendor's other packages (``@traceloop/node-server-sdk``) name none. A
  framework that traces itself under a short tracer name says it in the table: the Vercel AI SDK's ``ai``
  (``trace.getTracer("ai")``, its ``experimental_telemetry`` spans) is ``vercel-ai``. A scope named for a
  convention (``gen_ai``: the tracer of ``@ai-sdk/otel``'s default integration, the GenAI conventions written for
  any framework) names the convention, not a framework: it is passed over like a model client's, and the run's
  framework is then what the rest of the data says, else ``unknown``.
  LangChain's instrumentations trace LangGraph too: on a run rooted in a LangGraph graph they name ``langgraph``.
- **Ids are never names**: a value that looks like an id (hex digits, a UUID) does not name an agent.
- **A handoff tool** is a transfer, handoff, delegation, assignment or routing tool in any naming
  (``transfer_to_x``, ``Handoff-transfer_to_x``, ``handoff to x``, ``delegate_task_to_member``, ``handoff`` with a
  ``to_agent`` argument, ``Delegate work to coworker``, ``assign_task_to_member``, ``route_to_x``): its target is
  the agent its arguments or its name designate. Its name says nothing else than whom to (``route_request``,
  ``assign_ticket`` are ordinary tools).
- **Hidden content** (an instrumentation's placeholder for text it was told not to record) is no text: it is
  skipped, and the reason the judge cannot read the run names the switch that hid it.
- **A run with no content** names the switch of each instrumentation that wrote its spans, told by its scope
  (:data:`CONTENT_SWITCHES`), never by the framework: one framework traced by two instrumentations has two
  switches (Agno under the official GenAI instrumentation and under OpenInference).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord

from ._bounds import json_of
from ._tree import text

# Scopes whose name does not say the framework.
_SCOPE_FRAMEWORKS = {
    "gcp.vertex.agent": "google-adk",
    "strands.telemetry.tracer": "strands",
    "ai": "vercel-ai",  # the Vercel AI SDK's own tracer (npm package ``ai``: its ai.* spans)
}
_SCOPE_PREFIXES = ("openinference.instrumentation.", "opentelemetry.instrumentation.", "opentelemetry.")
# An npm package's name: @scope/package.
_NPM = re.compile(r"@([a-z0-9][a-z0-9._~-]*)/([a-z0-9][a-z0-9._~-]*)", re.IGNORECASE)
# An npm package that instruments another library, the library's name last.
_NPM_INSTRUMENTATION = re.compile(r"(?:openinference-)?instrumentation-(.+)")
# npm scopes of instrumentation vendors: their packages instrument others' libraries, never a framework of theirs.
_NPM_VENDORS = frozenset({"arizeai", "traceloop", "opentelemetry"})
# Instrumentations of model clients and transports: their spans sit inside any framework's run.
_NOT_FRAMEWORKS = frozenset({
    "openai", "anthropic", "litellm", "bedrock", "boto3", "botocore", "mistralai", "groq", "vertexai",
    "google-genai", "google-generativeai", "cohere", "ollama", "together", "replicate", "httpx", "requests",
    "urllib", "urllib3", "aiohttp-client", "asyncio", "threading", "sqlalchemy", "instructor", "dspy",
    "http", "undici", "fetch",
})  # fmt: skip
# Parts of a scope's name that name a semantic convention, not whoever writes it: any framework may write the GenAI
# conventions under the tracer ``gen_ai`` (the default integration of the Vercel AI SDK 7's ``@ai-sdk/otel`` does),
# and the official instrumentations are ``opentelemetry.instrumentation.genai.<library>``, the library last.
# (compared as the scope's name is read: instrumentation prefixes stripped, each dotted part, dashes)
_CONVENTIONS = frozenset({"gen-ai", "genai"})


def scope_framework(scope: str | None) -> str | None:
    """The framework an instrumentation scope's name says, or None (no scope, or a model client's)."""
    if not scope:
        return None
    if scope in _SCOPE_FRAMEWORKS:
        return _SCOPE_FRAMEWORKS[scope]
    npm = _NPM.fullmatch(scope.strip())
    if npm:
        return _npm_framework(npm.group(1).lower(), npm.group(2).lower())
    name = scope
    for prefix in _SCOPE_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    # The first dotted part that is not a convention's name: the library the instrumentation is for.
    parts = [p.replace("_", "-").lower() for p in name.split(".")]
    name = next((p for p in parts if p not in _CONVENTIONS), "")
    return None if not name or name in _NOT_FRAMEWORKS else name


def _npm_framework(scope: str, package: str) -> str | None:
    """The framework a JavaScript instrumentation's npm package names: ``<x>-js`` for a package that instruments
    the library ``<x>`` (None when ``<x>`` is a model client), else the npm scope of a framework's own package."""
    instrumented = _NPM_INSTRUMENTATION.fullmatch(package)
    if instrumented:
        library = instrumented.group(1).replace("_", "-")
        return None if library in _NOT_FRAMEWORKS else f"{library}-js"
    return None if scope in _NPM_VENDORS else scope.replace("_", "-")


def framework_from_scopes(spans: Iterable[SpanRecord]) -> str | None:
    """The first framework the spans' scopes say (pass the root first), or None."""
    for s in spans:
        found = scope_framework(s.scope_name)
        if found:
            return found
    return None


def framework_of_run(root: SpanRecord, spans: Iterable[SpanRecord]) -> str | None:
    """The framework the scopes say (the root's first), or None. LangChain's instrumentations, in either language,
    trace LangGraph's graphs too: a run rooted in a LangGraph graph is LangGraph's (``langgraph``,
    ``langgraph-js``), whichever convention wrote it."""
    found = framework_from_scopes([root, *spans])
    if found in ("langchain", "langchain-js") and is_langgraph_root(root):
        return found.replace("langchain", "langgraph", 1)
    return found


# Where a run's root names its graph: the span name's last word, the conventions' workflow names.
_GRAPH_NAMES = (sc.GEN_AI_WORKFLOW_NAME, "traceloop.workflow.name")


def is_langgraph_root(root: SpanRecord) -> bool:
    """A LangGraph graph's run: named ``LangGraph`` (the graph's default name, in its span name or a workflow-name
    attribute), or marked by LangChain's run metadata (``ls_integration: langgraph``)."""
    named = [root.name.rsplit(" ", 1)[-1], *(text(root.get(key)) for key in _GRAPH_NAMES)]
    return "LangGraph" in named or "langgraph" in text(root.get(sc.OI_METADATA))


_ID = re.compile(r"[0-9a-f]{12,}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


def looks_like_id(value: str) -> bool:
    """A hex string of 12 digits or more (a span, trace or object id) or a UUID: an id, not a name."""
    return bool(_ID.fullmatch(value.strip()))


def name_or_none(value: Any) -> str | None:
    """An attribute that may name an agent: its text, unless it is empty or an id."""
    found = text(value).strip()
    return found if found and not looks_like_id(found) else None


# --- handoff tools -------------------------------------------------------------------------------------------

_TRANSFER_WORDS = ("transfer", "handoff", "delegat", "assign", "route")
# Argument keys that name the target, then those that carry the reason, in the order they are tried.
_TARGET_KEYS = ("to_agent", "agent_name", "target_agent", "member_name", "member_id", "agent", "target",
                "coworker", "recipient", "to", "name")  # fmt: skip
_REASON_KEYS = ("reason", "transfer_reason", "message", "task", "task_description", "question", "context")
_WORD = re.compile(r"[A-Za-z0-9]+")


def _key(name: str) -> str:
    """A name compared loosely: case, spaces, dashes and underscores aside (``Web Researcher`` = ``web-researcher``)."""
    return "".join(_WORD.findall(name)).lower()


def is_transfer(tool: str) -> bool:
    """A tool whose name says it transfers, hands off or delegates the turn (any case, any separator)."""
    words = [w.lower() for w in _WORD.findall(tool)]
    return any(w.startswith(_TRANSFER_WORDS) for w in words)


def arguments(value: Any) -> dict[str, Any]:
    """A tool call's arguments (a JSON object), or {}."""
    if isinstance(value, Mapping):
        return dict(value)
    parsed = json_of(value)
    if isinstance(parsed, dict) and isinstance(parsed.get("kwargs"), dict) and len(parsed) <= 2:
        return dict(parsed["kwargs"])  # an instrumentor that records (args, kwargs)
    return parsed if isinstance(parsed, dict) else {}


def transfer(tool: str, args: Mapping[str, Any], agents: Iterable[str]) -> tuple[str | None, str | None] | None:
    """(the target agent, the reason) of a transfer tool's call, or None when the tool is no transfer.

    A transfer tool's name says transfer, handoff, delegate, assign or route, and nothing else than whom to: no
    other word (``delegate_task_to_member``, ``transfer_to_agent``, ``handoff``) or an agent of the run at its end
    (``transfer_to_billing``, ``handoff to refund_specialist``). ``transfer_funds`` and ``handoff_to_nobody`` (no
    agent of the run) are ordinary tools. The target is the agent the arguments name (``to_agent``,
    ``agent_name``, ``member_id``...: any value not an id; ``agent``, ``target``, ``to``...: an agent of the run),
    else the agent the name ends with; a known agent comes back under its own spelling. Either part is None when
    the call does not say it (arguments not captured): the next agent to speak is then the target.
    """
    words = _WORD.findall(tool)
    lowered = [w.lower() for w in words]
    if not any(w.startswith(_TRANSFER_WORDS) for w in lowered):
        return None
    known = {_key(a): a for a in agents}
    named: str | None = None
    if "to" in lowered:
        tail = words[len(lowered) - lowered[::-1].index("to") :]
        for size in range(len(tail), 0, -1):  # the longest run of words at the end that names a known agent
            named = known.get(_key("".join(tail[-size:])))
            if named:
                break
    other = [w for w in lowered if not w.startswith(_TRANSFER_WORDS) and w not in _FILLER]
    if other and named is None:
        return None
    reason = transfer_reason(args)
    for key in _TARGET_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            target = known.get(_key(value)) or (name_or_none(value) if key in _AGENT_KEYS else None)
            if target:
                return target, reason
    return named, reason


def transfer_reason(args: Mapping[str, Any]) -> str | None:
    """The reason a handoff's arguments give (``reason``, ``message``, ``task``...), or None."""
    return next((text(args[k]) for k in _REASON_KEYS if isinstance(args.get(k), str) and args[k]), None)


# Words a transfer tool's name may hold besides the transfer and its target.
_FILLER = frozenset({"to", "the", "a", "an", "task", "tasks", "work", "agent", "agents", "member", "members",
                     "coworker", "another", "other", "next", "control", "conversation"})  # fmt: skip
# Argument keys that can only name an agent (any value is taken); the others must name a known agent.
_AGENT_KEYS = frozenset({"to_agent", "agent_name", "target_agent", "member_name", "member_id", "coworker"})


# --- final-answer tools --------------------------------------------------------------------------------------

# The argument a final-answer tool carries its text in, in the order they are tried (BeeAI's ``response``,
# smolagents' ``answer``).
_ANSWER_ARGS = ("response", "answer", "final_answer", "text", "output", "content", "result", "message")


def is_final_answer(tool: str) -> bool:
    """A tool the agent answers through (``final_answer``, ``FinalAnswer``, ``final-answer``: any case or
    separator): calling it is the agent saying its answer, not asking for anything."""
    return _key(tool) == "finalanswer"


def final_answer_text(tool: str, args: Mapping[str, Any]) -> str | None:
    """What an agent says through a final-answer tool call: the text argument (``response``, ``answer``...: the
    first that is text, else the call's only text argument); None when the tool is no final-answer tool or the
    call carries no text (arguments not captured, a structured answer)."""
    if not is_final_answer(tool):
        return None
    for key in _ANSWER_ARGS:
        if isinstance(args.get(key), str) and args[key].strip():
            return str(args[key])
    texts = [v for v in args.values() if isinstance(v, str) and v.strip()]
    return texts[0] if len(texts) == 1 else None


# --- hidden content ------------------------------------------------------------------------------------------

# What an instrumentation writes in place of text it was told to hide.
HIDDEN = frozenset({"__REDACTED__", "[REDACTED]"})


def hidden(value: Any) -> bool:
    return isinstance(value, str) and value.strip() in HIDDEN


# --- content switches ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ContentSwitch:
    """How one instrumentation is told to record message content.

    ``scopes``: the scope names it writes under, exact, or a prefix when it ends in ``.``, ``-`` or ``/`` (a
    family of instrumentations sharing one switch); ``framework``: the framework it is the own tracing of, for
    spans written with no scope (a file); ``switch``: what to set, naming the variable or option."""

    scopes: tuple[str, ...]
    framework: str
    switch: str


# First match wins: the official GenAI instrumentations before OpenLLMetry's, which share their prefix.
CONTENT_SWITCHES: tuple[ContentSwitch, ...] = (
    ContentSwitch(("opentelemetry.instrumentation.genai.",), "",
                  "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY (opentelemetry-util-genai's "
                  "switch, shared by every official GenAI instrumentation)"),
    ContentSwitch(("gcp.vertex.agent",), "google-adk",
                  "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY (the GenAI conventions' "
                  "messages) and keep ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=true (ADK's own llm_request and "
                  "llm_response)"),
    ContentSwitch(("strands.telemetry.tracer", "strands-agents"), "strands",
                  "leave gen_ai.input.messages and gen_ai.output.messages out of the redaction "
                  "(OTEL_SEMCONV_STABILITY_OPT_IN's gen_ai_unredacted_attributes= list)"),
    ContentSwitch(("pydantic-ai",), "pydantic-ai",
                  "instrument with InstrumentationSettings(include_content=True) (the default)"),
    ContentSwitch(("agent_framework",), "agent-framework",
                  "set ENABLE_SENSITIVE_DATA=true, with the latest GenAI conventions (the v1.36 baseline writes "
                  "the text to log records only)"),
    ContentSwitch(("ai",), "vercel-ai",
                  "set experimental_telemetry's recordInputs and recordOutputs to true (their default)"),
    ContentSwitch(("semantic_kernel.",), "semantic-kernel",
                  "set SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE=true"),
    ContentSwitch(("openinference.instrumentation.", "@arizeai/openinference-"), "",
                  "unset OPENINFERENCE_HIDE_INPUTS, OPENINFERENCE_HIDE_OUTPUTS and the OPENINFERENCE_HIDE_*_TEXT "
                  "switches"),
    ContentSwitch(("opentelemetry.instrumentation.", "@traceloop/"), "",
                  "set TRACELOOP_TRACE_CONTENT=true (OpenLLMetry's switch; traceContent: true in its JavaScript "
                  "SDK)"),
)


def _matches(scope: str, pattern: str) -> bool:
    return scope.startswith(pattern) if pattern.endswith((".", "-", "/")) else scope == pattern


def content_switches(spans: Iterable[SpanRecord], framework: str) -> list[str]:
    """What turns content on for the run: the switch of each instrumentation that wrote its spans (their scopes,
    each once, in the order first seen); a scope no switch is known for is named, so the user knows which
    instrumentation to look at. Spans with no scope at all: the switch of the framework's own tracing."""
    found: dict[str, None] = {}
    for scope in dict.fromkeys(s.scope_name for s in spans if s.scope_name):
        known = next((c for c in CONTENT_SWITCHES if any(_matches(scope, p) for p in c.scopes)), None)
        found[known.switch if known else f"turn on message-content capture in the instrumentation {scope!r}"] = None
    if not found:
        known = next((c for c in CONTENT_SWITCHES if c.framework and c.framework == framework), None)
        found[known.switch if known else "turn on the instrumentation's message-content capture"] = None
    return list(found)
