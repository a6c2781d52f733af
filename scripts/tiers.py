"""The test command's jobs, run side by side on every core: ``python3 scripts/tiers.py [PYTEST ARGS...]``.

scripts/test.sh calls this once the shared set-up is done. Each job is a command with the jobs it needs first; a
small pool starts every job whose needs have finished, longest first, as long as a slot is free (one slot per core
by default: ``MAST_OTEL_TEST_JOBS``). A job marked ``alone`` waits until nothing else runs and holds every slot: the
tests in it measure time or memory, and another job beside them would be what they measure.

Each job's output goes to ``test-artifacts/tiers/<job>.log``; the step log says when each job started and how long
it took, and a failed job's log tail is printed at the end. Every job runs even when another has failed (one run
tells every failure), unless ``MAST_OTEL_TEST_FAIL_FAST=1``. Only the standard library: this runs before any
environment exists.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "test-artifacts" / "tiers"
# How long each job took last time on this machine: the pool starts the longest first, so the two slots finish
# together instead of one long job starting last.
DURATIONS = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mast-otel" / "test-durations.json"


@dataclass
class Job:
    name: str
    argv: list[str]
    needs: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    alone: bool = False
    cwd: Path = ROOT
    guess: float = 60.0  # seconds, when this machine has no timing of it yet
    ok: tuple[int, ...] = (0,)  # exit codes that pass (pytest's 5, no test collected, fails unless named here)


@dataclass
class Run:
    job: Job
    proc: subprocess.Popen[bytes]
    started: float


def plan(pytest_args: Sequence[str]) -> list[Job]:
    """Every job of the test command after set-up (scripts/test.sh does the set-up first)."""
    venv = Path(os.environ.get("MAST_OTEL_VENV", ROOT / ".venv"))
    py, nox = str(venv / "bin" / "python"), str(venv / "bin" / "nox")
    pytest = [str(venv / "bin" / "pytest"), "-q", "-rs", "--durations=20"]
    marks, rest = split_marks(pytest_args)
    sessions = nox_sessions(nox)
    # The sessions whose environments main-tier tests run programs in (the demo's examples, the evaluation suite's
    # MetaGPT cases): named as ``.nox/<session>/bin/python`` in the code those tests run.
    sources = [ROOT / "examples" / "demo.py", *sorted((ROOT / "mast_otel").rglob("*.py"))]
    named = {n for path in sources for n in re.findall(r"\.nox/(\w+)/bin/python", path.read_text())}
    main_uses = [s for s in sessions if s in named]
    servers = ("llama-preflight", "setup-go-tools", "setup-phoenix")
    workers = os.environ.get("MAST_OTEL_MAIN_WORKERS", str(os.cpu_count() or 1))
    jobs = [
        # Started in the background by scripts/test.sh; these wait for that run (its lock), then check and link.
        Job("setup-go-tools", ["bash", "scripts/setup-go-tools.sh"], guess=300),
        Job("setup-phoenix", ["bash", "scripts/setup-phoenix.sh"], guess=100),
        Job("ruff", [str(venv / "bin" / "ruff"), "check", "."], guess=5),
        Job("mypy", [str(venv / "bin" / "mypy"), "mast_otel"], guess=60),
        Job("lint-imports", [str(venv / "bin" / "lint-imports")], guess=15),
        # The integration tests talk to llama.cpp: one completion first, so a server that cannot run here is one
        # clear failure naming the cause, not a connection error in each of them.
        Job("llama-preflight", [py, "-m", "tests.llama_preflight"], guess=15),
        # Those environments exist before the main tier starts (every other session installs its own environment
        # in its job, beside the rest).
        Job("nox-install-main", [nox, "--no-color", "-f", "noxfile.py", "--install-only", "-s", *main_uses],
            guess=150),
        # pytest-xdist: the main tier is the longest job, so it takes a worker per core itself; a module's tests stay
        # in one worker (--dist loadfile: their module fixtures start a server once).
        Job("main", [*pytest, "-n", workers, "--dist", "loadfile", "-m", both("not alone", marks), *rest],
            needs=(*servers, "nox-install-main"),
            guess=700),
        # A selection of the caller's (``-m "not integration"``, a folder) may leave no test that must run alone.
        Job("main-alone", [*pytest, "-m", both("alone", marks), *rest], needs=servers, alone=True,
            ok=(0, 5) if pytest_args else (0,), guess=60),
        Job("fresh-clone", ["bash", "scripts/fresh-clone.sh"], guess=60),
        Job("mutation", [nox, "--no-color", "-f", "noxfile.py", "-s", "mutation", "--", "--sample",
                         os.environ.get("MAST_OTEL_MUTATION_SAMPLE", "10")], guess=340),
    ]  # fmt: skip
    for session in sessions:
        # one installer per environment at a time
        needs: tuple[str, ...] = ("nox-install-main",) if session in main_uses else ()
        if session == "metagpt":  # its tests start the llama.cpp server from the main environment
            needs += ("llama-preflight",)
        jobs.append(Job(f"nox:{session}", [nox, "--no-color", "-f", "noxfile.py", "-s", session], needs=needs,
                        env={"MAST_OTEL_MAIN_PYTHON": py}, guess=80))  # fmt: skip
    return jobs


def split_marks(args: Sequence[str]) -> tuple[str, list[str]]:
    """The caller's ``-m EXPR`` (joined with ``and`` when given twice) and the other pytest arguments."""
    marks: list[str] = []
    rest: list[str] = []
    it = iter(args)
    for arg in it:
        if arg == "-m":
            marks.append(next(it, ""))
        elif arg.startswith("-m") and len(arg) > 2:
            marks.append(arg[2:])
        else:
            rest.append(arg)
    return " and ".join(f"({m})" for m in marks if m), rest


