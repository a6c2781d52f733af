"""The collector's whole configuration: one frozen dataclass, read from flags, env and a YAML file.

Precedence: command-line flags > ``MAST_OTEL_COLLECTOR_<FIELD>`` environment variables > the YAML file given by
``--config`` (or ``MAST_OTEL_COLLECTOR_CONFIG``) > the defaults below. Every field is one option with the same
name everywhere: field ``quiet_period`` is ``--quiet-period``, ``MAST_OTEL_COLLECTOR_QUIET_PERIOD`` and YAML key
``quiet_period`` (``quiet-period`` is accepted too). An unknown YAML key, an unknown ``MAST_OTEL_COLLECTOR_*``
variable or a value out of range fails at startup with :class:`ConfigError`; nothing is silently ignored.

Durations accept ``30``, ``30s``, ``5m``, ``1h``; sizes accept ``1048576``, ``512KiB``, ``16MiB``, ``1GiB``.
Secrets (``auth_token``, ``judge_api_key``, ``export_headers`` values) never appear in ``repr`` or logs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from mast_otel.adapters.mapping import MappingError, SpanMapping, load_mappings
from mast_otel.collector._values import (
    ConfigError,
    choice,
    endpoint,
    headers,
    integer,
    number,
    optional_text,
    parse_hostport,
    processes,
    seconds,
    size,
    text,
    text_list,
)
from mast_otel.collector.limits import DECODE_AMPLIFICATION

__all__ = ["ENV_PREFIX", "CollectorConfig", "ConfigError", "load_config", "option_fields", "parse_hostport"]

ENV_PREFIX = "MAST_OTEL_COLLECTOR_"
MODES = ("hold", "passthrough")
STORE_SYNC = ("normal", "full")
LOG_LEVELS = ("debug", "info", "warning", "error")

DEFAULT_OTLP_GRPC = "127.0.0.1:4317"
DEFAULT_OTLP_HTTP = "127.0.0.1:4318"
DEFAULT_METRICS = "127.0.0.1:9464"
DEFAULT_STORE = "mast-otel-collector.db"
DEFAULT_QUIET_PERIOD_S = 10.0
DEFAULT_MAX_TRACE_AGE_S = 900.0
DEFAULT_MAX_REQUEST_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_PENDING_TRACES = 50_000
DEFAULT_MAX_PENDING_BYTES = 1024 * 1024 * 1024
DEFAULT_JUDGE_TIMEOUT_S = 180.0

# Options people reach for that this collector deliberately does not implement: fail with the alternative.
_NOT_IMPLEMENTED = {
    "tls_cert_file": "TLS termination is not implemented; bind 127.0.0.1 and put a TLS proxy or an OpenTelemetry "
    "Collector in front",
    "tls_key_file": "TLS termination is not implemented (see tls_cert_file)",
    "store_url": "only an embedded SQLite store is implemented; use --store PATH",
    "sampling": "use judge_fraction (judge a fraction of conversations) instead",
}


def _opt(
    default: Any,
    parse: Callable[[Any], Any],
    help: str,
    *,
    metavar: str | None = None,
    secret: bool = False,
    factory: Callable[[], Any] | None = None,
) -> Any:
    meta = {"parse": parse, "help": help, "metavar": metavar, "secret": secret}
    if factory is not None:
        return field(default_factory=factory, metadata=meta, repr=not secret)
    return field(default=default, metadata=meta, repr=not secret)


@dataclass(frozen=True, kw_only=True)
class CollectorConfig:
    """Every knob of ``mast-otel collector``; each field's ``help`` is what ``--help`` prints."""

    # --- receivers --------------------------------------------------------------------------------------------
    otlp_grpc: str | None = _opt(DEFAULT_OTLP_GRPC, endpoint, "OTLP/gRPC listen address; 'off' disables.",
                                 metavar="HOST:PORT")  # fmt: skip
    otlp_http: str | None = _opt(DEFAULT_OTLP_HTTP, endpoint, "OTLP/HTTP listen address (POST /v1/traces, protobuf "
                                 "or JSON); 'off' disables.", metavar="HOST:PORT")  # fmt: skip
    auth_token: str | None = _opt(None, optional_text, "Bearer token clients must send (Authorization: Bearer ...); "
                                  "prefer the env variable, flags show in ps. Unset: no auth.",
                                  metavar="TOKEN", secret=True)  # fmt: skip
    max_request_bytes: int = _opt(DEFAULT_MAX_REQUEST_BYTES, size, "Largest Export request accepted (after "
                                  "decompression); larger ones get 413 / RESOURCE_EXHAUSTED without retry info.",
                                  metavar="SIZE")  # fmt: skip
    receiver_threads: int = _opt(8, integer, "Worker threads of each receiver (requests decoded at once).",
                                 metavar="N")  # fmt: skip
    max_request_spans: int = _opt(200_000, integer, "Most spans in one Export request (its ResourceSpans and "
                                  "ScopeSpans count too); larger ones get 413 / RESOURCE_EXHAUSTED without retry "
                                  "info.", metavar="N")  # fmt: skip
    memory_limit: int = _opt(0, size, "Bytes that Export requests being received and decoded may take together, "
                             "each charged its size times the decoder's worst-case amplification; past it requests "
                             "get 503 / RESOURCE_EXHAUSTED with retry advice. 0 = a quarter of the machine's memory, "
                             "between 512MiB and 4GiB, and at least one max-size request's charge.",
                             metavar="SIZE")  # fmt: skip
    receiver_timeout: float = _opt(30.0, seconds, "Longest an OTLP/HTTP client may take to send a request's "
                                   "headers and body; slower ones get 408 and are disconnected.",
                                   metavar="SECONDS")  # fmt: skip
    receiver_max_connections: int = _opt(256, integer, "Most open OTLP/HTTP connections served at once; one more "
                                         "waits for a slot up to receiver_admission_wait, then gets 503 + "
                                         "Retry-After.", metavar="N")  # fmt: skip
    receiver_admission_wait: float = _opt(1.0, seconds, "Longest an OTLP/gRPC call waits for a free receiver "
                                          "thread, or an OTLP/HTTP connection over receiver_max_connections for a "
                                          "slot, before it is told to retry (RESOURCE_EXHAUSTED + RetryInfo / 503 + "
                                          "Retry-After). 0: told at once.", metavar="SECONDS")  # fmt: skip
    retry_after: float = _opt(1.0, seconds, "Delay suggested to clients refused by backpressure (Retry-After / "
                              "RetryInfo).", metavar="SECONDS")  # fmt: skip

    processes: int = _opt(1, processes, "Collector processes: 1 runs one process; N > 1 (or auto, one per core "
                          "this process may use) runs a front process that receives and routes each trace, by its "
                          "id, to one of N shard processes, each with its own store (STORE, STORE.shard1, ...).",
                          metavar="N|auto")  # fmt: skip

    # --- assembly and delivery ------------------------------------------------------------------------------------
    mode: str = _opt("hold", choice(*MODES), "hold: spans wait for the verdict and leave once, labelled; "
                     "passthrough: spans leave at once and a mast.verdict span follows.")  # fmt: skip
    quiet_period: float = _opt(DEFAULT_QUIET_PERIOD_S, seconds, "A conversation is judged when its root span "
                               "has ended and nothing new arrived for this long.", metavar="SECONDS")  # fmt: skip
    max_trace_age: float = _opt(DEFAULT_MAX_TRACE_AGE_S, seconds, "A conversation still open this long after "
                                "its first span is judged as partial; spans outside any conversation whose parents "
                                "never arrive are exported untouched after this long.", metavar="SECONDS")  # fmt: skip
    max_pending_traces: int = _opt(DEFAULT_MAX_PENDING_TRACES, integer, "Traces waiting for assembly at once; past "
                                   "this, Export requests that start new traces are refused with backpressure.",
                                   metavar="N")  # fmt: skip
    max_pending_bytes: int = _opt(DEFAULT_MAX_PENDING_BYTES, size, "Span bytes in the store not yet exported "
                                  "(held or waiting for the downstream); past this, Export requests are refused "
                                  "with backpressure.", metavar="SIZE")  # fmt: skip
    summary_memory: int = _opt(128 << 20, size, "Memory for what ingest keeps of each held span so that, with a "
                               "model-free judge (signals, none), releases need not decode the stored spans again; "
                               "past it, releases of new spans parse what they need from the store. 0 turns "
                               "summaries off (every span decoded in full).",
                               metavar="SIZE")  # fmt: skip
    tenant_attributes: tuple[str, ...] = _opt(("service.namespace",), text_list, "Resource attributes that name "
                                              "the tenant a span or log record belongs to: links, declared run ids "
                                              "and shared histories tie runs only within one tenant (histories "
                                              "within one service.name of it). Empty: every sender is one tenant.",
                                              metavar="KEY,...")  # fmt: skip
    run_id_attributes: tuple[str, ...] = _opt((), text_list, "Span attributes whose value names one run (e.g. "
                                              "app.run_id): traces carrying the same value are judged as one run, "
                                              "across services of a tenant. gen_ai.conversation.id and session.id "
                                              "name sessions and never tie runs.", metavar="KEY,...")  # fmt: skip
    span_mapping: str | None = _opt(None, optional_text, "A YAML file of the user's own span mappings: how to read "
                                    "a span schema no built-in reader knows (which spans are an agent's run, a "
                                    "model call, a tool run, a transfer, and which attributes carry the agent, "
                                    "input, output, tool and target; docs/adapters.md). Read before the built-in "
                                    "readers.", metavar="FILE")  # fmt: skip
    evidence_memory: int = _opt(64 << 20, size, "Memory for the index of what ties traces into runs (links, run "
                                "ids, shared histories); past it the groups noted least recently are forgotten "
                                "(counted: their traces are judged one by one).", metavar="SIZE")  # fmt: skip
    poll_interval: float = _opt(0.25, seconds, "Longest wait between assembly passes (a pass also runs when a "
                                "quiet period ends).",
                                metavar="SECONDS")  # fmt: skip

    # --- store --------------------------------------------------------------------------------------------------
    store: str = _opt(DEFAULT_STORE, text, "SQLite file (WAL) holding spans until exported; ':memory:' for a "
                      "non-durable store.", metavar="PATH")  # fmt: skip
    store_sync: str = _opt("normal", choice(*STORE_SYNC), "SQLite synchronous level: normal survives a killed "
                           "process, full also survives power loss (an fsync per Export).")  # fmt: skip
    store_reserve: int = _opt(64 * 1024 * 1024, size, "Disk space set aside next to the store (a file "
                              "STORE.reserve); when the disk fills, receivers refuse with retryable errors and the "
                              "reserve is given up so judging and delivery go on. 0 disables.",
                              metavar="SIZE")  # fmt: skip
    tombstone_ttl: float = _opt(900.0, seconds, "How long released spans and verdicts are remembered, to drop "
                                "duplicate deliveries and to recognise late spans.", metavar="SECONDS")  # fmt: skip
    history_retention: float = _opt(30 * 86400.0, seconds, "How long the verdict history (STORE.history, what "
                                    "`mast-otel report --since` reads) keeps each verdict; older hours are dropped.",
                                    metavar="DURATION")  # fmt: skip
    history_max_bytes: int = _opt(256 << 20, size, "Largest size of the verdict history file (divided among "
                                  "--processes); past it the oldest hours are dropped and counted.",
                                  metavar="SIZE")  # fmt: skip

    # --- judge --------------------------------------------------------------------------------------------------
    judge: str = _opt("signals", text, "signals (no model: structural signals only, every conversation skipped; "
                      "'rules' is an old name for it), llm (mast_otel.judge's LLM judge; "
                      "needs --judge-model or --judge-base-url), none (label every conversation skipped), or "
                      "MODULE:CALLABLE returning a mast_otel.judge.model.Judge.", metavar="JUDGE")  # fmt: skip
    judge_model: str | None = _opt(None, optional_text, "Model name for --judge llm.", metavar="NAME")
    judge_base_url: str | None = _opt(None, optional_text, "OpenAI-compatible base URL for --judge llm.", metavar="URL")
    judge_api_key: str | None = _opt(None, optional_text, "API key for --judge llm (secret; prefer the env variable).",
                                     metavar="KEY", secret=True)  # fmt: skip
    judge_concurrency: int = _opt(2, integer, "Conversations judged at once.", metavar="N")
    judge_timeout: float = _opt(DEFAULT_JUDGE_TIMEOUT_S, seconds, "Longest a conversation waits for its verdict "
                                "(queueing included); then its spans go out with mast.judge.status=error.",
                                metavar="SECONDS")  # fmt: skip
    judge_shutdown_grace: float = _opt(5.0, seconds, "On SIGTERM/SIGINT, how long judge calls in flight may still "
                                       "finish (at most judge_timeout); conversations left stay in the store and are "
                                       "judged on the next start.", metavar="SECONDS")  # fmt: skip
    judge_interrupted: str = _opt("error", choice("error", "again"), "A conversation whose judge call a crash cut "
                                  "short: error (released with mast.judge.status=error, so a paid judge never bills "
                                  "it twice) or again (judged again after the restart; may be billed twice).",
                                  metavar="POLICY")  # fmt: skip
    judge_fraction: float = _opt(1.0, number, "Fraction of conversations judged (0..1, by a hash of the trace id); "
                                 "conversations with errors are always judged; the rest are labelled skipped.",
                                 metavar="FRACTION")  # fmt: skip
    judge_token_budget_per_hour: int = _opt(0, integer, "Judge tokens (in+out) per rolling hour; past it "
                                            "conversations are labelled skipped. 0 = unlimited.",
                                            metavar="TOKENS")  # fmt: skip

    # --- export -------------------------------------------------------------------------------------------------
    export_endpoint: str | None = _opt(None, optional_text, "Downstream OTLP endpoint (required): http://host:port for "
                                       "OTLP/gRPC, a URL ending in /v1/traces for OTLP/HTTP.",
                                       metavar="URL")  # fmt: skip
    export_logs_endpoint: str | None = _opt(None, optional_text, "Downstream for OTLP log records: http://host:port "
                                            "(OTLP/gRPC LogsService) or a URL ending in /v1/logs; unset: beside "
                                            "export_endpoint (same gRPC address, or its URL with /v1/logs); none: "
                                            "records are read by the judge, not forwarded.",
                                            metavar="URL")  # fmt: skip
    export_headers: dict[str, str] = _opt(  # noqa: RUF009 - _opt returns a field(default_factory=dict)
        None, headers, "Headers sent downstream, KEY=VALUE,... (values are secret).", metavar="HEADERS", secret=True,
        factory=dict,
    )  # fmt: skip
    export_timeout: float = _opt(10.0, seconds, "Timeout of one downstream Export call.", metavar="SECONDS")
    export_batch_spans: int = _opt(512, integer, "Most spans per downstream Export.", metavar="N")
    export_batch_bytes: int = _opt(4 * 1024 * 1024, size, "Most span bytes per downstream Export.", metavar="SIZE")
    export_backoff_max: float = _opt(30.0, seconds, "Longest wait between retries while the downstream is down.",
                                     metavar="SECONDS")  # fmt: skip

    # --- Phoenix annotations (optional) ---------------------------------------------------------------------------
    phoenix_url: str | None = _opt(None, optional_text, "Also post each verdict as Phoenix span annotations to "
                                   "this Phoenix server (http://host:6006); best effort, never delays the export.",
                                   metavar="URL")  # fmt: skip
    phoenix_headers: dict[str, str] = _opt(  # noqa: RUF009 - _opt returns a field(default_factory=dict)
        None, headers, "Headers for Phoenix's API, KEY=VALUE,... (e.g. authorization=Bearer KEY; values are secret).",
        metavar="HEADERS", secret=True, factory=dict,
    )  # fmt: skip

    # --- metrics and logs ---------------------------------------------------------------------------------------
    metrics: str | None = _opt(DEFAULT_METRICS, endpoint, "Prometheus /metrics listen address; 'off' disables.",
                               metavar="HOST:PORT")  # fmt: skip
    metrics_services: tuple[str, ...] = _opt(("unknown/unknown",), text_list, "SERVICE/FRAMEWORK pairs whose "
                                             "failure-mode series exist at 0 from startup (comma-separated).",
                                             metavar="LIST")  # fmt: skip
    metrics_max_services: int = _opt(100, integer, "Distinct SERVICE/FRAMEWORK label pairs kept; later ones are "
                                     "counted under service=other.", metavar="N")  # fmt: skip
    metrics_max_versions: int = _opt(5, integer, "service.version values each SERVICE/FRAMEWORK pair keeps as the "
                                     "version label, the most recently seen; an older one's series are removed for "
                                     "a newer one.", metavar="N")  # fmt: skip
    log_level: str = _opt("info", choice(*LOG_LEVELS), "Log level.")

    def __post_init__(self) -> None:
        for f in fields(self):  # normalise: CollectorConfig(max_request_bytes="16MiB") works like the flag
            value = getattr(self, f.name)
            if value is not None:
                try:
                    object.__setattr__(self, f.name, f.metadata["parse"](value))
                except ConfigError as exc:
                    raise ConfigError(f"{f.name}: {exc}") from None

        def need(ok: bool, name: str, what: str) -> None:
            if not ok:
                raise ConfigError(f"{name}: {what} (got {getattr(self, name)!r})")

        self.span_mappings()  # a mapping file that cannot be read fails at startup, saying where
        need(self.quiet_period >= 0, "quiet_period", "must be >= 0")
        need(self.max_trace_age > 0, "max_trace_age", "must be > 0")
        need(self.max_trace_age >= self.quiet_period, "max_trace_age", "must be >= quiet_period")
        need(self.max_request_bytes >= 1024, "max_request_bytes", "must be at least 1KiB")
        need(self.max_pending_traces >= 1, "max_pending_traces", "must be >= 1")
        need(self.max_pending_bytes >= self.max_request_bytes, "max_pending_bytes", "must be >= max_request_bytes")
        need(self.processes >= 0, "processes", "must be auto or >= 1")
        need(self.receiver_threads >= 1, "receiver_threads", "must be >= 1")
        need(self.max_request_spans >= 1, "max_request_spans", "must be >= 1")
        need(self.memory_limit >= 0, "memory_limit", "must be >= 0")
        need(self.summary_memory >= 0, "summary_memory", "must be >= 0")
        need(self.evidence_memory >= 0, "evidence_memory", "must be >= 0")
        need(self.memory_limit == 0 or self.memory_limit >= self.max_request_bytes * DECODE_AMPLIFICATION,
             "memory_limit", f"must be 0 (auto) or hold one request of max_request_bytes, decoded: at least "
             f"{DECODE_AMPLIFICATION} x max_request_bytes = "
             f"{self.max_request_bytes * DECODE_AMPLIFICATION}")  # fmt: skip
        need(self.receiver_timeout > 0, "receiver_timeout", "must be > 0")
        need(self.receiver_max_connections >= 1, "receiver_max_connections", "must be >= 1")
        need(self.receiver_admission_wait >= 0, "receiver_admission_wait", "must be >= 0")
        need(self.store_reserve >= 0, "store_reserve", "must be >= 0")
        need(self.history_retention >= 3600, "history_retention", "must be at least 1h")
        need(self.history_max_bytes >= 1 << 20, "history_max_bytes", "must be at least 1MiB")
        need(self.judge_concurrency >= 1, "judge_concurrency", "must be >= 1")
        need(self.judge_timeout > 0, "judge_timeout", "must be > 0")
        need(self.judge_shutdown_grace >= 0, "judge_shutdown_grace", "must be >= 0")
        need(0.0 <= self.judge_fraction <= 1.0, "judge_fraction", "must be between 0 and 1")
        need(self.judge_token_budget_per_hour >= 0, "judge_token_budget_per_hour", "must be >= 0")
        need(self.export_batch_spans >= 1, "export_batch_spans", "must be >= 1")
        need(self.export_timeout > 0, "export_timeout", "must be > 0")
        need(self.poll_interval > 0, "poll_interval", "must be > 0")
        need(self.metrics_max_services >= 1, "metrics_max_services", "must be >= 1")
        need(self.metrics_max_versions >= 1, "metrics_max_versions", "must be >= 1")
        need(self.otlp_grpc is not None or self.otlp_http is not None, "otlp_grpc", "a receiver must be enabled")
        need(bool(self.store), "store", "must be a path or :memory:")
        if "://" in self.store:
            raise ConfigError(f"store: {_NOT_IMPLEMENTED['store_url']} (got a URL)")
        for pair in self.metrics_services:
            need(pair.count("/") == 1 and all(pair.split("/")), "metrics_services", "items must be SERVICE/FRAMEWORK")
        if self.judge not in ("signals", "rules", "llm", "none") and not re.fullmatch(r"[\w.]+:[\w.]+", self.judge):
            raise ConfigError(f"judge: must be signals, llm, none or MODULE:CALLABLE (got {self.judge!r})")
        if self.export_endpoint is not None:
            export_target(self.export_endpoint)
        if self.export_logs_endpoint is not None and self.export_logs_endpoint.lower() != "none":
            export_target(self.export_logs_endpoint, "/v1/logs", "export_logs_endpoint")

    @property
    def process_count(self) -> int:
        """How many shard processes: ``processes``, or with auto (0) one per core this process may use."""
        return self.processes or usable_cores()

    @property
    def export_protocol(self) -> str:
        """``grpc`` or ``http``, by the endpoint rule of the design (URL ending in /v1/traces = HTTP)."""
        return export_target(self.require_export_endpoint())[0]

    def require_export_endpoint(self) -> str:
        if not self.export_endpoint:
            raise ConfigError(
                "export_endpoint is required: --export-endpoint http://host:4317 (OTLP/gRPC) or "
                "http://host:4318/v1/traces (OTLP/HTTP)"
            )
        return self.export_endpoint

    def span_mappings(self) -> tuple[SpanMapping, ...]:
        """The user's span mappings (``span_mapping``'s file; none when unset). Raises :class:`ConfigError`."""
        if not self.span_mapping:
            return ()
        try:
            return load_mappings(Path(self.span_mapping))
        except MappingError as exc:
            raise ConfigError(f"span_mapping: {exc}") from None

    def logs_endpoint(self) -> str | None:
        """Where accepted log records are forwarded (None: nowhere, export_logs_endpoint=none)."""
        configured = self.export_logs_endpoint
        if configured is None:
            return logs_endpoint_of(self.export_endpoint) if self.export_endpoint else None
        return None if configured.lower() == "none" else configured

    def describe(self) -> dict[str, Any]:
        """The effective configuration for the startup log line, secrets masked."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("secret") and value:
                value = {k: "***" for k in value} if isinstance(value, dict) else "***"
            out[f.name] = value
        return out


def usable_cores(cgroup: Path = Path("/sys/fs/cgroup")) -> int:
    """The cores this process may run on (its CPU affinity), capped by a cgroup CPU quota: a container limited to
    one CPU on a 64-core host must not start 64 shards."""
    cores = len(os.sched_getaffinity(0))
    for path, parse in ((cgroup / "cpu.max", _quota_v2), (cgroup / "cpu" / "cpu.cfs_quota_us", _quota_v1)):
        try:
            quota = parse(path)
        except (OSError, ValueError, IndexError, ZeroDivisionError):
            continue
        if quota is not None:
            return max(1, min(cores, quota))
    return cores


def _quota_v2(path: Path) -> int | None:
    limit, period = path.read_text().split()[:2]  # "max 100000" or "150000 100000"
    return None if limit == "max" else -(-int(limit) // int(period))


def _quota_v1(path: Path) -> int | None:
    limit = int(path.read_text())
    period = int((path.parent / "cpu.cfs_period_us").read_text())
    return None if limit <= 0 else -(-limit // period)


def export_target(url: str, suffix: str = "/v1/traces", option: str = "export_endpoint") -> tuple[str, str]:
    """``(protocol, target)``: ``("grpc", "host:port")`` or ``("http", url)`` for a URL ending in ``suffix``
    (``/v1/logs`` for the logs endpoint); raises ConfigError otherwise."""
    m = re.fullmatch(r"(https?)://([^/\s]+?)(/.*)?", url.strip())
    if not m:
        raise ConfigError(f"{option}: {url!r} is not http(s)://host:port or a URL ending in {suffix}")
    path = m.group(3) or ""
    if path.rstrip("/") == "":
        if m.group(1) == "https":
            raise ConfigError(f"{option}: OTLP/gRPC over TLS is not implemented; use an http:// endpoint")
        parse_hostport(m.group(2))
        return "grpc", m.group(2)
    if path.endswith(suffix):
        return "http", url.strip()
    raise ConfigError(f"{option}: {url!r} has a path but it does not end in {suffix}")


def logs_endpoint_of(traces: str) -> str:
    """The logs endpoint beside a traces endpoint: the same gRPC address, or the HTTP URL with /v1/logs."""
    protocol, _ = export_target(traces)
    return traces.strip() if protocol == "grpc" else traces.strip().removesuffix("/v1/traces") + "/v1/logs"


def option_fields() -> list[Any]:
    """The dataclass fields that are options, in declaration order (for the CLI and the docs)."""
    return list(fields(CollectorConfig))


def _parse(name: str, raw: Any, source: str) -> Any:
    f = _FIELDS[name]
    try:
        return f.metadata["parse"](raw)
    except ConfigError as exc:
        raise ConfigError(f"{name} (from {source}): {exc}") from None


def _from_file(path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text()) or {}
    except OSError as exc:
        raise ConfigError(f"config file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must be a mapping of option: value")
    out: dict[str, Any] = {}
    for key, raw in data.items():
        name = str(key).replace("-", "_")
        _known(name, f"config file {path}: key {key!r}")
        if raw is None:
            continue
        out[name] = _parse(name, raw, f"config file {path}")
    return out


def _from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for var, raw in environ.items():
        if not var.startswith(ENV_PREFIX) or var == ENV_PREFIX + "CONFIG":
            continue
        name = var[len(ENV_PREFIX) :].lower()
        _known(name, f"environment variable {var}")
        out[name] = _parse(name, raw, var)
    return out


def _known(name: str, where: str) -> None:
    if name in _NOT_IMPLEMENTED:
        raise ConfigError(f"{where}: {_NOT_IMPLEMENTED[name]}")
    if name not in _FIELDS:
        raise ConfigError(f"{where} is not a collector option; known options: {', '.join(_FIELDS)}")


def load_config(
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    config_file: str | os.PathLike[str] | None = None,
) -> CollectorConfig:
    """Merge defaults < YAML file < env < flags. ``flags`` maps field names to raw values (None = not given)."""
    env = os.environ if environ is None else environ
    path = config_file or env.get(ENV_PREFIX + "CONFIG")
    values: dict[str, Any] = {}
    if path:
        values.update(_from_file(Path(path)))
    values.update(_from_env(env))
    for name, raw in (flags or {}).items():
        if raw is None:
            continue
        _known(name, f"option --{name.replace('_', '-')}")
        values[name] = _parse(name, raw, f"--{name.replace('_', '-')}")
    return CollectorConfig(**values)


_FIELDS = {f.name: f for f in fields(CollectorConfig)}


def default_of(name: str) -> Any:
    f = _FIELDS[name]
    if f.default is not MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not MISSING else None
