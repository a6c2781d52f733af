"""The gRPC receiver's admission, judged by resources: a call waits, first come first served, up to the admission
wait for a free receiver thread and is then stored; one still waiting after it gets RESOURCE_EXHAUSTED *with*
RetryInfo (so standard OTLP exporters retry), its body unread, counted as ``concurrency``; a call the memory limit
has no room for is refused at once, with RetryInfo, counted as ``memory_limit``."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from prometheus_client import generate_latest

from mast_otel.collector.limits import MemoryLimiter
from mast_otel.collector.metrics import CollectorMetrics
from mast_otel.collector.receive.admission import AdmissionPool
from mast_otel.collector.receive.ingest import IngestResult, Malformed
from mast_otel.collector.receive.receiver_grpc import UNREAD_CALL_BYTES, GrpcReceiver
from tests.collector.conftest import metric, recorded, wait_until

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
THREADS = 2
LONG_WAIT = 60.0  # longer than any call's own deadline here: a call refused before it was not refused for time


class _Gate:
    """An ingest that holds every request until opened (the store being slow), recording what it was given."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.entered = threading.Semaphore(0)
        self.ingested: list[bytes] = []

    def __call__(self, raw: bytes, protocol: str) -> IngestResult:
        if raw.startswith(b"\xff"):
            raise Malformed("not an OTLP protobuf request")
        self.entered.release()
        assert self.opened.wait(30)
        self.ingested.append(raw)
        return IngestResult(accepted=1)


Gated = tuple[GrpcReceiver, _Gate, CollectorMetrics, MemoryLimiter]


@pytest.fixture
def make_gated() -> Iterator[Callable[..., Gated]]:
    """A receiver of ``threads`` threads storing through a :class:`_Gate`, with the admission wait given."""
    made: list[Gated] = []

    def make(admission_wait: float, memory: int = 64 << 20, threads: int = THREADS) -> Gated:
        gate, metrics, limiter = _Gate(), CollectorMetrics(), MemoryLimiter(memory)
        receiver = GrpcReceiver(
            "127.0.0.1", 0, ingest=gate, metrics=metrics, token=None, max_request_bytes=1 << 20, threads=threads,
            limiter=limiter, retry_after=0.5, admission_wait=admission_wait,
        )  # fmt: skip
        receiver.start()
        made.append((receiver, gate, metrics, limiter))
        return receiver, gate, metrics, limiter

    yield make
    for receiver, gate, _, _ in made:
        gate.opened.set()
        receiver.stop(0)


def _payload(i: int = 0) -> bytes:
    return bytes(encode_spans(recorded(1, service=f"client-{i}")).SerializeToString())


def _hold_every_thread(receiver: GrpcReceiver, gate: _Gate, export: Callable[..., bytes], pool: ThreadPoolExecutor,
                       threads: int = THREADS) -> list[Future[bytes]]:  # fmt: skip
    """One call per receiver thread, each inside ingest until the gate opens."""
    held = [pool.submit(export, _payload(), timeout=30) for _ in range(threads)]
    for _ in range(threads):
        assert gate.entered.acquire(timeout=10)
    assert receiver.admitted == threads
    return held


def _assert_told_to_retry(err: BaseException | None, delay_nanos: int = 500_000_000) -> None:
    assert isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err
    trailers = dict(err.trailing_metadata() or ())
    info = error_details_pb2.RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
    assert info.retry_delay.seconds == 0 and info.retry_delay.nanos == delay_nanos
    status = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
    assert status.details[0].Is(error_details_pb2.RetryInfo.DESCRIPTOR)


def _refused(metrics: CollectorMetrics, reason: str) -> float:
    text = generate_latest(metrics.registry).decode()
    return metric(text, "mast_collector_requests_refused_total", protocol="grpc", reason=reason)


