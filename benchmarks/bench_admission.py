"""gRPC admission benchmark (not a test): what the receiver's :class:`AdmissionPool` costs per call.

    /work/devvenv/bin/python benchmarks/bench_admission.py [--clients 40] [--calls 200] [--rounds 3]

``--clients`` threads, each with a channel of its own, send ``--calls`` sequential unary calls of one small span
request (about 300 bytes: what an SDK exporting one span per call sends) to a gRPC server of 8 threads whose handler
reads the message and answers at once. Baseline: the server on a plain ``ThreadPoolExecutor`` (every call queued,
none refused, nothing charged). Measured: the same server on an ``AdmissionPool`` (each call charged, FIFO wait of
1 s, refusals). Same handler, same client, in turn within each round; printed: calls/s and per-call latency
(p50/p99) of each, the ratio of the rates (median over rounds), and the calls refused (expected 0).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mast_otel.collector.limits import MemoryLimiter
from mast_otel.collector.receive.admission import AdmissionPool, body_read, refusal_of_this_call

METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
THREADS = 8
PAYLOAD = b"\x0a" + bytes([250]) + b"\x01" + b"x" * 253  # ~300 bytes; the handler does not parse it


def _handler(messages: Iterator[bytes], context: Any) -> bytes:
    refusal = refusal_of_this_call()
    if refusal is not None:
        context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, refusal.message)
    next(messages, None)
    body_read()
    return b""


class _Service(grpc.GenericRpcHandler):  # type: ignore[misc]
    def __init__(self) -> None:
        self._export = grpc.stream_unary_rpc_method_handler(_handler)

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        return self._export if details.method == METHOD else None  # type: ignore[attr-defined]


def _serve(pool: ThreadPoolExecutor) -> tuple[grpc.Server, int]:
    server = grpc.server(pool, options=[("grpc.so_reuseport", 0), ("grpc.http2.bdp_probe", 0)],
                         maximum_concurrent_rpcs=None)  # fmt: skip
    server.add_generic_rpc_handlers((_Service(),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


def _load(port: int, clients: int, calls: int) -> tuple[float, list[float], int]:
    """(calls/s, every call's latency, calls refused)."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    refused = [0] * clients
    start = threading.Barrier(clients + 1)

    def client(i: int) -> None:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            export = channel.unary_unary(METHOD)
            export(PAYLOAD, timeout=10)  # connected before the clock starts
            start.wait()
            for _ in range(calls):
                t = time.perf_counter()
                try:
                    export(PAYLOAD, timeout=10)
                except grpc.RpcError:
                    refused[i] += 1
                latencies[i].append(time.perf_counter() - t)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    start.wait()
    began = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    flat = [x for each in latencies for x in each]
    return len(flat) / elapsed, flat, sum(refused)


def _run(make_pool: Callable[[], ThreadPoolExecutor], clients: int, calls: int) -> tuple[float, list[float], int]:
    pool = make_pool()
    server, port = _serve(pool)
    try:
        return _load(port, clients, calls)
    finally:
        server.stop(0).wait(5)
        if isinstance(pool, AdmissionPool):
            pool.close()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--clients", type=int, default=40)
    parser.add_argument("--calls", type=int, default=200, help="sequential calls per client")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    kinds: dict[str, Callable[[], ThreadPoolExecutor]] = {
        "plain pool": lambda: ThreadPoolExecutor(max_workers=THREADS),
        "admission": lambda: AdmissionPool(
            THREADS, wait=1.0, limiter=MemoryLimiter(512 << 20), call_bytes=64 * 1024, retry_after=1.0, name="bench"
        ),
    }
    ratios = []
    for r in range(args.rounds):
        rates = {}
        for name in list(kinds) if r % 2 == 0 else list(reversed(kinds)):
            rate, latencies, refused = _run(kinds[name], args.clients, args.calls)
            rates[name] = rate
            print(f"round {r + 1} {name:>10}: {rate:7.0f} calls/s, latency p50 {_pct(latencies, 0.5) * 1e3:6.1f} ms "
                  f"p99 {_pct(latencies, 0.99) * 1e3:6.1f} ms, refused {refused}")  # fmt: skip
        ratios.append(rates["admission"] / rates["plain pool"])
    print(
        f"admission / plain pool, calls/s: median {statistics.median(ratios):.2f} "
        f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)})"
    )


if __name__ == "__main__":
    main()
