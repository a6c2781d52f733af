"""Record captures of JavaScript frameworks: each run is a node recorder (``tests/captures/js/<framework>.mjs``)
against the scripted OpenAI-compatible server this process starts.

``nox -s "captures(framework='openai_agents_js')"`` (or ``python -m tests.captures.record_js FRAMEWORK [RUN ...]``)
writes ``tests/data/captures/<framework>/<run>.json``. The node project (``tests/captures/js``: package.json with
exact versions, package-lock.json) is installed with ``npm ci`` when its ``node_modules`` is missing. A recorder
prints one JSON line: the run's settings, the expectation it read from the framework's own record (the Agents
SDK's ``RunResult``, LangGraph's final state, Mastra's result and sub-agent records; never a span), and the
finished spans of an in-memory tracer provider as OTLP JSON (``tests/captures/js/otlp.mjs``, the shape
``_record.otlp_json`` writes).

- ``openai_agents_js`` (``@openai/agents``, traced by ``@arizeai/openinference-instrumentation-openai-agents``):
  ``desk`` (triage -> billing, who calls ``lookup_order`` -> reviewer), ``solo``.
- ``langgraph_js`` (``@langchain/langgraph`` with ``@langchain/langgraph-supervisor``, traced by
  ``@arizeai/openinference-instrumentation-langchain``): ``supervisor`` (the supervisor transfers to a researcher,
  who calls ``lookup_order``, then to a writer), ``solo`` (one ReAct agent).
- ``mastra`` (``@mastra/core`` agents, traced by Mastra's observability with ``@mastra/otel-exporter``, which
  writes the GenAI conventions): ``desk`` (a lead agent calls its researcher and writer sub-agents, which Mastra
  gives it as tools; the researcher calls ``lookup_order``), ``solo``.
- ``vercel_ai`` (the Vercel AI SDK, ``ai`` with ``@ai-sdk/openai``'s chat model, traced by the SDK itself:
  ``experimental_telemetry`` on each agent with a NodeTracerProvider registered, the ``ai.*`` spans): ``desk`` (a
  lead ToolLoopAgent whose tools ``research`` and ``write`` run the researcher, who calls ``lookup_order``, and the
  writer: the SDK's subagents pattern), ``solo``.
- ``vercel_ai_v7`` (``ai`` 7, traced by ``@ai-sdk/otel``'s default ``OpenTelemetry`` integration, which writes the
  GenAI conventions under the tracer scope ``gen_ai``): the same desk and solo, recorded in ``tests/captures/js7``
  (a node project of its own: ``ai`` 6 and 7 cannot share one package.json; ``otlp.mjs`` is js/'s).
- ``langgraph_js_openllmetry`` (the same LangGraph.js runs as ``langgraph_js``, traced by OpenLLMetry JS:
  ``@traceloop/instrumentation-langchain`` and ``@traceloop/instrumentation-openai``): ``supervisor``, ``solo``.

First sight (issue 46): pairs scored as the adapters read them before any rule for them, written to
``tests/data/first_sight/<framework>/<run>.json`` (a spec's ``"first_sight"``), from the node project
``tests/captures/js_agents``. Their recorders also print the framework's own record the expectation was read from
(``"record"``: each answer's agent, text and tool calls), kept in the file, and list what each answer says
(``expect["said"]``). A re-recorded file has no score yet: ``python -m tests.adapters.test_first_sight FILE`` writes
its ``"first_sight"`` entry (what the code reads of it).

- ``strands_js`` (Strands Agents' TypeScript SDK, ``@strands-agents/sdk``, traced by its own telemetry on a
  registered NodeTracerProvider): ``swarm`` (a Swarm, routing by its structured-output tool), ``swarm-latest``
  (``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``), ``tools`` (agents as tools), ``solo``.
- ``google_adk_js`` (``@google/adk``, traced by its own telemetry through ``maybeSetOtelProviders``; its model a
  BaseLlm of the recorder's that speaks chat completions, ADK JS having no OpenAI-compatible one): ``desk``
  (``transfer_to_agent``), ``desk-content-off`` (``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false``), ``pipeline`` (a
  SequentialAgent), ``solo``.
- ``voltagent`` (``@voltagent/core`` with ``VoltAgentObservability({spanProcessors})``, its own span schema):
  ``desk`` (a supervisor with sub-agents, ``delegate_task``), ``solo``.
- ``mastra_network`` (Mastra's agent network, ``Agent.network()``, traced as ``mastra`` is; in ``tests/captures/js``):
  ``network`` (a routing agent picks the researcher, then the writer, checking completion after each), ``solo``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from examples.scripted_openai import ScriptedOpenAI
from tests.captures._record import CAPTURES, CLERK, FIRST_SIGHT, NO_RULE, RESEARCHER, WRITER

JS = Path(__file__).resolve().parent / "js"
TIMEOUT = 300


# Each framework: its recorder, the npm packages (versions from package-lock.json) and the scripted model's rules.
FRAMEWORKS: dict[str, dict[str, Any]] = {
    "openai_agents_js": {
        "recorder": "openai_agents.mjs",
        "runs": ["desk", "solo"],
        "packages": ["@openai/agents", "@openai/agents-core", "@openai/agents-openai", "openai",
                     "@arizeai/openinference-instrumentation-openai-agents", "@opentelemetry/sdk-trace-base"],
        "script": {
            "rules": [
                {"match": "ROLE_TRIAGE", "replies": [{"tool": "transfer_to_billing", "args": {}}]},
                {"match": "ROLE_BILLING", "replies": [
                    {"tool": "lookup_order", "args": {"order_id": "A17"}},
                    {"tool": "transfer_to_reviewer", "args": {}},
                ]},
                {"match": "ROLE_REVIEWER", "replies": ["Approved: the duplicate 49.00 EUR charge on A17 is refunded."]},
                CLERK,
            ],
            "default": NO_RULE,
        },
    },
    "langgraph_js": {
        "recorder": "langgraph.mjs",
        "runs": ["supervisor", "solo"],
        "packages": ["@langchain/langgraph", "@langchain/langgraph-supervisor", "@langchain/core", "@langchain/openai",
                     "@arizeai/openinference-instrumentation-langchain", "@opentelemetry/sdk-trace-base"],
        "script": {
            "rules": [
                {"match": "ROLE_SUPERVISOR", "replies": [
                    {"tool": "transfer_to_researcher", "args": {}},
                    {"tool": "transfer_to_writer", "args": {}},
                    "The duplicate 49.00 EUR charge on A17 is refunded; the customer has been told.",
                ]},
                RESEARCHER,
                WRITER,
                CLERK,
            ],
            "default": NO_RULE,
        },
    },
    "mastra": {
        "recorder": "mastra.mjs",
        "runs": ["desk", "solo"],
        "packages": ["@mastra/core", "@mastra/observability", "@mastra/otel-exporter", "@opentelemetry/sdk-trace-base"],
        "script": {
            # A sub-agent is sent the lead's context, its system message too: its own rule comes first.
            "rules": [
                RESEARCHER,
                WRITER,
                {"match": "ROLE_LEAD", "replies": [
                    {"tool": "agent-researcher", "args": {"prompt": "Find the charges on order A17."}},
                    {"tool": "agent-writer", "args": {"prompt": "Write the refund note for order A17."}},
                    "The duplicate 49.00 EUR charge on A17 is refunded; the customer has been told.",
                ]},
                CLERK,
            ],
            "default": NO_RULE,
        },
    },
    "vercel_ai": {
        "recorder": "vercel_ai.mjs",
        "runs": ["desk", "solo"],
        "packages": ["ai", "@ai-sdk/openai", "@opentelemetry/sdk-trace-node",
                     "@opentelemetry/sdk-trace-base"],
        "script": {
            # A sub-agent is sent only the task its tool was given: its own instructions name its rule.
            "rules": [
                {"match": "ROLE_LEAD", "replies": [
                    {"tool": "research", "args": {"task": "Find the charges on order A17."}},
                    {"tool": "write", "args": {"task": "Write the refund note for order A17."}},
                    "The duplicate 49.00 EUR charge on A17 is refunded; the customer has been told.",
                ]},
                RESEARCHER,
                WRITER,
                CLERK,
            ],
            "default": NO_RULE,
        },
    },
    "vercel_ai_v7": {
        # ai 7 cannot share js/'s ai 6: a node project of its own (js7/), its recorder the same desk
        "recorder": "vercel_ai.mjs",
        "project": "js7",
        "runs": ["desk", "solo"],
        "packages": ["ai", "@ai-sdk/otel", "@ai-sdk/openai", "@opentelemetry/sdk-trace-node",
                     "@opentelemetry/sdk-trace-base"],
        "script": "vercel_ai",
    },
    "langgraph_js_openllmetry": {
        # the same supervisor run as langgraph_js, traced by OpenLLMetry JS instead of OpenInference
        "recorder": "langgraph.mjs",
        "args": ["openllmetry"],
        "runs": ["supervisor", "solo"],
        "packages": ["@langchain/langgraph", "@langchain/langgraph-supervisor", "@langchain/core", "@langchain/openai",
                     "@traceloop/instrumentation-langchain", "@traceloop/instrumentation-openai",
                     "@opentelemetry/sdk-trace-base"],
        "script": "langgraph_js",
    },
    # First sight (issue 46; tests/data/first_sight/<framework>/): JavaScript frameworks that trace themselves, in
    # the node project tests/captures/js_agents
    "strands_js": {
        "recorder": "strands.mjs",
        "project": "js_agents",
        "first_sight": True,
        "runs": ["swarm", "swarm-latest", "tools", "solo"],
        "packages": ["@strands-agents/sdk", "openai", "@opentelemetry/sdk-trace-node", "@opentelemetry/sdk-trace-base"],
        "script": {
            # the Swarm's members (ROUTE_ markers) answer through its routing tool, {agentId, message}; the
            # agents-as-tools run's members are the desk's
            "rules": [
                {"match": "ROUTE_TRIAGE", "replies": [{"tool": "strands_structured_output", "args": {
                    "agentId": "researcher", "message": "Find the charges on order A17."}}]},
                {"match": "ROUTE_RESEARCHER", "replies": [
                    {"tool": "lookup_order", "args": {"order_id": "A17"}},
                    {"tool": "strands_structured_output", "args": {
                        "agentId": "writer", "message": "Order A17 was charged 49.00 EUR twice on 2026-11-02."}},
                ]},
                {"match": "ROUTE_WRITER", "replies": [{"tool": "strands_structured_output", "args": {
                    "message": "Dear customer, the duplicate charge on order A17 is refunded."}}]},
                {"match": "ROLE_LEAD", "replies": [
                    {"tool": "researcher", "args": {"input": "Find the charges on order A17."}},
                    {"tool": "writer", "args": {"input": "Write the refund note for order A17."}},
                    "The duplicate 49.00 EUR charge on A17 is refunded; the customer has been told.",
                ]},
                RESEARCHER,
                WRITER,
                CLERK,
            ],
            "default": NO_RULE,
        },
    },
    "google_adk_js": {
        "recorder": "google_adk.mjs",
        "project": "js_agents",
        "first_sight": True,
        "runs": ["desk", "desk-content-off", "pipeline", "solo"],
        "packages": ["@google/adk", "@opentelemetry/sdk-trace-base"],
        "script": {
            "rules": [
                # ADK JS's transfer_to_agent takes agentName (the Python ADK's: agent_name)
                {"match": "ROLE_TRIAGE", "replies": [
                    {"tool": "transfer_to_agent", "args": {"agentName": "researcher"}},
                ]},
                # the desk's researcher transfers to the writer; the pipeline's (ROLE_RESEARCHER) answers
                {"match": "ROUTE_RESEARCHER", "replies": [
                    {"tool": "lookup_order", "args": {"order_id": "A17"}},
                    {"text": "Order A17 was charged 49.00 EUR twice on 2026-11-02.",
                     "tool": "transfer_to_agent", "args": {"agentName": "writer"}},
                ]},
                RESEARCHER,
                WRITER,
                CLERK,
            ],
            "default": NO_RULE,
        },
    },
    "voltagent": {
        "recorder": "voltagent.mjs",
        "project": "js_agents",
        "first_sight": True,
        "runs": ["desk", "solo"],
        "packages": ["@voltagent/core", "ai", "@ai-sdk/openai", "@opentelemetry/sdk-trace-base"],
        "script": {
            "rules": [
                RESEARCHER,
                WRITER,
                {"match": "ROLE_LEAD", "replies": [
                    {"tool": "delegate_task", "args": {"task": "Find the charges on order A17.",
                                                       "targetAgents": ["researcher"]}},
                    {"tool": "delegate_task", "args": {"task": "Write the refund note for order A17.",
                                                       "targetAgents": ["writer"]}},
                    "The duplicate 49.00 EUR charge on A17 is refunded; the customer has been told.",
                ]},
                CLERK,
            ],
            "default": NO_RULE,
        },
    },
    # Mastra's agent network (Agent.network()), traced as mastra is; its node project is js/ (with @mastra/memory)
    "mastra_network": {
        "recorder": "mastra_network.mjs",
        "first_sight": True,
        "runs": ["network", "solo"],
        "packages": ["@mastra/core", "@mastra/memory", "@mastra/observability", "@mastra/otel-exporter",
                     "@opentelemetry/sdk-trace-base"],
        "script": {
            # the routing agent's instructions are the coordinator's (no ROLE_ marker): a decision and a completion
            # check are told apart by the prompt each is sent
            "rules": [
                RESEARCHER,
                WRITER,
                {"match": "Please select the most appropriate primitive", "replies": [
                    json.dumps({"primitiveId": "researcher", "primitiveType": "agent",
                                "prompt": "Find the charges on order A17.", "selectionReason": "The facts first."}),
                    json.dumps({"primitiveId": "writer", "primitiveType": "agent",
                                "prompt": "Write the refund note for order A17.",
                                "selectionReason": "The customer needs the note."}),
                ]},
                {"match": "You need to evaluate if the task is complete", "replies": [
                    json.dumps({"isComplete": False, "completionReason": "The customer has not been written to."}),
                    json.dumps({"isComplete": True, "completionReason": "Researched and written.", "finalResult": ""}),
                ]},
                CLERK,
            ],
            "default": NO_RULE,
        },
    },
}  # fmt: skip


def _project(spec: Mapping[str, Any]) -> Path:
    """The node project a recorder runs in: js/, or its own folder (a major version js/ cannot hold beside its own)."""
    return JS.parent / spec.get("project", "js")


def npm_ci(project: Path = JS) -> None:
    """Install a node project exactly as locked, once (node_modules is not committed); js/ always (otlp.mjs)."""
    for folder in dict.fromkeys((JS, project)):
        if (folder / "node_modules").is_dir():
            continue
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("npm is needed to record the JavaScript captures (Node 20 or later)")
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=folder, check=True)


def versions(packages: list[str], project: Path = JS) -> dict[str, str]:
    """Each package's installed version, from package-lock.json (the top-level copy, the one node resolves)."""
    lock = json.loads((project / "package-lock.json").read_text(encoding="utf-8"))["packages"]
    return {p: lock[f"node_modules/{p}"]["version"] for p in packages}


