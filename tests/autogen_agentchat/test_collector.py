"""Every team type through a real collector process (OTLP/gRPC in, rules judge, OTLP out), then the judge's own
command line (``mast-otel judge --dry-run``) on the exported spans: each conversation comes out judged, and its
transcript lists the messages in the order of the team's ``TaskResult``.

The collector and the judge run from the main environment's interpreter (they need the collector extra, which
this environment does not install): ``MAST_OTEL_MAIN_PYTHON``, default ``.venv/bin/python``.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.autogen_agentchat.conftest import SKIP_REASON

pytest.importorskip("autogen_agentchat", reason=SKIP_REASON)

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from examples.scripted_openai import ScriptedOpenAI
from mast_otel import semconv as sc
from mast_otel.integrations.autogen_agentchat import AutogenAgentChatInstrumentor
from tests.autogen_agentchat import scenarios as s
from tests.autogen_agentchat.record import chat_messages, speakers
from tests.frameworks import main_python_that_imports
from tests.otlp_sink import otlp_sink
from tests.viewing._support import collector_process

TEAMS = {
    "round robin": (s.round_robin, s.TASK),
    "selector": (lambda url: s.selector(url, allow_repeated_speaker=True), s.TASK),
    "swarm": (s.swarm, "I want a refund"),
    "graph": (s.graph_flow, s.TASK),
    "magentic one": (s.magentic_one, s.TASK),
}
_HANDOFF_LINE = re.compile(r"^\[H\d+\] handoff \S+ -> (\S+) \(reason: [a-z_]+")
_MESSAGE_LINE = re.compile(r"^\[M(\d+)\] (\S+) -> [^:]+: (.*)$")


async def test_teams_through_a_real_collector_come_out_judged(tmp_path: Path) -> None:
    python = main_python_that_imports("mast_otel.collector.service", "the collector")
    results: dict[str, Any] = {}
    members: dict[str, list[str]] = {}
    with (
        otlp_sink() as sink,
        collector_process(tmp_path, sink.grpc_endpoint, program=[python, "-m", "mast_otel.cli"]) as col,
    ):
        provider = TracerProvider(resource=Resource.create({"service.name": "autogen-teams"}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=col.grpc, insecure=True)))
        inst = AutogenAgentChatInstrumentor()
        inst.instrument(tracer_provider=provider)
        try:
            for name, (build, task) in TEAMS.items():
                with ScriptedOpenAI(s.SCRIPT) as server:
                    team = build(server.base_url)
                    team._name = name.replace(" ", "_")
                    members[team.name] = [p.name for p in team._participants]
                    results[team.name] = await team.run(task=task)
        finally:
            inst.uninstrument()
            provider.force_flush()
            provider.shutdown()
        roots = _wait_for_judged_roots(sink, len(TEAMS))
        requests = sink.requests()
    assert sorted(r.attributes[sc.GEN_AI_WORKFLOW_NAME] for r in roots) == sorted(results)
    for root in roots:
        assert root.attributes[sc.JUDGE_STATUS] == sc.JUDGE_SKIPPED  # no model: signals, no labels
        assert root.attributes[sc.LABEL_SOURCE] == sc.SOURCE_NONE

    exported = tmp_path / "exported.otlp.json"
    exported.write_text(json.dumps({"resourceSpans": [
        rs for r in requests for rs in json_format.MessageToDict(r)["resourceSpans"]
    ]}))  # fmt: skip
    done = subprocess.run([python, "-m", "mast_otel.cli", "judge", str(exported), "--dry-run", "--show-prompt"],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rendered = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(rendered) == len(results)
    for item in rendered:
        prompt = "\n".join(str(m["content"]) for chunk in item["prompt"] for m in chunk)
        team = next(n for n in results if f"conversation {n} " in prompt)
        lines = [m for m in (_MESSAGE_LINE.match(x) for x in prompt.splitlines()) if m]
        expected = [(msg.source, msg.to_text().split("\n")[0]) for msg in chat_messages(results[team])]
        assert [(m.group(2), m.group(3)) for m in lines] == expected, team
        assert [int(m.group(1)) for m in lines] == list(range(1, len(expected) + 1))
        # Each handoff sits right before the turn it gave: the next participant to speak is its target.
        participants = members[team]
        events = prompt.splitlines()
        handoffs = 0
        for i, line in enumerate(events):
            handoff = _HANDOFF_LINE.match(line)
            if handoff is None:
                continue
            handoffs += 1
            after = [m for m in (_MESSAGE_LINE.match(x) for x in events[i + 1 :]) if m and m.group(2) in participants]
            assert after and after[0].group(2) == handoff.group(1), (team, line)
        assert handoffs == len(speakers(results[team], participants))


def _wait_for_judged_roots(sink: Any, count: int, timeout: float = 60.0) -> list[Any]:
    deadline = time.monotonic() + timeout
    while True:
        roots = [
            sp for sp in sink.spans() if sp.span_type == sc.SPAN_TYPE_CONVERSATION and sc.JUDGE_STATUS in sp.attributes
        ]
        if len(roots) >= count or time.monotonic() > deadline:
            assert len(roots) == count, f"{len(roots)} judged conversations of {count}"
            return roots
        time.sleep(0.2)
