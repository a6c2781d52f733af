"""End to end with a real trace store: AG2 group chat -> collector (LLM judge) -> Arize Phoenix (OTLP/HTTP).

The judge is the collector's real LLM judge against a scripted OpenAI-compatible server that reads the transcript
and marks 1.3 on the coder's messages (tests/judge/fake_openai.py ``citing``), so the labels are a judge's.

Phoenix runs from its own venv (``bash scripts/setup-phoenix.sh``) on 127.0.0.1 with a temp working directory and
telemetry off; its gRPC port binds every interface whatever PHOENIX_HOST says, so it gets a free port and is never
used (the collector exports OTLP/HTTP). The test reads the labels back through Phoenix's REST API: the root's
``mast.*`` attributes, the evidence spans' ``mast.failure_mode``, and Phoenix's own span filter language on them;
then headless Chromium (Playwright, Debian's chromium) opens the trace in Phoenix's UI and saves screenshots of
the labelled root and of an evidence span to test-artifacts/. The collector also posts each verdict through
Phoenix's annotation API (``--phoenix-url``): the test reads the annotations back and screenshots the root's
Annotations tab.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.judge.fake_openai import citing, fake_openai
from tests.servers import free_port, stop, wait_http
from tests.viewing._support import ARTIFACTS, ROOT, Collector, collector_process, require_binary, require_path

pytestmark = pytest.mark.integration

PHOENIX_VENV = Path(os.environ.get("PHOENIX_VENV", ROOT / ".venv-phoenix"))
PROJECT = "mast-otel-e2e"
SERVICE = "phoenix-e2e-group-chat"


@contextmanager
def phoenix(workdir: Path) -> Iterator[str]:
    """``phoenix serve`` on 127.0.0.1 (free ports, temp working dir, telemetry off); yields its URL; stopped by PID."""
    exe = require_path(PHOENIX_VENV / "bin" / "phoenix", "bash scripts/setup-phoenix.sh")
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(workdir / "phoenix"),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),  # binds all interfaces regardless; unused here
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    ARTIFACTS.mkdir(exist_ok=True)
    with (ARTIFACTS / "phoenix.log").open("wb") as log:
        proc = subprocess.Popen([str(exe), "serve"], stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            wait_http(f"http://127.0.0.1:{port}/healthz", timeout=120, proc=proc)
            yield f"http://127.0.0.1:{port}"
        finally:
            stop(proc, grace=15)


def get(url: str, **params: str) -> Any:
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    with urllib.request.urlopen(url + query, timeout=10) as r:
        return json.loads(r.read())


def graphql_filter(base: str, project_id: str, condition: str) -> list[str]:
    """Span names matching a Phoenix span filter (what a user types in the UI's filter bar)."""
    query = ("query($id: ID!, $f: String!) { node(id: $id) { ... on Project { spans(first: 100, filterCondition: $f)"
             " { edges { node { name } } } } } }")  # fmt: skip
    body = json.dumps({"query": query, "variables": {"id": project_id, "f": condition}}).encode()
    request = urllib.request.Request(f"{base}/graphql", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as r:
        data = json.loads(r.read())
    assert "errors" not in data, data["errors"]
    return [e["node"]["name"] for e in data["data"]["node"]["spans"]["edges"]]


def run_group_chat(collector_grpc: str, log: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "MAST_OTEL_EXAMPLE_BASE_URL"}
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=collector_grpc,
        OTEL_SERVICE_NAME=SERVICE,
        OTEL_RESOURCE_ATTRIBUTES=f"openinference.project.name={PROJECT}",  # Phoenix's project
        PYTHONPATH=str(ROOT),
    )
    with log.open("wb") as out:
        done = subprocess.run([sys.executable, str(ROOT / "examples" / "ag2_group_chat.py")], stdout=out,
                              stderr=subprocess.STDOUT, env=env, timeout=120)  # fmt: skip
    assert done.returncode == 0, log.read_text()[-3000:]


def test_labelled_trace_in_phoenix_api_and_ui(tmp_path: Path) -> None:
    require_binary("chromium")
    judge = fake_openai([citing({"1.3": r"^coder -> "}, summary="The coder sent the same broken code twice.")])
    with judge as model, phoenix(tmp_path) as base:
        extra = ["--judge", "llm", "--judge-base-url", model.base_url, "--judge-model", "scripted-judge",
                 "--phoenix-url", base]  # fmt: skip
        with collector_process(tmp_path, f"{base}/v1/traces", extra=extra) as collector:
            _check_phoenix(base, collector, tmp_path)


def _check_phoenix(base: str, collector: Collector, tmp_path: Path) -> None:
    started = time.monotonic()
    run_group_chat(collector.grpc, tmp_path / "example.log")

    def labelled_root() -> dict[str, Any] | None:
        try:
            spans = get(f"{base}/v1/projects/{PROJECT}/spans", limit="1000")["data"]
        except urllib.error.HTTPError:  # the project appears with the first span
            return None
        roots = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "invoke_workflow"]
        return roots[0] if roots and "mast.judge.status" in roots[0]["attributes"] else None

    deadline = time.monotonic() + 60
    while (root := labelled_root()) is None:
        assert time.monotonic() < deadline, (
            f"no labelled root in Phoenix; collector log:\n{collector.log.read_text()}"
        )
        time.sleep(0.3)
    arrived = time.monotonic() - started

    # The root's labels, read back from the store.
    attrs = root["attributes"]
    assert attrs["mast.judge.status"] == "ok" and attrs["mast.label.source"] == "llm"
    assert attrs["mast.failed"] is True and attrs["mast.judge.model"] == "scripted-judge"
    assert list(attrs["mast.failure_modes"]) == ["1.3"]
    assert attrs["mast.fm.1_3"] is True
    assert attrs["mast.framework"] == "ag2"
    trace_id = root["context"]["trace_id"]

    # Phoenix indexes spans asynchronously: wait until the trace's span count holds still before reading.
    def trace_size() -> int:
        return len(get(f"{base}/v1/projects/{PROJECT}/spans", trace_id=trace_id, limit="1000")["data"])

    deadline, last = time.monotonic() + 30, -1
    while (size := trace_size()) != last:
        assert time.monotonic() < deadline, "the trace kept growing in Phoenix"
        last = size
        time.sleep(1.0)

    # The evidence spans' labels: Phoenix's attribute filter finds exactly the repeated messages.
    evidence = get(f"{base}/v1/projects/{PROJECT}/spans", trace_id=trace_id, limit="1000",
                   attribute='mast.failure_mode:"1.3"')["data"]  # fmt: skip
    assert len(evidence) == 2
    for span in evidence:
        assert span["name"] == "message coder -> chat_manager" and span["attributes"]["mast.fm.1_3"] is True
        assert span["attributes"]["mast.failure_mode.name"] == "Step repetition"
        events = [e for e in span.get("events", ()) if e["name"] == "gen_ai.evaluation.result"]
        assert events and events[0]["attributes"]["mast.failure_mode"] == "1.3"

    # The filters docs/viewing.md gives for Phoenix's UI.
    project_id = next(p["id"] for p in get(f"{base}/v1/projects")["data"] if p["name"] == PROJECT)
    filters = {
        "'1.3' in mast.failure_modes": [root["name"]],
        "mast.failed == True": [root["name"]],
        "mast.failure_mode == '1.3'": sorted(s["name"] for s in evidence),
    }
    for condition, expected in filters.items():
        deadline = time.monotonic() + 20  # the REST read above may see a span before the filter index does
        while (found := sorted(graphql_filter(base, project_id, condition))) != expected:
            assert time.monotonic() < deadline, f"Phoenix filter {condition!r}: {found}, expected {expected}"
            time.sleep(0.5)

    # The OpenInference kinds Phoenix keys on (icons, filters): agent turns AGENT, the root CHAIN, handoffs DECISION.
    kinds = {s["name"].split(" ")[0]: s["span_kind"] for s in get(f"{base}/v1/projects/{PROJECT}/spans",
                                                                     trace_id=trace_id, limit="1000")["data"]}
    assert (kinds["invoke_workflow"], kinds["invoke_agent"], kinds["handoff"]) == ("CHAIN", "AGENT", "DECISION"), kinds

    # The annotations the collector posted through Phoenix's API, read back through it.
    root_id = root["context"]["span_id"]
    ids = [root_id, *(s["context"]["span_id"] for s in evidence)]
    deadline = time.monotonic() + 30
    while True:
        query = urllib.parse.urlencode([("span_ids", i) for i in ids] + [("limit", "100")])
        notes = get(f"{base}/v1/projects/{PROJECT}/span_annotations?{query}")["data"]
        got = sorted((a["span_id"] == root_id, a["name"], a["result"]["label"]) for a in notes)
        if len(got) >= 4 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert got == sorted([(True, "MAST verdict", "failed"), (True, "MAST 1.3 Step repetition", "present"),
                          (False, "MAST 1.3 Step repetition", "evidence"),
                          (False, "MAST 1.3 Step repetition", "evidence")]), collector.log.read_text()[-2000:]
    assert all(a["annotator_kind"] == "LLM" for a in notes)

    # The UI: the trace opens with the labelled root, and an evidence span shows its mode.
    url = f"{base}/projects/{project_id}/traces/{trace_id}"
    screenshot = ROOT / "tests" / "viewing" / "phoenix_screenshot.py"
    python = str(PHOENIX_VENV / "bin" / "python")
    shots = {
        # With OpenInference kinds on the spans, Phoenix's Info tab shows their input/output: labels are in Attributes.
        "phoenix-trace-root.png": ["--click", "Attributes", root["name"], "mast.failure_modes", "mast.fm.1_3"],
        # the evidence span's mode (its mast.failure_mode attributes were read through the REST API above)
        "phoenix-trace-evidence.png": ["--click", evidence[0]["name"], "Step repetition"],
        # Phoenix shows a span's annotations above its attributes, and as badges in the trace tree.
        "phoenix-trace-annotations.png": ["--click", root["name"], "Annotations", "MAST verdict"],
    }
    for name, args in shots.items():
        done = subprocess.run([python, str(screenshot), url, str(ARTIFACTS / name), *args], capture_output=True,
                              text=True, timeout=180)  # fmt: skip
        assert done.returncode == 0, f"{name}: {done.stdout}\n{done.stderr[-3000:]}"
        assert (ARTIFACTS / name).stat().st_size > 10_000
    print(f"labelled root readable in Phoenix {arrived:.1f} s after the example started")
