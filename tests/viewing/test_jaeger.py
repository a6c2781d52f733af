"""End to end with real Jaeger: the demo's AG2 conversations -> mast-otel collector (LLM judge) -> Jaeger v2.

Jaeger is the v2 all-in-one built by ``scripts/setup-go-tools.sh`` (in-memory storage, the shipped
``deploy/jaeger/config.yaml``), read through the HTTP API its UI's Search page calls (``/api/traces`` with
``service`` and ``tags``). The judge is the real LLMJudge against a scripted OpenAI-compatible server whose verdicts
are this test's oracle: 1.3 for the group chat (citing the messages its transcript shows twice), 3.2 for the group
API run (citing its last message), and an answer that is not a verdict for a third conversation (status error).
Every Tags query in docs/viewing.md's Jaeger table is run and must find exactly the traces those verdicts imply.

The UI screenshot test skips, saying why: ``go build`` of ``cmd/jaeger`` embeds only Jaeger's placeholder page (the
UI's assets are built from the jaeger-ui repository with npm and are not part of the Go module).
"""

from __future__ import annotations

import re
import subprocess
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

from examples.demo import EXAMPLES, run_example
from mast_otel import semconv as sc
from mast_otel.recorder import Recorder
from mast_otel.taxonomy import mode
from tests.collector.conftest import provider
from tests.go_servers import Jaeger, JaegerSpan, jaeger
from tests.judge.fake_openai import Reply, answer, completion, fake_openai
from tests.viewing._support import ARTIFACTS, ROOT, collector_process, require_binary

pytestmark = pytest.mark.integration

# The demo's two AG2 Classic runs, each under its own service.name.
GROUP_CHAT = next(e for e in EXAMPLES if e.script == "examples/ag2_group_chat.py")
GROUP_API = next(e for e in EXAMPLES if e.script == "examples/ag2_group_api.py")
GARBLED_SERVICE = "jaeger-e2e-garbled"
GARBLED_TASK = "Summarise the incident report for the on-call channel."
_LINE = re.compile(r"^\s*\[(M\d+)\] [^:]*: (.*)$")
_CONTINUED = re.compile(r"^\s*\| ?(.*)$")


@dataclass(frozen=True)
class Scripted:
    """What the scripted judge said about one conversation: the oracle for the Jaeger queries."""

    modes: Mapping[str, Sequence[str]]  # mode id -> cited message refs
    error: bool = False


def transcript_messages(body: Any) -> dict[str, str]:
    """Message ref -> text, from the judge's request (the transcript lines it fenced as data, continuations joined)."""
    text = "\n".join(m["content"] for m in body["messages"] if isinstance(m.get("content"), str))
    messages: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if (head := _LINE.match(line)) is not None:
            current = messages.setdefault(head.group(1), [head.group(2)])
        elif current is not None and (more := _CONTINUED.match(line)) is not None:
            current.append(more.group(1))
        else:
            current = None
    return {ref: "\n".join(lines).strip() for ref, lines in messages.items()}


def verdict_for(body: Any) -> tuple[str, Scripted]:
    """The scripted judge: which conversation this request is about, and what it answers."""
    text = "\n".join(m["content"] for m in body["messages"] if isinstance(m.get("content"), str))
    messages = transcript_messages(body)
    if GARBLED_TASK in text:
        return GARBLED_SERVICE, Scripted({}, error=True)
    if "Answer recorded" not in text:  # the GroupChat run (the group API run records its answer with a tool)
        by_text: dict[str, list[str]] = {}
        for ref, said in messages.items():
            by_text.setdefault(said.strip(), []).append(ref)
        repeated = max(by_text.values(), key=len)
        assert len(repeated) >= 2, f"the group chat's transcript repeats no message: {messages}"
        return GROUP_CHAT.service, Scripted({"1.3": repeated})
    return GROUP_API.service, Scripted({"3.2": [list(messages)[-1]]})


def judge_reply(body: Any) -> Reply:
    _, scripted = verdict_for(body)
    if scripted.error:
        return completion("I would rather not answer in JSON today.")
    return completion(answer(scripted.modes, summary="scripted verdict", done=False))


