"""``instrument()`` never raises, even with warnings turned into errors (``python -W error``).

A redaction pattern from the environment that Python warns about while compiling it (``[[a]``: "FutureWarning:
Possible nested set") raised that warning out of ``instrument()`` under ``-W error``, and was otherwise kept with a
meaning Python says will change. It is handled like a pattern that does not compile: content capture is off, the
kind ``config.MAST_OTEL_REDACT_PATTERNS`` is counted and logged once, and the program runs as it does without
mast-otel. Checked in a fresh ``python -W error`` process (tests/instrument_environment.py) and in this one under
``warnings.simplefilter("error")``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import mast_otel
from mast_otel import _registry
from mast_otel._safety import recording_failures, reset_recording_failures
from mast_otel.redaction import compile_user_pattern
from tests.core.test_instrument_environment import ENVIRONMENTS, check
from tests.frameworks import REPO
from tests.instrument_environment import SECRET, exported_text, program

KIND = "config.MAST_OTEL_REDACT_PATTERNS"
LOGGED = f"counted as {KIND}"
# Each one a FutureWarning of a different kind (a POSIX class written as in grep is the usual way to meet one),
# and one beside a good pattern for the secret: one pattern that warns is enough to turn capture off.
WARNING_PATTERNS = ["[[a]", "x[[:alpha:]]", "[a&&b]", "[a||b]", "[a~~b]", "ACME-\\d+\n[[a]"]
SAID = "the key is"  # message text of the program's: exported only when content is captured


def test_the_patterns_warn() -> None:
    """(The cases are what they say: Python warns about each, and refuses none.)"""
    for pattern in sorted({p.splitlines()[-1] for p in WARNING_PATTERNS}):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            re.compile(pattern + "(?#a text of its own: re has not compiled it, so it parses it)")
        assert [w.category for w in caught] == [FutureWarning], pattern


def _run(environments: list[dict[str, str]]) -> tuple[list[dict[str, Any]], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MAST_OTEL_", "PYTHONWARNINGS"))}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-W", "error", "-m", "tests.instrument_environment", "--recorder-only"],
        cwd=REPO, env=env, input=json.dumps(environments), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    results: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return results, done.stderr


def test_a_fresh_process_under_w_error() -> None:
    """``python -W error``: for each pattern ``instrument()`` returns, the program's results are the plain run's,
    nothing of its messages is exported (content capture is off), the bad pattern is counted where read (by
    ``instrument()`` and by the program's own ``Recorder()``) and logged once; with no pattern set, the same
    program exports its text (the oracle is sharp)."""
    environments = [{"MAST_OTEL_REDACT_PATTERNS": p} for p in WARNING_PATTERNS] + [{}]
    results, stderr = _run(environments)
    *warned, plain = results
    for pattern, result in zip(WARNING_PATTERNS, warned, strict=True):
        assert result["raised"] is None, (pattern, result["raised"])
        assert result["same"] is True, pattern
        assert result["exported"], "the run was recorded"
        assert SAID not in result["exported"] and SECRET not in result["exported"], pattern
        assert result["failures"] == {KIND: 2}, pattern
    assert plain["raised"] is None and plain["same"] is True and plain["failures"] == {}
    assert SAID in plain["exported"]
    assert stderr.count(LOGGED) == len(WARNING_PATTERNS), "once per environment (a fresh process each)"
    assert "[[a]" not in stderr, "the pattern itself is not logged"


def test_every_in_process_module_imports_under_w_error() -> None:
    """What ``instrument()`` and its post-import hooks may import (mast-otel's in-process modules and every
    integration) raises no warning as an error: a module whose framework is not installed may fail to import
    (the hook never runs then), none may warn."""
    modules = sorted(
        ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        for pattern in ("mast_otel/*.py", "mast_otel/integrations/**/*.py")
        for path in REPO.glob(pattern)
    )
    script = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ImportError:\n"
        "        pass\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    done = subprocess.run([sys.executable, "-W", "error", "-c", script, *modules], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert len(modules) > 30 and "mast_otel.integrations.ag2" in modules
    assert done.returncode == 0, done.stderr[-3000:]


def test_mast_otels_sources_compile_without_a_warning() -> None:
    """A source Python warns about while compiling it (an invalid escape sequence: ``"Who\\&When"`` in a docstring)
    is a ``SyntaxError`` under ``-W error`` wherever no bytecode was cached (a fresh install, a read-only
    site-packages): the import fails. Compiled here from the text, so no cached bytecode hides it."""
    for path in sorted((REPO / "mast_otel").rglob("*.py")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            compile(path.read_text(encoding="utf-8"), str(path), "exec")


# No shrinking: each example is a subprocess, and check() names the one environment that failed.
@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck), database=None,
          phases=(Phase.explicit, Phase.generate))  # fmt: skip
@given(st.lists(ENVIRONMENTS, min_size=12, max_size=12))
def test_generated_environments_under_w_error(environments: list[dict[str, str]]) -> None:
    """Every variable ``instrument()`` reads, given generated values good and bad (the redaction patterns among
    them often warn): under ``-W error`` too, it returns and the program is unchanged; a pattern that warns or
    fails exports no secret."""
    results, _ = _run(environments)
    check(environments, results)


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    yield memory
    mast_otel.uninstrument()
    reset_recording_failures()


@pytest.mark.parametrize("pattern", WARNING_PATTERNS)
def test_in_process_under_warnings_as_errors(
    pattern: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, exporter: InMemorySpanExporter
) -> None:
    """``warnings.simplefilter("error")`` in the program: the same in this process, for each pattern, though the
    program compiled it first (``re`` has it cached then, and would not warn again)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reset_recording_failures()
    baseline = program(frameworks=False, provider=provider)
    assert SAID in exported_text(exporter), "the program's text is exported when nothing is wrong"
    exporter.clear()
    monkeypatch.setenv("MAST_OTEL_REDACT_PATTERNS", pattern)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for line in pattern.splitlines():
            re.compile(line)  # the program's own use of the pattern, before mast-otel's
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mast_otel.instrument(tracer_provider=provider)
        seen = program(frameworks=False, provider=provider)
    assert seen == baseline
    assert _registry.STATE.kwargs["config"].capture_content is False  # what every integration records with
    text = exported_text(exporter)  # the program's own Recorder(), configured from the same environment
    assert text and SAID not in text and SECRET not in text
    assert recording_failures() == {KIND: 2}  # read by instrument() and by the program's Recorder()
    assert caplog.text.count(LOGGED) == 1 and "[[a]" not in caplog.text


@pytest.mark.parametrize("pattern", [p.splitlines()[-1] for p in WARNING_PATTERNS])
def test_given_in_code_it_is_a_clear_error_naming_the_warning(pattern: str) -> None:
    """In code (``redact_patterns=``, ``Redactor(patterns=...)``) a pattern Python warns about is a programming
    error like one that does not compile: ``ValueError`` naming it and the warning, whatever the filters."""
    for action in ("error", "ignore", "default"):
        with warnings.catch_warnings():
            warnings.simplefilter(action)  # type: ignore[arg-type]
            with pytest.raises(ValueError, match=r"invalid redaction pattern .*: FutureWarning: Possible"):
                compile_user_pattern(pattern)
    with pytest.raises(ValueError, match="FutureWarning"):
        mast_otel.instrument(redact_patterns=[pattern], tracer_provider=TracerProvider())
