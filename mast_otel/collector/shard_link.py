"""The link from a collector's front process to its shards (see :mod:`.front`): one Export request per frame, over
TCP on 127.0.0.1, authenticated by the run's token.

Why not OTLP/gRPC, which it was until 2026-11-27: from Python, one gRPC call carrying a 125 KB part cost the caller
about 250 us of CPU and the shard 340-460 us; the same bytes over a plain socket cost about 40 us each
(docs/collector.md, "The front's link to its shards"). The front made one call per shard per request, from a
thread of its own for each part but the last. Over the link the receiver's thread writes every part, then reads
every answer: no threads are handed anything.

Both ends are this module, in the same version (the front starts its shards from its own interpreter), so the
format carries no version beyond its opening magic:

- a connection opens with :data:`MAGIC`, then the token (u16 length, bytes), within :data:`_HELLO_TIMEOUT_S`; a
  shard that does not receive exactly that counts the refusal (transport ``link``) and closes the connection;
- a request: u32 length, u8 transport (an index into :data:`.metrics.PROTOCOLS`), then the serialized
  ExportTraceServiceRequest;
- an answer: u8 kind, u32 length, then the body: for :data:`STORED`, the ExportTraceServiceResponse; for
  :data:`REFUSED`, the :class:`.refusal.Refusal` as JSON.

A shard answers a request only once its part is committed or refused, exactly as its OTLP receivers would
(:mod:`.refusal`). A connection that breaks mid-request leaves the front with no answer, which it makes a
retryable refusal: a client's retry then arrives at the shard as a duplicate (counted, dropped).
"""

from __future__ import annotations

import hmac
import json
import logging
import socket
import struct
import threading
import time
from collections.abc import Callable

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from .ingest import IngestResult
from .limits import MemoryLimiter, OverLimit
from .metrics import PROTOCOLS, REFUSE_CONNECTION_LIMIT, REFUSE_TOO_LARGE, REFUSE_UNAUTHENTICATED, CollectorMetrics
from .refusal import Refusal, RefusalKind, export_response, ingest_refusal, over_limit_refusal

__all__ = ["LINK", "MAGIC", "REFUSED", "STORED", "Exchange", "LinkClient", "LinkError", "LinkServer"]

_log = logging.getLogger(__name__)
MAGIC = b"mast-otel-link/1\n"
STORED, REFUSED = 0, 1
_REQUEST = struct.Struct(">IB")  # length, transport
_ANSWER = struct.Struct(">BI")  # kind, length
_TOKEN = struct.Struct(">H")
_DISCARD_CHUNK = 1 << 16
_ACCEPT_POLL_S = 0.25  # how soon a stopped server's accept loop notices
_HELLO_TIMEOUT_S = 2.0  # the whole hello, which the front writes as it connects; a slow one frees its slot
_MAX_ANSWER = 1 << 20  # an answer is a partial-success message or a refusal: a few hundred bytes
LINK = "link"  # the transport label of refusals of the link itself (not of a request)


class LinkError(OSError):
    """The other end broke the link's format: the connection is closed, as for any connection failure."""


