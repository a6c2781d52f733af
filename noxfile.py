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


@nox.session(python="3.11", venv_backend="venv")
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
    run_tests(session, "metagpt", *quiet, "tests/metagpt")


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
    run_tests(session, "openai_agents", "tests/openai_agents")


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
    run_tests(session, "ag2_1x", "tests/ag2_1x")


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
    run_tests(session, "langgraph", "tests/langgraph")


@nox.session(python="3.11", venv_backend="uv")
def crewai(session: nox.Session) -> None:
    """CrewAI 1.x (and OpenInference's CrewAI instrumentation, which the overhead benchmark compares against). Its
    install is about 1 GB (chromadb, lancedb, onnxruntime): kept out of the main environment."""
    install_once(
        session,
        ["-c", "constraints/crewai.txt", "crewai", "openinference-instrumentation-crewai"],
        ["-c", "constraints/crewai.txt", "-e", ".[collector]", "pytest>=8", "pytest-asyncio>=0.23"],
    )
    run_tests(session, "crewai", "tests/crewai")


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
    run_tests(session, "autogen_agentchat", "tests/autogen_agentchat")


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


@nox.session(python="3.11", venv_backend="uv", default=False)
def mutation(session: nox.Session) -> None:
    """Mutation testing (mutmut) of the modules users rely on: ``nox -s mutation`` (all, ~1 h on an idle machine),
    ``nox -s mutation -- mast_otel/redaction.py`` (one), ``nox -s mutation -- --sample 36`` (CI's seeded sample).
    Not in the default run. The modules and their tests: [tool.mast-otel.mutation] in pyproject.toml; the how-to
    and the scores: docs/benchmarks.md. mast-otel is installed editable: mutmut puts its mutated copy first on
    sys.path, which wins over the editable finder."""
    tools = ["mutmut==3.8.1", "pytest>=8", "pytest-asyncio>=0.23", "hypothesis>=6.100", "jsonschema>=4"]
    install_once(session, [*tools, "-e", ".[collector,judge]"])
    session.run("python", "scripts/mutation.py", *session.posargs)
