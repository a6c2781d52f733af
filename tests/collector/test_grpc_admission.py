"""The gRPC receiver's admission cap: calls over ``4 x receiver_threads`` get RESOURCE_EXHAUSTED *with* RetryInfo (so
standard OTLP exporters retry), at once, with their bodies unread, and each is counted as ``concurrency``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from prometheus_client import generate_latest

from mast_otel.collector.limits import MemoryLimiter
from mast_otel.collector.metrics import CollectorMetrics
from mast_otel.collector.receive.ingest import IngestResult, Malformed
from mast_otel.collector.receive.receiver_grpc import CALLS_PER_THREAD, GrpcReceiver
from tests.collector.conftest import metric, recorded, wait_until

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
THREADS = 2
CAP = CALLS_PER_THREAD * THREADS


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


@pytest.fixture
def gated() -> Iterator[tuple[GrpcReceiver, _Gate, CollectorMetrics]]:
    gate, metrics = _Gate(), CollectorMetrics()
    receiver = GrpcReceiver(
        "127.0.0.1", 0, ingest=gate, metrics=metrics, token=None, max_request_bytes=1 << 20, threads=THREADS,
        limiter=MemoryLimiter(64 << 20), retry_after=0.5,
    )  # fmt: skip
    receiver.start()
    try:
        yield receiver, gate, metrics
    finally:
        gate.opened.set()
        receiver.stop(0)


def _refused(metrics: CollectorMetrics, reason: str) -> float:
    text = generate_latest(metrics.registry).decode()
    return metric(text, "mast_collector_requests_refused_total", protocol="grpc", reason=reason)


def test_calls_over_the_cap_are_told_to_retry_and_counted(gated: tuple[GrpcReceiver, _Gate, CollectorMetrics]) -> None:
    receiver, gate, metrics = gated
    payload = bytes(encode_spans(recorded(1)).SerializeToString())
    extra = 3
    with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel, ThreadPoolExecutor(CAP + extra) as pool:
        export = channel.unary_unary(EXPORT)
        held = [pool.submit(export, payload, timeout=30) for _ in range(CAP)]
        for _ in range(THREADS):  # both threads are inside ingest; the other admitted calls wait for one
            assert gate.entered.acquire(timeout=10)
        wait_until(lambda: receiver.admitted == CAP, 10, "every call admitted")
        over = [pool.submit(export, payload, timeout=5) for _ in range(extra)]
        errors = [f.exception(timeout=10) for f in over]  # answered while every admitted call still waits
        assert all(not f.done() for f in held)
        for err in errors:
            assert isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            trailers = dict(err.trailing_metadata() or ())
            info = error_details_pb2.RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
            assert info.retry_delay.seconds == 0 and info.retry_delay.nanos == 500_000_000
            status = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
            assert status.details[0].Is(error_details_pb2.RetryInfo.DESCRIPTOR)
        assert _refused(metrics, "concurrency") == extra
        gate.opened.set()
        assert all(f.result(timeout=30) == b"" for f in held)  # every admitted call stored
    assert len(gate.ingested) == CAP
    assert receiver.admitted == 0
    assert _refused(metrics, "concurrency") == extra


def test_the_cap_frees_as_calls_end(gated: tuple[GrpcReceiver, _Gate, CollectorMetrics]) -> None:
    """Admitted calls that end (stored, refused or cancelled) give their place back: later calls are admitted."""
    receiver, gate, metrics = gated
    gate.opened.set()
    payload = bytes(encode_spans(recorded(1)).SerializeToString())
    with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
        export = channel.unary_unary(EXPORT)
        for _ in range(3 * CAP):
            assert export(payload, timeout=10) == b""
        with pytest.raises(grpc.RpcError) as err:
            export(b"\xff\xff", timeout=10)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.RpcError) as err:
            export(b"\x00" * (3 << 20), timeout=10)  # over gRPC's own message limit: answered by gRPC
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert receiver.admitted == 0
    assert _refused(metrics, "concurrency") == 0