def record(framework: str, run: str) -> Path:
    """Record one run: ``<corpus>/<framework>/<run>.json``, the corpus being tests/data/captures, or
    tests/data/first_sight for a pair scored at first sight (its spec's ``"first_sight"``)."""
    spec = FRAMEWORKS[framework]
    node = shutil.which("node")
    if node is None:
        raise SystemExit("node is needed to record the JavaScript captures")
    project = _project(spec)
    script = spec["script"]
    script = FRAMEWORKS[script]["script"] if isinstance(script, str) else script  # (another framework's model)
    with ScriptedOpenAI(script) as server:
        done = subprocess.run([node, spec["recorder"], server.base_url, run, *spec.get("args", ())], cwd=project,
                              capture_output=True, text=True, timeout=TIMEOUT, check=False)  # fmt: skip
    sys.stderr.write(done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"{spec['recorder']} {run} failed ({done.returncode})")
    out: Mapping[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    settings = {"node": subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip(),
                **out["settings"]}  # fmt: skip
    path = (FIRST_SIGHT if spec.get("first_sight") else CAPTURES) / framework / f"{run}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"framework": {"packages": versions(spec["packages"], project), "settings": settings},
            "expect": out["expect"], "otlp": out["otlp"]}  # fmt: skip
    if "record" in out:  # the framework's own record the expectation was read from, for a reader to check it by
        data["record"] = out["record"]
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)
    return path


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in FRAMEWORKS:
        print(f"usage: python -m tests.captures.record_js {{{','.join(FRAMEWORKS)}}} [RUN ...]", file=sys.stderr)
        return 2
    framework, runs = argv[0], argv[1:] or FRAMEWORKS[argv[0]]["runs"]
    npm_ci(_project(FRAMEWORKS[framework]))
    for run in runs:
        record(framework, run)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
