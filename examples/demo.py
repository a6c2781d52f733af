"""The mast-otel demo: instrumented AG2 chats -> collector -> judge -> labelled spans, metrics and a report.

Run it with ``bash scripts/demo.sh`` (which sets up ``.venv`` first) or, from the repository root::

    .venv/bin/python -m examples.demo [--out demo-output] [--judge auto|signals|llm] [--timeout 300]

What it does, every server on 127.0.0.1 and free ports, every process stopped by its PID at the end:

1. starts a small OTLP/HTTP receiver in this process: the "trace backend" the collector exports to. It saves
   every span it gets as OTLP JSON Lines (``OUT/spans.jsonl``), the input ``mast-otel report`` reads;
2. starts ``mast-otel collector`` on its embedded defaults (hold mode, SQLite store in a temp directory, a 1 s
   quiet period), exporting to that receiver;
3. runs the AG2 examples, offline with scripted replies, as separate processes instrumented by
   ``mast_otel.instrument()`` and exporting OTLP to the collector (``examples/ag2_group_chat.py``,
   ``examples/ag2_group_api.py``), each under its own ``service.name``;
4. waits until every conversation's root span arrives downstream with its verdict (``mast.judge.status``);
5. prints each conversation with its structural signals (``mast.signal.*``: facts, not verdicts) and, when a
   judge ran, its MAST labels and the spans cited as evidence, and how to find it in Jaeger, Tempo and Phoenix;
   the collector's non-zero ``mast_signal_total`` / ``mast_failure_mode_total`` series; the report
   (``OUT/report.html`` too);
6. prints the pattern report of its own runs from the collector's verdict history (each mode's rate among the
   judged conversations, by service, version and decisive agent; ``OUT/patterns.html`` with the rates over time)
   and keeps the history as ``OUT/collector.db.history`` for ``mast-otel report --history``;
7. exits 1 unless each signal the examples were built to raise was raised (and, with a judge, each failure mode
   they were written to show was labelled) in that example's trace.

The judge: with ``MAST_OTEL_JUDGE_BASE_URL`` or ``MAST_OTEL_JUDGE_MODEL`` set (any OpenAI-compatible server), or
``OPENAI_API_KEY`` (model ``MAST_OTEL_DEMO_OPENAI_MODEL``, default gpt-4o-mini), the collector runs the LLM judge
and the traces carry MAST labels; otherwise no model runs: signals only, every verdict ``skipped``. ``--judge``
forces one.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from mast_otel import semconv as sc
from mast_otel.collector.history import HistoryFile
from mast_otel.collector.report import (
    Conversation,
    Report,
    Span,
    conversations_from_spans,
    jaeger_tag,
    render_html,
    render_text,
    request_to_otlp_json,
    spans_from_otlp_json,
    traceql,
)
from mast_otel.collector.report.pattern_html import render_patterns_html
from mast_otel.collector.report.pattern_text import render_patterns_text
from mast_otel.collector.report.patterns import Question, build_report
from mast_otel.judge.signals import SIGNALS
from mast_otel.taxonomy import mode

ROOT = Path(__file__).resolve().parent.parent
DEMO_VERSION = "demo-1"  # the examples' service.version: the pattern report and the metrics' version label show it


@dataclass(frozen=True)
class Example:
    script: str  # path from the repository root
    service: str  # its service.name
    # What the example was written to show, from its docstring: each tuple is one failure, met by any of its modes.
    shows: tuple[tuple[str, ...], ...]
    # The structural signals it was built to raise (facts the collector sees without a model).
    raises: tuple[str, ...] = ()
    # The interpreter that runs it, from the repository root: a framework with its own nox environment runs in it
    # (``.nox/NAME/bin/python``, created by scripts/demo.sh); None = this interpreter (the main environment).
    python: str | None = None


EXAMPLES = (
    # a repeated step (1.3); a run cut off at max_round with no verified answer (1.5 unaware of termination /
    # 3.1 premature termination: the same failure seen from two sides, either label counts)
    Example("examples/ag2_group_chat.py", "demo-ag2-group-chat", (("1.3",), ("1.5", "3.1")),
            raises=("repeated_message", "round_limit")),
    # an answer approved without running the check the plan asked for (3.2 no or incomplete verification)
    Example("examples/ag2_group_api.py", "demo-ag2-group-api", (("3.2",),), raises=("unchecked_approval",)),
    # a reviewer approves a refund proposal without looking the order up (3.2 no or incomplete verification)
    Example(
        "examples/openai_agents_triage.py",
        "demo-openai-agents-triage",
        (("3.2",),),
        python=".nox/openai_agents/bin/python",
        raises=("unchecked_approval",),
    ),
    # AG2 1.x (its own environment): a refund approved by a reviewer who checked nothing (3.2)
    Example("examples/ag2_1x_triage.py", "demo-ag2-1x-triage", (("3.2",),), python=".nox/ag2_1x/bin/python",
            raises=("unchecked_approval",)),
    # Magentic-One (autogen-agentchat, its own nox environment): the researcher repeats one lookup (1.3); the
    # orchestrator stalls, re-plans and runs out of rounds (1.5 / 3.1)
    Example(
        "examples/autogen_magentic_one.py",
        "demo-autogen-magentic-one",
        (("1.3",), ("1.5", "3.1")),
        python=".nox/autogen_agentchat/bin/python",
        raises=("repeated_message", "round_limit"),
    ),
)


def log(msg: str) -> None:
    print(f"[demo] {msg}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# --- the downstream trace backend ----------------------------------------------------------------------------------


class Downstream:
    """OTLP/HTTP ``POST /v1/traces`` (protobuf or JSON) on 127.0.0.1; keeps the spans, appends OTLP JSON Lines."""

    def __init__(self, jsonl: Path) -> None:
        self.jsonl = jsonl
        self._lock = threading.Lock()
        self._spans: list[Span] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}/v1/traces"
        self._thread = threading.Thread(target=self._server.serve_forever, name="demo-downstream", daemon=True)

    def spans(self) -> list[Span]:
        with self._lock:
            return list(self._spans)

    def _add(self, request: ExportTraceServiceRequest) -> None:
        doc = request_to_otlp_json(request)
        with self._lock, self.jsonl.open("a", encoding="utf-8") as f:
            f.write(json.dumps(doc, separators=(",", ":")) + "\n")
            self._spans.extend(spans_from_otlp_json(doc))

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        downstream = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding", "").lower() == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest()
                try:
                    if self.headers.get("Content-Type", "").startswith("application/json"):
                        from google.protobuf import json_format

                        json_format.Parse(body, request, ignore_unknown_fields=True)
                    else:
                        request.ParseFromString(body)
                except Exception as exc:  # a bad body is the sender's fault: answer 400, keep serving
                    self._reply(400, str(exc).encode(), "text/plain")
                    return
                downstream._add(request)
                self._reply(200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")

            def _reply(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def __enter__(self) -> Downstream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


# --- processes -----------------------------------------------------------------------------------------------------


def stop(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM the process by its PID, SIGKILL it after ``grace`` seconds."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


HOW_TO_LABEL = ("For MAST labels, give the collector a judge: set OPENAI_API_KEY, or MAST_OTEL_JUDGE_BASE_URL "
                "(+ MAST_OTEL_JUDGE_MODEL) for any OpenAI-compatible endpoint, and run this again.")


def judge_flags(choice: str) -> tuple[list[str], str]:
    """The collector's judge flags for ``--judge auto|signals|llm`` and the environment, and a description."""
    env = os.environ
    llm_env = bool(env.get("MAST_OTEL_JUDGE_BASE_URL") or env.get("MAST_OTEL_JUDGE_MODEL"))
    openai_key = bool(env.get("MAST_OTEL_JUDGE_API_KEY") or env.get("OPENAI_API_KEY"))
    if choice == "signals" or (choice == "auto" and not (llm_env or openai_key)):
        return ["--judge", "signals"], "none (no model configured): structural signals only, no MAST labels"
    flags = ["--judge", "llm"]
    if not llm_env:  # only a key: the OpenAI API with a small default model
        flags += ["--judge-model", env.get("MAST_OTEL_DEMO_OPENAI_MODEL", "gpt-4o-mini")]
    where = env.get("MAST_OTEL_JUDGE_BASE_URL") or "the OpenAI API"
    model = env.get("MAST_OTEL_JUDGE_MODEL") or (flags[-1] if not llm_env else "the server's default model")
    return flags, f"LLM judge ({model} at {where})"


