"""The link between a collector's front and its shards, over real socket pairs handed across a control socket: what
the shard's ingest is handed, what the front is told for each outcome (the outcomes the OTLP receivers give,
:mod:`.refusal`), what is counted, and a link that breaks or stalls. The router over two real links at the end:
every part written before any answer is read."""

from __future__ import annotations

import logging
import os
import random
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from mast_otel.collector.limits import MemoryLimiter
from mast_otel.collector.metrics import (
    REFUSE_DISK_FULL,
    REFUSE_INTERNAL,
    REFUSE_MALFORMED,
    REFUSE_MEMORY_LIMIT,
    REFUSE_TOO_LARGE,
    CollectorMetrics,
)
from mast_otel.collector.receive import shard_link
from mast_otel.collector.receive.ingest import Backpressure, IngestResult, Malformed, TooLarge
from mast_otel.collector.receive.refusal import Refusal, RefusalKind
from mast_otel.collector.receive.shard_link import LinkClient, LinkError, LinkServer, _read_exactly, link_pair
from mast_otel.collector.scaleout.routing import Router, split_request
from tests.collector.test_routing import _request

MAX = 1 << 16
_CONTROLS: dict[int, socket.socket] = {}  # id(server) -> the front's end of its control socket


class _Ingest:
    """A shard's ingest: records each request and transport, answers with ``outcome`` (a result or an exception
    to raise), after ``gate`` is set when one is given."""

    def __init__(self, outcome: IngestResult | Exception | None = None, gate: threading.Event | None = None) -> None:
        self.outcome = outcome
        self.gate = gate
        self.got: list[tuple[bytes, str]] = []
        self.arrived = threading.Event()

    def __call__(self, raw: bytes, protocol: str) -> IngestResult:
        self.got.append((raw, protocol))
        self.arrived.set()
        if self.gate is not None and not self.gate.wait(10):
            raise AssertionError("the gate was never opened")
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome or IngestResult(len(raw))


def _refused(metrics: CollectorMetrics, protocol: str, reason: str) -> float:
    return metrics.registry.get_sample_value(
        "mast_collector_requests_refused_total", {"protocol": protocol, "reason": reason}
    ) or 0.0  # fmt: skip


@pytest.fixture
def serve() -> Iterator[Callable[..., tuple[LinkServer, CollectorMetrics]]]:
    servers: list[LinkServer] = []

    def start(
        ingest: Callable[[bytes, str], IngestResult], *, limit: int = 1 << 30
    ) -> tuple[LinkServer, CollectorMetrics]:
        metrics = CollectorMetrics()
        front, shard = link_pair()
        server = LinkServer(shard, ingest=ingest, metrics=metrics, max_request_bytes=MAX,
                            limiter=MemoryLimiter(limit, amplification=1), retry_after=3.5)  # fmt: skip
        server.start()
        servers.append(server)
        _CONTROLS[id(server)] = front
        return server, metrics

    yield start
    for server in servers:
        server.stop(1.0)
        _CONTROLS.pop(id(server)).close()


def _closed_without_answer(raw: socket.socket) -> bool:
    """The shard closed the connection: an end of stream, or a reset when it left bytes we sent unread."""
    try:
        return raw.recv(1) == b""
    except ConnectionResetError:
        return True


def _client(server: LinkServer, timeout: float = 10.0) -> LinkClient:
    """A front's client of ``server`` (clients of one server share its control socket, as a restarted link would
    not: a test closing one client closes them all)."""
    return LinkClient(_CONTROLS[id(server)], timeout)


def _raw(control: socket.socket) -> socket.socket:
    """A connection handed to the shard behind ``control``, for writing bytes outside the client's format."""
    ours, theirs = socket.socketpair()
    socket.send_fds(control, [b"c"], [theirs.fileno()])
    theirs.close()
    ours.settimeout(5)
    return ours