def expected_spans(scripted: Scripted) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(root attributes, evidence ref -> attributes) the collector must attach for ``scripted``, as Jaeger tags."""
    if scripted.error:
        return {sc.JUDGE_STATUS: sc.JUDGE_ERROR, sc.LABEL_SOURCE: sc.SOURCE_LLM}, {}
    root: dict[str, Any] = {sc.JUDGE_STATUS: sc.JUDGE_OK, sc.LABEL_SOURCE: sc.SOURCE_LLM, sc.FAILED: True}
    evidence: dict[str, dict[str, Any]] = {}
    for mode_id, refs in scripted.modes.items():
        flag = f"mast.fm.{mode_id.replace('.', '_')}"
        root[flag] = True
        for ref in refs:
            evidence[ref] = {sc.FAILURE_MODE: mode_id, flag: True}
    return root, evidence


def documented_jaeger_queries() -> list[dict[str, str]]:
    """The Tags column of docs/viewing.md's Jaeger table, each as {key: value} (several tags are ANDed)."""
    text = (ROOT / "docs" / "viewing.md").read_text()
    table = text[text.index("type in **Tags**") : text.index("Several tags in one search")]
    queries = []
    for cell in re.findall(r"^\|[^|]*\| `([^`]+)` \|$", table, re.MULTILINE):
        queries.append(dict(pair.split("=", 1) for pair in cell.split()))
    assert len(queries) >= 5, f"docs/viewing.md's Jaeger table changed shape: {queries}"
    return queries


def matches(attributes: Mapping[str, Any], tags: Mapping[str, str]) -> bool:
    """Jaeger's tag match: every tag on one span, compared as text (booleans as true/false)."""

    def text(value: Any) -> str:
        return str(value).lower() if isinstance(value, bool) else str(value)

    return all(key in attributes and text(attributes[key]) == want for key, want in tags.items())


def wait_for_roots(j: Jaeger, services: Sequence[str], timeout: float = 90) -> dict[str, list[JaegerSpan]]:
    """service -> its one trace, once that trace's root carries a verdict."""
    deadline = time.monotonic() + timeout
    while True:
        found = {s: t for s in services for t in j.search(s, {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_WORKFLOW})}
        if len(found) == len(services) and all(any(sc.JUDGE_STATUS in x.tags for x in t) for t in found.values()):
            return found
        assert time.monotonic() < deadline, f"labelled roots in Jaeger: {sorted(found)} of {sorted(services)}"
        time.sleep(0.5)


def record_garbled(otlp_grpc: str) -> None:
    tp = provider(OTLPSpanExporter(endpoint=otlp_grpc, insecure=True), service=GARBLED_SERVICE)
    rec = Recorder(tracer_provider=tp, framework="custom")
    with rec.conversation("incident-summary", task=GARBLED_TASK):
        with rec.agent_turn("writer"):
            rec.message("writer", ["reviewer"], "Draft: the database failed over at 02:10.")
        with rec.agent_turn("reviewer"):
            rec.message("reviewer", ["writer"], "Approved.")
        rec.terminate(sc.TERMINATION_COMPLETED)
    tp.shutdown()


def test_labelled_conversations_found_by_every_documented_jaeger_query(tmp_path: Path) -> None:
    services = [GROUP_CHAT.service, GROUP_API.service, GARBLED_SERVICE]
    judge = ["--judge", "llm", "--judge-model", "judge-m", "--judge-timeout", "60"]
    with fake_openai([judge_reply]) as llm, jaeger(tmp_path) as j:
        judge_env = {"MAST_OTEL_COLLECTOR_JUDGE_BASE_URL": llm.base_url, "MAST_OTEL_COLLECTOR_JUDGE_API_KEY": "k"}
        with collector_process(tmp_path, j.otlp_grpc, extra=judge, env=judge_env) as collector:
            started = time.monotonic()
            for example in (GROUP_CHAT, GROUP_API):
                run_example(example, collector.grpc, tmp_path / f"{example.service}.log")
            record_garbled(collector.grpc)
            traces = wait_for_roots(j, services)
            arrived = time.monotonic() - started
        check_labels_and_queries(j, traces, [r.json for r in llm.requests])
    print(f"labelled roots readable in Jaeger {arrived:.1f} s after the first example started")


