"""One run, one verdict under load (issue 45): many multi-agent runs at once, each written as several traces, all
giving the same answers, through a real collector process. Not a test: figures and ratios, no timed assertion.

    .venv/bin/python benchmarks/bench_runs_at_once.py [--runs 1000] [--group-chats 100] [--clients 8]
        [--evidence-memory 64MiB 1MiB] [--code LABEL=PATH ...]

The load (benchmarks/concurrent_runs.py): ``--runs`` copies of Semantic Kernel's HandoffOrchestration and
GroupChatOrchestration captures (traces tied by span links) and ``--group-chats`` copies of its AgentGroupChat
capture (turns tied only by their shared history), fresh ids, all starting within 50 ms of each other, sent as
OTLP/HTTP protobuf (spans and log records) by ``--clients`` senders at once, refusals retried after Retry-After.

For each collector (``--code``: a source tree to run the collector from, e.g. a ``git worktree`` of an older
commit; default this one) and each ``--evidence-memory``, a fresh ``mast-otel collector`` process (signals judge,
hold mode, quiet period 1 s) exporting to a real OTLP sink, and:

- every request's latency (each attempt), p50/p99/max and the worst p99 of any 5-second window while the load is
  sent; a one-span request sent every 0.25 s by another client from the first request until everything is out (a
  probe: while the load is sent and while the collector works through it), and the same probes against the idle
  collector before the load: the baseline of the same run, the ratios printed;
- the collector's peak RSS (VmHWM) and, sampled every 0.25 s, ``mast_collector_evidence_bytes`` against the bound,
  and ``mast_collector_evidence_dropped_total`` by reason at the end;
- the time from the last request acknowledged until every span sent has been exported (in hold mode a span leaves
  only with its conversation's verdict), waiting at most ``--drain-timeout``;
- per run, how many of its spans carry ``mast.judge.status`` downstream (a verdict): exactly one is one run, one
  verdict; none is a run not judged (yet); more is a run judged in pieces.
"""

from __future__ import annotations

import argparse
import http.client
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.concurrent_runs import (  # noqa: E402
    HISTORY_ONLY,
    LINKED,
    PROTOBUF,
    Request,
    Run,
    Sent,
    make_runs,
    probe_request,
    requests_of,
    send,
    verdicts_per_run,
)
from mast_otel import semconv as sc  # noqa: E402
from tests.collector.conftest import metric  # noqa: E402
from tests.collector.sink import OtlpSink  # noqa: E402
from tests.servers import free_port, wait_http  # noqa: E402

WINDOW_S = 5.0
PROBE_EVERY_S = 0.25
PROBE_TIMEOUT_S = 30.0  # a probe not answered by then counts as unanswered (infinite latency)
EVIDENCE = "mast_collector_evidence_bytes"
DROPPED = "mast_collector_evidence_dropped_total"


class Collector:
    """``mast-otel collector`` run from the source tree ``code`` (its own directory first on the path)."""

    def __init__(self, code: Path, tmp: Path, sink: OtlpSink, *extra: str) -> None:
        self.http_port, self.metrics_port = free_port(), free_port()
        cmd = [sys.executable, "-m", "mast_otel.cli", "collector", "--otlp-grpc", "off",
               "--otlp-http", f"127.0.0.1:{self.http_port}", "--metrics", f"127.0.0.1:{self.metrics_port}",
               "--store", str(tmp / "collector.db"), "--store-reserve", "1MiB", "--export-endpoint",
               sink.grpc_endpoint, "--quiet-period", "1", "--log-level", "warning", *extra]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(code)}
        self.log = tmp / "collector.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(cmd, cwd=code, env=env, stdout=log, stderr=subprocess.STDOUT)
        wait_http(f"http://127.0.0.1:{self.metrics_port}/healthz", timeout=60, proc=self.proc)

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as response:
            return str(response.read().decode())

    def status_kib(self, key: str) -> int:
        """A /proc/PID/status field (VmRSS, VmHWM) in KiB."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1])
        return 0

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


@dataclass
class Monitor:
    """Probes and samples, every ``PROBE_EVERY_S`` until stopped: a one-span request's latency, the evidence gauge,
    the collector's RSS."""

    collector: Collector
    probes: list[tuple[float, float]] = field(default_factory=list)  # (sent at, latency; inf: no answer)
    evidence: list[float] = field(default_factory=list)
    rss_kib: list[int] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Monitor:
        self._thread = threading.Thread(target=self._loop, name="monitor", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.collector.http_port, timeout=PROBE_TIMEOUT_S)
        while not self._stop.wait(PROBE_EVERY_S):
            at = time.perf_counter()
            try:
                conn.request("POST", "/v1/traces", probe_request(), {"Content-Type": PROTOBUF})
                conn.getresponse().read()
                self.probes.append((at, time.perf_counter() - at))
            except (OSError, http.client.HTTPException):
                self.probes.append((at, float("inf")))
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.collector.http_port, timeout=PROBE_TIMEOUT_S)
            try:
                self.evidence.append(metric(self.collector.metrics(), EVIDENCE))
                self.rss_kib.append(self.collector.status_kib("VmRSS"))
            except OSError:
                pass
        conn.close()


