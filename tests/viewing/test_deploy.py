"""The shipped deploy files (mast_otel/collector/deploy/) are valid and refer only to what exists.

- the alert rules pass ``promtool check rules``, the Alertmanager example ``amtool check-config``;
- the test rendering of the rules differs from the shipped file in durations only;
- every metric (and label) named in the rules and the dashboard is one a running collector exports;
- docker-compose.yml, which cannot be run here (no Docker engine), passes an equivalent schema check: services,
  pinned images, ports on 127.0.0.1, bind mounts of shipped files, configs the collector accepts;
- the Grafana dashboard and provisioning agree on data sources.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from mast_otel import semconv as sc
from mast_otel.collector.config import load_config, parse_hostport
from mast_otel.collector.release.labeller import root_attributes
from mast_otel.judge.model import ModeLabel, Verdict
from tests.otlp_sink import otlp_sink
from tests.viewing._support import (
    ALERTMANAGER_YML,
    COMPOSE,
    DASHBOARD,
    DEPLOY,
    PROMETHEUS_YML,
    ROOT,
    RULES,
    TEST_WINDOWS,
    collector_process,
    render_rules,
    require_binary,
    structure,
)

PROVISIONED = DEPLOY / "grafana" / "provisioning" / "datasources" / "mast-otel.yml"
VIEWING_DOC = ROOT / "docs" / "viewing.md"
PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and", "or",
                   "unless", "inf", "nan"}  # fmt: skip
PROMETHEUS_OWN = {"up"}  # series Prometheus makes itself


def rule_exprs() -> list[str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule["expr"] for g in groups for rule in g["rules"]]


def recorded() -> dict[str, set[str]]:
    """Each recording rule's name -> the labels its series carry (what its expression aggregates by)."""
    groups = yaml.safe_load(RULES.read_text())["groups"]
    out: dict[str, set[str]] = {}
    for rule in (r for g in groups for r in g["rules"] if "record" in r):
        outer = re.match(r"\s*(?:sum|count|max) by \(([^)]*)\)", rule["expr"])
        labels = {x.strip() for x in outer.group(1).split(",")} if outer else grouping_labels(rule["expr"])
        out[rule["record"]] = labels - {"on", "group_left"}
    return out


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def panels(dash: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for p in dash["panels"]:
        yield p
        yield from p.get("panels", ())


def dashboard_exprs() -> list[str]:
    exprs = [t["expr"] for p in panels(dashboard()) for t in p.get("targets", ()) if "expr" in t]
    exprs += [v["query"]["query"] for v in dashboard()["templating"]["list"] if isinstance(v.get("query"), dict)]
    return exprs


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}")
_MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=|!=|=~|!~)\s*"([^"]*)"')


def metric_names(expr: str) -> set[str]:
    """Metric names in a PromQL expression: identifiers that are not functions, keywords, labels or durations."""
    text = re.sub(r"#[^\n]*", " ", expr)  # PromQL comments
    text = re.sub(r"label_values\(([^,]+),[^)]*\)", r"\1", text)  # Grafana's variable query
    text = _STRING.sub('""', text)
    text = _GROUPING.sub(" ", text)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\boffset\s+\S+", " ", text)
    names = set()
    for m in re.finditer(r"(?<![\w$.])([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\()?", text):
        if m.group(2) is None and m.group(1).lower() not in PROMQL_KEYWORDS:
            names.add(m.group(1))
    return names


def grouping_labels(expr: str) -> set[str]:
    expr = re.sub(r"#[^\n]*", " ", expr)
    return {label.strip() for _, labels in _GROUPING.findall(expr) for label in labels.split(",") if label.strip()}


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, str]]]:
    """Sample name -> label sets, scraped from a running collector's /metrics."""
    with otlp_sink() as sink, collector_process(tmp_path_factory.mktemp("collector"), sink.grpc_endpoint) as c:
        text = c.scrape()
    samples: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples.setdefault(s.name, []).append(dict(s.labels))
    return samples


# --- rules and Alertmanager --------------------------------------------------------------------------------------


