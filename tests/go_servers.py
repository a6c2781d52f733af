"""The third-party Go servers the integration tier runs for real, built by ``scripts/setup-go-tools.sh``: Jaeger v2
(in-memory storage, the shipped ``deploy/jaeger/config.yaml``) and the front-tier OpenTelemetry Collector
distribution (the shipped ``deploy/otelcol-loadbalancing.yaml``). Each binds 127.0.0.1 on free ports and is stopped by
PID; Jaeger is read through the HTTP API its UI uses (``/api/traces``)."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.servers import free_port, logged_process, require_path

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "mast_otel" / "collector" / "deploy"
JAEGER_CONFIG = DEPLOY / "jaeger" / "config.yaml"
FRONT_CONFIG = DEPLOY / "otelcol-loadbalancing.yaml"
FRONT_K8S_CONFIG = DEPLOY / "otelcol-loadbalancing-k8s.yaml"
HOW = "bash scripts/setup-go-tools.sh"


def go_tool(name: str) -> str:
    """The path of a binary the set-up script built; in CI (CI=true) a missing one fails, locally it skips."""
    return str(require_path(Path(os.environ.get("MAST_OTEL_TOOLS_BIN", ROOT / ".tools" / "bin")) / name, HOW))


# --- Jaeger ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JaegerSpan:
    """One span as Jaeger's query API returns it (tags flattened; OTLP events are its ``logs``)."""

    trace_id: str
    span_id: str
    name: str
    service: str
    tags: Mapping[str, Any]
    events: Sequence[Mapping[str, Any]] = field(default_factory=tuple)  # each: {"event": name, attribute: value}


@dataclass(frozen=True)
class Jaeger:
    otlp_grpc: str  # http://127.0.0.1:PORT: what mast-otel's --export-endpoint takes
    query: str  # http://127.0.0.1:PORT: the UI and its HTTP API
    pid: int
    log: Path

    def _get(self, path: str, **params: str) -> Any:
        url = f"{self.query}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        with urllib.request.urlopen(url, timeout=30) as r:
            return json.loads(r.read())

    def services(self) -> list[str]:
        return list(self._get("/api/services")["data"] or [])

    def search(self, service: str, tags: Mapping[str, str] | None = None, limit: int = 1500) -> list[list[JaegerSpan]]:
        """The traces a UI search finds (service + Tags box), each as its spans; the UI's own request."""
        params = {"service": service, "limit": str(limit), "lookback": "1h"}
        if tags:
            params["tags"] = json.dumps(dict(tags))
        return [_spans(t) for t in self._get("/api/traces", **params)["data"] or []]

    def trace(self, trace_id: str) -> list[JaegerSpan]:
        (data,) = self._get(f"/api/traces/{trace_id}")["data"]
        return _spans(data)


def _spans(trace: Mapping[str, Any]) -> list[JaegerSpan]:
    services = {pid: p["serviceName"] for pid, p in trace["processes"].items()}
    return [
        JaegerSpan(
            trace_id=s["traceID"].rjust(32, "0"),
            span_id=s["spanID"].rjust(16, "0"),
            name=s["operationName"],
            service=services[s["processID"]],
            tags={t["key"]: t["value"] for t in s.get("tags", ())},
            events=tuple({f["key"]: f["value"] for f in log["fields"]} for log in s.get("logs", ())),
        )
        for s in trace["spans"]
    ]


@contextmanager
def jaeger(workdir: Path) -> Iterator[Jaeger]:
    """Jaeger v2 all-in-one with the shipped config, every listener moved to a free 127.0.0.1 port."""
    exe = go_tool("jaeger")
    ports = {name: free_port() for name in ("grpc", "http", "query", "query_grpc", "health", "metrics")}
    env = {
        **os.environ,
        "JAEGER_OTLP_GRPC": f"127.0.0.1:{ports['grpc']}",
        "JAEGER_OTLP_HTTP": f"127.0.0.1:{ports['http']}",
        "JAEGER_QUERY_HTTP": f"127.0.0.1:{ports['query']}",
        "JAEGER_QUERY_GRPC": f"127.0.0.1:{ports['query_grpc']}",
        "JAEGER_HEALTH": f"127.0.0.1:{ports['health']}",
        "JAEGER_METRICS_PORT": str(ports["metrics"]),
    }
    log = workdir / "jaeger.log"
    cmd = [exe, "--config", str(JAEGER_CONFIG)]
    with logged_process(cmd, log, f"http://127.0.0.1:{ports['query']}/api/services", "jaeger", env) as proc:
        yield Jaeger(f"http://127.0.0.1:{ports['grpc']}", f"http://127.0.0.1:{ports['query']}", proc.pid, log)


# --- the front-tier OpenTelemetry Collector --------------------------------------------------------------------------


def front_config(grpc: str, http: str, health: str, metrics_port: int, backends: Sequence[str]) -> dict[str, Any]:
    """The shipped front-tier config with only its addresses changed (listeners, the static backend list)."""
    config: dict[str, Any] = yaml.safe_load(FRONT_CONFIG.read_text())
    config["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"] = grpc
    config["receivers"]["otlp"]["protocols"]["http"]["endpoint"] = http
    config["extensions"]["health_check"]["endpoint"] = health
    config["exporters"]["load_balancing"]["resolver"]["static"]["hostnames"] = list(backends)
    prometheus = config["service"]["telemetry"]["metrics"]["readers"][0]["pull"]["exporter"]["prometheus"]
    prometheus.update(host="127.0.0.1", port=metrics_port)
    return config


@dataclass(frozen=True)
class Front:
    grpc: str  # 127.0.0.1:PORT (what the SDK's gRPC exporter takes)
    metrics_url: str  # the Collector's own Prometheus metrics
    pid: int
    log: Path

    def scrape(self) -> str:
        with urllib.request.urlopen(self.metrics_url, timeout=5) as r:
            return str(r.read().decode())


@contextmanager
def front_collector(workdir: Path, backends: Sequence[str]) -> Iterator[Front]:
    """The front tier (``otelcol-mast-front``) on free 127.0.0.1 ports, load-balancing over ``backends``."""
    exe = go_tool("otelcol-mast-front")
    grpc, http, health, metrics = free_port(), free_port(), free_port(), free_port()
    config = workdir / "front.yaml"
    config.write_text(yaml.safe_dump(front_config(f"127.0.0.1:{grpc}", f"127.0.0.1:{http}", f"127.0.0.1:{health}",
                                                  metrics, backends)))  # fmt: skip
    log = workdir / "front.log"
    with logged_process([exe, "--config", str(config)], log, f"http://127.0.0.1:{health}/", "otelcol") as proc:
        yield Front(f"127.0.0.1:{grpc}", f"http://127.0.0.1:{metrics}/metrics", proc.pid, log)


def validate(config: Path) -> subprocess.CompletedProcess[str]:
    """``otelcol-mast-front validate``: the distribution parses the file and builds every component's config."""
    return subprocess.run([go_tool("otelcol-mast-front"), "validate", "--config", str(config)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
