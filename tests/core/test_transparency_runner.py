"""scripts/transparency/run.py's verdict: outcomes read from pytest's own junit XML, compared per test id.

The runs themselves are long (the ``transparency`` nox session); what decides "same or not" is tested here on a
junit XML that a real pytest run writes.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from tests.frameworks import REPO

SUITE = """
import pytest

def test_passes():
    pass

def test_fails():
    assert False

@pytest.mark.skip(reason="not here")
def test_skipped():
    pass

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown")

def test_passes_then_teardown_errors(broken_teardown):
    pass
"""


def _runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("transparency_run", REPO / "scripts" / "transparency" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_outcomes_from_a_real_junit_xml(tmp_path: Path) -> None:
    (tmp_path / "test_suite.py").write_text(SUITE)
    junit = tmp_path / "out.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", "test_suite.py"],
        cwd=tmp_path,
        capture_output=True,
    )
    assert _runner().outcomes(junit) == {
        "test_suite::test_passes": "passed",
        "test_suite::test_fails": "failed",
        "test_suite::test_skipped": "skipped",
        "test_suite::test_passes_then_teardown_errors": "error",  # its worst phase
    }


def test_compare_names_every_changed_or_missing_id() -> None:
    plain = {"a": "passed", "b": "failed", "c": "passed", "d": "skipped"}
    instrumented = {"a": "passed", "b": "passed", "c": "failed", "e": "passed"}
    assert _runner().compare(plain, instrumented) == [
        ("b", "failed", "passed"),
        ("c", "passed", "failed"),
        ("d", "skipped", "absent"),
        ("e", "absent", "passed"),
    ]
