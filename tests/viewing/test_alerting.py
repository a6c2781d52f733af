"""End to end: the shipped rules fire in a real Prometheus and the notification reaches a webhook.

Prometheus 2.42 and Alertmanager 0.25 (Debian) run in the foreground on 127.0.0.1 with 1 s scrape/evaluation;
the collector exports to the test OTLP sink; ``mast-otel replay`` sends recorded MetaGPT conversations that ended
at their round limit. With no model configured the collector attaches the ``round_limit`` signal and
``MastSignalSpike`` fires; with a judge (a user judge callable standing in for one) they are labelled 1.5 and
``MastFailureModeBurnFast`` pages (every conversation of the service shows it, and enough of them were judged).
The rule file is the
shipped one with shorter windows (``render_rules``; ``test_deploy`` checks nothing else differs), the Prometheus
and Alertmanager configs are the shipped ones with local targets, 1 s intervals and the test's webhook URL.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.otlp_sink import otlp_sink
from tests.servers import free_port, stop, wait_http
from tests.viewing._support import (
    ALERTMANAGER_YML,
    ARTIFACTS,
    PROMETHEUS_YML,
    ROOT,
    RULES,
    TEST_WINDOWS,
    collector_process,
    render_rules,
    replay,
    require_binary,
)

pytestmark = pytest.mark.integration

SERVICE = "alert-test"
STEPLIST = Path(__file__).resolve().parents[1] / "data" / "metagpt_round_limit.json"
STEPLIST_RUNS = 10  # conversations in it
CONVERSATIONS = 8  # the signal rule wants >= 5 conversations with one signal in its window


class Webhook:
    """Alertmanager's webhook receiver: keeps every JSON body it is sent."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.arrived = threading.Condition()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with hook.arrived:
                    hook.bodies.append(body)
                    hook.arrived.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/mast-otel/alerts"

    def wait_for(self, alertname: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self.arrived:
            while True:
                for body in self.bodies:
                    for alert in body.get("alerts", ()):
                        if alert["labels"].get("alertname") == alertname and alert["status"] == "firing":
                            return dict(alert)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"webhook got no firing {alertname} in {timeout}s: {self.bodies}")
                self.arrived.wait(left)