def _read_exactly(conn: socket.socket, n: int) -> bytes | None:
    """``n`` bytes, or None when the peer closes the connection first (before or midway). A socket without a
    timeout is read with MSG_WAITALL: one allocation, one call, for a part of any size."""
    data = conn.recv(n, socket.MSG_WAITALL) if n else b""
    if len(data) == n:
        return data
    chunks = [data]
    got = len(data)
    while got < n:
        chunk = conn.recv(n - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


class LinkServer:
    """A shard's end: serves the front's connections, one thread each, handing each request to ``ingest``.

    At most ``max_connections`` at once (the front opens one per request it routes at a time); one more is
    closed at once and counted. Bound, not started: :meth:`start`, :meth:`stop`."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        ingest: Callable[[bytes, str], IngestResult],
        metrics: CollectorMetrics,
        token: str,
        max_request_bytes: int,
        limiter: MemoryLimiter,
        retry_after: float,
        max_connections: int,
    ) -> None:
        self._ingest = ingest
        self._metrics = metrics
        self._token = token.encode()
        self._max = max_request_bytes
        self._limiter = limiter
        self._retry_after = retry_after
        self._max_connections = max_connections
        try:
            self._listener = socket.create_server((host, port))
        except OSError as exc:
            raise OSError(f"cannot bind the collector shard's link to {host}:{port}: {exc}") from None
        self._listener.settimeout(_ACCEPT_POLL_S)
        self.host = host
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._stopping = threading.Event()
        self._acceptor: threading.Thread | None = None
        self._warned: set[str] = set()

    def start(self) -> None:
        self._acceptor = threading.Thread(target=self._accept, name="mast-link-accept", daemon=True)
        self._acceptor.start()

    def stop(self, grace: float = 2.0) -> None:
        """Take no more requests; the requests being stored get up to ``grace`` seconds, together, to be answered."""
        deadline = time.monotonic() + grace
        self._stopping.set()
        if self._acceptor is not None:
            self._acceptor.join()
        self._listener.close()
        with self._lock:
            connections = dict(self._connections)
        for conn in connections:
            try:  # wakes a thread waiting for the next request; one storing a request still answers it
                conn.shutdown(socket.SHUT_RD)
            except OSError:
                pass
        for thread in connections.values():
            thread.join(max(0.0, deadline - time.monotonic()))

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError as exc:
                _log.error("the collector shard's link stopped accepting: %s", exc)
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            thread = threading.Thread(target=self._serve, args=(conn,), name="mast-link", daemon=True)
            with self._lock:
                full = len(self._connections) >= self._max_connections
                if not full:
                    self._connections[conn] = thread
            if full:
                self._refuse_connection(REFUSE_CONNECTION_LIMIT, f"more than {self._max_connections} connections to "
                                        "this shard's link; closing the ones over")  # fmt: skip
                conn.close()
                continue
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            if not self._hello(conn):
                self._refuse_connection(REFUSE_UNAUTHENTICATED, "a connection to this shard's link without the run's "
                                        "token in time; closing such connections")  # fmt: skip
                return
            while (header := _read_exactly(conn, _REQUEST.size)) is not None:
                length, transport = _REQUEST.unpack(header)
                if transport >= len(PROTOCOLS):
                    raise LinkError(f"transport {transport} is not one of {PROTOCOLS}")
                protocol = PROTOCOLS[transport]
                if length > self._max:  # the front checks the client's request; a part converted from JSON may grow
                    if not _discard(conn, length):
                        return
                    answer = self._refused(protocol, self._too_large(length))
                else:
                    body = _read_exactly(conn, length)
                    if body is None:
                        return  # the front gave up on it (never answered, so never acknowledged)
                    answer = self._handle(body, protocol)
                conn.sendall(answer)
        except OSError as exc:
            if not self._stopping.is_set():
                _log.warning("a connection from the collector's front failed: %s", exc)
        finally:
            with self._lock:
                self._connections.pop(conn, None)
            conn.close()

    def _hello(self, conn: socket.socket) -> bool:
        """Exactly the hello this run's front sends, read under one deadline (a client trickling bytes cannot hold
        its connection slot) and compared in constant time."""
        expected = MAGIC + _TOKEN.pack(len(self._token)) + self._token
        deadline = time.monotonic() + _HELLO_TIMEOUT_S
        got = b""
        try:
            while len(got) < len(expected):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                conn.settimeout(left)
                chunk = conn.recv(len(expected) - len(got))
                if not chunk:
                    return False
                got += chunk
            conn.settimeout(None)
        except OSError:  # timed out, or reset
            return False
        return hmac.compare_digest(got, expected)

    def _refuse_connection(self, reason: str, message: str) -> None:
        """Count a connection refused before any request (transport ``link``); warn once per reason, so that a local
        process retrying cannot flood the log."""
        self._metrics.requests_refused.labels(LINK, reason).inc()
        if reason not in self._warned:
            self._warned.add(reason)
            _log.warning("%s (counted in mast_collector_requests_refused_total{protocol=\"link\"})", message)

    def _handle(self, body: bytes, protocol: str) -> bytes:
        """The answer frame to one request, as the OTLP receivers decide it (:mod:`.refusal`)."""
        try:
            charged = self._limiter.acquire(self._limiter.cost(len(body)))
        except OverLimit as exc:
            return self._refused(protocol, over_limit_refusal(exc, self._retry_after))
        try:
            result = self._ingest(body, protocol)
        except Exception as exc:
            return self._refused(protocol, ingest_refusal(exc, _log))
        finally:
            self._limiter.release(charged)
        response = export_response(result).SerializeToString()
        return _ANSWER.pack(STORED, len(response)) + response

    def _too_large(self, length: int) -> Refusal:
        message = f"request of {length} bytes exceeds max_request_bytes={self._max}; send smaller batches"
        return Refusal(RefusalKind.TOO_LARGE, REFUSE_TOO_LARGE, message)

    def _refused(self, protocol: str, refusal: Refusal) -> bytes:
        self._metrics.requests_refused.labels(protocol, refusal.reason).inc()
        body = json.dumps({"kind": refusal.kind.value, "reason": refusal.reason, "message": refusal.message,
                           "retry_after": refusal.retry_after}).encode()  # fmt: skip
        return _ANSWER.pack(REFUSED, len(body)) + body


def _discard(conn: socket.socket, length: int) -> bool:
    """Read and drop ``length`` bytes a chunk at a time (bounded memory); False if the connection closed first."""
    while length > 0:
        chunk = conn.recv(min(length, _DISCARD_CHUNK))
        if not chunk:
            return False
        length -= len(chunk)
    return True


class LinkClient:
    """The front's end of the link to one shard: idle connections kept for the next request, a new one opened
    when none is idle, so each request routed at a time has its own. :meth:`close` when the shard goes away."""

    def __init__(self, address: tuple[str, int], token: str, timeout: float) -> None:
        self.address = address
        self._hello = MAGIC + _TOKEN.pack(len(token.encode())) + token.encode()
        self._timeout = timeout
        self._idle: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False

    def send(self, request: bytes, protocol: str) -> Exchange:
        """Write one request; its answer is read by :meth:`Exchange.answer`. Raises OSError when the shard cannot
        be reached."""
        conn = self._take()
        try:
            conn.sendall(_REQUEST.pack(len(request), PROTOCOLS.index(protocol)))
            conn.sendall(request)
        except BaseException:
            conn.close()
            raise
        return Exchange(self, conn)

    def close(self) -> None:
        """Close the idle connections; one still in an exchange is closed when the exchange ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _take(self) -> socket.socket:
        with self._lock:
            if self._closed:  # the shard went away after the router looked its link up
                raise LinkError("the link to this shard is closed (the shard is restarting)")
            if self._idle:
                return self._idle.pop()
        conn = socket.create_connection(self.address, timeout=self._timeout)
        try:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.sendall(self._hello)
        except BaseException:
            conn.close()
            raise
        return conn

    def _give_back(self, conn: socket.socket) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(conn)
                return
        conn.close()


