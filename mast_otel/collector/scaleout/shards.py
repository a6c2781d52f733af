"""The shard processes of a collector run as several processes: start them, restart one that dies, stop them.

Each shard is a whole single-process collector (:class:`.service.CollectorService`) with its own store, judge
workers and exporter; it shares nothing with the others, so every promise of one process (nothing acknowledged
lost across kill -9, no conversation judged twice, bounded memory) holds per shard. A shard listens on no address
for data: it receives only from the front, over connections the front creates and hands it on a control socket
the shard inherits (:mod:`.shard_link`), so no other process can reach it.

Startup handshake: the shard reads its configuration as one JSON line on stdin (secrets never appear in ``ps``
or on disk), and answers with one JSON line of its addresses (its /metrics) on stdout once it is serving. A shard
whose parent dies is killed with it (``PR_SET_PDEATHSIG``), so a kill -9 of the front is a kill -9 of the whole
collector and a restart never finds an old shard still writing to a store.

Stores: shard 0 uses ``store`` itself (so ``processes=1`` and ``processes=N`` share the file layout), shard k
``store.shard<k>``. A store of a shard that a smaller ``processes`` no longer routes to is still opened and drained
(its held conversations judged and delivered); it receives nothing new.

Bounds: what was configured is the collector's total. Every bound a process enforces (pending traces and bytes,
memory, span summaries, the disk reserve, the judge's token budget) is divided among all the shard processes,
routed and draining alike, and the front takes one share of the memory for the requests it routes. So the sum over
processes never exceeds what was configured; a configuration too small to give each process room for one request
of ``max_request_bytes`` is refused at start with the numbers.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import select
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mast_otel.collector.config import CollectorConfig, ConfigError
from mast_otel.collector.limits import DECODE_AMPLIFICATION, memory_limit_of
from mast_otel.collector.receive.shard_link import LinkClient, link_pair

__all__ = [
    "Shard", "ShardSet", "ShardStartError", "front_memory", "leftover_stores", "memory_total", "shard_config",
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


def front_memory(config: CollectorConfig, processes: int) -> int:
    """The front's share of the memory limit: one of ``processes + 1`` (each shard process and the front)."""
    return _memory_share(config, processes)


def memory_total(config: CollectorConfig, processes: int) -> int:
    """The collector's memory limit with ``processes`` shard processes: ``memory_limit``, or (0, auto) the default
    raised to what the front and each shard need to take one request of ``max_request_bytes``."""
    if config.memory_limit:
        return config.memory_limit
    least = config.max_request_bytes * DECODE_AMPLIFICATION
    return max(memory_limit_of(0, config.max_request_bytes), least * (processes + 1))


def _memory_share(config: CollectorConfig, processes: int) -> int:
    memory = memory_total(config, processes)
    share = memory // (processes + 1)
    least = config.max_request_bytes * DECODE_AMPLIFICATION
    if share < least:
        raise ConfigError(f"memory_limit={memory} bytes leaves {share} to each of {processes} shard processes and the "
                          f"front, less than one request of max_request_bytes needs ({least}); raise memory_limit to "
                          f"at least {least * (processes + 1)} or lower processes or max_request_bytes")  # fmt: skip
    return share


def _at_least_one(total: int, processes: int, name: str) -> int:
    if total < processes:
        raise ConfigError(f"{name}={total} cannot be divided among {processes} shard processes; raise it to at "
                          f"least {processes}")  # fmt: skip
    return total // processes


