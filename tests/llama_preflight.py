"""Before the tests that need it: does the local model server answer one completion? Run by scripts/test.sh.

Four integration tests and a judge test talk to llama.cpp. When its build does not run on this CPU, each of them
fails on its own with a connection error and the cause (SIGILL in the server's log) is nowhere in sight. This
starts the server the way the tests do, asks for one chat completion, and on failure exits 1 with the cause named.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from tests.servers import exit_status, llama_server

WHY = {
    signal.SIGILL: (
        "the llama-cpp-python build uses instructions this CPU lacks. scripts/build-llama-wheel.sh builds for a "
        "fixed x86-64 level; remove the wheel it names (~/.cache/mast-otel/wheels/llama-cpp-python-*) and "
        ".venv/.mast-otel-llama, then re-run"
    ),
    signal.SIGSEGV: "llama.cpp crashed while loading or running the model (the GGUF may be damaged: re-run setup)",
    signal.SIGKILL: "the server was killed (out of memory?)",
}


def ask_one_completion(base_url: str, model: str) -> str:
    body = json.dumps(
        {"model": model, "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8}
    ).encode()
    request = urllib.request.Request(
        f"{base_url}/chat/completions", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        answer = json.load(response)
    text: str = answer["choices"][0]["message"]["content"]
    return text


def died_of(process: subprocess.Popen[bytes] | None) -> str:
    """How the server ended, given a moment to end after a dropped connection, or that it still runs."""
    if process is None:
        return "was not watched"
    try:
        returncode = process.wait(2)
    except subprocess.TimeoutExpired:
        return "was still running"
    return f"exited with {exit_status(returncode)}"


def main() -> int:
    log = Path(tempfile.mkdtemp()) / "llama-server.log"
    start = time.monotonic()
    try:
        with llama_server(log_path=log) as server:
            try:
                text = ask_one_completion(server.base_url, server.model)
            except Exception as exc:
                raise RuntimeError(f"{exc}; the server then {died_of(server.process)}") from exc
    except Exception as exc:  # any failure is the message: what happened, why, and the server's own words
        cause = str(exc)
        for sig, why in WHY.items():
            if f"signal {sig.name}" in cause:
                cause = f"{cause}: {why}"
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"
        print(f"[preflight] the local model server did not answer a completion: {cause}", file=sys.stderr)
        print(f"[preflight] the server's log ({log}), last lines:\n{tail}", file=sys.stderr)
        return 1
    print(f"[preflight] the local model server answered one completion in {time.monotonic() - start:.1f} s: {text!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
