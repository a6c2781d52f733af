"""Our spans stay right whatever else traces the same run: autogen-core's built-in tracing (runtime messaging
spans on or off) and OpenInference's autogen-agentchat instrumentation. Each case is its own process, since
autogen-core traces to the global tracer provider."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.autogen_agentchat.conftest import SKIP_REASON

pytest.importorskip("autogen_agentchat", reason=SKIP_REASON)

from tests.autogen_agentchat.scenarios import REPO

CASES = {
    "builtin runtime tracing on": ({}, []),
    "builtin runtime tracing off": ({"AUTOGEN_DISABLE_RUNTIME_TRACING": "true"}, []),
    "with OpenInference": ({"AUTOGEN_DISABLE_RUNTIME_TRACING": "true"}, ["--openinference"]),
    "with OpenInference and runtime tracing": ({}, ["--openinference"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_spans_survive_other_tracing(case: str) -> None:
    env, args = CASES[case]
    done = subprocess.run(
        [sys.executable, "-m", "tests.autogen_agentchat._coexist", *args],
        cwd=REPO, env={**os.environ, **env}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["messages"] == out["framework"]
    assert out["handoffs"] == [m[0] for m in out["framework"] if m[0] != "user"]
    assert out["tools"] == ["lookup", "transfer_to_bob"]
    assert out["termination_detail"] == out["stop_reason"]
    assert out["all_descend_from_root"]
    scopes = out["scopes"]
    assert scopes.get("autogen-core", 0) > 0  # autogen-core's invoke_agent / execute_tool spans were exported too
    runtime = sum(n for name, n in scopes.items() if "Runtime" in name)
    assert (runtime > 0) == ("AUTOGEN_DISABLE_RUNTIME_TRACING" not in env)
    openinference = scopes.get("openinference.instrumentation.autogen_agentchat", 0)
    assert (openinference > 0) == ("--openinference" in args)