def test_a_stored_request_reaches_ingest_as_sent_with_its_transport_and_the_answer_comes_back(serve: Any) -> None:
    ingest = _Ingest(IngestResult(7, 2, "2 span(s) with invalid trace or span ids"))
    server, _ = serve(ingest)
    client = _client(server)
    payload = random.Random(3).randbytes(MAX)  # the largest allowed, in more than one socket read
    answer = client.send(payload, "http").answer()
    assert ingest.got == [(payload, "http")]
    assert isinstance(answer, ExportTraceServiceResponse)
    assert answer.partial_success.rejected_spans == 2
    assert answer.partial_success.error_message == "2 span(s) with invalid trace or span ids"
    ingest.outcome = None
    assert client.send(b"", "grpc").answer() == ExportTraceServiceResponse()  # all taken: an empty answer
    assert ingest.got[1] == (b"", "grpc")


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        (Malformed("a ScopeSpans is not valid protobuf"),
         Refusal(RefusalKind.MALFORMED, REFUSE_MALFORMED, "a ScopeSpans is not valid protobuf")),
        (TooLarge("over max_request_spans"),
         Refusal(RefusalKind.TOO_LARGE, REFUSE_TOO_LARGE, "over max_request_spans")),
        (Backpressure("the store's disk is full", 4.25, REFUSE_DISK_FULL),
         Refusal(RefusalKind.RETRY_LATER, REFUSE_DISK_FULL, "the store's disk is full", 4.25)),
        (OSError("database is locked"), Refusal(RefusalKind.STORE_FAILED, REFUSE_INTERNAL, "OSError", 1.0)),
    ],
)  # fmt: skip
def test_each_refusal_reaches_the_front_as_the_receivers_word_it_and_is_counted(
    serve: Any, outcome: Exception, expected: Refusal
) -> None:
    server, metrics = serve(_Ingest(outcome))
    client = _client(server)
    assert client.send(b"spans", "http").answer() == expected
    assert _refused(metrics, "http", expected.reason) == 1
    assert client.send(b"spans", "grpc").answer() == expected  # the connection goes on after a refusal
    assert _refused(metrics, "grpc", expected.reason) == 1


