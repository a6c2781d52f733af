"""Wiring: one :class:`CollectorService` per process. No pipeline logic lives here, only who calls whom.

``receivers -> Ingestor (store, then assembler) -> tick: Assembler.poll -> JudgePool | untouched release ->
store queue -> Exporter -> downstream``, with ``/metrics`` alongside. OTLP logs: ``receivers -> LogIngestor
(store) -> logs Exporter -> logs downstream``, and the judge reads the records of its trace (:mod:`.logs_ingest`).

Threads: the gRPC receiver pool and the HTTP receiver (a shard behind a front: one thread per connection of its
link instead), one pipeline thread (``tick`` every ``poll_interval``:
release due conversations, enforce judge deadlines, forget old tombstones), the judge workers, one exporter
thread, the metrics server. Tests drive the same object without threads: construct it with ``clock=``,
skip :meth:`start_pipeline`, and call :meth:`tick`, :meth:`release_now` and :meth:`flush`.

On start the service reloads what a previous run left: held spans go back to the assembler (their arrival times
are stored, so quiet periods and max age carry on), queued spans are exported, recent verdicts are remembered
for late spans.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Sequence

from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from mast_otel.adapters import ANSWER_ATTRIBUTES
from mast_otel.collector.assemble.assembler import Assembler, Location, Root, Unit, Untouched
from mast_otel.collector.assemble.pieces import sibling_runs
from mast_otel.collector.assemble.summaries import SpanSummaries
from mast_otel.collector.assemble.trace_groups import RunJoiner, TraceGroups
from mast_otel.collector.config import CollectorConfig, parse_hostport
from mast_otel.collector.encoding import RawScopeSpans
from mast_otel.collector.history.schema import HistoryFileError
from mast_otel.collector.history.writer import VerdictHistory, history_path
from mast_otel.collector.judge.judges import build_judge, reads_span_content
from mast_otel.collector.judge.judging import JudgePool
from mast_otel.collector.judge.log_events import with_log_events
from mast_otel.collector.limits import MemoryLimiter, memory_limit_of
from mast_otel.collector.metrics import LOG_PROTOCOLS, CollectorMetrics, MetricsServer
from mast_otel.collector.receive.ingest import (
    Ingestor,
    IngestResult,
    carries_evidence,
    resource_service,
    root_window,
    span_evidence,
    span_facts,
    tenant_of,
)
from mast_otel.collector.receive.logs_ingest import LOGS_SERVICE, LogIngestor, history_evidence, tenant_and_service
from mast_otel.collector.receive.receiver_grpc import GrpcReceiver
from mast_otel.collector.receive.receiver_http import HttpReceiver
from mast_otel.collector.receive.shard_link import LinkServer
from mast_otel.collector.release.annotations import PhoenixAnnotationSink
from mast_otel.collector.release.commit import Loaded, SegmentCache, commit_release, is_unreadable, quarantine_release
from mast_otel.collector.release.exporter import Exporter, Sender, make_sender
from mast_otel.collector.store.api import SpanStore, SQLiteStore, StoreError, Tomb
from mast_otel.judge.model import Judge
from mast_otel.spans import SpanRecord

__all__ = ["CollectorService", "addresses_of", "build_receivers", "configured_limits"]

_log = logging.getLogger(__name__)
_GC_INTERVAL_S = 60.0
# Runs joined per hold of the pipeline lock: a quiet period ending on a thousand runs written as several traces
# joined them all in one hold (1.3-2.2 s), while a receiver waited for the lock.
_JOINS_PER_HOLD = 32


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
        behind_front: bool = False,
        link: socket.socket | None = None,
        log_sender: Sender | None = None,
    ) -> None:
        """``behind_front``: one shard of a collector run as several processes: it has no receivers and takes
        requests only from the front, over the connections the front hands it on ``link`` (:mod:`.shard_link`);
        a shard draining a store left by a run with more processes gets no ``link`` and receives nothing.
        ``log_sender`` replaces the sender to the logs endpoint (tests)."""
        self.config = config
        self._behind_front = behind_front
        self._link_control = link
        self.clock = clock
        self.hold = config.mode == "hold"
        self.metrics = CollectorMetrics(services=config.metrics_services, max_services=config.metrics_max_services,
                                        max_versions=config.metrics_max_versions)  # fmt: skip
        self.judge = judge if judge is not None else build_judge(config)
        self.store: SpanStore = store if store is not None else SQLiteStore(
            config.store, sync=config.store_sync, reserve=config.store_reserve
        )  # fmt: skip
        self.limiter = MemoryLimiter(memory_limit_of(config.memory_limit, config.max_request_bytes))
        self.lock = threading.RLock()
        self.assembler = Assembler(quiet_period=config.quiet_period, max_age=config.max_trace_age)
        self.mappings = config.span_mappings()  # the user's own span mappings (read before the built-in readers)
        # A run written as a trace per message is judged as one (.trace_groups): what ties traces, and its units
        # held until the run is quiet.
        self.trace_groups = TraceGroups(memory=config.evidence_memory, forget_after=2 * config.max_trace_age)
        self._evidence_seen = (0, 0, 0)  # (evicted, forgotten, ambiguous) already counted on /metrics
        self.joiner = RunJoiner(self.trace_groups, self.assembler, quiet_period=config.quiet_period,
                                max_age=config.max_trace_age)  # fmt: skip
        # A judge that reads no span content lets release use what ingest kept of each span (.summaries).
        kept = config.summary_memory and not reads_span_content(self.judge)
        summaries = SpanSummaries(config.summary_memory) if kept else None
        self.cache = SegmentCache(self.store, summaries=summaries)
        self._sender = sender if sender is not None else make_sender(
            config.require_export_endpoint(), config.export_headers
        )  # fmt: skip
        self.exporter = Exporter(
            store=self.store, sender=self._sender, metrics=self.metrics, batch_spans=config.export_batch_spans,
            batch_bytes=config.export_batch_bytes, timeout=config.export_timeout,
            backoff_max=config.export_backoff_max, clock=clock,
        )  # fmt: skip
        self._log_sender, self.log_exporter, self.log_ingestor = self._logs_path(config, log_sender)
        self.annotations = PhoenixAnnotationSink(
            config.phoenix_url, registry=self.metrics.registry, headers=config.phoenix_headers
        ) if config.phoenix_url else None  # fmt: skip
        try:  # beside the store: STORE.history (kept across restarts; exports never touch it)
            self.history = VerdictHistory(
                history_path(str(getattr(self.store, "path", ":memory:"))), retention=config.history_retention,
                max_bytes=config.history_max_bytes, sync=config.store_sync, registry=self.metrics.registry,
                clock=clock,
            )  # fmt: skip
        except HistoryFileError as exc:
            self.store.close()
            raise StoreError(str(exc)) from None
        self.judges = JudgePool(
            judge=self.judge, store=self.store, assembler=self.assembler, lock=self.lock, metrics=self.metrics,
            concurrency=config.judge_concurrency, timeout=config.judge_timeout,
            fraction=config.judge_fraction, token_budget_per_hour=config.judge_token_budget_per_hour, clock=clock,
            cache=self.cache, on_released=self.exporter.wake,
            rejudge_interrupted=config.judge_interrupted == "again",
            on_verdict=self.annotations.submit if self.annotations else None, history=self.history,
            mappings=self.mappings,
        )  # fmt: skip
        self.ingestor = Ingestor(
            store=self.store, assembler=self.assembler, lock=self.lock, metrics=self.metrics, hold=self.hold,
            max_pending_traces=config.max_pending_traces, max_pending_bytes=config.max_pending_bytes,
            retry_after=config.retry_after, clock=clock, max_request_spans=config.max_request_spans,
            summaries=summaries, groups=self.trace_groups, tenant_attributes=config.tenant_attributes,
            run_id_attributes=config.run_id_attributes, mappings=self.mappings,
        )  # fmt: skip
        self.ingestor.on_queued = self.exporter.wake
        self.ingestor.disk_full = lambda: self.store.disk_full
        self._untouched_retry: list[Untouched] = []
        self._last_gc = clock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []  # the pipeline thread first
        self.grpc: GrpcReceiver | None = None
        self.http: HttpReceiver | None = None
        self.link: LinkServer | None = None
        self.metrics_server: MetricsServer | None = None
        self._watch_gauges()
        self._recover()
        oldest = self.store.oldest_held()
        if oldest is not None:  # conversations still held may have reached the history before a crash
            self.history.recover(oldest)

    def _logs_path(
        self, config: CollectorConfig, sender: Sender | None
    ) -> tuple[Sender | None, Exporter | None, LogIngestor]:
        """OTLP logs: their ingest, and their exporter when they are forwarded (a logs endpoint, or ``sender``)."""
        endpoint = config.logs_endpoint()
        if sender is None and endpoint is not None:
            sender = make_sender(endpoint, config.export_headers, LOGS_SERVICE)
        exporter = None if sender is None else Exporter(
            store=self.store, sender=sender, metrics=self.metrics, batch_spans=config.export_batch_spans,
            batch_bytes=config.export_batch_bytes, timeout=config.export_timeout,
            backoff_max=config.export_backoff_max, clock=self.clock, signal="logs",
        )  # fmt: skip
        ingestor = LogIngestor(
            store=self.store, lock=self.lock, metrics=self.metrics, forward=exporter is not None,
            max_pending_bytes=config.max_pending_bytes, max_request_items=config.max_request_spans,
            retry_after=config.retry_after, clock=self.clock, groups=self.trace_groups,
            tenant_attributes=config.tenant_attributes,
        )  # fmt: skip
        if exporter is not None:
            ingestor.on_queued = exporter.wake
        ingestor.disk_full = lambda: self.store.disk_full
        return sender, exporter, ingestor

    # -- lifecycle ---------------------------------------------------------------------------------------------
    def _watch_gauges(self) -> None:
        m, c = self.metrics, self.config
        m.traces_pending.set_function(lambda: self.assembler.pending_traces)
        m.spans_pending.labels("held").set_function(lambda: self.assembler.held_spans)
        m.spans_pending.labels("queued").set_function(lambda: self.store.counts()[0])
        m.pending_bytes.set_function(lambda: self.store.counts()[1])
        m.judge_in_flight.set_function(lambda: self.judges.in_flight)
        m.memory_in_flight.set_function(lambda: self.limiter.in_flight)
        m.store_disk_full.set_function(lambda: float(self.store.disk_full))
        m.log_records_queued.set_function(lambda: self.store.log_queued)
        m.evidence_bytes.set_function(lambda: self.trace_groups.settled_bytes)
        m.set_limits(configured_limits(c, self.limiter.limit))

    def _recover(self) -> None:
        """Reload held segments into the assembler, skipping spans a tombstone says were released, and note again
        the evidence of every stored span and log record (what ties traces into runs was only in memory). A segment
        that cannot be read back is quarantined (counted, logged) and the others load as usual."""
        held = 0
        released: dict[bytes, set[bytes]] = {}
        owners: dict[int, tuple[str, str]] = {}  # resource id -> (tenant, service)
        c = self.config
        evidence_keys = (*ANSWER_ATTRIBUTES, *c.run_id_attributes)
        with self.lock:
            for segment in self.store.segments():
                try:
                    raw_scope = RawScopeSpans.FromString(segment.data)
                except Exception as exc:
                    self._quarantine_segment(segment.id, exc)
                    continue
                kept = 0
                spans, scope_name = raw_scope.spans, raw_scope.scope.name
                for index, span in enumerate(spans):
                    tid, sid = span.trace_id, span.span_id
                    if len(tid) != 16 or len(sid) != 8:
                        continue
                    if tid not in released:
                        released[tid] = {i for t in self.store.tombs(tid) for i in t.ids()}
                    if sid in released[tid] or self.assembler.holds(tid, sid):
                        continue
                    # As ingest read it: a root known by its scope and name is a root after a restart too.
                    root, conv_id, conv_parent, _ = span_facts(span.attributes, span.name, scope_name,
                                                               self.mappings)  # fmt: skip
                    as_root: Root = root_window(span) if root and conv_id is None else root
                    if segment.resource not in owners:
                        resource = self.store.resource(segment.resource)[0]
                        owners[segment.resource] = (tenant_of(resource, c.tenant_attributes),
                                                    resource_service(resource) or "")  # fmt: skip
                    tenant, service = owners[segment.resource]
                    if conv_id is None and carries_evidence(span, evidence_keys):
                        keys = span_evidence(span, c.run_id_attributes)
                        self.trace_groups.note(tid, keys, segment.received, tenant=tenant, service=service)
                    parent = span.parent_span_id if len(span.parent_span_id) == 8 else b""
                    self.assembler.add(tid, sid, parent, segment.received, segment=segment.id, index=index,
                                       conv_root=as_root, conv_id=conv_id, conv_parent=conv_parent,
                                       tenant=tenant)  # fmt: skip
                    kept += 1
                if not kept:
                    self.store.write(drop_segments=[segment.id])
                held += kept
            # The histories every kept log record gives (what ties turns written as traces of their own,
            # .trace_groups), as ingest noted them, whether or not its trace's spans have arrived yet: the records
            # are kept in the store, the notes were only in memory.
            positions: dict[bytes, int] = {}
            for row in self.store.all_log_records():
                key = history_evidence(LogRecord.FromString(row.data), positions)
                if key is not None:
                    tenant, service = tenant_and_service(row.owner)
                    self.trace_groups.note(row.trace_id, [key], row.received, tenant=tenant, service=service)
        self.trace_groups.apply(())  # within its memory bound
        queued, _ = self.store.counts()
        if held or queued:
            _log.info("resuming: %d spans held in %d traces, %d spans queued for export", held,
                      self.assembler.pending_traces, queued)  # fmt: skip

    def _quarantine_segment(self, segment_id: int, exc: BaseException) -> None:
        reason = f"{type(exc).__name__}: {exc}"
        self.store.quarantine([segment_id], "recovery", reason)
        self.metrics.segments_quarantined.labels("recovery").inc()
        _log.error("stored segment %d cannot be read back (%s); moved to the quarantine table", segment_id, reason)

    def start(self, *, pipeline: bool = True) -> None:
        """Bind the receivers and the metrics endpoint, then start the pipeline and exporter threads.

        ``pipeline=False`` leaves the threads off: tests then drive :meth:`tick` and :meth:`flush` themselves.
        """
        c = self.config
        if self._behind_front:
            if self._link_control is not None:
                self.link = LinkServer(self._link_control, ingest=self._ingest_routed, metrics=self.metrics,
                                       max_request_bytes=c.max_request_bytes, limiter=self.limiter,
                                       retry_after=c.retry_after)  # fmt: skip
        else:
            self.grpc, self.http = build_receivers(
                c, self.ingestor.ingest, self.metrics, self.limiter, ingest_logs=self.log_ingestor.ingest
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
        if self.link is not None:
            self.link.start()
        if self.metrics_server is not None:  # last: /healthz answering means everything is up
            self.metrics_server.start()

    def _ingest_routed(self, raw: bytes, protocol: str) -> IngestResult:
        """A request the front routed here: spans, or log records (``grpc_logs`` / ``http_logs``)."""
        if protocol in LOG_PROTOCOLS:
            return self.log_ingestor.ingest(raw, protocol.removesuffix("_logs"))
        return self.ingestor.ingest(raw, protocol)

    def start_pipeline(self) -> None:
        """Only the background threads (pipeline ticks and exporter); receivers are started by :meth:`start`."""
        self._threads = [
            threading.Thread(target=self._pipeline, name="mast-pipeline", daemon=True),
            threading.Thread(target=self.exporter.run, args=(self._stop,), name="mast-exporter", daemon=True),
        ]
        if self.log_exporter is not None:
            self._threads.append(threading.Thread(
                target=self.log_exporter.run, args=(self._stop,), name="mast-log-exporter", daemon=True
            ))  # fmt: skip
        for t in self._threads:
            t.start()
        if self.annotations is not None:
            self.annotations.start()

    def stop(self, grace: float = 2.0) -> None:
        """Stop receiving (in-flight Export requests get ``grace``), then the pipeline; bounded in time.

        Judge calls in flight get ``min(judge_timeout, judge_shutdown_grace)`` to finish; conversations still
        being judged then, and every held or queued span, stay in the store for the next start.
        """
        if self.grpc is not None:
            self.grpc.stop(grace)
        if self.http is not None:
            self.http.stop()
        if self.link is not None:
            self.link.stop(grace)
        self._stop.set()
        self.exporter.wake()
        if self.log_exporter is not None:
            self.log_exporter.wake()
        if self._threads:  # once the pipeline thread is gone, nothing submits judge work
            self._threads[0].join(self.config.export_timeout + grace)
        self.judges.shutdown(min(self.config.judge_timeout, self.config.judge_shutdown_grace))
        for t in self._threads:
            t.join(self.config.export_timeout + grace)
        if self.metrics_server is not None:
            self.metrics_server.stop()
        if self.annotations is not None:
            self.annotations.close(grace)
        self._sender.close()
        if self._log_sender is not None:
            self._log_sender.close()
        with self.lock:  # no release is half-written when the store closes
            self.history.close()
            self.store.close()

    def _pipeline(self) -> None:
        """Tick at the next due time (a conversation's quiet period ending), at least every poll_interval."""
        wait = self.config.poll_interval
        while not self._stop.wait(wait):
            try:
                self.tick()
            except Exception:
                _log.exception("pipeline tick failed; retrying on the next one")
            with self.lock:
                due = self.assembler.next_due()
            wait = self.config.poll_interval
            if due is not None:
                wait = min(wait, max(0.005, due - self.clock()))

    # -- the pipeline step (also the tests' handle) ------------------------------------------------------------
    def tick(self, *, release_all: bool = False) -> int:
        """Release what is due (everything with ``release_all``); returns the number of units and batches."""
        now = self.clock()
        decisions: list[Unit | Untouched] = []
        # On a full disk, nothing is released while the disk lacks room for delivery (see
        # SQLiteStore.room_to_release): each export frees space, a release writes its spans again first.
        room = self.store.room_to_release()
        joined: list[Unit] = []
        if room:
            with self.lock:  # (the notes are taken with the poll: every span it releases has had its evidence taken)
                notes = self.trace_groups.take()
                decisions = self.assembler.poll(now, release_all=release_all)
            # Grouping runs on this thread only, outside the lock: receivers never wait on it.
            self.trace_groups.apply(notes)
            self._count_evidence()
            decisions = self._runs_side_by_side(decisions)
            decisions = [d for d in decisions if not isinstance(d, Unit) or self.joiner.offer(d) is d]
            runs = self.joiner.poll(now, release_all=release_all)
            for at in range(0, len(runs), _JOINS_PER_HOLD):  # (a slice at a time: ingest takes this lock too)
                with self.lock:
                    joined += [self.assembler.join(units) for units in runs[at : at + _JOINS_PER_HOLD]]
                time.sleep(0)  # let a receiver waiting for the lock have it between slices
        retry, self._untouched_retry = (self._untouched_retry, []) if room else ([], self._untouched_retry)
        for d in [*retry, *decisions, *joined]:
            if isinstance(d, Unit):
                self.judges.submit(d)
            else:
                self._release_untouched(d, now)
        self.judges.check(now)
        if self.store.disk_full:
            self.store.reclaim()
        if now - self._last_gc >= _GC_INTERVAL_S:
            self._gc(now)
        return len(decisions)

    def _runs_side_by_side(self, decisions: list[Unit | Untouched]) -> list[Unit | Untouched]:
        """The foreign units one trace releases together that evidence ties, joined (.pieces: runs under an
        application span)."""
        try:
            found = sibling_runs(decisions, self._records_of, self.config.run_id_attributes)
        except Exception:  # an unreadable segment: each unit as it is (release quarantines what cannot be read)
            _log.exception("could not read the runs one trace released together; judging each on its own")
            return decisions
        if not any(isinstance(d, list) for d in found):
            return decisions
        with self.lock:
            return [self.assembler.join(d) if isinstance(d, list) else d for d in found]

    def _records_of(self, trace_id: bytes, locations: Sequence[Location]) -> list[SpanRecord]:
        """Held spans of one trace as the judge reads them, their log records joined as events."""
        records = Loaded.read(self.cache, locations).records(self.store)
        return with_log_events(records, self.store.log_records(trace_id))

    def _count_evidence(self) -> None:
        groups, m = self.trace_groups, self.metrics
        seen = (groups.evicted, groups.forgotten, groups.ambiguous)
        for reason, now, before in zip(("memory", "age", "ambiguous"), seen, self._evidence_seen, strict=True):
            if now > before:
                m.evidence_dropped.labels(reason).inc(now - before)
        self._evidence_seen = seen

    def release_now(self) -> int:
        """The "release now" hook: every held conversation is judged now, quiet periods treated as over."""
        return self.tick(release_all=True)

    def flush(self, timeout: float = 30.0) -> bool:
        """Tests and shutdown: wait for judging to finish and export everything queued, log records included (False
        on timeout)."""
        deadline = time.monotonic() + timeout
        return self._flush_spans(deadline) and self._flush_logs(deadline)

    def _flush_logs(self, deadline: float) -> bool:
        exporter = self.log_exporter
        while exporter is not None and time.monotonic() < deadline:
            if self._threads:  # the exporter thread is running: wait for it rather than race it
                if self.store.log_queued == 0:
                    return True
                exporter.wake()
                time.sleep(0.01)
                continue
            delay = exporter.export_once()
            if delay is None:
                return True
            if delay > 0:
                time.sleep(min(delay, 0.1))
        return exporter is None

    def _flush_spans(self, deadline: float) -> bool:
        while time.monotonic() < deadline:
            self.judges.check(self.clock())
            if self.judges.in_flight:
                time.sleep(0.01)
                continue
            if self._threads:  # the exporter thread is running: wait for it rather than race it
                if self.store.counts()[0] == 0:
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
            loaded = Loaded.read(self.cache, d.locations)
            tomb = Tomb(d.trace_id, b"".join(d.span_ids), now)
            commit_release(store=self.store, assembler=self.assembler, lock=self.lock, cache=self.cache,
                           locations=d.locations, outbox=loaded.outbox({}), tomb=tomb)  # fmt: skip
        except Exception as exc:
            if is_unreadable(exc):  # the stored bytes cannot be read back: retrying would never succeed
                quarantine_release(
                    store=self.store, assembler=self.assembler, lock=self.lock, cache=self.cache,
                    metrics=self.metrics, locations=d.locations, trace_id=d.trace_id, exc=exc,
                )  # fmt: skip
                return
            _log.exception("could not release %d spans of trace %s; retrying", len(d.span_ids), d.trace_id.hex())
            self._untouched_retry.append(d)
            return
        self.metrics.spans_unassigned.labels(d.reason).inc(len(d.span_ids))
        self.exporter.wake()

    def _gc(self, now: float) -> None:
        self._last_gc = now
        with self.lock:  # resources no span uses are deleted: no ingest may pick one up meanwhile
            removed = self.store.gc(now - self.config.tombstone_ttl)
        self.trace_groups.forget_older_than(now - 2 * self.config.max_trace_age)  # (this thread's own)
        self._count_evidence()
        if removed:
            _log.debug("forgot %d tombstones older than %gs", removed, self.config.tombstone_ttl)

    @property
    def judge_name(self) -> str:
        return self.judges.judge_name

    # -- addresses ---------------------------------------------------------------------------------------------
    def addresses(self) -> dict[str, str]:
        return addresses_of(self.grpc, self.http, self.metrics_server)


def build_receivers(
    c: CollectorConfig,
    ingest: Callable[[bytes, str], IngestResult],
    metrics: CollectorMetrics,
    limiter: MemoryLimiter,
    *,
    ingest_logs: Callable[[bytes, str], IngestResult] | None = None,
) -> tuple[GrpcReceiver | None, HttpReceiver | None]:
    """The OTLP receivers ``c`` enables, bound (not started), each handing trace requests to ``ingest`` and logs
    requests to ``ingest_logs`` (None: the logs service and path are not served)."""
    grpc_receiver = http_receiver = None
    if c.otlp_grpc:
        host, port = parse_hostport(c.otlp_grpc)
        grpc_receiver = GrpcReceiver(
            host, port, ingest=ingest, metrics=metrics, token=c.auth_token, max_request_bytes=c.max_request_bytes,
            threads=c.receiver_threads, limiter=limiter, retry_after=c.retry_after,
            admission_wait=c.receiver_admission_wait, ingest_logs=ingest_logs,
        )  # fmt: skip
    if c.otlp_http:
        host, port = parse_hostport(c.otlp_http)
        http_receiver = HttpReceiver(
            host, port, ingest=ingest, metrics=metrics, token=c.auth_token, max_request_bytes=c.max_request_bytes,
            limiter=limiter, threads=c.receiver_threads, max_connections=c.receiver_max_connections,
            timeout=c.receiver_timeout, retry_after=c.retry_after, admission_wait=c.receiver_admission_wait,
            ingest_logs=ingest_logs,
        )  # fmt: skip
    return grpc_receiver, http_receiver


def configured_limits(c: CollectorConfig, memory_limit: int) -> dict[str, float]:
    """The ``mast_collector_limit`` series: what was configured."""
    return {
        "max_pending_traces": c.max_pending_traces, "max_pending_bytes": c.max_pending_bytes,
        "max_request_bytes": c.max_request_bytes, "quiet_period_seconds": c.quiet_period,
        "max_trace_age_seconds": c.max_trace_age, "judge_concurrency": c.judge_concurrency,
        "judge_timeout_seconds": c.judge_timeout, "judge_fraction": c.judge_fraction,
        "memory_limit": memory_limit, "max_request_spans": c.max_request_spans,
    }  # fmt: skip


def addresses_of(grpc: GrpcReceiver | None, http: HttpReceiver | None, metrics: MetricsServer | None) -> dict[str, str]:
    """Where a collector listens, as printed in its ready line."""
    out = {}
    if grpc is not None:
        out["otlp_grpc"] = f"{grpc.host}:{grpc.port}"
    if http is not None:
        out["otlp_http"] = f"http://{http.host}:{http.port}/v1/traces"
    if metrics is not None:
        out["metrics"] = f"http://{metrics.host}:{metrics.port}/metrics"
    return out
