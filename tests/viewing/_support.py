"""What the viewing/alerting tests share: binaries that must exist in CI, the collector as a process, the shipped
deploy files and the renderer that shortens the alert rules' windows for a 1 s test loop."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.servers import free_port, logged_process, unavailable
from tests.servers import require_path as require_path  # where the viewing tests have always found it

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "mast_otel" / "collector" / "deploy"
RULES = DEPLOY / "prometheus" / "mast-otel-rules.yml"
PROMETHEUS_YML = DEPLOY / "prometheus" / "prometheus.yml"
ALERTMANAGER_YML = DEPLOY / "alertmanager" / "alertmanager.yml"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "mast-otel.json"
COMPOSE = DEPLOY / "docker-compose.yml"
ARTIFACTS = ROOT / "test-artifacts"
MAD = ROOT.parent / "shared" / "mast-data" / "parsers_output"
MAST_OTEL = str(Path(sys.executable).parent / "mast-otel")


def require_binary(name: str, how: str = "bash scripts/setup-system.sh") -> str:
    """The binary's path; in CI (CI=true) a missing one fails the test, locally it skips with the fix."""
    path = shutil.which(name)
    if path:
        return path
    unavailable(f"{name} is not installed ({how})")


@dataclass(frozen=True)
class Collector:
    pid: int
    grpc: str  # http://127.0.0.1:PORT (OTLP/gRPC, the form --endpoint flags take)
    http: str  # http://127.0.0.1:PORT/v1/traces
    metrics: str  # 127.0.0.1:PORT
    log: Path

    @property
    def metrics_url(self) -> str:
        return f"http://{self.metrics}/metrics"

    def scrape(self) -> str:
        with urllib.request.urlopen(self.metrics_url, timeout=5) as r:
            return str(r.read().decode())


@contextmanager
def collector_process(
    workdir: Path,
    export_endpoint: str,
    *,
    extra: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    program: Sequence[str] = (MAST_OTEL,),
) -> Iterator[Collector]:
    """``mast-otel collector`` on free 127.0.0.1 ports (hold mode, no model, 0.5 s quiet period); stopped by PID.

    ``program`` is how to run ``mast-otel`` (e.g. another environment's ``python -m mast_otel.cli``)."""
    grpc, http, metrics = free_port(), free_port(), free_port()
    log = workdir / "collector.log"
    cmd = [
        *program, "collector",
        "--otlp-grpc", f"127.0.0.1:{grpc}", "--otlp-http", f"127.0.0.1:{http}", "--metrics", f"127.0.0.1:{metrics}",
        "--store", str(workdir / "collector.db"), "--export-endpoint", export_endpoint,
        "--quiet-period", "0.5", "--mode", "hold", "--judge", "signals", *extra,
    ]  # fmt: skip
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MAST_OTEL_COLLECTOR_")}
    ready = f"http://127.0.0.1:{metrics}/metrics"
    with logged_process(cmd, log, ready, "collector", {**clean, **(env or {})}) as proc:
        yield Collector(proc.pid, f"http://127.0.0.1:{grpc}", f"http://127.0.0.1:{http}/v1/traces",
                        f"127.0.0.1:{metrics}", log)  # fmt: skip


def replay(file: Path, endpoint: str, *, limit: int, service: str, offset: int = 0) -> None:
    """``mast-otel replay`` as a user runs it; fails the test with its output when it fails."""
    cmd = [MAST_OTEL, "replay", str(file), "--endpoint", endpoint, "--limit", str(limit), "--offset", str(offset),
           "--service-name", service]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"replay failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"


# --- rendering the shipped rules with short windows ------------------------------------------------------------------

_RANGE = re.compile(r"\[(\d+[smhdwy])\]")
_OFFSET = re.compile(r"\boffset (\d+[smhdwy])\b")
_FOR = re.compile(r"^(\s*for:\s*)(\d+[smhdwy])\s*$", re.MULTILINE)


def render_rules(text: str, windows: Mapping[str, str], for_: str) -> str:
    """The rules file with every range/offset duration mapped through ``windows`` and every ``for:`` set to ``for_``.

    Nothing else changes, so the test runs the shipped expressions, not look-alikes (see :func:`structure`).
    """

    def window(m: re.Match[str]) -> str:
        try:
            new = windows[m.group(1)]
        except KeyError:
            raise AssertionError(f"no test window for {m.group(1)!r}; add it to the mapping") from None
        return m.group(0).replace(m.group(1), new)

    text = _RANGE.sub(window, text)
    text = _OFFSET.sub(window, text)
    return _FOR.sub(lambda m: m.group(1) + for_, text)


def structure(text: str) -> str:
    """The rules file with every duration replaced by ``D``: equal structure = equal expressions up to windows."""
    text = _RANGE.sub("[D]", text)
    text = _OFFSET.sub("offset D", text)
    return _FOR.sub(lambda m: m.group(1) + "D", text)


# Shipped window -> test window (scrape and evaluation every 1 s).
TEST_WINDOWS = {"3d": "4m", "1d": "3m", "6h": "2m", "2h": "40s", "1h": "30s", "30m": "20s", "15m": "15s", "10m": "15s",
                "5m": "10s"}  # fmt: skip
