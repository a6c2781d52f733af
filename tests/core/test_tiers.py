"""The test command's job pool (scripts/tiers.py): what starts first, what may run beside what, and that a failed,
hung or stopped job never passes and never outlives the run. Real processes (sh), timed by their own clocks."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tiers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("tiers_under_test", ROOT / "scripts" / "tiers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["tiers_under_test"] = module
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(module, "DURATIONS", tmp_path / "durations.json")
    (tmp_path / "logs").mkdir()
    return module


def _sh(script: str) -> list[str]:
    return ["sh", "-c", script]


def _span(stamps: Path, name: str, seconds: float) -> list[str]:
    """A job that writes when it started and ended (the machine's clock) to ``stamps/name``."""
    return _sh(f"date +%s.%N > {stamps}/{name}.start; sleep {seconds}; date +%s.%N > {stamps}/{name}.end")


def _interval(stamps: Path, name: str) -> tuple[float, float]:
    return float((stamps / f"{name}.start").read_text()), float((stamps / f"{name}.end").read_text())


def test_a_short_job_that_a_long_chain_waits_for_starts_first_and_alone_jobs_go_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tiers = _tiers(tmp_path, monkeypatch)
    Job = tiers.Job
    jobs = [
        Job("long", ["true"], guess=100),
        Job("preflight", ["true"], guess=1),
        Job("main", ["true"], needs=("preflight",), guess=500),
        Job("quiet", ["true"], alone=True, guess=1000),
    ]
    # this machine's timing wins over the guess
    assert [j.name for j in tiers.order(jobs, {})] == ["preflight", "main", "long", "quiet"]
    assert [j.name for j in tiers.order(jobs, {"long": 900.0})] == ["long", "preflight", "main", "quiet"]


def test_the_callers_marker_selection_is_joined_with_the_jobs_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tiers = _tiers(tmp_path, monkeypatch)
    marks, rest = tiers.split_marks(["-m", "not integration", "-x", "-mslow", "tests/core"])
    assert marks == "(not integration) and (slow)" and rest == ["-x", "tests/core"]
    assert tiers.both("not alone", marks) == "(not alone) and (not integration) and (slow)"
    assert tiers.both("alone", "") == "alone"


def test_a_job_marked_alone_never_runs_beside_another(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tiers = _tiers(tmp_path, monkeypatch)
    Job = tiers.Job
    stamps = tmp_path / "stamps"
    stamps.mkdir()
    jobs = [
        Job("a", _span(stamps, "a", 0.6), guess=10),
        Job("b", _span(stamps, "b", 0.6), guess=9),
        Job("c", _span(stamps, "c", 0.6), guess=8),
        Job("quiet", _span(stamps, "quiet", 0.3), alone=True, guess=100),
    ]
    done = tiers.Pool(jobs, {}, slots=2, fail_fast=False, timeout=60).run()
    assert {name: result for name, (result, _, _) in done.items()} == dict.fromkeys("abc", "ok") | {"quiet": "ok"}
    a, b, c, quiet = (_interval(stamps, n) for n in ("a", "b", "c", "quiet"))
    assert a[0] < b[1] and b[0] < a[1]  # two slots: the first two ran side by side
    for other in (a, b, c):
        assert other[1] <= quiet[0] or quiet[1] <= other[0]


def test_a_failed_need_leaves_its_dependants_not_run_and_the_run_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tiers = _tiers(tmp_path, monkeypatch)
    Job = tiers.Job
    jobs = [
        Job("preflight", _sh("echo no server; exit 1")),
        Job("main", _sh("touch " + str(tmp_path / "ran")), needs=("preflight",)),
        Job("empty", _sh("exit 5")),  # pytest's "no test collected"
        Job("may-be-empty", _sh("exit 5"), ok=(0, 5)),
    ]
    done = tiers.Pool(jobs, {}, slots=2, fail_fast=False, timeout=60).run()
    results = {name: result for name, (result, _, _) in done.items()}
    assert results == {"preflight": "FAILED (exit 1)", "main": "not run", "empty": "FAILED (exit 5)",
                       "may-be-empty": "ok"}  # fmt: skip
    assert not (tmp_path / "ran").exists()
    assert (tmp_path / "logs" / "preflight.log").read_text() == "no server\n"


def test_a_hung_job_is_stopped_with_its_children_and_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tiers = _tiers(tmp_path, monkeypatch)
    pid_file = tmp_path / "child.pid"
    # the job's own child (a server it started) must not outlive it
    hung = tiers.Job("hung", _sh(f"sleep 60 & echo $! > {pid_file}; wait"))
    started = time.monotonic()
    done = tiers.Pool([hung], {}, slots=1, fail_fast=False, timeout=1.0).run()
    assert time.monotonic() - started < 15
    assert done["hung"][0].startswith("FAILED (exit -")
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_fail_fast_stops_what_runs_and_starts_nothing_more(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tiers = _tiers(tmp_path, monkeypatch)
    Job = tiers.Job
    jobs = [
        Job("slow", _sh("sleep 30"), guess=100),
        Job("broken", _sh("exit 2"), guess=50),
        Job("later", _sh("true"), guess=1),
    ]
    started = time.monotonic()
    done = tiers.Pool(jobs, {}, slots=2, fail_fast=True, timeout=60).run()
    assert time.monotonic() - started < 15
    results = {name: result for name, (result, _, _) in done.items()}
    assert results["broken"] == "FAILED (exit 2)" and results["later"] == "not run"
    assert results["slow"] == f"FAILED (exit -{signal.SIGTERM.value})"


def test_only_passed_jobs_teach_the_next_runs_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tiers = _tiers(tmp_path, monkeypatch)
    Job = tiers.Job
    known: dict[str, float] = {"broken": 7.0}
    tiers.Pool([Job("fine", ["true"]), Job("broken", ["false"])], known, slots=2, fail_fast=False, timeout=60).run()
    kept = json.loads((tmp_path / "durations.json").read_text())
    assert set(kept) == {"fine", "broken"} and kept["broken"] == 7.0 and kept["fine"] < 5


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (reaped by nobody yet: its parent, the job's shell, was killed) counts as gone
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"