def both(mine: str, theirs: str) -> str:
    return f"({mine}) and {theirs}" if theirs else mine


def nox_sessions(nox: str) -> list[str]:
    """The default sessions of noxfile.py, as ``nox -l`` lists them (``*`` marks a default one)."""
    out = subprocess.run([nox, "--no-color", "-f", "noxfile.py", "-l"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    return [line[2:].split(" -> ")[0].strip() for line in out.splitlines() if line.startswith("* ")]


def order(jobs: list[Job], known: dict[str, float]) -> list[Job]:
    """Longest path first (jobs that run alone last): a job's own time (this machine's last timing, or its guess)
    plus the longest chain of jobs that wait for it, so that a short job others need (the preflight before the main
    tier) starts early."""
    needed_by: dict[str, list[Job]] = {}
    for job in jobs:
        for name in job.needs:
            needed_by.setdefault(name, []).append(job)
    rank: dict[str, float] = {}

    def path(job: Job) -> float:
        if job.name not in rank:
            after = max((path(j) for j in needed_by.get(job.name, ())), default=0.0)
            rank[job.name] = known.get(job.name, job.guess) + after
        return rank[job.name]

    # A job that runs alone goes last: waiting for an idle machine, it would hold back every job behind it.
    return sorted(jobs, key=lambda j: (j.alone, -path(j)))


class Pool:
    """Runs ``jobs`` ``slots`` at a time; :meth:`run` returns each job's result, start and length."""

    def __init__(self, jobs: list[Job], known: dict[str, float], *, slots: int, fail_fast: bool, timeout: float):
        self.waiting = order(jobs, known)
        self.known = known
        self.slots = slots
        self.fail_fast = fail_fast
        self.timeout = timeout
        self.running: list[Run] = []
        self.done: dict[str, tuple[str, float, float]] = {}  # name -> ("ok" | "FAILED ..." | "not run", start, s)
        self.t0 = time.monotonic()

    def say(self, text: str) -> None:
        print(f"[tiers] {time.monotonic() - self.t0:6.0f} s  {text}", flush=True)

    def run(self) -> dict[str, tuple[str, float, float]]:
        self.say(f"{len(self.waiting)} jobs, {self.slots} at a time: {', '.join(j.name for j in self.waiting)}")
        try:
            while self.waiting or self.running:
                self._reap()
                self._start_ready()
                time.sleep(0.2)
        finally:  # stopped (Ctrl-C, SIGTERM) or failed: no job's servers outlive the run
            self._stop(self.running)
        return self.done

    def _reap(self) -> None:
        for run in list(self.running):
            rc = run.proc.poll()
            seconds = time.monotonic() - run.started
            if rc is None:
                if seconds > self.timeout:  # a hung job fails with its log, instead of holding the run forever
                    self.say(f"{run.job.name}: still running after {self.timeout:.0f} s: stopping it")
                    self._stop([run])
                continue
            self.running.remove(run)
            result = "ok" if rc in run.job.ok else f"FAILED (exit {rc})"
            self.done[run.job.name] = (result, run.started - self.t0, seconds)
            self.say(f"{run.job.name}: {result} in {seconds:.0f} s")
            if result == "ok":  # kept as each job ends: a run stopped halfway still teaches the next one
                self.known[run.job.name] = seconds
                DURATIONS.parent.mkdir(parents=True, exist_ok=True)
                DURATIONS.write_text(json.dumps(self.known, indent=1, sort_keys=True))
            elif self.fail_fast:
                for job in self.waiting:
                    self.done[job.name] = ("not run", time.monotonic() - self.t0, 0.0)
                self.waiting = []
                self._stop(self.running)

    def _start_ready(self) -> None:
        for job in list(self.waiting):
            if any(n not in self.done for n in job.needs):
                continue
            failed = [n for n in job.needs if self.done[n][0] != "ok"]
            if failed:  # what it needs did not pass: it cannot run
                self.waiting.remove(job)
                self.done[job.name] = ("not run", time.monotonic() - self.t0, 0.0)
                self.say(f"{job.name}: not run ({', '.join(failed)} did not pass)")
                continue
            busy = sum(self.slots if r.job.alone else 1 for r in self.running)
            if job.alone and busy:
                break  # nothing jumps ahead of a job waiting for the machine to itself
            if busy >= self.slots:
                continue
            self.waiting.remove(job)
            self.running.append(start(job))
            self.say(f"{job.name}: started ({' '.join(job.argv[-3:])})")

    @staticmethod
    def _stop(runs: list[Run]) -> None:
        """SIGTERM to each job's process group, SIGKILL to what is left after 10 s."""
        for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 0.0)):
            live = [r for r in runs if r.proc.poll() is None]
            for r in live:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(r.proc.pid, sig)
            deadline = time.monotonic() + grace
            while grace and any(r.proc.poll() is None for r in live) and time.monotonic() < deadline:
                time.sleep(0.1)