@pytest.mark.integration
def test_promtool_accepts_the_shipped_rules_and_config(tmp_path: Path) -> None:
    promtool = require_binary("promtool")
    for cmd in ([promtool, "check", "rules", str(RULES)], [promtool, "check", "config", str(PROMETHEUS_YML)]):
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
    rendered = tmp_path / "rendered.yml"
    rendered.write_text(render_rules(RULES.read_text(), TEST_WINDOWS, for_="1s"))
    done = subprocess.run([promtool, "check", "rules", str(rendered)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.integration
def test_dashboard_queries_are_valid_promql(tmp_path: Path) -> None:
    """Every dashboard query, with Grafana's variables filled in, parses (as recording rules for promtool)."""
    promtool = require_binary("promtool")
    grafana = {"$__rate_interval": "1m", "$__range": "6h", "$service": ".*", "$framework": ".*", "$mode": ".*",
               "$version": ".*"}  # fmt: skip
    exprs = [t["expr"] for p in panels(dashboard()) for t in p.get("targets", ()) if "expr" in t]
    rules = []
    for i, expr in enumerate(exprs):
        for var, value in grafana.items():
            expr = expr.replace(var, value)
        assert "$" not in expr, expr
        rules.append({"record": f"dashboard:query_{i}", "expr": expr})
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    done = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.integration
def test_amtool_accepts_the_alertmanager_example() -> None:
    amtool = require_binary("amtool")
    done = subprocess.run([amtool, "check-config", str(ALERTMANAGER_YML)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_test_rendering_changes_only_durations() -> None:
    shipped = RULES.read_text()
    rendered = render_rules(shipped, TEST_WINDOWS, for_="1s")
    assert rendered != shipped
    assert structure(rendered) == structure(shipped)
    rules = {r.get("alert") or r["record"]: r for g in yaml.safe_load(rendered)["groups"] for r in g["rules"]}
    spike = rules["MastSignalSpike"]
    assert "[15s]" in spike["expr"] and "offset 15s" in spike["expr"] and spike["for"] == "1s"
    assert "[30s]" in rules["mast:failure_mode:ratio_rate1h"]["expr"]
    assert rules["MastFailureModeBurnFast"]["for"] == "1s"


def test_every_metric_in_the_rules_and_dashboard_is_exported(exported: dict[str, list[dict[str, str]]]) -> None:
    exprs = rule_exprs() + dashboard_exprs()
    named = set().union(*(metric_names(e) for e in exprs))
    assert {"mast_failure_mode_total", "mast_signal_total", "mast_judge_duration_seconds_bucket",
            "mast_collector_pending_bytes"} <= named  # fmt: skip
    missing = sorted(named - set(exported) - PROMETHEUS_OWN - set(recorded()))
    assert not missing, f"named in rules/dashboard but not on the collector's /metrics: {missing}"


def test_labels_in_the_rules_and_dashboard_exist(exported: dict[str, list[dict[str, str]]]) -> None:
    """Grouping labels exist on the metrics they group, and literal label matchers match an exported series."""
    records = recorded()
    for expr in rule_exprs() + dashboard_exprs():
        metrics = metric_names(expr) - PROMETHEUS_OWN
        labels = {k for m in metrics for series in exported.get(m, ()) for k in series} | {"instance", "job"}
        labels |= {k for m in metrics for k in records.get(m, ())}
        assert grouping_labels(expr) <= labels, (expr, grouping_labels(expr) - labels)
        for metric, body in _SELECTOR.findall(expr):
            for label, op, value in _MATCHER.findall(body):
                if metric in PROMETHEUS_OWN or label in ("instance", "job") or "$" in value:
                    continue
                values = {series.get(label) for series in exported.get(metric, ())}
                if op == "=":
                    assert value in values, f"{metric}{{{label}={value!r}}}: exported values {values}"
                elif op == "!=":
                    assert values - {value}, f"{metric}{{{label}!={value!r}}} matches nothing"


def test_the_burn_alerts_cover_every_failure_mode_label(exported: dict[str, list[dict[str, str]]]) -> None:
    series = exported["mast_failure_mode_total"]
    assert {s["mode"] for s in series} >= {"1.1", "1.3", "2.1", "3.2", "3.3"}
    assert all({"mode", "category", "service", "version", "framework"} <= s.keys() for s in series)
    judged = exported["mast_conversations_judged_total"]
    assert {s["status"] for s in judged} >= {"ok", "partial", "truncated", "error", "skipped"}
    assert all({"service", "version", "framework"} <= s.keys() for s in judged)


def test_the_signal_alert_covers_every_signal_label(exported: dict[str, list[dict[str, str]]]) -> None:
    from mast_otel.judge.signals import SIGNALS

    series = exported["mast_signal_total"]
    assert {s["signal"] for s in series} == set(SIGNALS)
    assert all({s["mode"]} == {SIGNALS[s["signal"]].mode_id} for s in series)
    rule = next(r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]
                if r.get("alert") == "MastSignalSpike")  # fmt: skip
    assert "sum by (signal, mode, service, framework)" in rule["expr"]
    assert "mast.signal.{{ $labels.signal }}=true" in rule["annotations"]["description"]


# --- docker-compose (schema check in place of `docker compose config`) --------------------------------------------


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def test_compose_has_the_stack() -> None:
    services = compose()["services"]
    assert {"mast-otel-collector", "jaeger", "prometheus", "alertmanager", "grafana"} <= set(services)
    assert services["tempo"]["profiles"] == ["tempo"]  # optional
    for name, svc in services.items():
        for dep in svc.get("depends_on", ()):
            assert dep in services, f"{name} depends on unknown {dep}"
        assert not svc.get("privileged") and svc.get("network_mode") != "host", name


def test_compose_images_are_pinned() -> None:
    for name, svc in compose()["services"].items():
        image = svc.get("image")
        assert image, f"{name}: no image"
        repo, _, tag = image.rpartition(":")
        assert repo and tag and tag != "latest" and re.search(r"\d", tag), f"{name}: image {image} is not pinned"


def test_compose_ports_bind_loopback_only() -> None:
    for name, svc in compose()["services"].items():
        for port in svc.get("ports", ()):
            assert isinstance(port, str) and port.startswith("127.0.0.1:"), f"{name}: port {port!r} not on 127.0.0.1"
            assert len(port.split(":")) == 3, f"{name}: {port!r} should be 127.0.0.1:HOST:CONTAINER"


def test_compose_mounts_shipped_files() -> None:
    data = compose()
    named = set(data.get("volumes") or {})
    for name, svc in data["services"].items():
        for volume in svc.get("volumes", ()):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (COMPOSE.parent / source).exists(), f"{name}: mounts {source}, which is not shipped"
            else:
                assert source in named, f"{name}: volume {source} is not declared"
    build = data["services"]["mast-otel-collector"]["build"]
    context = (COMPOSE.parent / build["context"]).resolve()
    assert context == ROOT and (context / "pyproject.toml").exists()
    assert (context / build["dockerfile"]).exists()


def test_compose_wiring_matches_the_configs() -> None:
    """Prometheus scrapes the collector's --metrics port, Grafana's data sources point at compose services."""
    services = compose()["services"]
    collector = services["mast-otel-collector"]
    config_mount = next(v for v in collector["volumes"] if v.endswith("/etc/mast-otel/collector.yaml:ro"))
    config_file = COMPOSE.parent / config_mount.split(":")[0]
    config = load_config(environ={}, config_file=config_file)  # the collector itself accepts the file
    assert config.export_endpoint and config.metrics and config.otlp_grpc
    metrics_port = parse_hostport(config.metrics)[1]
    published = {p.split(":")[2] for p in collector["ports"]}
    assert {str(parse_hostport(config.otlp_grpc)[1]), str(metrics_port)} <= published
    prom = yaml.safe_load(PROMETHEUS_YML.read_text())
    (job,) = prom["scrape_configs"]
    assert job["job_name"] == "mast-otel-collector"  # MastCollectorDown selects it
    assert job["static_configs"][0]["targets"] == [f"mast-otel-collector:{metrics_port}"]
    host, _, _ = prom["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"][0].partition(":")
    assert host in services
    for ds in yaml.safe_load(PROVISIONED.read_text())["datasources"]:
        host = re.match(r"https?://([^:/]+)", ds["url"]).group(1)  # type: ignore[union-attr]
        assert host in services, f"data source {ds['name']} points at {host}, not a compose service"


# --- Grafana --------------------------------------------------------------------------------------------------------


def test_dashboard_is_consistent_with_provisioning() -> None:
    dash = dashboard()
    uids = {ds["uid"]: ds["type"] for ds in yaml.safe_load(PROVISIONED.read_text())["datasources"]}
    ids = [p["id"] for p in panels(dash)]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for p in panels(dash):
        assert p["gridPos"]["x"] + p["gridPos"]["w"] <= 24, p["title"]
        if p["type"] == "row":
            continue
        assert p.get("targets"), f"panel {p['title']!r} has no query"
        uid = p["datasource"]["uid"]
        assert uid == "${datasource}" or uids.get(uid) == p["datasource"]["type"], (p["title"], uid)
    default = next(v for v in dash["templating"]["list"] if v["name"] == "datasource")
    assert uids[default["current"]["value"]] == "prometheus"


def test_dashboard_shows_what_the_issue_asks_for() -> None:
    exprs = "\n".join(dashboard_exprs())
    for dim in ("mode", "category", "framework", "service"):
        assert f"sum by ({dim}) (increase(mast_failure_mode_total" in exprs, dim
    assert "sum by (signal, mode) (increase(mast_signal_total" in exprs
    for metric in ("mast_judge_duration_seconds_bucket", "mast_judge_tokens_total", "mast_collector_spans_pending",
                   "mast_collector_pending_bytes"):  # fmt: skip
        assert metric in exprs, metric
    # rates among judged conversations, by version, the budget's burn against the alerts' factors, judge health
    for recorded in ("mast:failure_mode:ratio_rate1h", "mast:failure_mode_by_version:ratio_rate1h",
                     "/ on (mode) group_left mast:failure_objective:ratio", "mast:conversations_judged:increase1h",
                     "mast:judge_error:ratio_rate15m", "mast:judge_skipped:ratio_rate15m", "mast:judge_unhealthy",
                     "mast:judge_timeouts:increase15m"):  # fmt: skip
        assert recorded in exprs, recorded
    burn = next(p for p in panels(dashboard()) if p["title"].startswith("Budget burn"))
    alerts = {r["alert"]: r["expr"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]
              if "alert" in r}  # fmt: skip
    factors = [float(re.search(r"group_left ([\d.]+) \* mast:failure_objective", alerts[name]).group(1))  # type: ignore[union-attr]
               for name in ("MastFailureModeBurnSlow", "MastFailureModeBurnFast")]  # fmt: skip
    assert [s["value"] for s in burn["fieldConfig"]["defaults"]["thresholds"]["steps"][1:]] == factors == [6, 14.4]
    assert any(v["name"] == "version" for v in dashboard()["templating"]["list"])
    tempo = [t for p in panels(dashboard()) for t in p.get("targets", ()) if t.get("queryType") == "traceql"]
    assert tempo and "span.mast.failed = true" in tempo[0]["query"]


# --- what docs/viewing.md tells people to search for is what the collector writes -------------------------------------


def test_viewing_doc_names_the_attributes_the_labeller_writes() -> None:
    attrs = root_attributes(Verdict(status=sc.JUDGE_OK, source=sc.SOURCE_RULES, modes=(ModeLabel("1.3"),)), "rules")
    assert attrs[sc.FAILED] is True and attrs["mast.fm.1_3"] is True
    doc = VIEWING_DOC.read_text()
    needles = [
        "mast.fm.1_3=true",  # Jaeger tags
        "mast.failed=true",
        "mast.failure_mode=1.3",
        "{ span.mast.fm.1_3 = true }",  # TraceQL
        "{ span.mast.failed = true }",
        '{ span.mast.failure_mode = "1.3" }',
        "'1.3' in mast.failure_modes",  # Phoenix (checked against a real Phoenix in test_phoenix.py)
    ]
    for needle in needles:
        assert needle in doc, needle
