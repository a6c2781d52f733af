"""``python -m mast_otel.collector.scaleout.shard``: one shard process of a collector run as several (see
:mod:`.shards`).

Reads ``{"config": {...}, "parent": PID, "link": FD}`` as one JSON line on stdin, asks the kernel to kill it when
its parent dies, runs a :class:`.service.CollectorService` behind the front (taking the front's connections over
the inherited control socket ``FD``; none for a store left by a run with more processes, which only drains), writes
its addresses as one JSON line on stdout, and serves until SIGTERM. Exit code 2: it could not start (the reason is
logged on stderr).
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import logging
import os
import signal
import socket
import sys
import threading
import time

__all__ = ["main"]

_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """SIGKILL when the front dies, however it dies: a kill -9 of the front must not leave a shard writing to
    its store while a restarted front starts another on the same file."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the parent check below still catches a parent already gone
        pass
    if os.getppid() != parent:
        os._exit(1)


def _own_store(store: str, timeout: float = 30.0) -> int | None:
    """An exclusive lock on ``STORE.lock`` for this process's life: however a front died, two shards never run on
    one store (a shard of a killed front is being killed while the restarted front's shard starts)."""
    if store == ":memory:":
        return None
    fd = os.open(store + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise OSError(f"store {store} is in use by another collector process") from None
            time.sleep(0.05)


def _cannot_start(exc: BaseException) -> int:
    """Tell the front why (it says it on its own last line, as a single process would), exit 2."""
    sys.stdout.write(json.dumps({"error": str(exc)}) + "\n")
    sys.stdout.flush()
    return 2


def main() -> int:
    request = json.loads(sys.stdin.readline())
    _die_with_parent(int(request["parent"]))
    from mast_otel.collector.config import CollectorConfig, ConfigError

    config = CollectorConfig(**request["config"])
    logging.basicConfig(
        level=config.log_level.upper(),
        format=f"%(asctime)s %(levelname)s %(name)s [shard {os.getpid()}]: %(message)s",
        stream=sys.stderr,
    )
    try:
        _own_store(config.store)
    except OSError as exc:
        return _cannot_start(exc)
    import prometheus_client

    from mast_otel.collector import gc_tuning
    from mast_otel.collector.service import CollectorService
    from mast_otel.collector.store.api import StoreError

    prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]
    gc_tuning.tune()
    try:
        fd = request.get("link")
        link = socket.socket(fileno=int(fd)) if fd is not None else None
        service = CollectorService(config, behind_front=True, link=link)
        service.start()
    except (ConfigError, OSError, StoreError) as exc:
        return _cannot_start(exc)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C reaches the front, which stops the shards
    sys.stdout.write(json.dumps(service.addresses()) + "\n")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # nothing reads our stdout any more: later prints to stderr
    stop.wait()
    service.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
