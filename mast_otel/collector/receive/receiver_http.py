"""OTLP/HTTP receiver: ``POST /v1/traces`` with ``application/x-protobuf`` or ``application/json`` bodies, and
``POST /v1/logs`` given ``ingest_logs`` (same checks and answers; refusals counted under ``protocol="http_logs"``;
see :mod:`.logs_ingest`).

The HTTP server is uvicorn (h11): a maintained parser for Content-Length and chunked bodies (a negative or
malformed length is a 400 before any byte of body is read), one event loop instead of a thread per connection,
and these limits on top: at most ``receiver_max_connections`` connections are served at once; one more waits,
unread and first come first served, up to ``admission_wait`` for one of them to close, and is then served, or, still
waiting, counted and its request answered 503 + ``Retry-After``, unread. Connections are reset only when the
process runs short of file descriptors: past :func:`connection_room` connections held at once. A request's headers
and body must arrive within ``receiver_timeout`` (else 408 and the connection is closed), a body is read in chunks
and refused (413) the moment it passes ``max_request_bytes``, and decoding runs on ``receiver_threads`` threads,
each body charged to the shared :class:`~.limits.MemoryLimiter` as it arrives (a request waiting for a thread holds
its charge: the memory limit, not a count, bounds them).

Status codes follow the OTLP/HTTP spec, so standard exporters retry exactly what is worth retrying: 200 (with
partial success when some spans were rejected), 400 malformed or unreadable body, 401 bad or missing bearer
token, 404 other path, 405 other method, 408 too slow, 413 over ``max_request_bytes`` (checked on the declared
length, while reading, and after gzip/deflate decompression) or another per-request limit, 415 other content
type or encoding, 503 + ``Retry-After`` when the store or its disk is full, ``memory_limit`` is reached, the
store failed or the connection is over ``receiver_max_connections``. Error bodies are a ``google.rpc.Status``
in the request's encoding.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import resource
import socket
import threading
import time
import zlib
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import uvicorn
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from google.rpc import code_pb2, status_pb2  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from uvicorn.protocols.http.h11_impl import H11Protocol

from mast_otel.collector.limits import MemoryLimiter, OverLimit
from mast_otel.collector.metrics import (
    REFUSE_CONNECTION_LIMIT,
    REFUSE_MALFORMED,
    REFUSE_MEDIA_TYPE,
    REFUSE_NOT_FOUND,
    REFUSE_TIMEOUT,
    REFUSE_TOO_LARGE,
    REFUSE_UNAUTHENTICATED,
    CollectorMetrics,
)
from mast_otel.collector.receive.auth import bearer_ok
from mast_otel.collector.receive.ingest import IngestResult, Malformed
from mast_otel.collector.receive.logs_ingest import LOGS_PATH, decode_json_logs, logs_response
from mast_otel.collector.receive.refusal import (
    Refusal,
    RefusalKind,
    export_response,
    ingest_refusal,
    over_limit_refusal,
)

__all__ = ["HttpReceiver", "connection_room", "decode_json_request"]

_log = logging.getLogger(__name__)
PATH = "/v1/traces"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_Scope = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
_Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
_CODES = {400: code_pb2.INVALID_ARGUMENT, 401: code_pb2.UNAUTHENTICATED, 404: code_pb2.NOT_FOUND,
          405: code_pb2.UNIMPLEMENTED, 408: code_pb2.DEADLINE_EXCEEDED, 413: code_pb2.RESOURCE_EXHAUSTED,
          415: code_pb2.INVALID_ARGUMENT, 503: code_pb2.UNAVAILABLE}  # fmt: skip
_STATUS = {
    RefusalKind.MALFORMED: 400, RefusalKind.TOO_LARGE: 413, RefusalKind.RETRY_LATER: 503, RefusalKind.STORE_FAILED: 503,
}  # fmt: skip
_NO_FD_LIMIT = 1 << 16  # what an unlimited RLIMIT_NOFILE is taken as


def connection_room(max_connections: int, fd_limit: int) -> int:
    """Most connections the HTTP receiver holds at once, served, waiting or being answered 503: half the file
    descriptors the process may open (``fd_limit``), the other half left to the store, gRPC and the rest, and at
    least twice ``max_connections``. Past it a connection is reset: the process is short of descriptors."""
    return max(2 * max_connections, fd_limit // 2)


def fd_limit() -> int:
    """The file descriptors this process may open (its soft RLIMIT_NOFILE)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return _NO_FD_LIMIT if soft == resource.RLIM_INFINITY else soft


