"""The link from a collector's front process to its shards (see :mod:`.front`): one Export request per frame, over
connections that only the front can make.

Each connection is one end of a ``socketpair`` the front created; it hands the other end to the shard over a
control socket that the shard inherited when the front started it (``SCM_RIGHTS``). No address is listened on, so
no other process, of this user or another, can open a connection: there is no port to find, no token to check, no
hello to wait for and no slot for a stranger to hold. The front opens as many connections as it routes requests at
once (one per receiver thread at most), and the shard serves each on a thread of its own.

Why not OTLP/gRPC: from Python, a gRPC call costs both ends several times what the same bytes cost over a plain
socket, and the front made one per shard per request (benchmarks/results/2026-11-27-collector-benchmarks.md). Over
the link the receiver's thread writes every part, then reads every answer: no threads are handed anything.

Both ends are this module, in the same version (the front starts its shards from its own interpreter), so the
format carries no version:

- a request: u32 length, u8 transport (an index into :data:`LINK_PROTOCOLS`: the trace transports, then the logs
  ones), then the serialized ExportTraceServiceRequest (ExportLogsServiceRequest for a logs transport);
- an answer: u8 kind, u32 length, then the body: for :data:`STORED`, the ExportTraceServiceResponse; for
  :data:`REFUSED`, the :class:`.refusal.Refusal` as JSON.

A shard answers a request only once its part is committed or refused, exactly as its OTLP receivers would
(:mod:`.refusal`). A connection that breaks mid-request leaves the front with no answer, which it makes a
retryable refusal: a client's retry then arrives at the shard as a duplicate (counted, dropped).
"""

from __future__ import annotations

import json
import logging
import socket
import struct
import threading
import time
from collections.abc import Callable

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from mast_otel.collector.limits import MemoryLimiter, OverLimit
from mast_otel.collector.metrics import LOG_PROTOCOLS, PROTOCOLS, REFUSE_TOO_LARGE, CollectorMetrics
from mast_otel.collector.receive.ingest import IngestResult
from mast_otel.collector.receive.refusal import (
    Refusal,
    RefusalKind,
    export_response,
    ingest_refusal,
    over_limit_refusal,
)

__all__ = ["LINK_PROTOCOLS", "REFUSED", "STORED", "Exchange", "LinkClient", "LinkError", "LinkServer", "link_pair"]

_log = logging.getLogger(__name__)
STORED, REFUSED = 0, 1
LINK_PROTOCOLS = (*PROTOCOLS, *LOG_PROTOCOLS)  # a request's transport byte indexes this
_REQUEST = struct.Struct(">IB")  # length, transport
_ANSWER = struct.Struct(">BI")  # kind, length
_DISCARD_CHUNK = 1 << 16
_ACCEPT_POLL_S = 0.25  # how soon a stopped server's accept loop notices
_MAX_ANSWER = 1 << 20  # an answer is a partial-success message or a refusal: a few hundred bytes
_HANDED = b"c"  # the byte each handed-over connection travels with (SCM_RIGHTS needs at least one)
_FDS_PER_MESSAGE = 16


def link_pair() -> tuple[socket.socket, socket.socket]:
    """The control socket's two ends: the front keeps the first; the second goes to the shard it starts, inherited
    (``pass_fds``), and is closed in the front once the shard has it."""
    front, shard = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return front, shard


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
    """A shard's end: takes the connections the front hands over ``control`` and serves each on a thread of its own,
    handing each request to ``ingest``. Not started: :meth:`start`, :meth:`stop`."""

    def __init__(
        self,
        control: socket.socket,
        *,
        ingest: Callable[[bytes, str], IngestResult],
        metrics: CollectorMetrics,
        max_request_bytes: int,
        limiter: MemoryLimiter,
        retry_after: float,
    ) -> None:
        self._control = control
        self._ingest = ingest
        self._metrics = metrics
        self._max = max_request_bytes
        self._limiter = limiter
        self._retry_after = retry_after
        self._control.settimeout(_ACCEPT_POLL_S)
        self._lock = threading.Lock()
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._stopping = threading.Event()
        self._acceptor: threading.Thread | None = None

    def start(self) -> None:
        self._acceptor = threading.Thread(target=self._accept, name="mast-link-accept", daemon=True)
        self._acceptor.start()

    def stop(self, grace: float = 2.0) -> None:
        """Take no more requests; the requests being stored get up to ``grace`` seconds, together, to be answered."""
        deadline = time.monotonic() + grace
        self._stopping.set()
        if self._acceptor is not None:
            self._acceptor.join()
        self._control.close()
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
                message, fds, _, _ = socket.recv_fds(self._control, _FDS_PER_MESSAGE, _FDS_PER_MESSAGE)
            except TimeoutError:
                continue
            except OSError as exc:
                _log.error("the collector shard's link stopped taking connections: %s", exc)
                return
            if not message and not fds:
                return  # the front closed its end: it is gone, and this process goes with it (PR_SET_PDEATHSIG)
            for fd in fds:
                conn = socket.socket(fileno=fd)
                conn.settimeout(None)
                thread = threading.Thread(target=self._serve, args=(conn,), name="mast-link", daemon=True)
                with self._lock:
                    self._connections[conn] = thread
                thread.start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            while (header := _read_exactly(conn, _REQUEST.size)) is not None:
                length, transport = _REQUEST.unpack(header)
                if transport >= len(LINK_PROTOCOLS):
                    raise LinkError(f"transport {transport} is not one of {LINK_PROTOCOLS}")
                protocol = LINK_PROTOCOLS[transport]
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
    """The front's end of the link to one shard: idle connections kept for the next request, a new one made and
    handed to the shard when none is idle, so each request routed at a time has its own. :meth:`close` when the
    shard goes away (it closes ``control`` too)."""

    def __init__(self, control: socket.socket, timeout: float) -> None:
        self._control = control
        self._timeout = timeout
        self._idle: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False

    def send(self, request: bytes, protocol: str) -> Exchange:
        """Write one request; its answer is read by :meth:`Exchange.answer`. Raises OSError when the shard cannot
        be reached."""
        conn = self._take()
        try:
            conn.sendall(_REQUEST.pack(len(request), LINK_PROTOCOLS.index(protocol)))
            conn.sendall(request)
        except BaseException:
            conn.close()
            raise
        return Exchange(self, conn)

    def close(self) -> None:
        """Close the idle connections and the control socket; one still in an exchange is closed when the exchange
        ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._control.close()
        for conn in idle:
            conn.close()

    def _take(self) -> socket.socket:
        with self._lock:
            if self._closed:  # the shard went away after the router looked its link up
                raise LinkError("the link to this shard is closed (the shard is restarting)")
            if self._idle:
                return self._idle.pop()
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            try:  # under the lock: close() must not close the control socket while it carries a descriptor
                socket.send_fds(self._control, [_HANDED], [theirs.fileno()])
            except BaseException:
                ours.close()
                raise
            finally:
                theirs.close()  # the shard holds its own copy now (or never will)
        ours.settimeout(self._timeout)
        return ours

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