def test_a_request_over_the_limits_is_refused_without_reaching_ingest_and_the_link_goes_on(serve: Any) -> None:
    ingest = _Ingest()
    server, metrics = serve(ingest, limit=3 * MAX // 2)
    client = _client(server)
    answer = client.send(bytes(MAX + 1), "grpc").answer()
    told = f"request of {MAX + 1} bytes exceeds max_request_bytes={MAX}; send smaller batches"
    assert answer == Refusal(RefusalKind.TOO_LARGE, REFUSE_TOO_LARGE, told)
    assert ingest.got == [] and _refused(metrics, "grpc", REFUSE_TOO_LARGE) == 1
    # the oversized body was read and dropped: the next request on the same connection is read from its start
    assert client.send(b"next", "grpc").answer() == ExportTraceServiceResponse()
    assert ingest.got == [(b"next", "grpc")]
    # memory: a request is charged while it is stored; two at once do not fit
    ingest.gate = threading.Event()
    ingest.arrived.clear()  # set by the requests above: wait for this one, or the second may overtake it
    first = client.send(bytes(MAX), "grpc")
    assert ingest.arrived.wait(5)
    second = client.send(bytes(MAX), "grpc").answer()
    assert isinstance(second, Refusal) and second.kind is RefusalKind.RETRY_LATER
    assert (second.reason, second.retry_after) == (REFUSE_MEMORY_LIMIT, 3.5)
    assert _refused(metrics, "grpc", REFUSE_MEMORY_LIMIT) == 1
    ingest.gate.set()
    assert first.answer() == ExportTraceServiceResponse()


def test_idle_connections_are_reused_and_each_request_in_flight_has_its_own(serve: Any) -> None:
    ingest = _Ingest()
    server, _ = serve(ingest)
    client = _client(server)
    for _ in range(3):
        client.send(b"a", "grpc").answer()
    assert len(server._connections) == 1
    ingest.gate = threading.Event()
    first, second = client.send(b"1", "grpc"), client.send(b"2", "grpc")
    ingest.gate.set()
    assert first.answer() == second.answer() == ExportTraceServiceResponse()
    assert len(server._connections) == 2 and sorted(r for r, _ in ingest.got[3:]) == [b"1", b"2"]


def test_a_frame_outside_the_format_closes_the_connection(serve: Any, caplog: Any) -> None:
    ingest = _Ingest()
    server, metrics = serve(ingest)
    with caplog.at_level(logging.WARNING, logger="mast_otel.collector.receive.shard_link"):
        with _raw(_CONTROLS[id(server)]) as raw:
            raw.sendall((4).to_bytes(4, "big") + bytes([4]) + b"abcd")  # transports are 0 to 3 (traces, then logs)
            assert _closed_without_answer(raw)
        # an oversized request cut short: never answered, so never counted as refused
        with _raw(_CONTROLS[id(server)]) as raw:
            raw.sendall((MAX + 10).to_bytes(4, "big") + bytes([0]) + bytes(100))
            raw.shutdown(socket.SHUT_WR)
            assert _closed_without_answer(raw)
    assert ingest.got == [] and _refused(metrics, "grpc", REFUSE_TOO_LARGE) == 0
    told = "transport 4 is not one of ('grpc', 'http', 'grpc_logs', 'http_logs')"
    assert f"a connection from the collector's front failed: {told}" in caplog.messages


def test_a_shard_that_never_answers_costs_the_front_its_timeout_and_the_connection(serve: Any) -> None:
    ingest = _Ingest(gate=threading.Event())
    server, _ = serve(ingest)
    client = _client(server, timeout=0.3)
    exchange = client.send(b"stuck", "grpc")
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        exchange.answer()
    assert 0.25 < time.monotonic() - started < 3
    ingest.gate.set()
    assert client._idle == []  # a connection whose answer may still come is never reused


def test_a_shard_gone_is_an_oserror_and_a_closed_client_keeps_no_connection(serve: Any) -> None:
    ingest = _Ingest()
    server, _ = serve(ingest)
    client = _client(server)
    client.send(b"a", "grpc").answer()
    server.stop(1.0)
    with pytest.raises(OSError):
        client.send(b"b", "grpc").answer()  # the pooled connection was closed by the stop
    with pytest.raises(OSError):
        client.send(b"c", "grpc")  # and no new one can be opened
    client.close()
    assert client._idle == []


def test_stopping_a_shard_answers_the_request_it_is_storing_before_it_returns(serve: Any) -> None:
    ingest = _Ingest()
    server, _ = serve(ingest)
    idle = _client(server)
    assert idle.send(b"idle", "grpc").answer() == ExportTraceServiceResponse()  # then waits for a next request
    ingest.gate = threading.Event()
    exchange = _client(server).send(b"storing", "grpc")
    while len(ingest.got) < 2:
        time.sleep(0.01)
    threading.Timer(0.2, ingest.gate.set).start()
    started = time.monotonic()
    server.stop(5.0)
    assert 0.15 < time.monotonic() - started < 3  # waited for the one being stored, not for the idle one
    assert exchange._conn is not None and select.select([exchange._conn], [], [], 0)[0]  # answered by then
    assert exchange.answer() == ExportTraceServiceResponse()


def _fake_shard(reply: bytes) -> socket.socket:
    """A control socket whose shard takes one connection, reads one request, writes ``reply`` and closes."""
    front, shard = link_pair()

    def serve() -> None:
        _, fds, _, _ = socket.recv_fds(shard, 1, 1)
        with socket.socket(fileno=fds[0]) as conn:
            header = _read_exactly(conn, 5)
            assert header is not None
            _read_exactly(conn, int.from_bytes(header[:4], "big"))
            conn.sendall(reply)
        shard.close()

    threading.Thread(target=serve, daemon=True).start()
    return front


@pytest.mark.parametrize(
    ("reply", "told"),
    [
        (b"", "the shard closed the connection before answering"),
        (bytes([0, 0, 0]), "the shard closed the connection before answering"),  # half a header
        (bytes([0]) + (10).to_bytes(4, "big") + b"abc", "the shard closed the connection while answering"),
        (bytes([7]) + (0).to_bytes(4, "big"), "an answer of unknown kind 7"),
        (bytes([0]) + (1).to_bytes(4, "big") + b"\xff", "an answer the front cannot read: "),
        (bytes([0]) + (1 << 20).to_bytes(4, "big") + bytes(1 << 20), "an answer the front cannot read: "),  # at most
        (bytes([1]) + (2).to_bytes(4, "big") + b"{]", "a refusal the front cannot read: "),
        (bytes([1]) + (2).to_bytes(4, "big") + b"{}", "a refusal the front cannot read: 'kind'"),
    ],
)  # fmt: skip
def test_an_answer_outside_the_format_is_a_broken_link_for_the_front(reply: bytes, told: str) -> None:
    """A shard answering outside the format (a bug on one side) is a broken link for the front, not a crash."""
    client = LinkClient(_fake_shard(reply), 5.0)
    with pytest.raises(LinkError) as caught:
        client.send(b"x", "grpc").answer()
    assert str(caught.value).startswith(told)
    assert client._idle == []


def test_reading_exactly_n_bytes_across_partial_reads_and_an_early_close() -> None:
    for timeout in (None, 5.0):  # the shard's blocking sockets, the front's with a timeout
        reader, writer = socket.socketpair()
        reader.settimeout(timeout)

        def write_the_rest(to: socket.socket) -> None:
            to.sendall(b"defghi")
            to.close()

        writer.sendall(b"abc")  # there before the read; the rest comes well after it began
        threading.Timer(0.3, write_the_rest, args=(writer,)).start()
        assert _read_exactly(reader, 0) == b""
        assert _read_exactly(reader, 7) == b"abcdefg"  # no byte of what follows
        assert _read_exactly(reader, 3) is None  # "hi", then the end
        reader.close()


def test_the_router_writes_every_part_before_it_reads_an_answer(serve: Any) -> None:
    """Each shard stores its part only once the other shard has its own: parts written one after the other's
    answer would never both arrive, and the route would wait for a gate that never opens."""
    both = threading.Event()
    ingests = [_Ingest(gate=both), _Ingest(gate=both)]
    links = [_client(serve(ingest)[0]) for ingest in ingests]
    router = Router(shards=2, link_of=lambda k: links[k], max_items=10_000, retry_after=1.0)
    raw = next(r for r in (_request(random.Random(s)).SerializeToString() for s in range(50))
               if len(split_request(r, 2, max_items=10_000)) == 2)  # fmt: skip
    threading.Thread(target=lambda: all(i.arrived.wait(5) for i in ingests) and both.set(), daemon=True).start()
    result = router.route(raw, "http")
    parts = split_request(raw, 2, max_items=10_000)
    assert result.accepted == sum(p.spans for p in parts) and result.rejected == 0
    assert [i.got for i in ingests] == [[(p.request, "http")] for p in parts]


def test_the_links_threads_are_named_daemons_and_accept_after_a_quiet_spell(serve: Any) -> None:
    server, _ = serve(_Ingest())
    time.sleep(3 * shard_link._ACCEPT_POLL_S)  # several accept timeouts with nobody connecting
    client = _client(server)  # kept: its connection's thread lives as long as the connection
    assert client.send(b"late", "grpc").answer() == ExportTraceServiceResponse()
    threads = {t.name: t.daemon for t in threading.enumerate() if t.name.startswith("mast-link")}
    assert threads == {"mast-link-accept": True, "mast-link": True}  # a stuck thread never holds a stopped shard


def test_a_stop_waits_for_a_request_being_stored_at_most_its_grace(serve: Any) -> None:
    ingest = _Ingest(gate=threading.Event())
    server, _ = serve(ingest)
    exchange = _client(server).send(b"stuck", "grpc")
    assert ingest.arrived.wait(5)
    started = time.monotonic()
    server.stop(0.5)
    assert 0.45 < time.monotonic() - started < 0.95  # its grace, then no longer
    ingest.gate.set()
    assert exchange.answer() == ExportTraceServiceResponse()  # answered once it is stored, after the stop


def test_a_control_socket_that_fails_is_logged_and_one_the_front_closed_ends_the_accept_loop(
    serve: Any, caplog: Any
) -> None:
    server, _ = serve(_Ingest())
    with caplog.at_level(logging.ERROR, logger="mast_otel.collector.receive.shard_link"):
        server._control.close()
        assert server._acceptor is not None
        server._acceptor.join(5)
    assert any(m.startswith("the collector shard's link stopped taking connections: [Errno ") for m in caplog.messages)
    quiet, _ = serve(_Ingest())
    _CONTROLS[id(quiet)].close()  # the front is gone: its end of the control socket closed
    assert quiet._acceptor is not None
    quiet._acceptor.join(5)
    assert not quiet._acceptor.is_alive()


def test_a_client_closed_during_an_exchange_keeps_no_connection_and_opens_none(serve: Any) -> None:
    server, _ = serve(_Ingest())
    client = _client(server)
    exchange = client.send(b"a", "grpc")
    client.close()
    assert exchange.answer() == ExportTraceServiceResponse()
    assert client._idle == []
    with pytest.raises(LinkError, match=r"^the link to this shard is closed \(the shard is restarting\)$"):
        client.send(b"b", "grpc")  # a router that looked the link up before the shard died
    with pytest.raises(LinkError, match=r"^this exchange was answered already$"):  # its connection may serve another
        exchange.answer()


def test_an_answer_longer_than_any_answer_is_refused_before_it_is_read() -> None:
    client = LinkClient(_fake_shard(bytes([0]) + (2**32 - 1).to_bytes(4, "big")), 5.0)
    with pytest.raises(LinkError, match="an answer of 4294967295 bytes, over 1048576"):
        client.send(b"x", "grpc").answer()


def test_a_link_listens_on_nothing_and_takes_connections_only_over_its_control_socket(serve: Any) -> None:
    """No other process can reach a shard: the link opens no listening socket of any family, so the only way in is
    a descriptor sent over the control socket, which only the front holds."""

    def listening() -> set[str]:
        """Inodes of every listening socket on the machine: TCP in state LISTEN, Unix with SO_ACCEPTCON."""
        inodes = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with open(table) as lines:
                inodes |= {f[9] for f in (line.split() for line in list(lines)[1:]) if f[3] == "0A"}
        with open("/proc/net/unix") as lines:
            inodes |= {f[6] for f in (line.split() for line in list(lines)[1:]) if int(f[3], 16) & 0x10000}
        return inodes

    def ours() -> set[str]:
        found = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                found.add(target[8:-1])
        return found

    before = ours() & listening()
    server, _ = serve(_Ingest())
    client = _client(server)
    assert client.send(b"in", "grpc").answer() == ExportTraceServiceResponse()
    assert ours() & listening() == before  # the link added no listening socket