def shard_config(config: CollectorConfig, index: int, processes: int) -> dict[str, Any]:
    """Shard ``index``'s options: the front's, with its own store, no receivers, and the collector-wide bounds
    divided among the ``processes`` shard processes (routed and draining; the front holds one more memory share),
    so the sum over processes stays within what was configured. Raises ConfigError when a share would be too small
    for one request."""
    values = dataclasses.asdict(config)
    budget = config.judge_token_budget_per_hour
    pending_bytes = config.max_pending_bytes // processes
    if pending_bytes < config.max_request_bytes:
        raise ConfigError(f"max_pending_bytes={config.max_pending_bytes} leaves {pending_bytes} to each of {processes} "
                          f"shard processes, less than one request (max_request_bytes={config.max_request_bytes})")
    values.update(
        processes=1,
        otlp_grpc="127.0.0.1:0",  # never bound behind the front (service.CollectorService): the config needs a receiver
        otlp_http=None,
        metrics="127.0.0.1:0" if config.metrics else None,
        auth_token=None,  # a shard serves no client: the front checks their tokens
        store=shard_store(config.store, index),
        max_pending_traces=_at_least_one(config.max_pending_traces, processes, "max_pending_traces"),
        max_pending_bytes=pending_bytes,
        memory_limit=_memory_share(config, processes),
        judge_token_budget_per_hour=max(1, budget // processes) if budget else 0,  # 0 would mean no budget
        summary_memory=config.summary_memory // processes,
        evidence_memory=config.evidence_memory // processes,
        store_reserve=config.store_reserve // processes,
        history_max_bytes=max(1 << 20, config.history_max_bytes // processes),  # each shard keeps its own history
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
        # One core per shard exactly (taskset, a cpuset, a machine of its own): each shard is pinned to its core, so
        # its threads hand the GIL to each other on one core instead of across two (measured:
        # benchmarks/results/2026-11-26-collector-benchmarks.md, "Cores"). With more cores than shards (a CPU quota
        # in a shared cgroup), the kernel places them. The front is never pinned: the kernel moves its threads to
        # whichever core has room, so no share of traces is tuned to it.
        cores = sorted(os.sched_getaffinity(0))
        self._cores = cores if len(cores) == count > 1 else None
        indexes = [(i, True) for i in range(count)] + [(i, False) for i in leftover_stores(config.store, count)]
        self.shards = [Shard(i, shard_store(config.store, i), routed) for i, routed in indexes]
        # Checked here, before any process starts: a share too small for one request is a configuration error.
        self.front_memory = front_memory(config, len(self.shards))
        for shard in self.shards:
            shard_config(config, shard.index, len(self.shards))
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

    def link_of(self, index: int) -> LinkClient | None:
        """Shard ``index``'s link, or None while it is restarting."""
        with self._lock:
            return self.shards[index].link

    def metrics_addresses(self) -> list[str]:
        with self._lock:
            return [s.metrics_address for s in self.shards if s.serving and s.metrics_address]

    def _spawn(self, shard: Shard) -> None:
        values = shard_config(self._config, shard.index, len(self.shards))
        ours, theirs = link_pair() if shard.routed else (None, None)
        request: dict[str, Any] = {"config": values, "parent": os.getpid()}
        if theirs is not None:
            request["link"] = theirs.fileno()  # the same number in the shard: pass_fds keeps it
        line = json.dumps(request) + "\n"
        try:
            process = subprocess.Popen(  # no preexec_fn: forking a process with gRPC threads must exec at once
                [sys.executable, "-m", "mast_otel.collector.scaleout.shard"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                pass_fds=(theirs.fileno(),) if theirs is not None else (),
            )
        except BaseException:
            if ours is not None:
                ours.close()
            raise
        finally:
            if theirs is not None:
                theirs.close()  # the shard has its own copy: with ours closed, its end reads EOF when the front dies
        try:
            self._await_ready(shard, process, line, ours)
        except BaseException:
            if ours is not None:
                ours.close()
            raise

    def _await_ready(
        self, shard: Shard, process: subprocess.Popen[bytes], line: str, ours: socket.socket | None
    ) -> None:
        """Pin the new shard, hand it ``line``, wait for its ready line; then its link (over ``ours``) is live."""
        assert process.stdin is not None and process.stdout is not None
        if self._cores is not None:
            # a leftover store's shard may run on any of the cores
            cores = {self._cores[shard.index]} if shard.routed else set(self._cores)
            try:  # before it reads its options, so before it starts a thread: each thread it starts inherits the core
                os.sched_setaffinity(process.pid, cores)
            except OSError as exc:  # it exited already (reported below), or the core went away: it runs where the
                # kernel puts it, slower but serving
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
            metrics = str(addresses.get("metrics", ""))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            process.kill()
            process.wait()
            raise ShardStartError(f"collector shard {shard.index} answered {ready[:200]!r}: {exc}") from None
        link = LinkClient(ours, _FORWARD_TIMEOUT_S) if ours is not None else None
        with self._lock:
            shard.process, shard.link, shard.started, shard.serving = process, link, time.monotonic(), True
            shard.metrics_address = metrics
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
