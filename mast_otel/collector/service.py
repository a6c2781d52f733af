"""Wiring: one :class:`CollectorService` per process. No pipeline logic lives here, only who calls whom.

``receivers -> Ingestor (store, then assembler) -> tick: Assembler.poll -> JudgePool | untouched release ->
store queue -> Exporter -> downstream``, with ``/metrics`` alongside.

Threads: the gRPC receiver pool and the HTTP receiver, one pipeline thread (``tick`` every ``poll_interval``:
release due conversations, enforce judge deadlines, forget old tombstones), the judge workers, one exporter
thread, the metrics server. Tests drive the same object without threads: construct it with ``clock=``,
skip :meth:`start_pipeline`, and call :meth:`tick`, :meth:`release_now` and :meth:`flush`.

On start the service reloads what a previous run left: held spans go back to the assembler (their arrival times
are stored, so quiet periods and max age carry on), queued spans are exported, recent verdicts are remembered
for late spans.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from mast_otel.judge.model import Judge

from .assembler import Assembler, Unit, Untouched
from .config import CollectorConfig, parse_hostport
from .exporter import Exporter, Sender, make_sender
from .ingest import Ingestor
from .judges import build_judge
from .judging import JudgePool
from .metrics import CollectorMetrics, MetricsServer
from .receiver_grpc import GrpcReceiver
from .receiver_http import HttpReceiver
from .store import Release, SpanStore, SQLiteStore

__all__ = ["CollectorService"]

_log = logging.getLogger(__name__)
_GC_INTERVAL_S = 60.0


class CollectorService:
    """The collector: construct (reloads the store), :meth:`start`, then :meth:`stop`."""

    def __init__(
        self,
        config: CollectorConfig,
        *,
        judge: Judge | None = None,
        store: SpanStore | None = None,
        sender: Sender | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.clock = clock
        self.hold = config.mode == "hold"
        self.metrics = CollectorMetrics(services=config.metrics_services, max_services=config.metrics_max_services)
        self.judge = judge if judge is not None else build_judge(config)
        self.store: SpanStore = store if store is not None else SQLiteStore(config.store, sync=config.store_sync)
        self.lock = threading.RLock()
        self.assembler = Assembler(quiet_period=config.quiet_period, max_age=config.max_trace_age)
        self.recently_judged: dict[bytes, float] = {}
        self._sender = sender if sender is not None else make_sender(
            config.require_export_endpoint(), config.export_headers
        )  # fmt: skip
        self.exporter = Exporter(
            store=self.store, sender=self._sender, metrics=self.metrics, batch_spans=config.export_batch_spans,
            batch_bytes=config.export_batch_bytes, timeout=config.export_timeout,
            backoff_max=config.export_backoff_max, clock=clock,
        )  # fmt: skip
        self.judges = JudgePool(
            judge=self.judge, store=self.store, assembler=self.assembler, lock=self.lock, metrics=self.metrics,
            hold=self.hold, concurrency=config.judge_concurrency, timeout=config.judge_timeout,
            fraction=config.judge_fraction, token_budget_per_hour=config.judge_token_budget_per_hour, clock=clock,
            recently_judged=self.recently_judged, on_released=self.exporter.wake,
        )  # fmt: skip
        self.ingestor = Ingestor(
            store=self.store, assembler=self.assembler, lock=self.lock, metrics=self.metrics, hold=self.hold,
            max_pending_traces=config.max_pending_traces, max_pending_bytes=config.max_pending_bytes,
            retry_after=config.retry_after, clock=clock, recently_judged=self.recently_judged,
        )  # fmt: skip
        self.ingestor.on_queued = self.exporter.wake
        self._untouched_retry: list[Untouched] = []
        self._last_gc = clock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.grpc: GrpcReceiver | None = None
        self.http: HttpReceiver | None = None
        self.metrics_server: MetricsServer | None = None
        self._watch_gauges()
        self._recover()

    # -- lifecycle ---------------------------------------------------------------------------------------------
    def _watch_gauges(self) -> None:
        m, c = self.metrics, self.config
        m.traces_pending.set_function(lambda: self.assembler.pending_traces)
        m.spans_pending.labels("held").set_function(lambda: self.store.counts()[0])
        m.spans_pending.labels("queued").set_function(lambda: self.store.counts()[1])
        m.pending_bytes.set_function(lambda: self.store.counts()[2])
        m.judge_in_flight.set_function(lambda: self.judges.in_flight)
        m.set_limits({
            "max_pending_traces": c.max_pending_traces, "max_pending_bytes": c.max_pending_bytes,
            "max_request_bytes": c.max_request_bytes, "quiet_period_seconds": c.quiet_period,
            "max_trace_age_seconds": c.max_trace_age, "judge_concurrency": c.judge_concurrency,
            "judge_timeout_seconds": c.judge_timeout, "judge_fraction": c.judge_fraction,
        })  # fmt: skip

    def _recover(self) -> None:
        if not self.hold:
            queued = self.store.queue_held()
            if queued:
                _log.info("passthrough mode: queued %d spans a previous hold-mode run was holding", queued)
        held = 0
        with self.lock:
            for h in self.store.held():
                self.assembler.add(
                    h.trace_id, h.span_id, h.parent_id, h.received,
                    conv_root=h.conv_root, conv_id=h.conv_id, conv_parent=h.conv_parent,
                )  # fmt: skip
                held += 1
            for trace_id, when in self.store.judged_traces(self.clock() - self.config.tombstone_ttl):
                self.recently_judged[trace_id] = when
        _, queued_now, _ = self.store.counts()
        if held or queued_now:
            _log.info("resuming: %d spans held in %d traces, %d spans queued for export", held,
                      self.assembler.pending_traces, queued_now)  # fmt: skip

    def start(self, *, pipeline: bool = True) -> None:
        """Bind the receivers and the metrics endpoint, then start the pipeline and exporter threads.

        ``pipeline=False`` leaves the threads off: tests then drive :meth:`tick` and :meth:`flush` themselves.
        """
        c = self.config
        if c.otlp_grpc:
            host, port = parse_hostport(c.otlp_grpc)
            self.grpc = GrpcReceiver(
                host, port, ingest=self.ingestor.ingest, metrics=self.metrics, token=c.auth_token,
                max_request_bytes=c.max_request_bytes, threads=c.receiver_threads,
            )  # fmt: skip
        if c.otlp_http:
            host, port = parse_hostport(c.otlp_http)
            self.http = HttpReceiver(
                host, port, ingest=self.ingestor.ingest, metrics=self.metrics, token=c.auth_token,
                max_request_bytes=c.max_request_bytes,
            )  # fmt: skip
        if c.metrics:
            host, port = parse_hostport(c.metrics)
            self.metrics_server = MetricsServer(host, port, self.metrics.registry)
        if pipeline:
            self.start_pipeline()
        if self.grpc is not None:
            self.grpc.start()
        if self.http is not None:
            self.http.start()
        if self.metrics_server is not None:  # last: /healthz answering means everything is up
            self.metrics_server.start()

    def start_pipeline(self) -> None:
        """Only the background threads (pipeline ticks and exporter); receivers are started by :meth:`start`."""
        self._threads = [
            threading.Thread(target=self._pipeline, name="mast-pipeline", daemon=True),
            threading.Thread(target=self.exporter.run, args=(self._stop,), name="mast-exporter", daemon=True),
        ]
        for t in self._threads:
            t.start()

    def stop(self, grace: float = 2.0) -> None:
        """Stop receiving, then the pipeline; held and queued spans stay in the store for the next start."""
        if self.grpc is not None:
            self.grpc.stop(grace)
        if self.http is not None:
            self.http.stop()
        self._stop.set()
        self.exporter.wake()
        self.judges.shutdown()
        for t in self._threads:
            t.join(self.config.export_timeout + grace)
        if self.metrics_server is not None:
            self.metrics_server.stop()
        self._sender.close()
        self.store.close()

    def _pipeline(self) -> None:
        while not self._stop.wait(self.config.poll_interval):
            try:
                self.tick()
            except Exception:
                _log.exception("pipeline tick failed; retrying on the next one")

    # -- the pipeline step (also the tests' handle) ------------------------------------------------------------
    def tick(self, *, release_all: bool = False) -> int:
        """Release what is due (everything with ``release_all``); returns the number of units and batches."""
        now = self.clock()
        with self.lock:
            decisions = self.assembler.poll(now, release_all=release_all)
        retry, self._untouched_retry = self._untouched_retry, []
        for d in [*retry, *decisions]:
            if isinstance(d, Unit):
                self.judges.submit(d)
            else:
                self._release_untouched(d, now)
        self.judges.check(now)
        if now - self._last_gc >= _GC_INTERVAL_S:
            self._gc(now)
        return len(decisions)

    def release_now(self) -> int:
        """The "release now" hook: every held conversation is judged now, quiet periods treated as over."""
        return self.tick(release_all=True)

    def flush(self, timeout: float = 30.0) -> bool:
        """Tests and shutdown: wait for judging to finish and export everything queued (False on timeout)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.judges.check(self.clock())
            if self.judges.in_flight:
                time.sleep(0.01)
                continue
            if self._threads:  # the exporter thread is running: wait for it rather than race it
                if self.store.counts()[1] == 0:
                    return True
                self.exporter.wake()
                time.sleep(0.01)
                continue
            delay = self.exporter.export_once()
            if delay is None:
                return True
            if delay > 0:
                time.sleep(min(delay, 0.1))
        return False

    def _release_untouched(self, d: Untouched, now: float) -> None:
        try:
            self.store.release(Release(trace_id=d.trace_id, span_ids=d.span_ids, hold=self.hold, now=now))
        except Exception:
            _log.exception("could not release %d spans of trace %s; retrying", len(d.span_ids), d.trace_id.hex())
            self._untouched_retry.append(d)
            return
        self.metrics.spans_unassigned.labels(d.reason).inc(len(d.span_ids))
        self.exporter.wake()

    def _gc(self, now: float) -> None:
        self._last_gc = now
        horizon = now - self.config.tombstone_ttl
        removed = self.store.gc(horizon)
        with self.lock:
            for trace_id in [t for t, when in self.recently_judged.items() if when < horizon]:
                del self.recently_judged[trace_id]
        if removed:
            _log.debug("forgot %d tombstones and verdicts older than %gs", removed, self.config.tombstone_ttl)

    # -- addresses ---------------------------------------------------------------------------------------------
    def addresses(self) -> dict[str, str]:
        out = {}
        if self.grpc is not None:
            out["otlp_grpc"] = f"{self.grpc.host}:{self.grpc.port}"
        if self.http is not None:
            out["otlp_http"] = f"http://{self.http.host}:{self.http.port}/v1/traces"
        if self.metrics_server is not None:
            out["metrics"] = f"http://{self.metrics_server.host}:{self.metrics_server.port}/metrics"
        return out
