"""The HTTP receiver's connection slots: a connection over ``max_connections`` waits, unread and first come first
served, for a served one to close and is then served; one still waiting after the admission wait is answered 503 +
Retry-After (never reset) and counted as ``connection_limit``; only past the connections the process's file
descriptors allow is a connection reset."""

from __future__ import annotations

import resource
import socket
import threading
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from prometheus_client import generate_latest

from mast_otel.collector.limits import MemoryLimiter
from mast_otel.collector.metrics import CollectorMetrics
from mast_otel.collector.receive.ingest import IngestResult
from mast_otel.collector.receive.receiver_http import HttpReceiver, connection_room, fd_limit
from tests.collector.conftest import metric, recorded, wait_until

LONG_WAIT = 60.0  # longer than any exchange here: a connection answered before it was not answered for time


class _Recording:
    """An ingest that records, in order, the service each request came from."""

    def __init__(self) -> None:
        self.services: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, raw: bytes, protocol: str) -> IngestResult:
        service = raw.split(b"client-", 1)[1][:1].decode()
        with self._lock:
            self.services.append(service)
        return IngestResult(accepted=1)


Made = tuple[HttpReceiver, _Recording, CollectorMetrics]


@pytest.fixture
def make_receiver() -> Iterator[Callable[..., Made]]:
    made: list[HttpReceiver] = []

    def make(admission_wait: float, max_connections: int = 1) -> Made:
        ingest, metrics = _Recording(), CollectorMetrics()
        receiver = HttpReceiver(
            "127.0.0.1", 0, ingest=ingest, metrics=metrics, token=None, max_request_bytes=1 << 20,
            limiter=MemoryLimiter(64 << 20), threads=2, max_connections=max_connections, timeout=30,
            retry_after=1.0, admission_wait=admission_wait,
        )  # fmt: skip
        receiver.start()
        made.append(receiver)
        return receiver, ingest, metrics

    yield make
    for receiver in made:
        receiver.stop()


def _request(service: str) -> bytes:
    body = bytes(encode_spans(recorded(1, service=f"client-{service}")).SerializeToString())
    head = (f"POST /v1/traces HTTP/1.1\r\nHost: collector\r\nContent-Type: application/x-protobuf\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")  # fmt: skip
    return head.encode() + body


def _send(receiver: HttpReceiver, service: str) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", receiver.port), timeout=30)
    s.sendall(_request(service))
    return s


def _status_line(s: socket.socket) -> bytes:
    """The answer's head (b"" if the connection was closed or reset without one)."""
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        return b""
    return data.split(b"\r\n\r\n", 1)[0]


def _refused(metrics: CollectorMetrics) -> float:
    text = generate_latest(metrics.registry).decode()
    return metric(text, "mast_collector_requests_refused_total", protocol="http", reason="connection_limit")


def test_connections_over_the_cap_wait_and_are_served_first_come_first_served(
    make_receiver: Callable[..., Made],
) -> None:
    receiver, ingest, metrics = make_receiver(LONG_WAIT)
    served = _send(receiver, "0")
    assert _status_line(served).startswith(b"HTTP/1.1 200")  # kept alive: it holds the one slot
    waiting = []
    for n, service in enumerate("123", 1):
        waiting.append(_send(receiver, service))
        wait_until(lambda n=n: receiver.waiting == n, 10, f"connection {n} waiting")  # type: ignore[misc]
    assert ingest.services == ["0"]  # no waiting request read
    served.close()
    for s in waiting:  # each closes once answered, handing the slot to the next
        assert _status_line(s).startswith(b"HTTP/1.1 200")
        s.close()
    assert ingest.services == ["0", "1", "2", "3"]
    assert _refused(metrics) == 0


def test_a_connection_past_the_wait_is_answered_503_and_counted(make_receiver: Callable[..., Made]) -> None:
    receiver, ingest, metrics = make_receiver(0.2)
    with _send(receiver, "0") as served:
        assert _status_line(served).startswith(b"HTTP/1.1 200")
        with _send(receiver, "1") as over:
            head = _status_line(over)  # answered while the served connection still holds the slot
            assert head.startswith(b"HTTP/1.1 503") and b"\r\nretry-after: 1\r\n" in head
        assert _refused(metrics) == 1
    assert ingest.services == ["0"]  # the refused request was never read
    wait_until(lambda: receiver.slots.served == 0, 10, "the slot given back")


def test_only_past_the_connection_room_is_a_connection_reset(make_receiver: Callable[..., Made]) -> None:
    receiver, _, metrics = make_receiver(LONG_WAIT)
    receiver.connection_room = 3  # the descriptors the process may hold, made small
    with _send(receiver, "0") as served:
        assert _status_line(served).startswith(b"HTTP/1.1 200")
        with _send(receiver, "1"), _send(receiver, "2"):
            wait_until(lambda: receiver.waiting == 2, 10, "two connections waiting")
            with _send(receiver, "3") as reset:
                assert _status_line(reset) == b""
            assert _refused(metrics) == 1 and receiver.waiting == 2


@given(cap=st.integers(1, 100_000), fds=st.integers(64, 1 << 20))
def test_the_connection_room_is_half_the_descriptors_and_at_least_twice_the_cap(cap: int, fds: int) -> None:
    room = connection_room(cap, fds)
    assert room >= 2 * cap and room >= fds // 2
    assert room in (2 * cap, fds // 2)


def test_the_descriptors_are_the_soft_limit() -> None:
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert fd_limit() == (soft if soft != resource.RLIM_INFINITY else 1 << 16)
