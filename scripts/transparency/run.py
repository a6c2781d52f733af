"""Run a framework's own test suite plain and with ``mast_otel.instrument()`` loaded first; compare per test id.

Usage (the ``transparency`` nox session calls it; noxfile.py holds the table of suites)::

    python scripts/transparency/run.py --sdist langgraph==1.2.24 --out test-artifacts/transparency/langgraph \\
        [--env NO_DOCKER=true] [--timeout 3600] [--runs plain,instrumented] -- [pytest arguments, e.g. test paths]

1. ``pip download`` fetches the release's sdist (PyPI sdists carry the tests), unpacked under ``--out``; nothing
   of the framework's is kept in this repository.
2. pytest runs in the unpacked tree twice, the same way except for ``-p mast_otel_first``
   (scripts/transparency/mast_otel_first.py): ``-p no:randomly`` (one order for both), no ``-x``, a junit XML each.
   Both runs export nowhere but a local OTLP/HTTP sink this script serves (so the exporter never retries, and its
   retry jitter never draws from ``random``).
3. Outcomes (passed / failed / error / skipped) are compared per test id; every differing id is printed and the
   figures go to ``--out``/summary.json. Exit status 1 when any outcome differs, or when the instrumented run
   recorded no span (instrumentation that never ran proves nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import threading
import time
import xml.etree.ElementTree as ET
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from mast_otel.semconv import SCOPE_NAME

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}  # a test id seen twice keeps its worst outcome


def fetch_sdist(requirement: str, into: Path) -> Path:
    """Download and unpack ``requirement``'s sdist into ``into`` (once); return the unpacked project folder."""
    into.mkdir(parents=True, exist_ok=True)
    archives = sorted(into.glob("*.tar.gz"))
    if not archives:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "-d", str(into),
             requirement],
            check=True,
        )  # fmt: skip
        archives = sorted(into.glob("*.tar.gz"))
    (archive,) = archives
    folder = into / archive.name.removesuffix(".tar.gz")
    if not folder.is_dir():
        with tarfile.open(archive) as tar:
            tar.extractall(into, filter="data")
    return folder


class _Sink(BaseHTTPRequestHandler):
    """Accepts every OTLP/HTTP export (counting requests); the spans themselves are counted in the plugin."""

    requests = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).requests += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def outcomes(junit: Path) -> dict[str, str]:
    """Test id -> outcome, from a pytest junit XML."""
    found: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                if _RANK[outcome] > _RANK.get(found.get(test_id, "passed"), 0):
                    found[test_id] = outcome
        found.setdefault(test_id, outcome)
    return found


def compare(plain: dict[str, str], instrumented: dict[str, str]) -> list[tuple[str, str, str]]:
    """(test id, plain outcome, instrumented outcome) for every id whose outcome differs or that one run lacks."""
    ids = sorted(set(plain) | set(instrumented))
    return [
        (i, plain.get(i, "absent"), instrumented.get(i, "absent"))
        for i in ids
        if plain.get(i, "absent") != instrumented.get(i, "absent")
    ]


def run_suite(
    project: Path, out: Path, name: str, pytest_args: list[str], env: dict[str, str], timeout: float
) -> dict[str, str]:
    junit = out / f"{name}.xml"
    command = [
        sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-q", "-rA",
        f"--junitxml={junit}", *(["-p", "mast_otel_first"] if name == "instrumented" else []), *pytest_args,
    ]  # fmt: skip
    started = time.monotonic()
    with (out / f"{name}.log").open("w") as log:
        try:
            code = subprocess.run(command, cwd=project, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=timeout)
            status = f"exit {code.returncode}"
        except subprocess.TimeoutExpired:
            status = f"timed out after {timeout:.0f} s"
    print(f"{name}: {status} in {time.monotonic() - started:.0f} s (log {out / f'{name}.log'})", flush=True)
    return outcomes(junit) if junit.is_file() else {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdist", required=True, help="the release, e.g. langgraph==1.2.24")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for both runs")
    parser.add_argument("--timeout", type=float, default=4 * 3600, help="seconds per run")
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    project = fetch_sdist(args.sdist, out / "sdist")

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    spans_file = out / "instrumented.spans"
    spans_file.unlink(missing_ok=True)
    env = {
        **os.environ,
        **dict(item.split("=", 1) for item in args.env),
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}",
        "MAST_TRANSPARENCY_SPANS": str(spans_file),
    }
    # The framework's tests import as ``tests``: this repository's root must not be on the path, only the plugin.
    env["PYTHONPATH"] = str(HERE)
    plain = run_suite(project, out, "plain", args.pytest_args, env, args.timeout)
    instrumented = run_suite(project, out, "instrumented", args.pytest_args, env, args.timeout)
    server.shutdown()

    by_scope: dict[str, int] = json.loads(spans_file.read_text()) if spans_file.is_file() else {}
    spans = by_scope.get(SCOPE_NAME, 0)
    differing = compare(plain, instrumented)
    summary = {
        "sdist": args.sdist,
        "date": time.strftime("%Y-%m-%d"),
        "pytest_args": args.pytest_args,
        "tests": len(plain),
        "plain": dict(Counter(plain.values())),
        "instrumented": dict(Counter(instrumented.values())),
        "spans_recorded": spans,
        "spans_by_scope": by_scope,
        "otlp_requests": _Sink.requests,
        "differing": [{"id": i, "plain": a, "instrumented": b} for i, a, b in differing],
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "differing"}))
    for test_id, before, after in differing:
        print(f"DIFFERS {test_id}: plain {before}, instrumented {after}")
    print(f"{len(differing)} of {len(plain)} outcomes differ; {spans} spans recorded")
    return 1 if differing or spans == 0 or not plain else 0


if __name__ == "__main__":
    sys.exit(main())
