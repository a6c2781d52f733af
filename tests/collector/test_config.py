"""Configuration: flags > env > YAML file > defaults, clear errors, secrets never shown, --help complete."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from mast_otel.collector.cli import build_parser
from mast_otel.collector.config import CollectorConfig, ConfigError, load_config

CONTRACT_FLAGS = (
    "--otlp-grpc", "--otlp-http", "--export-endpoint", "--metrics", "--store", "--quiet-period", "--max-trace-age",
    "--mode", "--config",
)  # fmt: skip
EP = "http://127.0.0.1:14317"


def test_precedence_flags_over_env_over_file_over_defaults(tmp_path: Path) -> None:
    # prepare
    cfg = tmp_path / "c.yaml"
    cfg.write_text("quiet_period: 3\nmax-trace-age: 5m\nmode: passthrough\njudge_concurrency: 7\n")
    env = {"MAST_OTEL_COLLECTOR_QUIET_PERIOD": "4", "MAST_OTEL_COLLECTOR_MODE": "hold"}
    # test
    c = load_config({"quiet_period": "2s", "export_endpoint": EP}, environ=env, config_file=cfg)
    # verify
    assert c.quiet_period == 2.0  # flag
    assert c.mode == "hold"  # env over file
    assert c.max_trace_age == 300.0 and c.judge_concurrency == 7  # file
    assert c.max_pending_traces == CollectorConfig().max_pending_traces  # default


def test_config_file_from_env(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("max_request_bytes: 1MiB\n")
    c = load_config({}, environ={"MAST_OTEL_COLLECTOR_CONFIG": str(cfg)})
    assert c.max_request_bytes == 1024 * 1024


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"environ": {"MAST_OTEL_COLLECTOR_QUIET": "1"}}, "MAST_OTEL_COLLECTOR_QUIET is not a collector option"),
        ({"flags": {"quiet_period": "soon"}}, "quiet_period (from --quiet-period)"),
        ({"flags": {"mode": "tee"}}, "not one of hold, passthrough"),
        ({"flags": {"judge_fraction": "2"}}, "judge_fraction: must be between 0 and 1"),
        ({"flags": {"export_endpoint": "grpc://x:1"}}, "export_endpoint"),
        ({"flags": {"export_endpoint": "http://x:1/v1/logs"}}, "does not end in /v1/traces"),
        ({"flags": {"otlp_grpc": "4317"}}, "is not HOST:PORT"),
        ({"flags": {"store": "postgres://db/x"}}, "only an embedded SQLite store"),
        ({"flags": {"quiet_period": "60", "max_trace_age": "30"}}, "max_trace_age: must be >= quiet_period"),
    ],
)
def test_bad_values_fail_with_a_clear_error(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(kwargs.get("flags", {}), environ=kwargs.get("environ", {}))  # type: ignore[arg-type]
    assert message in str(err.value)


def test_unknown_and_unimplemented_file_keys_fail(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("quiet_perod: 3\n")
    with pytest.raises(ConfigError, match=r"quiet_perod.*not a collector option"):
        load_config({}, environ={}, config_file=cfg)
    cfg.write_text("tls_cert_file: /x.pem\n")
    with pytest.raises(ConfigError, match="TLS termination is not implemented"):
        load_config({}, environ={}, config_file=cfg)


def test_export_endpoint_rule() -> None:
    assert CollectorConfig(export_endpoint="http://h:4317").export_protocol == "grpc"
    assert CollectorConfig(export_endpoint="http://h:4318/v1/traces").export_protocol == "http"
    with pytest.raises(ConfigError, match="export_endpoint is required"):
        CollectorConfig().require_export_endpoint()


def test_secrets_never_shown(caplog: pytest.LogCaptureFixture) -> None:
    c = load_config(
        {"export_endpoint": EP},
        environ={"MAST_OTEL_COLLECTOR_AUTH_TOKEN": "s3cret-token", "MAST_OTEL_COLLECTOR_JUDGE_API_KEY": "sk-abc",
                 "MAST_OTEL_COLLECTOR_EXPORT_HEADERS": "authorization=Bearer xyz"},
    )  # fmt: skip
    assert c.auth_token == "s3cret-token" and c.export_headers == {"authorization": "Bearer xyz"}
    shown = repr(c) + str(c.describe())
    for secret in ("s3cret-token", "sk-abc", "Bearer xyz"):
        assert secret not in shown
    assert c.describe()["auth_token"] == "***"


def test_help_documents_every_option_and_its_env_variable() -> None:
    text = build_parser().format_help()
    for flag in CONTRACT_FLAGS:
        assert flag in text
    for name in ("--auth-token", "--max-request-bytes", "--judge-fraction", "--max-pending-bytes"):
        assert name in text
    assert "MAST_OTEL_COLLECTOR_QUIET_PERIOD" in text and "Precedence: flags > environment" in text


def test_cli_rejects_unknown_flag_and_missing_endpoint(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "mast_otel.cli", "collector"]
    bad = subprocess.run([*cmd, "--quiet-periodd", "1"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "unrecognized arguments" in bad.stderr
    env = {"PATH": "/usr/bin:/bin", "MAST_OTEL_COLLECTOR_AUTH_TOKEN": "hunter2"}
    missing = subprocess.run([*cmd, "--store", str(tmp_path / "x.db")], capture_output=True, text=True, timeout=60,
                             env=env)  # fmt: skip
    assert missing.returncode == 2 and "export_endpoint is required" in missing.stderr
    assert "hunter2" not in missing.stderr


def test_startup_log_masks_secrets(caplog: pytest.LogCaptureFixture) -> None:
    c = load_config({"export_endpoint": EP, "auth_token": "tok-123"}, environ={})
    with caplog.at_level(logging.INFO):
        logging.getLogger("t").info("configuration: %s", c.describe())
    assert "tok-123" not in caplog.text


def test_bad_header_value_is_not_echoed() -> None:
    with pytest.raises(ConfigError) as err:
        load_config({"export_headers": "Bearer sk-live-123"}, environ={})
    assert "sk-live-123" not in str(err.value)