def test_calls_wait_for_a_thread_and_are_stored_when_one_frees(make_gated: Callable[..., Gated]) -> None:
    receiver, gate, metrics, limiter = make_gated(LONG_WAIT)
    extra = 3
    with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel, ThreadPoolExecutor(THREADS + extra) as pool:
        export = channel.unary_unary(EXPORT)
        held = _hold_every_thread(receiver, gate, export, pool)
        decoding = limiter.in_flight  # what the held calls are charged, bodies read
        waiting = [pool.submit(export, _payload(), timeout=30) for _ in range(extra)]
        wait_until(lambda: receiver.waiting == extra, 10, "the calls over the threads waiting")
        assert limiter.in_flight - decoding == extra * UNREAD_CALL_BYTES  # each waiting call: its window, not its body
        assert not any(f.done() for f in held + waiting)
        gate.opened.set()
        assert all(f.result(timeout=30) == b"" for f in held + waiting)  # every call stored, none refused
    assert len(gate.ingested) == THREADS + extra
    assert _refused(metrics, "concurrency") == _refused(metrics, "memory_limit") == 0
    wait_until(lambda: receiver.admitted == receiver.waiting == limiter.in_flight == 0, 10, "every charge released")


def test_waiting_calls_get_a_thread_first_come_first_served(make_gated: Callable[..., Gated]) -> None:
    receiver, gate, _, _ = make_gated(LONG_WAIT, threads=1)  # one thread: calls are stored in the order they start
    order = [_payload(i) for i in range(1, 5)]
    with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel, ThreadPoolExecutor(1 + 4) as pool:
        export = channel.unary_unary(EXPORT)
        held = _hold_every_thread(receiver, gate, export, pool, threads=1)
        waiting = []
        for n, payload in enumerate(order, 1):
            waiting.append(pool.submit(export, payload, timeout=30))
            wait_until(lambda n=n: receiver.waiting == n, 10, f"call {n} waiting")  # type: ignore[misc]
        gate.opened.set()
        assert all(f.result(timeout=30) == b"" for f in held + waiting)
    assert gate.ingested[1:] == order


def test_a_call_past_the_wait_is_told_to_retry_and_counted(make_gated: Callable[..., Gated]) -> None:
    receiver, gate, metrics, limiter = make_gated(0.2)
    extra = 3
    with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel, ThreadPoolExecutor(THREADS + extra) as pool:
        export = channel.unary_unary(EXPORT)
        held = _hold_every_thread(receiver, gate, export, pool)
        over = [pool.submit(export, _payload(), timeout=30) for _ in range(extra)]
        errors = [f.exception(timeout=20) for f in over]  # answered while every thread is still held
        assert not any(f.done() for f in held)
        for err in errors:
            _assert_told_to_retry(err)
        assert "busy for 0.2s" in errors[0].details()  # type: ignore[union-attr]
        assert _refused(metrics, "concurrency") == extra
        gate.opened.set()
        assert all(f.result(timeout=30) == b"" for f in held)  # every admitted call stored
    assert len(gate.ingested) == THREADS  # the refused calls' bodies were never read
    assert _refused(metrics, "concurrency") == extra
    wait_until(lambda: receiver.admitted == receiver.waiting == limiter.in_flight == 0, 10, "every charge released")


def test_memory_short_refuses_at_once_with_retry_info(make_gated: Callable[..., Gated]) -> None:
    """With every thread busy and a long admission wait, a call the memory limit has no room for is not queued:
    it is told to retry before any thread frees (a queued call would run out its own 10 s deadline instead)."""
    receiver, gate, metrics, limiter = make_gated(LONG_WAIT)
    with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel, ThreadPoolExecutor(THREADS + 1) as pool:
        export = channel.unary_unary(EXPORT)
        held = _hold_every_thread(receiver, gate, export, pool)
        filler = limiter.acquire(limiter.limit - limiter.in_flight)  # memory now short
        err = pool.submit(export, _payload(), timeout=10).exception(timeout=20)
        _assert_told_to_retry(err)
        assert "memory_limit reached" in err.details()  # type: ignore[union-attr]
        assert not any(f.done() for f in held) and receiver.waiting == 0
        assert _refused(metrics, "memory_limit") == 1 and _refused(metrics, "concurrency") == 0
        limiter.release(filler)
        gate.opened.set()
        assert all(f.result(timeout=30) == b"" for f in held)
    assert len(gate.ingested) == THREADS