def main(argv: Sequence[str]) -> int:
    known: dict[str, float] = json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}
    jobs = plan(argv)
    names = {j.name for j in jobs}
    for job in jobs:
        missing = set(job.needs) - names
        if missing:
            raise SystemExit(f"[tiers] {job.name} needs unknown jobs {sorted(missing)}")
    LOGS.mkdir(parents=True, exist_ok=True)
    # SIGTERM (a CI timeout, test.sh stopped) unwinds like Ctrl-C, so the pool stops its jobs' process groups.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    pool = Pool(jobs, known, slots=int(os.environ.get("MAST_OTEL_TEST_JOBS") or os.cpu_count() or 1),
                fail_fast=os.environ.get("MAST_OTEL_TEST_FAIL_FAST") == "1",
                timeout=float(os.environ.get("MAST_OTEL_TEST_JOB_TIMEOUT", 3600)))  # fmt: skip
    done = pool.run()
    print("[tiers] job                            start   seconds  result")
    for name, (result, started, seconds) in sorted(done.items(), key=lambda kv: kv[1][1]):
        print(f"[tiers] {name:30s} {started:6.0f} {seconds:9.0f}  {result}")
    failed = [name for name, (result, _, _) in done.items() if result.startswith("FAILED")]
    for name in failed:
        tail = log_of(name).read_text(errors="replace").splitlines()[-60:]
        print(f"\n[tiers] ---- {name}: the last {len(tail)} lines of {log_of(name)} ----", flush=True)
        print("\n".join(tail), flush=True)
    passed = sum(result == "ok" for result, _, _ in done.values())
    print(f"[tiers] {passed} of {len(jobs)} jobs passed in {time.monotonic() - pool.t0:.0f} s", flush=True)
    return 0 if passed == len(jobs) else 1


def log_of(name: str) -> Path:
    """A job's log: its name made a file name (``nox:metagpt`` -> ``nox-metagpt.log``)."""
    safe = name.replace(":", "-").replace("/", "-").replace("(", "-").replace(")", "").replace("'", "")
    return LOGS / f"{safe}.log"


def start(job: Job) -> Run:
    out = log_of(job.name).open("wb")
    env = {**os.environ, **job.env}
    # Its own process group, so that stopping the job (fail-fast, a timeout, the run stopped) ends its servers and
    # children too.
    proc = subprocess.Popen(job.argv, cwd=job.cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)  # fmt: skip
    out.close()
    return Run(job, proc, time.monotonic())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