class _Refused(Exception):
    def __init__(self, status: int, reason: str, message: str, *, close: bool = False, retry: float = 0) -> None:
        super().__init__(message)
        self.status, self.reason, self.close, self.retry = status, reason, close, retry


def decode_json_request(body: bytes) -> ExportTraceServiceRequest:
    """OTLP JSON -> request. OTLP JSON writes ids as hex, protobuf's JSON mapping expects base64: convert first."""
    data = json.loads(body)
    if not isinstance(data, dict):
        raise ValueError("the body is not a JSON object")
    for rs in _objects(data.get("resourceSpans")):
        for ss in _objects(rs.get("scopeSpans")):
            for span in _objects(ss.get("spans")):
                _ids_to_b64(span)
                for link in _objects(span.get("links")):
                    _ids_to_b64(link)
    request = ExportTraceServiceRequest()
    json_format.ParseDict(data, request, ignore_unknown_fields=True)
    return request


def _objects(value: Any) -> list[dict[str, Any]]:
    """The JSON objects of a list field (anything else is left for ParseDict to refuse)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _ids_to_b64(obj: dict[str, Any]) -> None:
    for key in ("traceId", "spanId", "parentSpanId"):
        value = obj.get(key)
        if isinstance(value, str) and value:
            obj[key] = base64.b64encode(bytes.fromhex(value)).decode()


def _to_protobuf(body: bytes, as_json: bool, decode: Callable[[bytes], Message] = decode_json_request) -> bytes:
    """The request as protobuf bytes (JSON is decoded by ``decode`` and re-encoded; protobuf passes as is)."""
    if not as_json:
        return body
    try:
        return bytes(decode(body).SerializeToString())
    except (DecodeError, json_format.ParseError, ValueError, TypeError, AttributeError, RecursionError) as exc:
        raise Malformed(f"the body is not OTLP JSON: {type(exc).__name__}: {str(exc)[:200]}") from None


class _Charge:
    """What one request holds of the memory limit; grows as the body arrives and once more before decoding."""

    def __init__(self, limiter: MemoryLimiter) -> None:
        self._limiter = limiter
        self.held = 0

    def grow_to(self, amount: int) -> None:
        if amount > self.held:
            self.held += self._limiter.acquire(amount - self.held)

    def release(self) -> None:
        self._limiter.release(self.held)
        self.held = 0


class _QuietProtocolErrors(logging.Filter):
    """uvicorn logs every unparseable request at WARNING; they are counted instead (a flood would flood logs)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "Invalid HTTP request received."


_server_log = logging.getLogger(__name__ + ".server")
_server_log.addFilter(_QuietProtocolErrors())