@contextmanager
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    thread = threading.Thread(target=hook.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        hook.server.shutdown()
        hook.server.server_close()


@contextmanager
def server(cmd: list[str], ready_url: str, log: Path) -> Iterator[int]:
    """A foreground server process, ready when ``ready_url`` answers; stopped by its PID."""
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_http(ready_url, timeout=30, proc=proc)
            yield proc.pid
        finally:
            stop(proc)


def prometheus_config(metrics: str, alertmanager: str) -> dict[str, Any]:
    """The shipped prometheus.yml with 1 s intervals and this test's targets."""
    config: dict[str, Any] = yaml.safe_load(PROMETHEUS_YML.read_text())
    config["global"].update(scrape_interval="1s", evaluation_interval="1s")
    config["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] = [alertmanager]
    (job,) = config["scrape_configs"]
    job["scrape_interval"] = "1s"
    job["static_configs"][0]["targets"] = [metrics]
    return config


def alertmanager_config(url: str) -> dict[str, Any]:
    """The shipped alertmanager.yml with 1 s grouping and this test's webhook."""
    config: dict[str, Any] = yaml.safe_load(ALERTMANAGER_YML.read_text())
    for route in [config["route"], *config["route"].get("routes", ())]:
        route.update(group_wait="1s", group_interval="1s")
    for receiver in config["receivers"]:
        for hook in receiver.get("webhook_configs", ()):
            hook["url"] = url
    return config


def get_json(url: str, **params: str) -> Any:
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    with urllib.request.urlopen(url + query, timeout=5) as r:
        return json.loads(r.read())


def poll(what: str, fn: Any, timeout: float, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


# known: the service is declared (--metrics-services), so its series exist at 0 from startup and the rule's
#        baseline branch sees the burst as an increase.
# new:   the service appears with the burst; its series' first sample already counts conversations, which only
#        the rule's "series born in the window" branch sees (it needs the collector's history for one window).
@dataclass(frozen=True)
class Spike:
    alert: str
    metric: str
    labels: dict[str, str]  # the alert's labels besides service
    judge: tuple[str, ...]  # extra collector flags
    attribute: str  # on the labelled root at the sink
    find: tuple[str, ...]  # what the notification tells people to search for
    conversations: int = CONVERSATIONS
    least: float = 5  # the alert's value: conversations (signals), or the mode's rate among judged ones


SIGNAL = Spike("MastSignalSpike", "mast_signal_total",
               {"signal": "round_limit", "mode": "1.5", "framework": "metagpt"}, (), "mast.signal.round_limit",
               ("mast.signal.round_limit=true", "{ span.mast.signal.round_limit = true }"))
MODE = Spike("MastFailureModeBurnFast", "mast_failure_mode_total", {"mode": "1.5", "severity": "critical"},
             ("--judge", "tests.viewing.signal_judge:SignalModeJudge"), "mast.fm.1_5",
             ("mast.fm.1_5=true", "{ span.mast.fm.1_5 = true }", "mast-otel report"),
             conversations=24, least=0.72)  # fmt: skip  # >= 20 judged (the rules' minimum), each with 1.5


@pytest.mark.parametrize(
    ("spike_kind", "service_kind"), [(SIGNAL, "known"), (SIGNAL, "new"), (MODE, "known")], ids=lambda v: getattr(
        v, "alert", v)
)  # fmt: skip
def test_spike_rule_fires_and_reaches_the_webhook(tmp_path: Path, spike_kind: Spike, service_kind: str) -> None:
    prometheus = require_binary("prometheus")
    alertmanager = require_binary("prometheus-alertmanager")
    steplist = STEPLIST  # synthetic MetaGPT runs cut off at the round limit (tests/data/README.md)
    ARTIFACTS.mkdir(exist_ok=True)
    prom_port, am_port = free_port(), free_port()
    prom_url, am_url = f"http://127.0.0.1:{prom_port}", f"http://127.0.0.1:{am_port}"

    declare = ["--metrics-services", f"{SERVICE}/metagpt"] if service_kind == "known" else []
    with (
        otlp_sink() as sink,
        webhook() as hook,
        collector_process(tmp_path, sink.grpc_endpoint, extra=[*declare, *spike_kind.judge],
                          env={"PYTHONPATH": str(ROOT)}) as collector,
    ):
        (tmp_path / "mast-otel-rules.yml").write_text(render_rules(RULES.read_text(), TEST_WINDOWS, for_="1s"))
        (tmp_path / "prometheus.yml").write_text(
            yaml.safe_dump(prometheus_config(collector.metrics, f"127.0.0.1:{am_port}"))
        )
        (tmp_path / "alertmanager.yml").write_text(yaml.safe_dump(alertmanager_config(hook.url)))
        am_cmd = [alertmanager, f"--config.file={tmp_path / 'alertmanager.yml'}", f"--storage.path={tmp_path / 'am'}",
                  f"--web.listen-address=127.0.0.1:{am_port}", "--cluster.listen-address="]  # fmt: skip
        prom_cmd = [
            prometheus,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'db'}",
            f"--web.listen-address=127.0.0.1:{prom_port}",
        ]
        with (
            server(am_cmd, f"{am_url}/-/ready", ARTIFACTS / "alertmanager.log"),
            server(prom_cmd, f"{prom_url}/-/ready", ARTIFACTS / "prometheus.log"),
        ):
            query = f"{prom_url}/api/v1/query"
            if service_kind == "known":  # the first scrape sees the declared service's series at 0
                selector = f'{spike_kind.metric}{{service="{SERVICE}"}}'
            else:  # Prometheus holds one window of the collector's history (the rule's guard against restarts)
                selector = f"count(mast_collector_limit offset {TEST_WINDOWS['15m']})"
            poll("the collector's series in Prometheus", lambda: get_json(query, query=selector)["data"]["result"], 60)
            started = time.monotonic()
            for first in range(0, spike_kind.conversations, STEPLIST_RUNS):  # the file's runs, again as needed
                replay(steplist, collector.grpc, limit=min(STEPLIST_RUNS, spike_kind.conversations - first),
                       service=SERVICE)  # fmt: skip
            labelled = poll(
                "the labelled conversations at the sink",
                lambda: len([s for s in sink.spans() if s.attributes.get(spike_kind.attribute)
                             and s.attributes.get("mast.span.type") == "conversation"]) >= spike_kind.conversations,
                60,
            )  # fmt: skip
            assert labelled
            judged_at = time.monotonic() - started

            def spike() -> Any:
                alerts = get_json(f"{prom_url}/api/v1/alerts")["data"]["alerts"]
                return [a for a in alerts if a["labels"]["alertname"] == spike_kind.alert and a["state"] == "firing"
                        and a["labels"].items() >= spike_kind.labels.items()]  # fmt: skip

            try:
                (alert,) = poll(f"{spike_kind.alert} firing in Prometheus", spike, 60)
            except AssertionError as exc:  # say what Prometheus saw
                seen = get_json(query, query=f'{spike_kind.metric}{{mode="1.5"}} > 0')["data"]["result"]
                alerts = get_json(f"{prom_url}/api/v1/alerts")["data"]["alerts"]
                raise AssertionError(f"{exc}; series: {seen}; alerts: {alerts}") from None
            fired_at = time.monotonic() - started
            assert alert["labels"]["service"] == SERVICE
            assert float(alert["value"]) >= spike_kind.least
            if service_kind == "new":  # the service's series exist only since its first spans arrived
                match = ",".join(f'{k}="{v}"' for k, v in spike_kind.labels.items())
                series = f'{spike_kind.metric}{{service="{SERVICE}",{match}}}[5m]'
                (samples,) = get_json(query, query=series)["data"]["result"]
                # Either branch may see the burst: the collector creates a new service's series at 0 when its
                # spans arrive, so a scrape between arrival and verdict gives the baseline branch a 0 to start from.
                assert float(samples["values"][-1][1]) >= 5, samples["values"][:3]

            notified = hook.wait_for(spike_kind.alert, timeout=60)
            notified_at = time.monotonic() - started
            assert notified["labels"]["mode"] == "1.5" and notified["labels"]["service"] == SERVICE
            for text in spike_kind.find:
                assert text in notified["annotations"]["description"]
            if spike_kind is SIGNAL:  # no model: no MAST label anywhere
                assert get_json(query, query="sum(mast_failure_mode_total) > 0")["data"]["result"] == []
                assert not any(s.attributes.get("mast.failure_modes") for s in sink.spans())
            # Nothing else is wrong with the pipeline: no other alert fires.
            others = {a["labels"]["alertname"] for a in get_json(f"{prom_url}/api/v1/alerts")["data"]["alerts"]}
            assert others <= {"MastSignalSpike", "MastFailureModeBurnFast", "MastFailureModeBurnSlow",
                              "MastFailureModeBurnTicket"}, others  # fmt: skip
    timings = {"judged_s": round(judged_at, 2), "firing_s": round(fired_at, 2), "webhook_s": round(notified_at, 2)}
    (ARTIFACTS / f"alerting-timings-{spike_kind.alert}-{service_kind}.json").write_text(json.dumps(timings))
    print(f"alert timings after the replay started: {timings}")
