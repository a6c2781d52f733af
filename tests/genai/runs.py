"""The real runs of the frameworks that trace themselves with OpenTelemetry GenAI spans: each is an example program
(``examples/<framework>_desk.py``) run as its own process, as a user runs it, with the framework's tracing settings
of one variant, exporting OTLP/gRPC to ``endpoint``. The fixture recorder (``python -m tests.genai.record``) and the
real-collector tests (``tests/<session>/test_collector.py``) both run them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.frameworks import REPO


@dataclass(frozen=True)
class Variant:
    """One set of tracing settings: the example's ``--content`` choice and the environment variables a user sets."""

    content: str = "default"
    env: dict[str, str] = field(default_factory=dict)
    content_captured: bool = False  # whether the spans hold message text under these settings
    root: str | None = None  # the name the conversation's root span starts with, where not the framework's usual


@dataclass(frozen=True)
class Framework:
    session: str  # the nox session whose environment has it
    example: str  # examples/<example>.py
    framework: str  # the name mast-otel reports it by (mast.framework)
    root: str  # the name the framework's root span starts with
    switch: str  # the name of the framework's content-capture switch, which a no-content verdict names
    variants: dict[str, Variant]


FRAMEWORKS: dict[str, Framework] = {
    "google_adk": Framework(
        "google_adk",
        "google_adk_desk",
        "google-adk",
        "invoke_workflow",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
        {
            "default": Variant(),  # schema v2, no content
            "content": Variant(content="on", content_captured=True),  # ..._CAPTURE_MESSAGE_CONTENT=SPAN_ONLY
            # ADK's legacy schema v1: an attribute-less "invocation" root, content in gcp.vertex.agent.* attributes
            "legacy": Variant(
                env={"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"}, content_captured=True, root="invocation"
            ),
        },
    ),
    "pydantic_ai": Framework(
        "pydantic_ai",
        "pydantic_ai_desk",
        "pydantic-ai",
        "invoke_agent triage",
        "include_content",
        {"default": Variant(content_captured=True), "no-content": Variant(content="off")},
    ),
    "strands": Framework(
        "strands",
        "strands_desk",
        "strands",
        "invoke_swarm",
        "gen_ai_unredacted_attributes",
        {
            "default": Variant(content_captured=True),  # content as span events (legacy conventions)
            "latest-events": Variant(
                env={"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}, content_captured=True
            ),
            "latest-attributes": Variant(content="on", content_captured=True),
            "redacted": Variant(content="off"),
        },
    ),
    "agent_framework": Framework(
        "agent_framework",
        "agent_framework_desk",
        "agent-framework",
        "workflow.run",
        "ENABLE_SENSITIVE_DATA",
        {
            "default": Variant(),  # no content
            "content": Variant(content="on", content_captured=True),  # ENABLE_SENSITIVE_DATA=true
            # The v1.36 baseline conventions: with sensitive data on, the text goes to log records only.
            "baseline-content": Variant(content="on", env={"OTEL_SEMCONV_STABILITY_OPT_IN": ""}),
        },
    ),
}


def run_example(name: str, variant: str, endpoint: str, tmp: Path, *, service: str | None = None,
                solo: bool = False, settings: Variant | None = None) -> dict[str, Any]:  # fmt: skip
    """Run the example of framework ``name`` under ``variant`` (in this interpreter: the framework's own
    environment), exporting to ``endpoint``; the framework's own record of the run (``examples/_genai.py``).
    ``solo``: the example's one-agent control run (``--solo``) instead of the desk; ``settings``: tracing settings
    of no variant here (``variant`` then only names them)."""
    spec = FRAMEWORKS[name]
    settings = settings or spec.variants[variant]
    record = tmp / f"{name}-{variant}.record.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MAST_OTEL_EXAMPLE"))}
    env.update(
        settings.env,
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_SERVICE_NAME=service or f"{name}-{variant}",
        PYTHONPATH=str(REPO),
        LITELLM_LOCAL_MODEL_COST_MAP="True",  # LiteLLM (ADK) would otherwise fetch its price list over the network
    )
    cmd = [sys.executable, str(REPO / "examples" / f"{spec.example}.py"), "--content", settings.content,
           "--record", str(record), *(["--solo"] if solo else [])]  # fmt: skip
    done = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(record.read_text(encoding="utf-8"))
    return result