def idle_probes(collector: Collector, n: int = 40) -> list[float]:
    """The baseline: one-span requests to the idle collector, one every ``PROBE_EVERY_S``."""
    conn = http.client.HTTPConnection("127.0.0.1", collector.http_port, timeout=30)
    out = []
    for _ in range(n):
        at = time.perf_counter()
        conn.request("POST", "/v1/traces", probe_request(), {"Content-Type": PROTOBUF})
        conn.getresponse().read()
        out.append(time.perf_counter() - at)
        time.sleep(PROBE_EVERY_S)
    conn.close()
    return out


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def worst_window_p99(samples: list[tuple[float, float]], start: float, end: float) -> float:
    """The highest p99 of any ``WINDOW_S`` window of the samples sent between ``start`` and ``end``."""
    worst = 0.0
    at = start
    while at < end:
        window = [latency for sent, latency in samples if at <= sent < at + WINDOW_S]
        if window:
            worst = max(worst, pct(window, 0.99))
        at += WINDOW_S
    return worst


@dataclass
class Outcome:
    label: str
    bound: str
    sent: Sent
    send_s: float
    idle: list[float]
    probes: list[float]
    window_p99: float
    probe_window_p99: float
    drain_s: float | None  # None: not drained within the timeout
    exported: int
    wanted: int
    logs_exported: int
    logs_wanted: int
    verdicts: dict[str, Counter[int]]  # kind -> Counter(verdicts per run)
    evidence_max: float
    evidence_bound: int
    dropped: dict[str, float]
    peak_rss_mib: float
    rss_end_mib: float


def size_bytes(text: str) -> int:
    if text == "none":
        return 0
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for unit, factor in units.items():
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(text)


def measure(
    label: str, code: Path, bound: str, runs: list[Run], per_client: list[list[Request]], drain_timeout: float
) -> Outcome:
    with tempfile.TemporaryDirectory() as d:
        sink = OtlpSink().start()
        extra = () if bound == "none" else ("--evidence-memory", bound)  # none: a collector without the option
        collector = Collector(code, Path(d), sink, *extra)
        try:
            idle = idle_probes(collector)
            monitor = Monitor(collector).start()
            started = time.perf_counter()
            sent = send(collector.http_port, per_client, timeout=60)
            sent_at = time.perf_counter()
            want = {key for run in runs for key in run.span_keys}
            logs_wanted = sum(run.records for run in runs)
            deadline = sent_at + drain_timeout
            drained: float | None = None
            while time.perf_counter() < deadline:
                keys = {s.key for s in sink.spans()}
                if want <= keys and len(sink.logs()) >= logs_wanted:
                    drained = time.perf_counter() - sent_at
                    break
                time.sleep(0.5)
            monitor.stop()
            ended = time.perf_counter()
            exposed = collector.metrics()
            peak = collector.status_kib("VmHWM") / 1024
            rss_end = collector.status_kib("VmRSS") / 1024
        finally:
            collector.stop()
            sink.stop()
        spans = sink.spans()
        labelled = [s.key for s in spans if sc.JUDGE_STATUS in s.attributes]
        per_run = verdicts_per_run(runs, labelled)
        verdicts = {kind: Counter(per_run[r.index] for r in runs if r.kind == kind) for kind in (*LINKED, HISTORY_ONLY)}
        during = [latency for at, latency in monitor.probes if started <= at < ended]
        return Outcome(
            label, bound, sent, sent_at - started, idle, during,
            worst_window_p99([(at, x) for at, x, _ in sent.attempts], started, sent_at),
            worst_window_p99(monitor.probes, started, ended),
            drained, len(want & {s.key for s in spans}), len(want), len(sink.logs()), logs_wanted, verdicts,
            max(monitor.evidence, default=float("nan")), size_bytes(bound),
            {reason: metric(exposed, DROPPED, reason=reason) for reason in ("memory", "age", "ambiguous")},
            peak, rss_end,
        )  # fmt: skip