@contextmanager
def collector(workdir: Path, export_endpoint: str, judge: Sequence[str], log_path: Path) -> Iterator[dict[str, str]]:
    """``mast-otel collector`` on free 127.0.0.1 ports with a temp store; yields its endpoints; stops it by PID."""
    ports = {name: free_port() for name in ("grpc", "http", "metrics")}
    exe = shutil.which("mast-otel", path=str(Path(sys.executable).parent)) or "mast-otel"
    cmd = [
        exe, "collector",
        "--otlp-grpc", f"127.0.0.1:{ports['grpc']}",
        "--otlp-http", f"127.0.0.1:{ports['http']}",
        "--metrics", f"127.0.0.1:{ports['metrics']}",
        "--store", str(workdir / "collector.db"),
        "--export-endpoint", export_endpoint,
        "--quiet-period", "1",
        "--mode", "hold",
        *judge,
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAST_OTEL_COLLECTOR_")}  # flags only
    with log_path.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        log(f"collector started (pid {proc.pid}): OTLP gRPC 127.0.0.1:{ports['grpc']}, metrics "
            f"http://127.0.0.1:{ports['metrics']}/metrics, log {log_path}")  # fmt: skip
        try:
            metrics_url = f"http://127.0.0.1:{ports['metrics']}/metrics"
            _wait_ready(proc, metrics_url, ("127.0.0.1", ports["grpc"]), log_path)
            yield {"grpc": f"http://127.0.0.1:{ports['grpc']}", "metrics": metrics_url}
        finally:
            stop(proc)
            log(f"collector stopped (pid {proc.pid}, exit {proc.returncode})")


def _wait_ready(proc: subprocess.Popen[bytes], metrics_url: str, grpc: tuple[str, int], log_path: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the collector exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(metrics_url, timeout=2), socket.create_connection(grpc, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"the collector did not answer on {metrics_url} within 60 s; log: {log_path}")


def run_example(example: Example, otlp_grpc: str, log_path: Path) -> None:
    """The example script as its own process, exporting OTLP/gRPC to the collector (offline: scripted replies)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "MAST_OTEL_EXAMPLE_BASE_URL"}
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=otlp_grpc,
        OTEL_EXPORTER_OTLP_PROTOCOL="grpc",
        OTEL_SERVICE_NAME=example.service,
        OTEL_RESOURCE_ATTRIBUTES=f"service.version={DEMO_VERSION}",
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p),
    )
    started = time.monotonic()
    with log_path.open("wb") as out:
        python = str(ROOT / example.python) if example.python else sys.executable
        proc = subprocess.Popen([python, str(ROOT / example.script)], stdout=out, stderr=subprocess.STDOUT,
                                env=env, cwd=ROOT)  # fmt: skip
        try:
            code = proc.wait(120)
        finally:
            stop(proc)
    if code != 0:
        raise RuntimeError(f"{example.script} exited with {code}:\n{log_path.read_text()[-3000:]}")
    log(f"ran {example.script} as service {example.service} ({time.monotonic() - started:.1f} s, log {log_path})")


def wait_for_verdicts(downstream: Downstream, services: set[str], timeout: float) -> list[Conversation]:
    """Poll the downstream until every service has a labelled conversation and no conversation is unlabelled."""
    deadline = time.monotonic() + timeout
    conversations: list[Conversation] = []
    while time.monotonic() < deadline:
        conversations = conversations_from_spans(downstream.spans())
        labelled = {c.service for c in conversations if c.status != "unlabelled"}
        if services <= labelled and all(c.status != "unlabelled" for c in conversations):
            return conversations
        time.sleep(0.25)
    waiting = sorted(services - {c.service for c in conversations if c.status != "unlabelled"})
    raise TimeoutError(f"no labelled conversation from {', '.join(waiting)} within {timeout:.0f} s")


# --- output --------------------------------------------------------------------------------------------------------


def print_conversations(conversations: Sequence[Conversation]) -> None:
    print()
    print("Conversations (as the trace backend received them)")
    print("=" * 100)
    for c in conversations:
        print(f"trace {c.trace_id}  service {c.service}  framework {c.framework}")
        print(f"  {c.name}: mast.judge.status={c.status}  mast.label.source={c.source or '-'}")
        if c.status_reason:
            print(f"    mast.judge.status_reason: {c.status_reason}")
        print(f"  structural signals (facts, not verdicts): {', '.join(c.signals) or 'none'}")
        for name in c.signals:
            hint = SIGNALS[name].mode_id if name in SIGNALS else "?"
            spans = ", ".join(c.signal_spans.get(name, ())) or "(the conversation root)"
            print(f"    {name} (hints at {hint} {_name(hint)}): spans {spans}")
        if c.signals:
            print(f"    find it: Jaeger tags {sc.signal_attribute(c.signals[0])}=true (service {c.service}); Tempo "
                  f"{{ span.{sc.signal_attribute(c.signals[0])} = true }}")  # fmt: skip
        if not c.judged:
            print()
            continue
        modes = ", ".join(c.modes) or "none"
        print(f"  MAST labels from the judge: mast.failed={str(c.failed).lower()}  mast.failure_modes=[{modes}]")
        for m in c.modes:
            spans = ", ".join(c.evidence.get(m, ())) or "(no span cited)"
            print(f"    {m} {_name(m)}: evidence spans: {spans}")
        if c.modes:
            first = c.modes[0]
            print(f"    find it: Jaeger tags {jaeger_tag(first)} (service {c.service}); Tempo {traceql(first)}; "
                  f"Phoenix {phoenix_filter(first)}")  # fmt: skip
        print()


def phoenix_filter(mode_id: str) -> str:
    """The Phoenix span filter (its UI's filter bar) that finds the conversation roots labelled with a mode."""
    return f"'{mode_id}' in {sc.FAILURE_MODES}"


def _name(mode_id: str) -> str:
    try:
        return mode(mode_id).name
    except KeyError:
        return "(unknown mode)"


def print_metrics(metrics_url: str) -> None:
    with urllib.request.urlopen(metrics_url, timeout=5) as r:
        text = r.read().decode()
    for metric in ("mast_signal_total", "mast_failure_mode_total"):
        lines = [ln for ln in text.splitlines() if ln.startswith(metric + "{") and not ln.endswith(" 0.0")]
        print(f"Prometheus sees (collector /metrics, non-zero {metric} series):")
        for ln in lines or ["  (none)"]:
            print(f"  {ln}")
    print()


def runnable(examples: Sequence[Example]) -> list[Example]:
    """The examples whose interpreter exists (a framework's nox environment is made by scripts/demo.sh)."""
    return [e for e in examples if e.python is None or (ROOT / e.python).exists()]


def check_signals(conversations: Sequence[Conversation], examples: Sequence[Example] = EXAMPLES) -> list[str]:
    """The signals the examples were built to raise and no trace of theirs carries (empty: all raised)."""
    missing = []
    for example in examples:
        found = {s for c in conversations if c.service == example.service for s in c.signals}
        missing += [f"{name} in {example.script} (raised: {', '.join(sorted(found)) or 'none'})"
                    for name in example.raises if name not in found]  # fmt: skip
    return missing


def check(conversations: Sequence[Conversation], examples: Sequence[Example] = EXAMPLES) -> list[str]:
    """What the examples were written to show and no trace was labelled with (empty: all found)."""
    missing = []
    for example in examples:
        found = {m for c in conversations if c.service == example.service for m in c.modes}
        for wanted in example.shows:
            if not found & set(wanted):
                missing.append(
                    f"{' or '.join(wanted)} in {example.script} (labelled: {', '.join(sorted(found)) or 'none'})"
                )
    return missing


def print_patterns(history: Path, started: float, out: Path) -> None:
    """The pattern report of the demo's own runs, from the verdict history the collector kept (beside its store)."""
    with HistoryFile(history) as f:
        report = build_report([f], Question(started - 60, time.time() + 60))
    print("Patterns across runs (mast-otel report, from the collector's verdict history)")
    print("=" * 100)
    print(render_patterns_text(report))
    (out / "patterns.html").write_text(render_patterns_html(report, title="mast-otel demo: failure patterns"))
    log(f"patterns: {out / 'patterns.html'} (also: .venv/bin/mast-otel report --history {history} --since 1d; "
        "with a collector that runs for days: --since 7d --compare previous, or --compare version:NEW,OLD)")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", default="demo-output", help="where spans.jsonl, report.html and logs go")
    parser.add_argument("--judge", choices=("auto", "signals", "llm"), default="auto",
                        help="signals: no model (facts only); llm: the LLM judge; auto: llm when configured")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the verdicts")
    args = parser.parse_args(argv)

    started, wall_started = time.monotonic(), time.time()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / "spans.jsonl"
    jsonl.unlink(missing_ok=True)
    flags, judge_text = judge_flags(args.judge)
    log(f"judge: {judge_text}")
    # SIGTERM (CI timeouts) unwinds like Ctrl-C, so the finally blocks stop the collector.
    signal.signal(signal.SIGTERM, _interrupt)
    with tempfile.TemporaryDirectory(prefix="mast-otel-demo-") as tmp, Downstream(jsonl) as downstream:
        log(f"trace backend (OTLP/HTTP receiver) at {downstream.endpoint}, saving to {jsonl}")
        with collector(Path(tmp), downstream.endpoint, flags, out / "collector.log") as endpoints:
            # A framework's own environment is created by scripts/demo.sh; run directly without it, its example
            # is left out, and said so.
            ran = runnable(EXAMPLES)
            for example in EXAMPLES:
                if example not in ran:
                    log(f"left out {example.script}: {example.python} does not exist (bash scripts/demo.sh makes it)")
            for example in ran:
                run_example(example, endpoints["grpc"], out / f"{example.service}.log")
            conversations = wait_for_verdicts(downstream, {e.service for e in ran}, args.timeout)
            log(f"all conversations labelled, {time.monotonic() - started:.1f} s after start")
            print_conversations(conversations)
            print_metrics(endpoints["metrics"])
        # the collector has stopped and closed its history: keep it with the rest of the output
        history = out / "collector.db.history"
        history.unlink(missing_ok=True)
        shutil.copy(Path(tmp) / "collector.db.history", history)
    report = Report(tuple(conversations))
    print(render_text(report))
    (out / "report.html").write_text(render_html(report, title="mast-otel demo: MAST failure modes"))
    log(f"report: {out / 'report.html'} (also: .venv/bin/mast-otel report {jsonl} --html report.html)")
    print_patterns(history, wall_started, out)
    judged = "signals" not in flags
    missing = check_signals(conversations, ran)
    if judged:
        missing += [f"label {m}" for m in check(conversations, ran)]
    elapsed = time.monotonic() - started
    if missing:
        log(f"FAILED after {elapsed:.1f} s: missing from every trace: {'; '.join(missing)}")
        return 1
    signals = sorted({s for c in conversations for s in c.signals})
    if not judged:
        log(f"OK in {elapsed:.1f} s: every signal the examples were built to raise was raised ({', '.join(signals)})")
        log(HOW_TO_LABEL)
        return 0
    found = sorted({m for c in conversations for m in c.modes})
    log(f"OK in {elapsed:.1f} s: every signal the examples were built to raise was raised ({', '.join(signals)}) and "
        f"every failure they were written to show was labelled (modes: {', '.join(found)})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