def check_labels_and_queries(j: Jaeger, traces: Mapping[str, list[JaegerSpan]], requests: Sequence[Any]) -> None:
    # The oracle: what the scripted judge answered for each service, and the transcript it read.
    scripted: dict[str, Scripted] = {}
    transcripts: dict[str, dict[str, str]] = {}
    for body in requests:
        service, said = verdict_for(body)
        scripted[service] = said
        transcripts[service] = transcript_messages(body)
    assert set(scripted) == set(traces), f"the judge was asked about {sorted(scripted)}"

    # Each trace carries exactly the labels its verdict implies: on the root, and on each cited span.
    labelled: dict[str, list[dict[str, Any]]] = {}  # service -> the attributes its labelled spans must carry
    for service, trace in traces.items():
        root_want, evidence_want = expected_spans(scripted[service])
        (root,) = [s for s in trace if s.tags.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_WORKFLOW]
        assert {k: root.tags.get(k) for k in root_want} == root_want, f"{service}: root tags {root.tags}"
        if scripted[service].error:
            assert sc.FAILED not in root.tags and not any(k.startswith("mast.fm.") for k in root.tags)
        evidence = [s for s in trace if sc.FAILURE_MODE in s.tags]
        cited = {transcripts[service][ref].strip(): want for ref, want in evidence_want.items()}
        cited_texts = sorted(transcripts[service][ref] for ref in evidence_want)  # repeated texts count twice
        assert sorted(str(s.tags[sc.MESSAGE_CONTENT]).strip() for s in evidence) == cited_texts, (
            f"{service}: evidence spans {[s.name for s in evidence]}, cited {sorted(evidence_want)}"
        )
        for span in evidence:
            mode_id = span.tags[sc.FAILURE_MODE]
            want = cited[str(span.tags[sc.MESSAGE_CONTENT]).strip()]
            assert {k: span.tags.get(k) for k in want} == want and span.name.startswith("message ")
            assert span.tags[sc.FAILURE_MODE_NAME] == mode(mode_id).name
            (event,) = [e for e in span.events if e.get("event") == "gen_ai.evaluation.result"]
            assert event["gen_ai.evaluation.name"] == f"MAST {mode_id} {mode(mode_id).name}"
            assert event["gen_ai.evaluation.score.label"] == "present" and event[sc.FAILURE_MODE] == mode_id
            assert event["gen_ai.evaluation.explanation"] == f"reason {mode_id}"
        labelled[service] = [root_want, *evidence_want.values()]

    # Every documented Tags query finds exactly the traces the verdicts imply, in every service.
    queries = documented_jaeger_queries()
    for tags in queries:
        for service, trace in traces.items():
            found = {span.trace_id for t in j.search(service, tags) for span in t}
            want = {trace[0].trace_id} if any(matches(attrs, tags) for attrs in labelled[service]) else set()
            assert found == want, f"Jaeger tags {tags} in {service}: found {found}, expected {want}"
    assert all(any(matches(a, q) for s in traces for a in labelled[s]) for q in queries), "a query finds nothing"


def test_jaeger_ui_screenshot(tmp_path: Path) -> None:
    """A screenshot of Jaeger's UI when the binary embeds it; skipped with the reason when it serves the placeholder."""
    chromium = require_binary("chromium")
    with jaeger(tmp_path) as j:
        with urllib.request.urlopen(j.query + "/", timeout=10) as r:
            page = r.read().decode(errors="replace")
        if "not compiled with the UI assets" in page:
            pytest.skip(
                "the Jaeger built from Go modules serves its placeholder page: the UI's assets are built from the "
                "jaeger-ui repository with npm and are not in the Go module, so there is no UI to photograph"
            )
        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / "jaeger-search.png"
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,900",
                        "--virtual-time-budget=8000", f"--screenshot={shot}", f"{j.query}/search"],
                       capture_output=True, timeout=120, check=True)  # fmt: skip
        assert shot.stat().st_size > 10_000
