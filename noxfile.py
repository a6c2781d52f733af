"""Per-framework test environments: one nox session per framework whose pins clash with the main environment's.

The main environment (``.venv``, scripts/setup-env.sh) holds AG2 Classic, the collector and the judge; a framework
that cannot share it gets a session here, and nothing else: no script per framework. ``bash scripts/test.sh``
runs every session after the main tier; ``nox -s NAME`` runs one, ``nox -l`` lists them.

Each session's environment lives in ``.nox/NAME`` and is reused: its install step runs again only when what it
installs changes (a stamp of the pip arguments and the files they name), so a second run costs seconds.
Inside a session ``MAST_OTEL_REQUIRE_FRAMEWORK`` names the framework, so that framework's tests fail instead of
skipping when it does not import (a broken install must not pass as "skipped").
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
nox.options.reuse_venv = "yes"
nox.options.error_on_missing_interpreters = True


def install_once(session: nox.Session, *steps: list[str]) -> None:
    """Run each ``pip install`` step unless this environment already holds exactly these steps.

    Files named in the steps (requirement and constraint files, pyproject.toml through ``-e .``) are part of the
    stamp, so editing one reinstalls.
    """
    digest = hashlib.sha256()
    for step in steps:
        for arg in step:
            digest.update(arg.encode())
            path = ROOT / arg
            if arg.endswith((".txt", ".toml")) and path.is_file():
                digest.update(path.read_bytes())
    digest.update((ROOT / "pyproject.toml").read_bytes())
    location = session.virtualenv.location
    stamp = Path(location) / ".mast-otel-stamp" if location else None
    want = digest.hexdigest()
    if stamp is not None and stamp.is_file() and stamp.read_text() == want:
        session.log("environment up to date")
        return
    for step in steps:
        session.install(*step)
    if stamp is not None:
        stamp.write_text(want)


def run_tests(session: nox.Session, framework: str, *paths: str) -> None:
    env = {"MAST_OTEL_REQUIRE_FRAMEWORK": framework}
    main_python = ROOT / ".venv" / "bin" / "python"
    if main_python.exists():
        # The llama.cpp server and cross-framework comparisons run from the main environment's interpreter.
        env.setdefault("MAST_OTEL_MAIN_PYTHON", os.environ.get("MAST_OTEL_MAIN_PYTHON", str(main_python)))
    session.run("pytest", "-q", "-rs", *paths, *session.posargs, env=env)


# The core test that a program's seeded random and fixed uuid4 sequence are untouched, parametrized over the
# integrations importable where it runs: the main environment covers AG2 Classic, the sessions that name it theirs.
RANDOMNESS = "tests/core/test_program_randomness.py"


@nox.session(python="3.11", venv_backend="uv")
def metagpt(session: nox.Session) -> None:
    """MetaGPT 0.8.2 (needs Python < 3.12; its exact pins clash with AG2's, and a plain install does not resolve).

    The recipe (constraints/ explains each file): metagpt with --no-deps, then its core list pinned by the lock;
    then mast-otel's core dependencies and pytest exactly pinned with --no-deps (OpenTelemetry needs protobuf >= 5,
    which MetaGPT's Gemini SDK pin refuses in one resolution); then mast-otel itself, editable, with --no-deps.
    """
    install_once(
        session,
        ["--no-deps", "metagpt==0.8.2"],
        ["-r", "constraints/metagpt-0.8.2-requirements.txt", "-c", "constraints/metagpt-0.8.2.txt"],
        ["--no-deps", "-r", "constraints/metagpt-0.8.2-overlay.txt"],
        ["--no-deps", "-e", "."],
    )
    quiet = ("-W", "ignore::FutureWarning:google.api_core._python_version_support")
    run_tests(session, "metagpt", *quiet, "tests/metagpt", RANDOMNESS)


# The SDK pinned, mast-otel with the collector and judge extras, the test tools and OpenInference's instrumentation
# (the overhead benchmark's comparison, and the foreign-span adapter's source): one set, two sessions.
OPENAI_AGENTS = [
    "-c",
    "constraints/openai-agents-0.24.txt",
    "-e",
    ".[collector,judge]",
    "openai-agents",
    "openinference-instrumentation-openai-agents",
    "pytest",
    "pytest-asyncio",
]


@nox.session(python="3.11", venv_backend="uv")
def openai_agents(session: nox.Session) -> None:
    """OpenAI Agents SDK 0.24 (openai-agents pins openai and pydantic versions of its own).

    Installs the SDK pinned, mast-otel with its collector extra (the collector tests start the real collector
    from this interpreter) and the test tools, plus openinference-instrumentation-openai-agents, the comparison
    in benchmarks/bench_openai_agents_overhead.py.
    """
    install_once(session, OPENAI_AGENTS)
    run_tests(session, "openai_agents", "tests/openai_agents", RANDOMNESS)


@nox.session(python="3.11", venv_backend="uv")
def ag2_1x(session: nox.Session) -> None:
    """AG2 1.x (``ag2==1.2.1``, the ``ag2`` module): the same PyPI name as AG2 Classic 0.x, so its own environment.

    The scripted model of ``ag2.testing`` needs no server, so nothing beyond AG2 itself and mast-otel (with the
    collector extra: the end-to-end tests read the collector's output with its OTLP types) is installed. The
    collector process itself runs from the main environment (``MAST_OTEL_MAIN_PYTHON``).
    """
    install_once(
        session,
        ["-c", "constraints/ag2-1.2.1.txt", "ag2==1.2.1", "-e", ".[collector]", "pytest", "pytest-asyncio"],
    )
    run_tests(session, "ag2_1x", "tests/ag2_1x", RANDOMNESS)


@nox.session(python="3.11", venv_backend="uv")
def langgraph(session: nox.Session) -> None:
    """LangGraph 1.2 with langgraph-supervisor and langgraph-swarm (and OpenInference's LangChain instrumentation,
    which the overhead benchmark compares against). Its own environment keeps LangChain out of the main one."""
    install_once(
        session,
        ["-c", "constraints/langgraph.txt", "langgraph", "langgraph-supervisor", "langgraph-swarm", "langchain",
         "langchain-openai", "openinference-instrumentation-langchain"],
        ["-c", "constraints/langgraph.txt", "-e", ".[collector]", "pytest>=8", "pytest-asyncio>=0.23"],
    )
    run_tests(session, "langgraph", "tests/langgraph", RANDOMNESS)


@nox.session(python="3.11", venv_backend="uv")
def crewai(session: nox.Session) -> None:
    """CrewAI 1.x (and OpenInference's CrewAI instrumentation, which the overhead benchmark compares against). Its
    install is about 1 GB (chromadb, lancedb, onnxruntime): kept out of the main environment."""
    install_once(
        session,
        ["-c", "constraints/crewai.txt", "crewai", "openinference-instrumentation-crewai"],
        ["-c", "constraints/crewai.txt", "-e", ".[collector]", "pytest>=8", "pytest-asyncio>=0.23"],
    )
    run_tests(session, "crewai", "tests/crewai", RANDOMNESS)


@nox.session(python="3.11", venv_backend="uv")
def autogen_agentchat(session: nox.Session) -> None:
    """Microsoft autogen-agentchat 0.7.5 (teams, Magentic-One) with autogen-core / autogen-ext[openai] 0.7.5.

    Its own environment because its OpenAI client pins and AG2's (the main environment's ``autogen`` namespace)
    are separate projects that share a name. OpenInference's autogen-agentchat instrumentation is installed too,
    for the co-existence tests and the benchmark. Every resolved version is pinned by the constraints file.
    """
    pins = "constraints/autogen-agentchat-0.7.5.txt"
    install_once(
        session,
        [
            "autogen-agentchat==0.7.5",
            "autogen-core==0.7.5",
            "autogen-ext[openai]==0.7.5",
            "openinference-instrumentation-autogen-agentchat",
            "pytest",
            "pytest-asyncio",
            "-e",
            ".",
            "-c",
            pins,
        ],
    )
    run_tests(session, "autogen_agentchat", "tests/autogen_agentchat", RANDOMNESS)


@nox.session(python="3.11", venv_backend="uv")
def adapters_openai_agents(session: nox.Session) -> None:
    """Foreign-span adapters (docs/adapters.md) on real runs of the OpenAI Agents SDK traced by OpenInference's
    ``openinference-instrumentation-openai-agents``: the run goes over OTLP to a real collector, which judges it
    through the OpenInference adapter. Same pins as the ``openai_agents`` session. The AG2 sources (AG2's built-in
    tracing, openinference-instrumentation-ag2) run in the main environment: tests/adapters there."""
    install_once(session, OPENAI_AGENTS)
    run_tests(session, "adapters_openai_agents", "tests/adapters")


@nox.session(python="3.11", venv_backend="uv")
def adapters_autogen_agentchat(session: nox.Session) -> None:
    """Foreign-span adapters (docs/adapters.md) on real autogen-agentchat team runs traced by OpenInference's
    ``openinference-instrumentation-autogen-agentchat``, through a real collector."""
    install_once(
        session,
        [
            "-c",
            "constraints/adapters-autogen-agentchat.txt",
            "-e",
            ".[collector,judge]",
            "autogen-agentchat",
            "autogen-ext[openai]",
            "openinference-instrumentation-autogen-agentchat",
            "pytest",
            "pytest-asyncio",
        ],
    )
    run_tests(session, "adapters_autogen_agentchat", "tests/adapters")


@nox.session(python="3.11", venv_backend="uv")
def adapters_langgraph(session: nox.Session) -> None:
    """Foreign-span adapters (docs/adapters.md) on a real LangGraph supervisor run traced by OpenInference's
    ``openinference-instrumentation-langchain`` and, separately, by OpenLLMetry's
    ``opentelemetry-instrumentation-langchain``, through a real collector."""
    install_once(
        session,
        [
            "-c",
            "constraints/adapters-langgraph.txt",
            "-e",
            ".[collector,judge]",
            "langgraph",
            "langgraph-supervisor",
            "langchain-openai",
            "openinference-instrumentation-langchain",
            "opentelemetry-instrumentation-langchain",
            "pytest",
        ],
    )
    run_tests(session, "adapters_langgraph", "tests/adapters")


@nox.session(python="3.11", venv_backend="uv")
def adapters_smolagents(session: nox.Session) -> None:
    """Foreign-span adapters (docs/adapters.md) on a real smolagents run (a manager delegating to a managed
    agent) traced by OpenInference's ``openinference-instrumentation-smolagents``, through a real collector."""
    install_once(
        session,
        [
            "-c",
            "constraints/adapters-smolagents.txt",
            "-e",
            ".[collector,judge]",
            "smolagents",
            "openai",
            "openinference-instrumentation-smolagents",
            "pytest",
        ],
    )
    run_tests(session, "adapters_smolagents", "tests/adapters")


@nox.session(python="3.11", venv_backend="uv")
def adapters_crewai(session: nox.Session) -> None:
    """Foreign-span adapters (docs/adapters.md) on a real sequential CrewAI crew traced by OpenInference's
    ``openinference-instrumentation-crewai``, through a real collector (about 1 GB of dependencies)."""
    install_once(
        session,
        [
            "-c",
            "constraints/adapters-crewai.txt",
            "-e",
            ".[collector,judge]",
            "crewai",
            "openinference-instrumentation-crewai",
            "pytest",
        ],
    )
    run_tests(session, "adapters_crewai", "tests/adapters")


# Frameworks that trace themselves with the OpenTelemetry GenAI conventions (docs/adapters.md, "OpenTelemetry GenAI
# spans"): each session installs the framework pinned, mast-otel with its collector extra (the end-to-end tests
# read the collector's output with its OTLP types) and pytest; the collector itself runs from the main environment
# (``MAST_OTEL_MAIN_PYTHON``). No OpenInference or OpenLLMetry: the spans are the framework's own.
GENAI_TEST_TOOLS = ["-e", ".[collector]", "pytest", "pytest-asyncio"]
# Each framework pinned, as its session and its captures (CAPTURES) install it.
GENAI_FRAMEWORKS: dict[str, list[str]] = {
    "google_adk": ["-c", "constraints/google-adk-2.13.txt", "google-adk", "litellm"],
    "strands": ["-c", "constraints/strands-1.62.txt", "strands-agents[openai]"],
    "pydantic_ai": ["-c", "constraints/pydantic-ai-2.68.txt", "pydantic-ai-slim[openai]"],
    "agent_framework": ["-c", "constraints/agent-framework-1.23.txt", "agent-framework-core", "agent-framework-openai",
                        "agent-framework-orchestrations"],
    "semantic_kernel": ["-c", "constraints/captures-semantic-kernel.txt", "semantic-kernel==1.45.0"],
}  # fmt: skip


@nox.session(python="3.11", venv_backend="uv")
def google_adk(session: nox.Session) -> None:
    """Google ADK 2.13 with LiteLLM (the offline runs reach the scripted OpenAI-compatible server through
    ``LiteLlm(model="openai/...", api_base=...)``)."""
    install_once(session, [*GENAI_FRAMEWORKS["google_adk"], *GENAI_TEST_TOOLS])
    run_tests(session, "google_adk", "tests/google_adk")


@nox.session(python="3.11", venv_backend="uv")
def strands(session: nox.Session) -> None:
    """Strands Agents 1.62 with its OpenAI model provider (Swarm and Graph multi-agent patterns)."""
    install_once(session, [*GENAI_FRAMEWORKS["strands"], *GENAI_TEST_TOOLS])
    run_tests(session, "strands", "tests/strands")


@nox.session(python="3.11", venv_backend="uv")
def pydantic_ai(session: nox.Session) -> None:
    """Pydantic AI 2.68 (``pydantic-ai-slim[openai]``: the agent core and the OpenAI provider, nothing else)."""
    install_once(session, [*GENAI_FRAMEWORKS["pydantic_ai"], *GENAI_TEST_TOOLS])
    run_tests(session, "pydantic_ai", "tests/pydantic_ai")


@nox.session(python="3.11", venv_backend="uv")
def agent_framework(session: nox.Session) -> None:
    """Microsoft Agent Framework: ``agent-framework-core`` 1.23, ``-openai`` 1.17 and ``-orchestrations`` 1.4
    (handoff workflows), not the ``agent-framework`` meta-package, which pulls every provider."""
    install_once(session, [*GENAI_FRAMEWORKS["agent_framework"], *GENAI_TEST_TOOLS])
    run_tests(session, "agent_framework", "tests/agent_framework")


@nox.session(python="3.11", venv_backend="uv")
def semantic_kernel(session: nox.Session) -> None:
    """Semantic Kernel 1.45 by its own telemetry (a trace per runtime message, the text in log records), live
    through a collector process with OTLP/HTTP exporters for spans and logs."""
    install_once(session, [*GENAI_FRAMEWORKS["semantic_kernel"], *GENAI_TEST_TOOLS,
                           "opentelemetry-exporter-otlp-proto-http"])  # fmt: skip
    run_tests(session, "semantic_kernel", "tests/semantic_kernel")


# Real captures (tests/data/captures/<framework>/<run>.json, docs/adapters.md "Captures"): each framework is
# installed with the instrumentation its users trace it with, and its runs are recorded offline against the
# scripted OpenAI-compatible server by its recorder (the OTLP JSON plus the expectation, read from the framework's
# own record). The test that reads every capture (tests/adapters/test_captures.py) runs in the main environment:
# no framework is needed to check a capture. Not in the default list: re-recording rewrites the captures (new ids
# and times), so it runs when asked (``nox -s "captures(framework='agno')"``), not with every test run.
# A framework here: its pip install (with its constraints file) and its recorder command.
CAPTURE_TOOLS = ["-e", ".", "opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-common"]
CAPTURES: dict[str, dict[str, list[str]]] = {
    # LlamaIndex AgentWorkflow (handoff tool with ``to_agent`` / ``reason``),
    # by openinference-instrumentation-llama-index
    "llama_index": {
        "install": ["-c", "constraints/captures-llama-index.txt", "llama-index-core", "llama-index-llms-openai",
                    "openinference-instrumentation-llama-index"],
        "record": ["python", "-m", "tests.captures.record_llama_index"],
    },
    # Agno teams, by openinference-instrumentation-agno
    "agno": {
        "install": ["-c", "constraints/captures-agno.txt", "agno", "openai", "openinference-instrumentation-agno"],
        "record": ["python", "-m", "tests.captures.record_agno"],
    },
    # The frameworks that trace themselves (GenAI conventions): their desk examples run as their sessions run them
    # (tests/genai/runs.py), exporting to a local OTLP receiver; one recorder writes every framework's captures
    **{
        name: {"install": [*install, *GENAI_TEST_TOOLS],
               "record": ["python", "-m", "tests.captures.record_genai", name]}
        for name, install in GENAI_FRAMEWORKS.items()
    },
    # autogen-agentchat Swarm (handoff tools), by openinference-instrumentation-autogen-agentchat
    "autogen_agentchat": {
        "install": ["-c", "constraints/adapters-autogen-agentchat.txt", "autogen-agentchat", "autogen-ext[openai]",
                    "openinference-instrumentation-autogen-agentchat"],
        "record": ["python", "-m", "tests.captures.record_autogen_agentchat"],
    },
    # CrewAI hierarchical crew (the manager's delegation tools), by openinference-instrumentation-crewai
    "crewai": {
        "install": ["-c", "constraints/adapters-crewai.txt", "crewai", "openinference-instrumentation-crewai"],
        "record": ["python", "-m", "tests.captures.record_crewai"],
    },
    # LangGraph with langgraph-supervisor (transfer tools), by openinference-instrumentation-langchain
    "langgraph": {
        "install": ["-c", "constraints/adapters-langgraph.txt", "langgraph", "langgraph-supervisor",
                    "langchain-openai", "openinference-instrumentation-langchain"],
        "record": ["python", "-m", "tests.captures.record_langgraph"],
    },
    # The OpenAI Agents SDK (handoffs), by openinference-instrumentation-openai-agents
    "openai_agents": {
        "install": ["-c", "constraints/openai-agents-0.24.txt", "openai-agents",
                    "openinference-instrumentation-openai-agents"],
        "record": ["python", "-m", "tests.captures.record_openai_agents"],
    },
    # smolagents: a manager agent with a managed agent (called as a tool), by openinference-instrumentation-smolagents
    "smolagents": {
        "install": ["-c", "constraints/adapters-smolagents.txt", "smolagents", "openai",
                    "openinference-instrumentation-smolagents"],
        "record": ["python", "-m", "tests.captures.record_smolagents"],
    },
    # BeeAI RequirementAgents (a HandoffTool to another agent; answers through final_answer),
    # by openinference-instrumentation-beeai
    "beeai": {
        "install": ["-c", "constraints/captures-beeai.txt", "beeai-framework", "openai",
                    "openinference-instrumentation-beeai"],
        "record": ["python", "-m", "tests.captures.record_beeai"],
    },
    # Semantic Kernel agent orchestrations (handoff, group chat) and AgentGroupChat, by its own GenAI telemetry
    # (spans, and the text in log records through Python's logging: the SDK's LoggingHandler)
    "semantic_kernel": {
        "install": GENAI_FRAMEWORKS["semantic_kernel"],
        "record": ["python", "-m", "tests.captures.record_semantic_kernel"],
    },
    # Frameworks already here through OpenInference, traced by OpenLLMetry (Traceloop) instead: the framework's
    # instrumentor and the OpenAI client's, as Traceloop.init() enables them (<framework>_openllmetry)
    "crewai_openllmetry": {
        "install": ["-c", "constraints/captures-crewai-openllmetry.txt", "crewai",
                    "opentelemetry-instrumentation-crewai",
                    "opentelemetry-instrumentation-openai"],
        "record": ["python", "-m", "tests.captures.record_openllmetry", "crewai"],
    },
    "agno_openllmetry": {
        "install": ["-c", "constraints/captures-agno-openllmetry.txt", "agno", "openai",
                    "opentelemetry-instrumentation-agno",
                    "opentelemetry-instrumentation-openai"],
        "record": ["python", "-m", "tests.captures.record_openllmetry", "agno"],
    },
    "langgraph_openllmetry": {
        "install": ["-c", "constraints/captures-langgraph-openllmetry.txt", "langgraph", "langgraph-supervisor",
                    "langchain-openai", "opentelemetry-instrumentation-langchain",
                    "opentelemetry-instrumentation-openai"],
        "record": ["python", "-m", "tests.captures.record_openllmetry", "langgraph"],
    },
    # Google ADK (sub_agents, transfer_to_agent) traced by openinference-instrumentation-google-adk instead of its own
    # GenAI telemetry (that is google_adk/)
    "google_adk_openinference": {
        "install": ["-c", "constraints/captures-google-adk-openinference.txt", "google-adk", "litellm",
                    "openinference-instrumentation-google-adk"],
        "record": ["python", "-m", "tests.captures.record_google_adk_openinference"],
    },
    # First sight (issue 46; tests/data/first_sight/<name>/, not the corpus): frameworks already here, traced by the
    # official OpenTelemetry GenAI instrumentations (opentelemetry-instrumentation-genai-*, on opentelemetry-util-genai)
    # as their READMEs set them up (tests/captures/record_otel_genai.py: the framework's own recorder's runs); where
    # the README leaves the model calls to the OpenAI client's instrumentation, a second pair adds it (<name>_openai)
    **{
        name + variant: {"install": ["-c", f"constraints/first-sight-{name.replace('_', '-')}.txt", *packages,
                                     *(["opentelemetry-instrumentation-genai-openai"] if variant else [])],
                         "record": ["python", "-m", "tests.captures.record_otel_genai", name + variant]}
        for name, packages, variants in (
            ("openai_agents_otel_genai", ["openai-agents", "opentelemetry-instrumentation-genai-openai-agents"],
             ("", "_openai")),
            ("langgraph_otel_genai", ["langgraph", "langgraph-supervisor", "langchain", "langchain-openai",
                                      "opentelemetry-instrumentation-genai-langchain"], ("",)),
            ("agno_otel_genai", ["agno", "openai", "opentelemetry-instrumentation-genai-agno"], ("", "_openai")),
            ("llama_index_otel_genai", ["llama-index-core", "llama-index-llms-openai",
                                        "opentelemetry-instrumentation-genai-llama-index"], ("", "_openai")),
            ("smolagents_otel_genai", ["smolagents", "openai", "opentelemetry-instrumentation-genai-smolagents"],
             ("", "_openai")),
        )
        for variant in variants
    },
    # JavaScript frameworks, each traced by the instrumentation its users export OpenTelemetry with: a node project
    # (tests/captures/js: exact versions, package-lock.json; record_js.py runs ``npm ci`` when node_modules is
    # missing, so Node 20+ and npm must be on PATH), driven by one Python recorder that serves the scripted model.
    # Nothing to pip-install beyond CAPTURE_TOOLS. vercel_ai_v7 (ai 7 with @ai-sdk/otel) is a node project of its
    # own, tests/captures/js7; langgraph_js_openllmetry is langgraph_js's run traced by OpenLLMetry JS. First sight
    # (tests/data/first_sight/): strands_js, google_adk_js and voltagent, in the node project tests/captures/js_agents;
    # mastra_network (Mastra's agent network) in tests/captures/js.
    **{
        name: {"install": [], "record": ["python", "-m", "tests.captures.record_js", name]}
        for name in ("openai_agents_js", "langgraph_js", "mastra", "vercel_ai", "vercel_ai_v7",
                     "langgraph_js_openllmetry", "strands_js", "google_adk_js", "voltagent", "mastra_network")
    },
}  # fmt: skip


@nox.session(python="3.11", venv_backend="uv", default=False)
@nox.parametrize("framework", list(CAPTURES))
def captures(session: nox.Session, framework: str) -> None:
    """Re-record tests/data/captures/<framework>/, or a first-sight pair's tests/data/first_sight/<framework>/ (``-- RUN
    ...`` records only those runs)."""
    spec = CAPTURES[framework]
    install_once(session, [*spec["install"], *CAPTURE_TOOLS])
    session.run(*spec["record"], *session.posargs)


# Each framework's own test suite, from its release's PyPI sdist (which carries the tests), run plain and with
# mast_otel.instrument() loaded first (scripts/transparency/run.py): what that suite needs beyond the framework,
# the release, pytest arguments, environment. Long (LangGraph's ~3,000 tests, the OpenAI Agents SDK's ~11,800):
# not in the default list; `nox -s "transparency(framework='langgraph')" -- tests/test_large_cases.py` runs part.
TRANSPARENCY: dict[str, dict[str, list[str]]] = {
    "langgraph": {
        "sdist": ["langgraph==1.2.24"],
        "install": [
            "-c", "constraints/langgraph.txt", "langgraph==1.2.24", "langgraph-checkpoint-sqlite",
            "langgraph-checkpoint-postgres", "psycopg[binary]", "psycopg-pool", "pycryptodome", "redis",
            "langgraph-sdk", "pytest", "pytest-mock", "pytest-dotenv", "pytest-repeat", "syrupy", "httpx",
        ],
        "env": ["NO_DOCKER=true"],  # the suite's own switch: no Postgres/Redis containers, those tests skip
        "args": ["tests"],
    },
    "autogen_agentchat": {
        "sdist": ["autogen-agentchat==0.7.5"],
        "install": [
            "-c", "constraints/autogen-agentchat-0.7.5.txt", "autogen-agentchat==0.7.5", "autogen-core==0.7.5",
            "autogen-ext[openai,anthropic,mcp]==0.7.5", "mcp<2", "pytest", "pytest-asyncio",
        ],
        "env": [],
        "args": ["tests"],
    },
    "openai_agents": {
        "sdist": ["openai-agents==0.24.0"],
        "install": [
            "-c", "constraints/openai-agents-0.24.txt",
            "openai-agents[voice,viz,litellm,sqlalchemy,encrypt,redis,docker]==0.24.0",
            "pytest", "pytest-asyncio", "pytest-mock", "inline-snapshot", "fastapi", "aiosqlite", "fakeredis",
            "httpx", "rich", "textual", "eval-type-backport",
        ],
        "env": [],
        # The sdist leaves out a few repository files some modules read at import: those modules fail to collect,
        # the same way in both runs. The two files ignored patch os.fstat on the real os module; the first was seen
        # to break pytest's own output capture, ending the whole run without a report (the second does the same).
        "args": [
            "--continue-on-collection-errors", "tests", "--ignore=tests/sandbox/test_docker_removal_worker.py",
            "--ignore=tests/sandbox/test_unix_local_user_file_io.py",
        ],
    },
}  # fmt: skip


@nox.session(python="3.11", venv_backend="uv", default=False)
@nox.parametrize("framework", list(TRANSPARENCY))
def transparency(session: nox.Session, framework: str) -> None:
    """A framework's own test suite plain and instrumented, outcomes compared per test id (docs/robustness.md).

    Positional arguments replace the suite's default pytest arguments (e.g. a test file). The figures go to
    test-artifacts/transparency/FRAMEWORK/summary.json; the session fails when any outcome differs.
    """
    suite = TRANSPARENCY[framework]
    install_once(session, [*suite["install"], "pip", "-e", "."])
    out = ROOT / "test-artifacts" / "transparency" / framework
    env_args = [arg for item in suite["env"] for arg in ("--env", item)]
    session.run(
        "python", str(ROOT / "scripts" / "transparency" / "run.py"), "--sdist", suite["sdist"][0], "--out", str(out),
        *env_args, "--", *(session.posargs or suite["args"]),
    )  # fmt: skip


@nox.session(python="3.11", venv_backend="uv", default=False)
def mutation(session: nox.Session) -> None:
    """Mutation testing (mutmut) of the modules users rely on: ``nox -s mutation`` (all, ~1 h on an idle machine),
    ``nox -s mutation -- mast_otel/redaction.py`` (one), ``nox -s mutation -- --sample 36`` (CI's seeded sample).
    Not in the default run. The modules and their tests: [tool.mast-otel.mutation] in pyproject.toml; the how-to
    and the scores: docs/benchmarks.md. mast-otel is installed editable: mutmut puts its mutated copy first on
    sys.path, which wins over the editable finder."""
    # The main tier's extras (AG2 for the recorder's tests, dev for pytest, hypothesis and import-linter): a
    # module's tests run here as they do there.
    install_once(session, ["mutmut==3.8.1", "-e", ".[ag2,collector,judge,dev]"])
    session.run("python", "scripts/mutation.py", *session.posargs)
