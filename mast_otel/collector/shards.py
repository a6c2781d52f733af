"""The shard processes of a collector run as several processes: start them, restart one that dies, stop them.

Each shard is a whole single-process collector (:class:`.service.CollectorService`) with its own store, judge
workers and exporter; it shares nothing with the others, so every promise of one process (nothing acknowledged
lost across kill -9, no conversation judged twice, bounded memory) holds per shard. A shard receives only from the
front, over the link of :mod:`.shard_link` on a 127.0.0.1 port it picks, authenticated by a token made for this run.

Startup handshake: the shard reads its configuration as one JSON line on stdin (secrets never appear in ``ps``
or on disk), and answers with one JSON line of its addresses on stdout once it is serving. A shard whose parent
dies is killed with it (``PR_SET_PDEATHSIG``), so a kill -9 of the front is a kill -9 of the whole collector and a
restart never finds an old shard still writing to a store.

Stores: shard 0 uses ``store`` itself (so ``processes=1`` and ``processes=N`` share the file layout), shard k
``store.shard<k>``. A store of a shard that a smaller ``processes`` no longer routes to is still opened and drained
(its held conversations judged and delivered); it receives nothing new.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import re
import secrets
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import CollectorConfig, parse_hostport
from .limits import DECODE_AMPLIFICATION, memory_limit_of
from .shard_link import LinkClient

__all__ = [
    "Shard", "ShardSet", "ShardStartError", "leftover_stores", "pin_process", "shard_config",
    "shard_store",
]  # fmt: skip

_log = logging.getLogger(__name__)
_FORWARD_TIMEOUT_S = 60.0  # a shard that never answers cannot hold a receiver thread longer
_READY_TIMEOUT_S = 120.0
_RESTART_BACKOFF_MAX_S = 30.0
_SERVED_LONG_S = 60.0


class ShardStartError(RuntimeError):
    """A shard process exited, or said nothing, before it was serving."""


def shard_store(store: str, index: int) -> str:
    """Shard ``index``'s store file (``:memory:`` stays in memory, one per process)."""
    if store == ":memory:" or index == 0:
        return store
    return f"{store}.shard{index}"


def leftover_stores(store: str, routed: int) -> list[int]:
    """Indexes of shard stores next to ``store`` that ``routed`` shards do not cover (a run with more processes
    left them); they hold spans that must still be judged and delivered."""
    if store == ":memory:":
        return []
    path = Path(store)
    pattern = re.compile(re.escape(path.name) + r"\.shard(\d+)")
    found = []
    for p in path.parent.glob(path.name + ".shard*"):
        m = pattern.fullmatch(p.name)
        if m and int(m.group(1)) >= routed:
            found.append(int(m.group(1)))
    return sorted(found)


