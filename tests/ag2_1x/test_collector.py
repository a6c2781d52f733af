"""The triage example through a real ``mast-otel collector`` process: every conversation comes out judged, and
``mast-otel judge --dry-run`` reads its transcript in the order of AG2's write-ahead log.

The example runs in this (AG2 1.x) environment as its own process, instrumented by its one line and exporting
OTLP/gRPC; the collector and ``mast-otel judge`` run from the main environment (``MAST_OTEL_MAIN_PYTHON``), which
has the judge's extras. The collector exports to a local OTLP/HTTP receiver (the demo's ``Downstream``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ag2_1x.conftest import SKIP_REASON

pytest.importorskip("ag2.network", reason=SKIP_REASON)

from examples.demo import Downstream, wait_for_verdicts
from tests.frameworks import REPO, main_python_that_imports
from tests.servers import free_port, stop, wait_http

SERVICE = "ag2-1x-triage"
MESSAGE_LINE = re.compile(r"^\[M(?P<n>\d+)\] (?P<sender>\S+) -> [^:]+: (?P<text>.*)$")


def main_mast_otel() -> Path:
    return Path(main_python_that_imports("mast_otel.evaluation.judge_cli", "the collector")).parent / "mast-otel"


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[tuple[str, Downstream]]:
    """``mast-otel collector`` (rules judge) on free 127.0.0.1 ports, exporting to a downstream; stopped by PID."""
    exe = main_mast_otel()
    ports = {name: free_port() for name in ("grpc", "http", "metrics")}
    with Downstream(tmp_path / "spans.jsonl") as downstream, (tmp_path / "collector.log").open("wb") as log:
        cmd = [
            str(exe), "collector",
            "--otlp-grpc", f"127.0.0.1:{ports['grpc']}",
            "--otlp-http", f"127.0.0.1:{ports['http']}",
            "--metrics", f"127.0.0.1:{ports['metrics']}",
            "--store", str(tmp_path / "collector.db"),
            "--export-endpoint", downstream.endpoint,
            "--quiet-period", "1",
            "--judge", "rules",
        ]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_http(f"http://127.0.0.1:{ports['metrics']}/metrics", 60, proc)
            yield f"http://127.0.0.1:{ports['grpc']}", downstream
        finally:
            stop(proc)


def test_triage_example_is_judged_and_its_transcript_follows_the_wal(
    collector: tuple[str, Downstream], tmp_path: Path
) -> None:
    endpoint, downstream = collector
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL="grpc",
        OTEL_SERVICE_NAME=SERVICE,
        PYTHONPATH=str(REPO),
    )
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "ag2_1x_triage.py")],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    *wal_lines, closed = done.stdout.strip().splitlines()  # the example prints the WAL's messages, then the close
    assert closed == "channel closed: resolved"

    (conversation,) = [c for c in wait_for_verdicts(downstream, {SERVICE}, timeout=60) if c.service == SERVICE]
    assert conversation.status == "skipped"  # no model: signals, no labels
    assert "unchecked_approval" in conversation.signals, "the example's unchecked approval is a signal it raises"

    otlp = tmp_path / "exported.otlp.json"
    docs = [json.loads(line) for line in downstream.jsonl.read_text().splitlines()]
    otlp.write_text(json.dumps({"resourceSpans": [rs for d in docs for rs in d["resourceSpans"]]}))
    judged = subprocess.run(
        [str(main_mast_otel()), "judge", str(otlp), "--dry-run", "--show-prompt"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert judged.returncode == 0, judged.stderr[-3000:]
    (row,) = [json.loads(line) for line in judged.stdout.splitlines()]
    prompt = "\n".join(message["content"] for message in row["prompt"][0])  # one chunk: a short conversation
    found = [MESSAGE_LINE.match(line) for line in prompt.splitlines()]
    transcript = [(m["sender"], m["text"]) for m in found if m]
    assert [f"{sender}: {text}" for sender, text in transcript] == wal_lines
    assert [int(m["n"]) for m in found if m] == list(range(1, len(wal_lines) + 1))


async def test_every_scenario_conversation_comes_out_judged(collector: tuple[str, Downstream]) -> None:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from mast_otel import semconv as sc
    from mast_otel.integrations.ag2_1x import AG2V1Instrumentor
    from tests.ag2_1x import scenarios

    endpoint, downstream = collector
    provider = TracerProvider(resource=Resource.create({"service.name": "ag2-1x-scenarios"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, insecure=True)))
    inst = AG2V1Instrumentor()
    inst.instrument(tracer_provider=provider)
    try:
        channels, nested = [], []
        for scenario in (
            scenarios.discussion,
            scenarios.delegation,
            lambda hub: scenarios.ping_pong(hub, ("user", "writer", "editor"), max_turns=4),
            scenarios.failing_turn,
        ):
            hub = await scenarios.open_hub()  # one hub each: the scenarios reuse agent names
            channels.append(await scenario(hub))
            nested += [c.channel_id for c in await hub.list_channels() if c.manifest.type == "consulting"]
            await hub.close()
    finally:
        inst.uninstrument()
        provider.shutdown()

    def labelled_roots() -> dict[object, Any]:
        return {
            s.attributes.get(sc.GEN_AI_CONVERSATION_ID): s
            for s in downstream.spans()
            if s.attributes.get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_CONVERSATION
        }

    # Each conversation is released after its own quiet period: wait until every outer one arrived labelled (a
    # nested conversation is released with, and labelled on, the root of the one that started it).
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        roots = labelled_roots()
        if set(roots) == {*channels, *nested} and all("mast.judge.status" in roots[c].attributes for c in channels):
            break
        time.sleep(0.25)
    assert set(roots) == {*channels, *nested}
    statuses = {cid: roots[cid].attributes.get("mast.judge.status") for cid in channels}
    assert statuses == dict.fromkeys(channels, "skipped")  # no model: signals, no labels
    # The delegate's consulting conversation belongs to the conversation that started it, judged with it.
    (child,) = nested
    assert roots[child].attributes.get(sc.CONVERSATION_PARENT_ID) == channels[1]
    assert roots[child].trace_id == roots[channels[1]].trace_id