def report(o: Outcome) -> None:
    lat = o.sent.latencies
    idle99 = pct(o.idle, 0.99)
    print(f"-- {o.label}, --evidence-memory {o.bound}")
    print(
        f"   sent in {o.send_s:.1f} s: {len(o.sent.attempts):,} attempts, {o.sent.refused} refused (retried), "
        f"{len(o.sent.failures)} never acknowledged{': ' + o.sent.failures[0] if o.sent.failures else ''}"
    )
    print(
        f"   request latency: p50 {pct(lat, 0.5) * 1000:,.0f} ms, p99 {pct(lat, 0.99) * 1000:,.0f} ms, max "
        f"{max(lat) * 1000:,.0f} ms; worst {WINDOW_S:g}-s window p99 {o.window_p99 * 1000:,.0f} ms; over 10 s: "
        f"{sum(1 for x in lat if x > 10)}"
    )
    print(
        f"   one-span probe, idle (baseline): p50 {pct(o.idle, 0.5) * 1000:,.1f} ms, p99 {idle99 * 1000:,.1f} ms; "
        f"meanwhile (sending and draining): p50 {pct(o.probes, 0.5) * 1000:,.0f} ms, p99 "
        f"{pct(o.probes, 0.99) * 1000:,.0f} ms, max "
        f"{max(o.probes, default=float('nan')) * 1000:,.0f} ms ({len(o.probes)} probes, "
        f"{sum(1 for x in o.probes if x == float('inf'))} unanswered within {PROBE_TIMEOUT_S:g} s), worst window p99 "
        f"{o.probe_window_p99 * 1000:,.0f} ms"
    )
    print(
        f"   ratios to the idle probe's p99: requests' p99 {pct(lat, 0.99) / idle99:,.1f}x, probes' p99 meanwhile "
        f"{pct(o.probes, 0.99) / idle99:,.1f}x"
    )
    drain = f"{o.drain_s:.1f} s" if o.drain_s is not None else "not drained"
    print(
        f"   drain (last ack to every span exported): {drain}; spans exported {o.exported:,} of {o.wanted:,}, "
        f"log records {o.logs_exported:,} of {o.logs_wanted:,}"
    )
    for kind, counts in o.verdicts.items():
        runs = sum(counts.values())
        if runs:
            shown = ", ".join(f"{n} verdict{'s' if n != 1 else ''}: {c}" for n, c in sorted(counts.items()))
            print(f"   {kind} ({runs} runs): {shown}; exactly one: {counts[1] / runs:.1%}")
    if o.evidence_bound:  # (a collector without the option has neither the gauge nor the counter)
        print(f"   evidence gauge max {o.evidence_max / 2**20:,.2f} MiB of {o.evidence_bound / 2**20:,.2f} MiB "
              f"({o.evidence_max / o.evidence_bound:.0%}); dropped: " + ", ".join(f"{k} {v:,.0f}" for k, v in
                                                                                 o.dropped.items()))  # fmt: skip
    print(f"   collector RSS: peak {o.peak_rss_mib:,.0f} MiB, at the end {o.rss_end_mib:,.0f} MiB", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=1000, help="linked runs (handoff and group chat in turn)")
    parser.add_argument("--group-chats", type=int, default=100, help="AgentGroupChat runs (tied by history only)")
    parser.add_argument("--clients", type=int, default=8, help="senders at once")
    parser.add_argument("--spread", type=float, default=0.05, help="seconds within which every run starts")
    parser.add_argument(
        "--evidence-memory",
        nargs="+",
        default=["64MiB", "1MiB"],
        metavar="SIZE",
        help="a collector per size; none: without the option (a collector older than it)",
    )
    parser.add_argument(
        "--code",
        nargs="+",
        default=[f"this={ROOT}"],
        metavar="LABEL=PATH",
        help="source trees to run the collector from (e.g. git worktrees of other commits)",
    )
    parser.add_argument("--drain-timeout", type=float, default=300.0, help="longest wait for every span out")
    parser.add_argument("--seed", type=int, default=45)
    args = parser.parse_args()
    made = time.perf_counter()
    runs = make_runs(args.runs, args.group_chats, spread_s=args.spread, seed=args.seed)
    per_client = requests_of(runs, args.clients, seed=args.seed)
    n_requests = sum(map(len, per_client))
    wire = sum(len(r.body) for c in per_client for r in c) / 2**20
    print(f"== {args.runs:,} linked runs + {args.group_chats:,} AgentGroupChat runs, all starting within "
          f"{args.spread * 1000:.0f} ms: {sum(len(r.span_keys) for r in runs):,} spans in "
          f"{sum(len(r.traces) for r in runs):,} traces, {sum(r.records for r in runs):,} log records; "
          f"{n_requests:,} requests ({wire:,.1f} MiB) from {args.clients} senders; made in "
          f"{time.perf_counter() - made:.0f} s; {os.cpu_count()} cores, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)  # fmt: skip
    for bound in args.evidence_memory:
        for item in args.code:
            label, _, path = item.partition("=")
            report(measure(label, Path(path), bound, runs, per_client, args.drain_timeout))
            print(f"   load average now {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    main()