def shard_config(config: CollectorConfig, index: int, shards: int, token: str) -> dict[str, Any]:
    """Shard ``index``'s options: the front's, with its own store and internal addresses, and the collector-wide
    bounds (pending traces and bytes, memory, span summaries, token budget) divided among ``shards`` so the whole
    stays within what was configured. Behind the front, ``otlp_grpc`` is where the shard serves the link."""
    values = dataclasses.asdict(config)
    memory = memory_limit_of(config.memory_limit, config.max_request_bytes)
    budget = config.judge_token_budget_per_hour
    values.update(
        processes=1,
        otlp_grpc="127.0.0.1:0",
        otlp_http=None,
        metrics="127.0.0.1:0" if config.metrics else None,
        auth_token=token,
        store=shard_store(config.store, index),
        max_pending_traces=math.ceil(config.max_pending_traces / shards),
        max_pending_bytes=max(config.max_pending_bytes // shards, config.max_request_bytes),
        memory_limit=max(memory // shards, config.max_request_bytes * DECODE_AMPLIFICATION),
        judge_token_budget_per_hour=math.ceil(budget / shards) if budget else 0,
        summary_memory=config.summary_memory // shards,
    )
    return values


@dataclass
class Shard:
    """One shard process and the link to it (None while it is down, and for a leftover store)."""

    index: int
    store: str
    routed: bool  # False: a leftover store being drained; nothing is sent to it
    process: subprocess.Popen[bytes] | None = None
    metrics_address: str = ""
    link: LinkClient | None = None
    serving: bool = False  # its process answered ready and has not been seen dead since
    restarts: int = 0  # in a row: a shard that served a while before dying starts again without waiting
    started: float = 0.0


class ShardSet:
    """Starts ``config.process_count`` routed shards (and drains leftover stores), restarts any that dies, and stops
    them all (SIGTERM, so each keeps what is held for its next start)."""

    def __init__(self, config: CollectorConfig, *, count: int, max_request_bytes: int) -> None:
        self._config = config
        self.count = count
        self.token = secrets.token_urlsafe(32)
        # One core per shard exactly (taskset, a cpuset, a machine of its own): each shard is pinned to its core, so
        # its threads hand the GIL to each other on one core instead of across two (measured: docs/collector.md,
        # "Cores"). With more cores than shards (a CPU quota in a shared cgroup), the kernel places them.
        cores = sorted(os.sched_getaffinity(0))
        self._cores = cores if len(cores) == count > 1 else None
        indexes = [(i, True) for i in range(count)] + [(i, False) for i in leftover_stores(config.store, count)]
        self.shards = [Shard(i, shard_store(config.store, i), routed) for i, routed in indexes]
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._started = threading.Event()
        self._start_error: ShardStartError | None = None
        self._grace = 5.0
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start every shard and wait until each serves; raises :class:`ShardStartError` (after stopping the ones
        started) when one cannot start."""
        self._thread = threading.Thread(target=self._run, name="mast-shards", daemon=True)
        self._thread.start()
        self._started.wait()
        if self._start_error is not None:
            self._thread.join()
            raise self._start_error

    def _run(self) -> None:
        """Every shard is started, restarted and stopped from this one thread: the kernel ties a child's
        PR_SET_PDEATHSIG to the thread that started it, so this thread outlives every shard it started."""
        try:
            for shard in self.shards:
                if not shard.routed:
                    _log.warning("store %s holds spans from a run with more processes: draining it", shard.store)
                self._spawn(shard)
        except (ShardStartError, OSError, ValueError) as exc:
            self._start_error = exc if isinstance(exc, ShardStartError) else ShardStartError(str(exc))
        self._started.set()
        if self._start_error is None:
            self._watch()
        self._terminate(self._grace)

    @property
    def front_core(self) -> int | None:
        """The core the front should run on when the shards are pinned: shard 0's, which owns fewer traces to leave
        room for it (:func:`.routing.shard_bounds`); None when the kernel places the processes."""
        return self._cores[0] if self._cores is not None else None

    def link_of(self, index: int) -> LinkClient | None:
        """Shard ``index``'s link, or None while it is restarting."""
        with self._lock:
            return self.shards[index].link

    def metrics_addresses(self) -> list[str]:
        with self._lock:
            return [s.metrics_address for s in self.shards if s.serving and s.metrics_address]

    def _spawn(self, shard: Shard) -> None:
        values = shard_config(self._config, shard.index, self.count, self.token)
        line = json.dumps({"config": values, "parent": os.getpid()}) + "\n"
        process = subprocess.Popen(  # no preexec_fn: forking a process with gRPC threads must exec at once
            [sys.executable, "-m", "mast_otel.collector.shard"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert process.stdin is not None and process.stdout is not None
        if self._cores is not None:
            # a leftover store's shard may run on any of the cores (it inherited the front's one)
            cores = {self._cores[shard.index]} if shard.routed else set(self._cores)
            try:  # before it reads its options, so before it starts a thread: each thread it starts inherits the core
                os.sched_setaffinity(process.pid, cores)
            except OSError as exc:  # it exited already (reported below), or the core went away: it runs where the
                # front does (on shard 0's core), slower but serving
                _log.warning("could not pin collector shard %d to cores %s: %s", shard.index, sorted(cores), exc)
        try:
            process.stdin.write(line.encode())
            process.stdin.close()
        except BrokenPipeError:
            pass  # it died at once; reported below with its exit code
        ready = _read_line(process, _READY_TIMEOUT_S)
        if ready is None:
            code = process.poll()
            if code is None:
                process.kill()
                process.wait()
            why = "said nothing" if code is None else f"exited with code {code}"
            raise ShardStartError(f"collector shard {shard.index} (store {shard.store}) {why} before serving; "
                                  "its error is in the log above")  # fmt: skip
        try:
            addresses = json.loads(ready)
            if "error" in addresses:
                process.wait()
                raise ShardStartError(str(addresses["error"]))
            host, port = parse_hostport(str(addresses["link"]))
        except (ValueError, KeyError, TypeError) as exc:
            process.kill()
            process.wait()
            raise ShardStartError(f"collector shard {shard.index} answered {ready[:200]!r}: {exc}") from None
        link = LinkClient((host, port), self.token, _FORWARD_TIMEOUT_S) if shard.routed else None
        with self._lock:
            shard.process, shard.link, shard.started, shard.serving = process, link, time.monotonic(), True
            shard.metrics_address = str(addresses.get("metrics", ""))
        _log.info("collector shard %d serving (pid %d, store %s)", shard.index, process.pid, shard.store)

    def _watch(self) -> None:
        """Restart a shard that exits while the collector runs; meanwhile the front refuses its traces with a
        retryable error, and the restarted shard resumes what its store holds. Nothing may end this loop but a
        stop: the shards die with this thread."""
        while not self._stopping.wait(0.2):
            for shard in self.shards:
                try:
                    self._restart_if_dead(shard)
                except Exception:
                    _log.exception("restarting collector shard %d failed; trying again", shard.index)

    def _restart_if_dead(self, shard: Shard) -> None:
        process = shard.process
        if process is None or process.poll() is None:
            return
        with self._lock:
            link, shard.link = shard.link, None
            serving, shard.serving = shard.serving, False
        if link is not None:
            link.close()
        if serving:  # once per death, not per failed restart
            _log.error("collector shard %d (pid %d, store %s) exited with code %s; restarting", shard.index,
                       process.pid, shard.store, process.returncode)  # fmt: skip
        if time.monotonic() - shard.started > _SERVED_LONG_S:
            shard.restarts = 0
        delay = min(_RESTART_BACKOFF_MAX_S, 0.5 * 2**shard.restarts)
        shard.restarts += 1
        if self._stopping.wait(delay):
            return
        try:
            self._spawn(shard)
        except (ShardStartError, OSError) as exc:
            _log.error("%s; trying again", exc)

    def stop(self, grace: float) -> None:
        """SIGTERM every shard (each stops as a single collector does, keeping what it holds) and wait for them,
        killing any still running after ``grace`` seconds."""
        self._grace = grace
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(grace + 10)

    def _terminate(self, grace: float) -> None:
        processes = [s.process for s in self.shards if s.process is not None and s.process.poll() is None]
        for p in processes:
            p.terminate()
        deadline = time.monotonic() + grace
        for p in processes:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _log.warning("collector shard pid %d did not stop in %.0fs; killing it", p.pid, grace)
                p.kill()
                p.wait()
        with self._lock:
            for s in self.shards:
                if s.link is not None:
                    s.link.close()
                s.link, s.serving = None, False


def pin_process(core: int) -> None:
    """Pin every thread of this process to ``core`` (the affinity is per thread, and the front has started some);
    threads started later inherit it. A thread that ended meanwhile is skipped. Pinning is for speed only: when it
    cannot be done (no /proc, a cpuset changed, a sandbox refusing the call) the front runs where the kernel puts
    it, and says so once."""
    try:
        tasks = os.listdir("/proc/self/task")
        for task in tasks:
            try:
                os.sched_setaffinity(int(task), {core})
            except ProcessLookupError:
                continue
    except OSError as exc:
        _log.warning("could not pin the collector's front to core %d: %s; it runs unpinned", core, exc)


def _read_line(process: subprocess.Popen[bytes], timeout: float) -> str | None:
    """The shard's ready line, or None if it exits or stays silent for ``timeout`` seconds. Our end of its stdout is
    closed either way: once ready the shard writes nothing more there (it points stdout at stderr)."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    deadline = time.monotonic() + timeout
    buffer = b""
    try:
        while b"\n" not in buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            readable, _, _ = select.select([fd], [], [], min(left, 0.5))
            if not readable:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            buffer += chunk
    finally:
        process.stdout.close()
    return buffer.split(b"\n", 1)[0].decode(errors="replace")