def test_a_request_charged_the_whole_memory_limit_is_stored(make_gated: Callable[..., Gated]) -> None:
    """A call's unread charge gives way to its decoding charge once its body is read: a request of
    ``max_request_bytes`` fits a memory limit of exactly what it is charged (the smallest limit allowed)."""
    receiver, gate, metrics, limiter = make_gated(0.0, memory=MemoryLimiter(1).cost(1 << 20))
    gate.opened.set()
    with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
        assert channel.unary_unary(EXPORT)(b"\x00" * (1 << 20), timeout=10) == b""
    assert _refused(metrics, "memory_limit") == 0 and len(gate.ingested) == 1
    wait_until(lambda: limiter.in_flight == 0, 10, "every charge released")


def test_threads_free_as_calls_end(make_gated: Callable[..., Gated]) -> None:
    """Calls that end (stored, refused or over gRPC's message limit) give their thread and charge back."""
    receiver, gate, metrics, limiter = make_gated(0.0)
    gate.opened.set()
    with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
        export = channel.unary_unary(EXPORT)
        for _ in range(3 * THREADS):
            assert export(_payload(), timeout=10) == b""
        with pytest.raises(grpc.RpcError) as err:
            export(b"\xff\xff", timeout=10)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.RpcError) as err:
            export(b"\x00" * (3 << 20), timeout=10)  # over gRPC's own message limit: answered by gRPC
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    wait_until(lambda: receiver.admitted == receiver.waiting == limiter.in_flight == 0, 10, "every charge released")
    assert _refused(metrics, "concurrency") == 0


@settings(max_examples=30, deadline=None)
@given(threads=st.integers(1, 3), calls=st.integers(0, 8), data=st.data())
def test_the_pool_keeps_its_threads_busy_and_hands_them_out_in_arrival_order(
    threads: int, calls: int, data: st.DataObject
) -> None:
    """Whatever order the calls end in: never more than ``threads`` run, a thread is never idle while a call waits,
    and calls start in the order they arrived (up to the ``threads - 1`` handed out together)."""
    limiter = MemoryLimiter(1 << 20)
    pool = AdmissionPool(threads, wait=LONG_WAIT, limiter=limiter, call_bytes=1024, retry_after=1.0, name="test")
    lock = threading.Lock()
    started: list[int] = []
    running: set[int] = set()
    most = 0
    ends = [threading.Event() for _ in range(calls)]

    def call(i: int) -> int:
        nonlocal most
        with lock:
            started.append(i)
            running.add(i)
            most = max(most, len(running))
        assert ends[i].wait(10)
        with lock:
            running.discard(i)
        return i

    try:
        futures = [pool.submit(call, i) for i in range(calls)]
        for left in range(calls, 0, -1):
            wait_until(lambda left=left: len(running) == min(threads, left), 10, "every thread busy")  # type: ignore[misc]
            with lock:
                chosen = data.draw(st.sampled_from(sorted(running)))
            ends[chosen].set()
            wait_until(lambda chosen=chosen: chosen not in running, 10, "the call ended")  # type: ignore[misc]
        assert [f.result(timeout=10) for f in futures] == list(range(calls))
        assert most <= threads
        assert all(i <= position + threads - 1 for position, i in enumerate(started))
        wait_until(lambda: limiter.in_flight == 0, 10, "every charge released")
    finally:
        for end in ends:
            end.set()
        pool.close()