class HttpReceiver:
    """uvicorn on ``host:port`` (port 0 = any free port; see :attr:`port`), served from its own thread."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        ingest: Callable[[bytes, str], IngestResult],
        metrics: CollectorMetrics,
        token: str | None,
        max_request_bytes: int,
        limiter: MemoryLimiter,
        threads: int = 8,
        max_connections: int = 256,
        timeout: float = 30.0,
        retry_after: float = 1.0,
        admission_wait: float = 1.0,
        ingest_logs: Callable[[bytes, str], IngestResult] | None = None,
    ) -> None:
        self.ingest = ingest
        self.ingest_logs = ingest_logs
        self.metrics = metrics
        self.token = token
        self.max_request_bytes = max_request_bytes
        self.limiter = limiter
        self.max_connections = max_connections
        self.connection_room = connection_room(max_connections, fd_limit())
        self.admission_wait = admission_wait
        self.slots = _Slots(max_connections)
        self.timeout = timeout
        self.retry_after = retry_after
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._socket.bind((host, port))
        except OSError as exc:
            self._socket.close()
            raise OSError(f"cannot bind OTLP/HTTP receiver to {host}:{port}: {exc.strerror}") from None
        self._socket.listen(128)
        self._socket.setblocking(False)
        self.host = host
        self.port: int = self._socket.getsockname()[1]
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="otlp-http")
        config = uvicorn.Config(
            self._app, http=_protocol(self), interface="asgi3", lifespan="off", log_config=None, access_log=False,
            proxy_headers=False,
            timeout_keep_alive=max(1, min(5, int(timeout))), server_header=False, date_header=False,
            h11_max_incomplete_event_size=64 * 1024, timeout_graceful_shutdown=2,
        )  # fmt: skip
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.run, args=([self._socket],), name="otlp-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)

    @property
    def waiting(self) -> int:
        """Connections waiting for one of the ``max_connections`` slots."""
        return len(self.slots.waiting)

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(5)
        self._socket.close()
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- the ASGI application ------------------------------------------------------------------------------------
    async def _app(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        media = headers.get("content-type", "").split(";")[0].strip().lower()
        as_json = media == JSON
        logs = scope["path"] == LOGS_PATH and self.ingest_logs is not None
        charge = _Charge(self.limiter)
        try:
            declared = self._check(scope, headers, media)
            body = await self._read_body(receive, declared, charge)
            body = self._inflate(body, headers.get("content-encoding", "identity").strip().lower())
            charge.grow_to(self.limiter.cost(len(body)))
            loop = asyncio.get_running_loop()
            result = await loop.run_in_executor(self._pool, self._decode_and_ingest, body, as_json, logs)
        except _Disconnected:
            return  # the client hung up: nobody to answer
        except _Refused as refused:
            await self._fail(send, refused, as_json, logs)
            return
        except OverLimit as exc:
            refusal = over_limit_refusal(exc, self.retry_after)
            # Retry-After even on a 413, and the connection closed: the memory limit answers as it always has
            await self._fail(send, _refused(refusal, close=True, retry=self.retry_after), as_json, logs)
            return
        finally:
            charge.release()
        await _reply(send, 200, logs_response(result) if logs else export_response(result), as_json)

    def _check(self, scope: _Scope, headers: dict[str, str], media: str) -> int | None:
        """Everything decidable from the headers; returns the declared length (None: chunked)."""
        if scope["path"] != PATH and not (scope["path"] == LOGS_PATH and self.ingest_logs is not None):
            raise _Refused(404, REFUSE_NOT_FOUND, f"unknown path {scope['path']!r}; POST {PATH}", close=True)
        if scope["method"] != "POST":
            raise _Refused(405, REFUSE_NOT_FOUND, f"only POST {PATH}", close=True)
        if not bearer_ok(headers.get("authorization"), self.token):
            raise _Refused(401, REFUSE_UNAUTHENTICATED, "missing or bad bearer token", close=True)
        if media not in (PROTOBUF, JSON):
            raise _Refused(415, REFUSE_MEDIA_TYPE, f"Content-Type must be {PROTOBUF} or {JSON}, not {media!r}",
                           close=True)  # fmt: skip
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("identity", "gzip", "deflate"):
            raise _Refused(415, REFUSE_MEDIA_TYPE, f"Content-Encoding {encoding!r} is not supported (gzip, deflate)",
                           close=True)  # fmt: skip
        length = headers.get("content-length")
        if length is None:
            return None  # chunked (h11 refuses a body with neither)
        declared = int(length)  # h11 accepted it: digits only
        if declared > self.max_request_bytes:
            raise _Refused(413, REFUSE_TOO_LARGE, f"request of {declared} bytes exceeds max_request_bytes="
                           f"{self.max_request_bytes}", close=True)  # fmt: skip
        return declared

    async def _read_body(self, receive: _Receive, declared: int | None, charge: _Charge) -> bytes:
        """The body, chunk by chunk: never more than max_request_bytes, never slower than the timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        chunks: list[bytes] = []
        size = 0
        if declared is not None:
            charge.grow_to(declared)
        while True:
            remaining = deadline - loop.time()
            try:
                if remaining <= 0:
                    raise TimeoutError
                message = await asyncio.wait_for(receive(), remaining)
            except (TimeoutError, asyncio.TimeoutError):
                raise _Refused(408, REFUSE_TIMEOUT, f"the request did not arrive within {self.timeout:g}s",
                               close=True) from None  # fmt: skip
            if message["type"] == "http.disconnect":
                raise _Disconnected
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_request_bytes:
                raise _Refused(413, REFUSE_TOO_LARGE, f"request exceeds max_request_bytes={self.max_request_bytes}",
                               close=True)  # fmt: skip
            charge.grow_to(size)
            if chunk:
                chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _inflate(self, body: bytes, encoding: str) -> bytes:
        if encoding not in ("gzip", "deflate"):
            return body
        limit = self.max_request_bytes
        inflater = zlib.decompressobj(wbits=31 if encoding == "gzip" else 15)
        try:
            out = inflater.decompress(body, limit + 1)
        except zlib.error as exc:
            raise _Refused(400, REFUSE_MALFORMED, f"bad {encoding} body: {exc}") from None
        if len(out) > limit:
            raise _Refused(413, REFUSE_TOO_LARGE, f"decompressed request exceeds max_request_bytes={limit}",
                           close=True)  # fmt: skip
        return out

    def _decode_and_ingest(self, body: bytes, as_json: bool, logs: bool = False) -> IngestResult:
        """On a receiver thread: decode, store; every failure becomes the answer the client should get."""
        try:
            if logs and self.ingest_logs is not None:
                return self.ingest_logs(_to_protobuf(body, as_json, decode_json_logs), "http")
            return self.ingest(_to_protobuf(body, as_json), "http")
        except Exception as exc:
            raise _refused(ingest_refusal(exc, _log)) from None

    async def _fail(self, send: _Send, refused: _Refused, as_json: bool, logs: bool = False) -> None:
        self.metrics.requests_refused.labels("http_logs" if logs else "http", refused.reason).inc()
        headers: dict[str, str] = {}
        if refused.retry:
            headers["retry-after"] = str(max(1, round(refused.retry)))
        if refused.close:
            headers["connection"] = "close"
        status = _status(_CODES.get(refused.status, code_pb2.INVALID_ARGUMENT), str(refused))
        await _reply(send, refused.status, status, as_json, headers)


