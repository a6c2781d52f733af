"""Every metric the collector exposes on ``/metrics``, named in one place (docs/collector.md documents them).

Prometheus alert rules and dashboards are written against these names, so they are part of the contract. All
label sets are created at 0 at startup (``increase()`` cannot see a series' first increment), and a
service/framework pair seen for the first time gets all its failure-mode and signal series at 0 before any
increment.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from mast_otel import semconv as sc
from mast_otel.adapters import IGNORE_REASONS, MAX_VALUE_CHARS, MAX_VALUE_DEPTH
from mast_otel.judge.model import Verdict
from mast_otel.judge.signals import SIGNALS, Signal
from mast_otel.taxonomy import MODES, mode

__all__ = ["CollectorMetrics", "MetricNames"]

UNKNOWN = "unknown"
OTHER = "other"


class MetricNames:
    """Metric names as exposed (counters carry the ``_total`` suffix prometheus_client adds)."""

    FAILURE_MODE = "mast_failure_mode_total"  # {mode, category, service, version, framework}; from a judge only
    SIGNAL = "mast_signal_total"  # {signal, mode, service, framework}; structural facts, no model
    CONVERSATIONS_JUDGED = "mast_conversations_judged_total"  # {status, service, version, framework}
    CONVERSATIONS_FAILED = "mast_conversations_failed_total"  # {service, version, framework}
    JUDGE_DURATION = "mast_judge_duration_seconds"  # histogram {source}
    JUDGE_TOKENS = "mast_judge_tokens_total"  # {direction=in|out}
    JUDGE_COST = "mast_judge_cost_usd_total"
    JUDGE_ERRORS = "mast_judge_errors_total"  # {reason}
    JUDGE_IN_FLIGHT = "mast_judge_in_flight"
    SPANS_RECEIVED = "mast_collector_spans_received_total"  # {protocol}
    REQUESTS_REFUSED = "mast_collector_requests_refused_total"  # {protocol, reason}
    SPANS_REFUSED = "mast_collector_spans_refused_total"  # {reason}
    SPANS_DUPLICATED = "mast_collector_spans_duplicated_total"
    SPANS_LATE = "mast_collector_spans_late_total"
    SPANS_UNASSIGNED = "mast_collector_spans_unassigned_total"  # {reason}
    SPANS_EXPORTED = "mast_collector_spans_exported_total"
    SPANS_DROPPED = "mast_collector_spans_dropped_total"  # {reason}
    EXPORT_RETRIES = "mast_collector_export_retries_total"  # {reason}
    SPANS_PENDING = "mast_collector_spans_pending"  # {state=held|queued}
    TRACES_PENDING = "mast_collector_traces_pending"
    PENDING_BYTES = "mast_collector_pending_bytes"
    LIMIT = "mast_collector_limit"  # {name}
    LABELS_OVERFLOWED = "mast_collector_metric_labels_overflowed_total"
    VERSIONS_EVICTED = "mast_collector_metric_versions_evicted_total"
    ATTRIBUTES_REMOVED = "mast_collector_attributes_removed_total"  # client-set attributes in the collector's namespace
    VALUES_IGNORED = "mast_collector_values_ignored_total"  # {reason}: attribute values past the adapters' bounds
    SEGMENTS_QUARANTINED = "mast_collector_segments_quarantined_total"  # {stage}
    MEMORY_IN_FLIGHT = "mast_collector_memory_in_flight_bytes"
    STORE_DISK_FULL = "mast_collector_store_disk_full"
    LOG_RECORDS_RECEIVED = "mast_collector_log_records_received_total"  # {protocol}
    LOG_RECORDS_REFUSED = "mast_collector_log_records_refused_total"  # {reason}
    LOG_RECORDS_EXPORTED = "mast_collector_log_records_exported_total"
    LOG_RECORDS_DROPPED = "mast_collector_log_records_dropped_total"  # {reason}
    LOG_RECORDS_QUEUED = "mast_collector_log_records_queued"


PROTOCOLS = ("grpc", "http")
# The same receivers serving OTLP logs: their refusals are counted under these protocol values.
LOG_PROTOCOLS = ("grpc_logs", "http_logs")
# Why a whole Export request was refused before any span was accepted.
REFUSE_MALFORMED = "malformed"
REFUSE_MEDIA_TYPE = "unsupported_media_type"
REFUSE_TOO_LARGE = "too_large"
REFUSE_UNAUTHENTICATED = "unauthenticated"
REFUSE_BACKPRESSURE = "backpressure"
REFUSE_NOT_FOUND = "not_found"
REFUSE_INTERNAL = "internal_error"
REFUSE_MEMORY_LIMIT = "memory_limit"  # bytes in flight over memory_limit: retryable
REFUSE_DISK_FULL = "disk_full"  # the store's disk is full: retryable
REFUSE_TIMEOUT = "timeout"  # a client too slow to send its request (HTTP)
REFUSE_CONNECTION_LIMIT = "connection_limit"  # HTTP connections over the cap with no slot free within the wait
REFUSE_SHARD_UNAVAILABLE = "shard_unavailable"  # processes > 1: a shard restarting or not answering: retryable
REFUSE_CONCURRENCY = "concurrency"  # gRPC calls with no receiver thread free within the wait, unread: retryable
REFUSE_REASONS = (
    REFUSE_MALFORMED,
    REFUSE_MEDIA_TYPE,
    REFUSE_TOO_LARGE,
    REFUSE_UNAUTHENTICATED,
    REFUSE_BACKPRESSURE,
    REFUSE_NOT_FOUND,
    REFUSE_INTERNAL,
    REFUSE_MEMORY_LIMIT,
    REFUSE_DISK_FULL,
    REFUSE_TIMEOUT,
    REFUSE_CONNECTION_LIMIT,
    REFUSE_SHARD_UNAVAILABLE,
    REFUSE_CONCURRENCY,
)
# Why a decoded span was refused (the client is told; backpressure ones are retried by the SDK).
SPAN_REFUSE_REASONS = (REFUSE_BACKPRESSURE, "invalid_id")
# Why a span left without a conversation's labels.
UNASSIGNED_NO_CONVERSATION = "no_conversation"
UNASSIGNED_PARENT_TIMEOUT = "parent_timeout"
UNASSIGNED_NOT_A_CONVERSATION = "not_a_conversation"  # held as a foreign root; an adapter found no conversation
UNASSIGNED_REASONS = (UNASSIGNED_NO_CONVERSATION, UNASSIGNED_PARENT_TIMEOUT, UNASSIGNED_NOT_A_CONVERSATION)
# Spans lost after they were accepted (the downstream refused them permanently).
DROP_EXPORT_REJECTED = "export_rejected"
DROP_EXPORT_PARTIAL = "export_partial"
DROP_REASONS = (DROP_EXPORT_REJECTED, DROP_EXPORT_PARTIAL)
# Where stored bytes that cannot be read back were set aside (never retried forever).
QUARANTINE_STAGES = ("release", "recovery")
RETRY_REASONS = ("unavailable", "throttled", "timeout", "error")
JUDGE_ERROR_REASONS = ("timeout", "exception", "store", "signals", "interrupted")
STATUSES = (sc.JUDGE_OK, sc.JUDGE_ERROR, sc.JUDGE_SKIPPED, sc.JUDGE_TRUNCATED, sc.JUDGE_PARTIAL)
LABEL_SOURCES = (sc.SOURCE_LLM, sc.SOURCE_RULES, sc.SOURCE_NONE)


class CollectorMetrics:
    """The collector's metrics on its own registry; one instance per running collector."""

    def __init__(
        self, *, services: Iterable[str] = (f"{UNKNOWN}/{UNKNOWN}",), max_services: int = 100, max_versions: int = 5
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.failure_mode = Counter(
            "mast_failure_mode",
            "Conversations in which the judge found a MAST failure mode.",
            ["mode", "category", "service", "version", "framework"],
            registry=r,
        )
        self.signal = Counter(
            "mast_signal",
            "Conversations in which a structural signal was seen (a fact hinting at a MAST mode, not a verdict).",
            ["signal", "mode", "service", "framework"],
            registry=r,
        )
        self.judged = Counter(
            "mast_conversations_judged",
            "Conversations labelled, by mast.judge.status.",
            ["status", "service", "version", "framework"],
            registry=r,
        )
        self.failed = Counter(
            "mast_conversations_failed", "Conversations with at least one failure mode.",
            ["service", "version", "framework"], registry=r,
        )  # fmt: skip
        self.judge_duration = Histogram(
            "mast_judge_duration_seconds",
            "Time a judge took per conversation (span loading included).",
            ["source"],
            buckets=(0.005, 0.025, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
            registry=r,
        )
        self.judge_tokens = Counter("mast_judge_tokens", "Judge tokens used.", ["direction"], registry=r)
        self.judge_cost = Counter("mast_judge_cost_usd", "Judge cost estimate in USD.", registry=r)
        self.judge_errors = Counter("mast_judge_errors", "Judge calls that gave no verdict.", ["reason"], registry=r)
        self.judge_in_flight = Gauge("mast_judge_in_flight", "Conversations waiting for their verdict.", registry=r)
        self.spans_received = Counter(
            "mast_collector_spans_received", "Spans accepted and stored.", ["protocol"], registry=r
        )
        self.requests_refused = Counter(
            "mast_collector_requests_refused", "Export requests refused.", ["protocol", "reason"], registry=r
        )
        self.spans_refused = Counter(
            "mast_collector_spans_refused", "Decoded spans refused (not stored).", ["reason"], registry=r
        )
        self.spans_duplicated = Counter(
            "mast_collector_spans_duplicated", "Spans delivered again (same trace_id+span_id) and ignored.", registry=r
        )
        self.spans_late = Counter(
            "mast_collector_spans_late", "Spans that arrived after their conversation was judged; exported "
            "unlabelled.", registry=r,
        )  # fmt: skip
        self.spans_unassigned = Counter(
            "mast_collector_spans_unassigned", "Spans exported untouched because no conversation holds them.",
            ["reason"], registry=r,
        )  # fmt: skip
        self.spans_exported = Counter("mast_collector_spans_exported", "Spans delivered downstream.", registry=r)
        self.spans_dropped = Counter(
            "mast_collector_spans_dropped", "Accepted spans lost (downstream refused them permanently).",
            ["reason"], registry=r,
        )  # fmt: skip
        self.export_retries = Counter(
            "mast_collector_export_retries", "Downstream Export attempts that failed and will be retried.",
            ["reason"], registry=r,
        )  # fmt: skip
        self.spans_pending = Gauge(
            "mast_collector_spans_pending", "Spans in the store not yet exported.", ["state"], registry=r
        )
        self.traces_pending = Gauge("mast_collector_traces_pending", "Traces being assembled.", registry=r)
        self.pending_bytes = Gauge("mast_collector_pending_bytes", "Span bytes not yet exported.", registry=r)
        self.limit = Gauge("mast_collector_limit", "Configured limits.", ["name"], registry=r)
        self.labels_overflowed = Counter(
            "mast_collector_metric_labels_overflowed",
            "Verdicts counted under service=other because metrics_max_services was reached.",
            registry=r,
        )
        self.versions_evicted = Counter(
            "mast_collector_metric_versions_evicted", "Versions of a service whose series were removed for a newer "
            "one (each service/framework keeps its metrics_max_versions most recently seen versions).", registry=r,
        )  # fmt: skip
        self.attributes_removed = Counter(
            "mast_collector_attributes_removed", "Attributes in the collector's own namespace (mast.judge.*, "
            "mast.fm.*, ...) that a client set on incoming spans; removed before storing.", registry=r,
        )  # fmt: skip
        self.values_ignored = Counter(
            "mast_collector_values_ignored", f"Attribute values the judge's copy of a conversation left out: nested "
            f"deeper than {MAX_VALUE_DEPTH} levels (too_deep) or longer than {MAX_VALUE_CHARS} characters "
            "(too_large); the conversation is judged without them, its spans exported as they came.", ["reason"],
            registry=r,
        )  # fmt: skip
        self.segments_quarantined = Counter(
            "mast_collector_segments_quarantined", "Stored ScopeSpans that could not be read back, set aside in "
            "the store's quarantine table instead of being retried forever.", ["stage"], registry=r,
        )  # fmt: skip
        self.memory_in_flight = Gauge(
            "mast_collector_memory_in_flight_bytes", "Bytes charged to memory_limit by requests being decoded.",
            registry=r,
        )  # fmt: skip
        self.store_disk_full = Gauge(
            "mast_collector_store_disk_full", "1 while the store's disk is full (receivers refuse, delivery goes on "
            "using the reserved space).", registry=r,
        )  # fmt: skip
        self.log_records_received = Counter(
            "mast_collector_log_records_received", "OTLP log records accepted and stored.", ["protocol"], registry=r
        )
        self.log_records_refused = Counter(
            "mast_collector_log_records_refused", "Decoded log records refused (not stored).", ["reason"], registry=r
        )
        self.log_records_exported = Counter(
            "mast_collector_log_records_exported", "Log records delivered to the logs downstream.", registry=r
        )
        self.log_records_dropped = Counter(
            "mast_collector_log_records_dropped", "Accepted log records lost (the logs downstream refused them "
            "permanently).", ["reason"], registry=r,
        )  # fmt: skip
        self.log_records_queued = Gauge(
            "mast_collector_log_records_queued", "Log records in the store waiting for the logs downstream.", registry=r
        )
        self.evidence_bytes = Gauge(
            "mast_collector_evidence_bytes", "Memory the index of what ties traces into runs holds (bounded by "
            "evidence_memory).", registry=r,
        )  # fmt: skip
        self.evidence_dropped = Counter(
            "mast_collector_evidence_dropped", "Evidence that ties no traces: groups forgotten to stay within "
            "evidence_memory (memory) or unnoted for twice max_trace_age (age), and shared histories whose source "
            "two runs at once could have given (ambiguous).", ["reason"], registry=r,
        )  # fmt: skip
        self._lock = threading.Lock()
        self._pairs: set[tuple[str, str]] = set()
        self._max_pairs = max_services
        self._versions: dict[tuple[str, str], OrderedDict[str, None]] = {}  # pair -> versions, least recent first
        self._max_versions = max_versions
        self._init_zero()
        for pair in dict.fromkeys((f"{UNKNOWN}/{UNKNOWN}", *services)):  # unknown/unknown always exists
            service, _, framework = pair.partition("/")
            self.label_pair(service, framework)

    def _init_zero(self) -> None:
        for proto in PROTOCOLS:
            self.spans_received.labels(proto)
            for reason in REFUSE_REASONS:
                self.requests_refused.labels(proto, reason)
        for proto in LOG_PROTOCOLS:
            self.log_records_received.labels(proto.removesuffix("_logs"))
            for reason in REFUSE_REASONS:
                self.requests_refused.labels(proto, reason)
        for reason in SPAN_REFUSE_REASONS:
            self.spans_refused.labels(reason)
        for reason in ("memory", "age", "ambiguous"):
            self.evidence_dropped.labels(reason)
        for reason in (REFUSE_BACKPRESSURE, REFUSE_DISK_FULL):
            self.log_records_refused.labels(reason)
        for reason in UNASSIGNED_REASONS:
            self.spans_unassigned.labels(reason)
        for reason in IGNORE_REASONS:
            self.values_ignored.labels(reason)
        for reason in DROP_REASONS:
            self.spans_dropped.labels(reason)
            self.log_records_dropped.labels(reason)
        for reason in RETRY_REASONS:
            self.export_retries.labels(reason)
        for reason in JUDGE_ERROR_REASONS:
            self.judge_errors.labels(reason)
        for direction in ("in", "out"):
            self.judge_tokens.labels(direction)
        for source in LABEL_SOURCES:
            self.judge_duration.labels(source)
        for state in ("held", "queued"):
            self.spans_pending.labels(state)
        for stage in QUARANTINE_STAGES:
            self.segments_quarantined.labels(stage)

    def label_pair(self, service: str | None, framework: str | None, version: str | None = None) -> tuple[str, str]:
        """The (service, framework) label values to count under; new pairs get every series at 0 first, and so
        does the pair's ``version`` (:meth:`label_version`)."""
        pair = (service or UNKNOWN, framework or UNKNOWN)
        with self._lock:
            known = pair in self._pairs
            if not known and len(self._pairs) >= self._max_pairs:
                self.labels_overflowed.inc()
                pair = (OTHER, OTHER)
                known = pair in self._pairs
            self._pairs.add(pair)
        if not known:
            for kind in SIGNALS.values():
                self.signal.labels(kind.name, kind.mode_id, *pair)
        if version is not None or not known:  # (signals, counted without a version, leave the versions' order)
            self.label_version(pair, version)
        return pair

    def label_version(self, pair: tuple[str, str], version: str | None) -> str:
        """The ``version`` label value for a pair (service.version, or unknown). Each pair keeps the
        ``max_versions`` versions seen most recently, every series at 0 from a version's first sighting; a newer
        one takes the place of the least recently seen, whose series are removed (counted), so a collector that
        outlives many deploys keeps counting its newest versions by name."""
        version = version or UNKNOWN
        evicted = None
        with self._lock:
            seen = self._versions.setdefault(pair, OrderedDict())
            if version in seen:
                seen.move_to_end(version)
                return version
            seen[version] = None
            if len(seen) > self._max_versions:
                evicted = seen.popitem(last=False)[0]
        if evicted is not None:
            self.versions_evicted.inc()
            for series, labels in self._version_series(pair, evicted):
                try:
                    series.remove(*labels)
                except KeyError:  # never incremented nor created
                    pass
        for series, labels in self._version_series(pair, version):
            series.labels(*labels)
        return version

    def _version_series(self, pair: tuple[str, str], version: str) -> list[tuple[Counter, tuple[str, ...]]]:
        service, framework = pair
        out: list[tuple[Counter, tuple[str, ...]]] = [
            (self.failure_mode, (m.id, m.category.id, service, version, framework)) for m in MODES
        ]
        out += [(self.judged, (status, service, version, framework)) for status in STATUSES]
        out.append((self.failed, (service, version, framework)))
        return out

    def set_limits(self, limits: dict[str, float]) -> None:
        for name, value in limits.items():
            self.limit.labels(name).set(value)

    def watch(self, gauge: Gauge, fn: Callable[[], float]) -> None:
        gauge.set_function(fn)

    def count_verdict(
        self, verdict: Verdict, service: str | None, framework: str | None, version: str | None = None
    ) -> None:
        """Count one labelled conversation: status, failure modes, tokens."""
        pair = self.label_pair(service, framework, version)
        labels = (pair[0], self.label_version(pair, version), pair[1])
        self.judged.labels(verdict.status, *labels).inc()
        self.count_spend(verdict.tokens_in, verdict.tokens_out, verdict.cost_usd)  # error verdicts cost too
        if verdict.status in (sc.JUDGE_ERROR, sc.JUDGE_SKIPPED):
            return
        seen: set[str] = set()
        for label in verdict.modes:
            if label.mode_id in seen:
                continue
            seen.add(label.mode_id)
            try:
                category = mode(label.mode_id).category.id
            except KeyError:
                category = UNKNOWN
            self.failure_mode.labels(label.mode_id, category, *labels).inc()
        if seen:
            self.failed.labels(*labels).inc()



    def count_signals(self, signals: Sequence[Signal], service: str | None, framework: str | None) -> None:
        """Count one conversation's signals, each name once."""
        pair = self.label_pair(service, framework)
        for s in {s.name: s for s in signals}.values():
            self.signal.labels(s.name, s.mode_id, *pair).inc()

    def count_spend(self, tokens_in: int, tokens_out: int, cost_usd: float) -> None:
        """Tokens and cost of judge calls, whatever their outcome (a retried invalid answer is paid for)."""
        if tokens_in:
            self.judge_tokens.labels("in").inc(tokens_in)
        if tokens_out:
            self.judge_tokens.labels("out").inc(tokens_out)
        if cost_usd:
            self.judge_cost.inc(cost_usd)


class MetricsServer:
    """``GET /metrics`` (Prometheus text format from the collector's own registry) and ``GET /healthz``."""

    def __init__(self, host: str, port: int, registry: CollectorRegistry) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                if path == "/metrics":
                    body, ctype, status = generate_latest(registry), CONTENT_TYPE_LATEST, 200
                elif path in ("/healthz", "/"):
                    body, ctype, status = b"ok\n", "text/plain", 200
                else:
                    body, ctype, status = b"not found; try /metrics\n", "text/plain", 404
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.host = host
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.1,), name="metrics-http", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