class Exchange:
    """One request written to a shard, its answer not yet read."""

    __slots__ = ("_client", "_conn")

    def __init__(self, client: LinkClient, conn: socket.socket) -> None:
        self._client = client
        self._conn: socket.socket | None = conn

    def answer(self) -> ExportTraceServiceResponse | Refusal:
        """The shard's answer: the response to a stored request, or its refusal. Raises OSError (the connection is
        then closed) when it broke, timed out or answered outside the format. Once only: the connection then serves
        another exchange."""
        conn, self._conn = self._conn, None
        if conn is None:
            raise LinkError("this exchange was answered already")
        try:
            header = _read_exactly(conn, _ANSWER.size)
            if header is None:
                raise LinkError("the shard closed the connection before answering")
            kind, length = _ANSWER.unpack(header)
            if length > _MAX_ANSWER:
                raise LinkError(f"an answer of {length} bytes, over {_MAX_ANSWER}")
            body = _read_exactly(conn, length)
            if body is None:
                raise LinkError("the shard closed the connection while answering")
            outcome = _decode_answer(kind, body)
        except BaseException:
            conn.close()
            raise
        self._client._give_back(conn)
        return outcome


def _decode_answer(kind: int, body: bytes) -> ExportTraceServiceResponse | Refusal:
    if kind == STORED:
        try:
            return ExportTraceServiceResponse.FromString(body)
        except DecodeError as exc:
            raise LinkError(f"an answer the front cannot read: {exc}") from None
    if kind == REFUSED:
        try:
            fields = json.loads(body)
            return Refusal(RefusalKind(fields["kind"]), str(fields["reason"]), str(fields["message"]),
                           float(fields["retry_after"]))  # fmt: skip
        except (ValueError, KeyError, TypeError) as exc:
            raise LinkError(f"a refusal the front cannot read: {exc}") from None
    raise LinkError(f"an answer of unknown kind {kind}")
