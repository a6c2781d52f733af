"""``instrument()`` never raises, whatever the environment, and a bad redaction value exports nothing unredacted.

Every variable mast-otel and the OpenTelemetry code it reaches read (OTEL_*, MAST_OTEL_*,
OTEL_INSTRUMENTATION_GENAI_*; found by scanning the sources, so a new one is covered without editing this file) is
given generated values, good and bad, many environments per fresh process (tests/instrument_environment.py): the
bare ``instrument()`` returns, the program's own results are the same as without mast-otel, and when a redaction
pattern is bad (or the secret's pattern is given) the secret is in no exported span.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.frameworks import REPO

SECRET = "ACME-1234"
SECRET_PATTERN = r"ACME-\d+"

# -- which variables --------------------------------------------------------------------------------------------
_LITERAL = re.compile(r"""["']((?:OTEL|MAST_OTEL)_[A-Z0-9_]+)["']""")
_IDENTIFIER = re.compile(r"\b(_?OTEL_[A-Z0-9_]+)\b")
# mast-otel modules that run inside the program (not the collector, the judge, evaluation or the CLI)
_IN_PROCESS = ("mast_otel/*.py", "mast_otel/integrations/**/*.py")
# the OpenTelemetry modules mast_otel/_setup.py and _exporter.py reach when it builds its own provider
_SDK_FILES = (
    "opentelemetry/sdk/trace/__init__.py",
    "opentelemetry/sdk/trace/export/__init__.py",
    "opentelemetry/sdk/trace/sampling.py",
    "opentelemetry/sdk/resources/__init__.py",
    "opentelemetry/exporter/otlp/proto/grpc/exporter.py",
    "opentelemetry/exporter/otlp/proto/grpc/trace_exporter/__init__.py",
    "opentelemetry/exporter/otlp/proto/http/_common/__init__.py",
    "opentelemetry/exporter/otlp/proto/http/trace_exporter/__init__.py",
)
_NOT_READ_HERE = re.compile(r"_(LOGS|METRICS)_|_METRIC_|_LOG_|^OTEL_(LOGS|METRICS)_|_BLRP_|_METRICS?_")


def variables_read() -> list[str]:
    """Every OTEL_* / MAST_OTEL_* variable named in the code ``instrument()`` runs (names of other signals, logs
    and metrics, which the trace path never reads, left out)."""
    import opentelemetry
    from opentelemetry.sdk import environment_variables

    names: set[str] = set()
    for pattern in _IN_PROCESS:
        for path in REPO.glob(pattern):
            names |= set(_LITERAL.findall(path.read_text()))
    site = Path(opentelemetry.__path__[0]).parent
    for relative in _SDK_FILES:
        for identifier in _IDENTIFIER.findall((site / relative).read_text()):
            value = getattr(environment_variables, identifier, None)
            if isinstance(value, str):
                names.add(value)
    return sorted(n for n in names if not _NOT_READ_HERE.search(n) and not n.endswith("_"))


VARIABLES = variables_read()


def test_the_scan_finds_the_variables_known_to_matter() -> None:
    for name in (
        "OTEL_EXPORTER_OTLP_COMPRESSION",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "MAST_OTEL_REDACT_PATTERNS",
        "MAST_OTEL_MAX_CONTENT_LENGTH",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
        "OTEL_SPAN_EVENT_COUNT_LIMIT",
        "OTEL_BSP_MAX_QUEUE_SIZE",
        "OTEL_TRACES_SAMPLER_ARG",
        "OTEL_EXPERIMENTAL_RESOURCE_DETECTORS",
        "OTEL_PYTHON_EXPORTER_OTLP_GRPC_RETRYABLE_ERROR_CODES",
    ):
        assert name in VARIABLES


# -- which values -----------------------------------------------------------------------------------------------
_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
_NUMBER = st.one_of(
    st.integers(-(10**12), 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.sampled_from(["", " ", "abc", "1e400", "-0", "0x10", "٣", "1_000", " 7 ", "0", "-1"]),
    _TEXT,
)
_SWITCH = st.sampled_from(["true", "false", "TRUE", "1", "0", "", "yes", "maybe", "on"]) | _TEXT
_ENDPOINT = st.sampled_from(  # local or unparsable only: nothing may wait on a network
    ["http://127.0.0.1:9", "127.0.0.1:9", "https://127.0.0.1:9", "http://[", "http://[::1", "", " ",
     "http://127.0.0.1:9/v1/traces", "unix:///nonexistent", "%zz", "http://127.0.0.1:99999"]
)  # fmt: skip
_PATTERNS = st.lists(
    st.sampled_from([SECRET_PATTERN, "(unclosed", "[", "a{2,1}", "(?P<v>x", "ok", "(?i)token", "*", "x++"])
    | st.text("abc()[]*?+{}\\d-", max_size=6),
    max_size=4,
)


def _redaction() -> st.SearchStrategy[str]:
    return st.one_of(_PATTERNS.map("\n".join), _PATTERNS.map(json.dumps), _TEXT, st.just("[[[[[[[[[[[[[[[[[["))


def strategy_for(name: str) -> st.SearchStrategy[str]:
    if name == "MAST_OTEL_REDACT_PATTERNS":
        return _redaction()
    if name.endswith(("ENDPOINT",)):
        return _ENDPOINT
    if name.endswith(("PROTOCOL",)):
        return st.sampled_from(["grpc", "http/protobuf", "http/json", "GRPC", "", "bogus"]) | _TEXT
    if name.endswith("COMPRESSION"):
        return st.sampled_from(["gzip", "none", "deflate", "", "bogus", " GZIP "]) | _TEXT
    if name.endswith(("CERTIFICATE", "CLIENT_KEY")):
        return st.sampled_from(["/nonexistent", "/", "/etc/hostname", "", "/dev/null"])
    if name.endswith("CREDENTIAL_PROVIDER"):
        return st.sampled_from(["", "nope"])
    if name.endswith("RETRYABLE_ERROR_CODES"):
        return st.sampled_from(["UNAVAILABLE", "unavailable, aborted", "NOPE", ",", ""]) | _TEXT
    if name.endswith(("TIMEOUT", "LIMIT", "SIZE", "DELAY", "LENGTH", "SAMPLER_ARG")):
        return _NUMBER
    if name.endswith(("DISABLED", "ENABLED", "INSECURE", "SEMCONV", "OPENINFERENCE", "MESSAGE_CONTENT")):
        return _SWITCH | st.sampled_from(["SPAN_ONLY", "NO_CONTENT", "EVENT_ONLY"])
    if name == "OTEL_TRACES_SAMPLER":
        return st.sampled_from(["always_on", "always_off", "traceidratio", "parentbased_traceidratio", "x"]) | _TEXT
    if name == "OTEL_EXPERIMENTAL_RESOURCE_DETECTORS":
        return st.sampled_from(["", "process", "nope", "otel,service_instance", ",", "os"])
    return _TEXT  # any other variable: arbitrary text (resource attributes, headers, service name, ...)


ENVIRONMENTS = st.fixed_dictionaries({}, optional={name: strategy_for(name) for name in VARIABLES})


def run_batch(environments: list[dict[str, str]]) -> list[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MAST_OTEL_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-m", "tests.instrument_environment"],
        cwd=REPO,
        env=env,
        input=json.dumps(environments),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return results


def redaction_must_hold(value: str | None) -> bool:
    """True when the secret must not be exported: a redaction pattern is bad, or its own pattern is given."""
    if value is None:
        return False
    from mast_otel.config import _parse_patterns

    patterns = _parse_patterns(value)
    for pattern in patterns:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # "possible nested set": a FutureWarning, refused like an error
                re.compile(pattern)
        except Exception:
            return True
    return SECRET_PATTERN in patterns


def check(environments: list[dict[str, str]], results: list[dict[str, Any]]) -> None:
    assert len(results) == len(environments)
    for environment, result in zip(environments, results, strict=True):
        assert result["raised"] is None, (environment, result["raised"])
        assert result["same"] is True, environment
        if redaction_must_hold(environment.get("MAST_OTEL_REDACT_PATTERNS")):
            assert SECRET not in result["exported"], environment


# No shrinking: each example is a subprocess, and check() already names the one environment that failed.
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), database=None,
          phases=(Phase.explicit, Phase.generate))  # fmt: skip
@given(st.lists(ENVIRONMENTS, min_size=12, max_size=12))
def test_generated_environments(environments: list[dict[str, str]]) -> None:
    check(environments, run_batch(environments))


KNOWN = [
    {"OTEL_EXPORTER_OTLP_COMPRESSION": "bogus"},
    {"OTEL_EXPORTER_OTLP_TIMEOUT": "abc"},
    {"MAST_OTEL_REDACT_PATTERNS": f"(unclosed\n{SECRET_PATTERN}"},
    {"MAST_OTEL_REDACT_PATTERNS": "(unclosed"},
    {"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": ""},
    {},  # the oracle sees content when nothing is wrong
]


def test_the_known_cases() -> None:
    """The issue's three values: ``instrument()`` returns, each bad value is counted once under its own kind, and
    with a bad pattern the secret is in no span; with no variable set the same program exports it (the oracle is
    sharp)."""
    results = run_batch(KNOWN)
    check(KNOWN, results)
    failures = [r["failures"] for r in results]
    assert failures[0] == {"config.OTEL_EXPORTER_OTLP_COMPRESSION": 1}
    assert failures[1] == {"config.OTEL_EXPORTER_OTLP_TIMEOUT": 1}
    # read twice: by instrument() and by the program's own Recorder()
    assert failures[2] == failures[3] == {"config.MAST_OTEL_REDACT_PATTERNS": 2}
    assert failures[4] == failures[5] == {}
    assert all(r["exported"] for r in results), "every environment exported spans"
    assert "cannot close" not in results[2]["exported"], "the exception's text is withheld whole"
    assert SECRET in results[5]["exported"]


@pytest.mark.parametrize(
    ("variable", "value", "attribute", "default"),
    [
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "bogus", "_compression", "NoCompression"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "abc", "_timeout", 10.0),
        ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "abc", "_timeout", 10.0),
    ],
)
def test_a_bad_exporter_value_is_replaced_by_its_default(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, variable: str, value: str, attribute: str,
    default: Any,
) -> None:  # fmt: skip
    from mast_otel._exporter import otlp_exporter_from_env
    from mast_otel._safety import recording_failures, reset_recording_failures

    reset_recording_failures()
    monkeypatch.setenv(variable, value)
    exporter = otlp_exporter_from_env()
    got = getattr(exporter, attribute)
    assert (got.name if hasattr(got, "name") else got) == default
    otlp_exporter_from_env()
    assert recording_failures() == {f"config.{variable}": 2}
    assert caplog.text.count(f"counted as config.{variable}") == 1, "logged once"
    assert value not in caplog.text, "the value itself is not logged"
    exporter.shutdown()


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from([
    "OTEL_ATTRIBUTE_COUNT_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT",
    "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_SPAN_EVENT_COUNT_LIMIT", "OTEL_SPAN_LINK_COUNT_LIMIT",
    "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT",
]), _NUMBER))  # fmt: skip
def test_span_limits_are_the_sdks_without_the_bad_variables(limits: dict[str, str]) -> None:
    """Where the SDK would raise on a limit, mast-otel's provider gets the limits the SDK reads with that variable
    absent; where it would not, the SDK reads them itself."""
    from unittest import mock

    from opentelemetry.sdk.trace import SpanLimits

    from mast_otel._setup import span_limits

    def sdk(environ: dict[str, str]) -> SpanLimits | None:
        with mock.patch.dict(os.environ, environ, clear=False):
            try:
                return SpanLimits()
            except ValueError:
                return None

    for name in limits:
        os.environ.pop(name, None)
    with mock.patch.dict(os.environ, limits):
        ours = span_limits()
    good = {name: value for name, value in limits.items() if sdk({name: value}) is not None}
    expected = sdk(good)
    assert expected is not None
    if ours is None:
        assert sdk(limits) is not None, "the SDK would raise on these limits, and mast-otel let it read them"
        ours = sdk(limits)
    assert repr(ours) == repr(expected)