class _Disconnected(Exception):
    pass


def _refused(refusal: Refusal, *, close: bool = False, retry: float | None = None) -> _Refused:
    """The HTTP answer to a refusal; ``retry`` overrides the refusal's own delay (0: no Retry-After header)."""
    message = refusal.message
    if refusal.kind is RefusalKind.STORE_FAILED:
        message = f"could not store the spans: {message}"
    delay = refusal.retry_after if retry is None else retry
    return _Refused(_STATUS[refusal.kind], refusal.reason, message, close=close, retry=delay)


async def _reply(
    send: _Send, status: int, message: Message, as_json: bool, extra: dict[str, str] | None = None
) -> None:
    payload = json_format.MessageToJson(message, indent=None).encode() if as_json else message.SerializeToString()
    headers = [(b"content-type", (JSON if as_json else PROTOBUF).encode()),
               (b"content-length", str(len(payload)).encode())]  # fmt: skip
    headers += [(k.encode(), v.encode()) for k, v in (extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def _status(code: int, message: str) -> Message:
    status: Message = status_pb2.Status(code=code, message=message)
    return status


def _busy_response(receiver: HttpReceiver, as_json: bool) -> bytes:
    """The whole HTTP answer to a request on a connection over ``receiver_max_connections``."""
    status = _status(code_pb2.UNAVAILABLE, f"more than {receiver.max_connections} connections; retry after the delay")
    body = json_format.MessageToJson(status, indent=None).encode() if as_json else status.SerializeToString()
    head = (
        f"HTTP/1.1 503 Service Unavailable\r\ncontent-type: {JSON if as_json else PROTOBUF}\r\n"
        f"content-length: {len(body)}\r\nretry-after: {max(1, round(receiver.retry_after))}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode() + body


class _Slots:
    """The connections served at once and those waiting for one, first come first served (event loop thread only)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.served = 0
        self.waiting: deque[Any] = deque()  # the Protocol of each waiting connection

    def free(self) -> bool:
        return self.served < self.cap and not self.waiting

    def leave(self) -> None:
        """A served connection closed: its slot goes to the oldest waiting connection."""
        self.served -= 1
        while self.served < self.cap and self.waiting:
            self.waiting.popleft().take_slot()


def _protocol(receiver: HttpReceiver) -> type[H11Protocol]:
    """uvicorn's h11 protocol with connection slots, a wait for one, and a deadline for a request's headers.

    Uses ``H11Protocol``'s internals (``connections``, ``cycle``, ``flow``, ``conn``): hence the uvicorn pin to one
    minor release in pyproject.toml.
    """
    slots = receiver.slots

    class Protocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.logger = _server_log
            self._deadline: asyncio.TimerHandle | None = None
            self._served = False  # holds one of the receiver_max_connections slots
            self._wait: asyncio.TimerHandle | None = None  # waiting for a slot, reading paused, until this fires
            self._over_cap = False  # answer this connection's request 503 + Retry-After, unread
            self._answered = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            """Within the slots, a connection is served. Over them it waits, unread, for a slot; one still waiting
            after ``admission_wait`` is answered (a reset is not retried by every OTLP exporter), without parsing: one
            503 to whatever it sends. Only past :func:`connection_room` is a connection reset at once."""
            if len(self.connections) >= receiver.connection_room:
                self.transport = transport
                receiver.metrics.requests_refused.labels("http", REFUSE_CONNECTION_LIMIT).inc()
                transport.abort()
                return
            super().connection_made(transport)
            if slots.free():
                self._served = True
                slots.served += 1
                self._arm()
            elif receiver.admission_wait > 0:
                transport.pause_reading()  # its request stays in the socket's buffers meanwhile
                slots.waiting.append(self)
                self._wait = self.loop.call_later(receiver.admission_wait, self._give_up_waiting)
            else:
                self._refuse_over_cap()

        def take_slot(self) -> None:
            """A slot freed while this connection waited: serve it."""
            if self._wait is not None:
                self._wait.cancel()
                self._wait = None
            self._served = True
            slots.served += 1
            self.transport.resume_reading()
            self._arm()

        def _give_up_waiting(self) -> None:
            self._wait = None
            slots.waiting.remove(self)
            self.transport.resume_reading()
            self._refuse_over_cap()

        def _refuse_over_cap(self) -> None:
            receiver.metrics.requests_refused.labels("http", REFUSE_CONNECTION_LIMIT).inc()
            self._over_cap = True
            self._arm()

        def data_received(self, data: bytes) -> None:
            if not self._over_cap:
                super().data_received(data)
            elif not self._answered:  # the request has begun: answer it, then discard the rest
                self._answered = True
                self.transport.write(_busy_response(receiver, b"application/json" in data[:4096].lower()))
                if self.transport.can_write_eof():
                    self.transport.write_eof()  # the client reads the answer, then closes (or the deadline does)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            if self._wait is not None:  # gave up waiting itself
                self._wait.cancel()
                self._wait = None
                slots.waiting.remove(self)
            if self._served:
                self._served = False
                slots.leave()
            if self.flow is None:  # reset in connection_made: nothing else was set up
                return
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def send_400_response(self, msg: str) -> None:
            receiver.metrics.requests_refused.labels("http", REFUSE_MALFORMED).inc()
            super().send_400_response(msg)

        def _arm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline = self.loop.call_later(receiver.timeout, self._expire)

        def _expire(self) -> None:
            """No request under way ``timeout`` after being served or answered, or after the last response: close
            (slow headers)."""
            self._deadline = None
            if self.cycle is not None and not self.cycle.response_complete:
                return  # a request is being read or handled: the application enforces its own deadline
            if not self.transport.is_closing():
                if self.conn.trailing_data[0]:  # headers half sent
                    receiver.metrics.requests_refused.labels("http", REFUSE_TIMEOUT).inc()
                self.transport.close()

    return Protocol
