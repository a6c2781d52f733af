"""OTLP/HTTP receiver: ``POST /v1/traces`` with ``application/x-protobuf`` or ``application/json`` bodies.

Status codes follow the OTLP/HTTP spec, so standard exporters retry exactly what is worth retrying: 200 (with
partial success when some spans were rejected), 400 malformed body, 401 bad or missing bearer token, 404 other
path, 405 other method, 411 no Content-Length, 413 over ``max_request_bytes`` (checked on the declared length and
again after gzip/deflate decompression), 415 other content type or encoding, 503 + ``Retry-After`` when the store
is full. Error bodies are a ``google.rpc.Status`` in the request's encoding.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from google.rpc import code_pb2, status_pb2  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from .auth import bearer_ok
from .ingest import Backpressure, IngestResult
from .metrics import (
    REFUSE_BACKPRESSURE,
    REFUSE_INTERNAL,
    REFUSE_MALFORMED,
    REFUSE_MEDIA_TYPE,
    REFUSE_NOT_FOUND,
    REFUSE_TOO_LARGE,
    REFUSE_UNAUTHENTICATED,
    CollectorMetrics,
)

__all__ = ["HttpReceiver", "decode_json_request"]

_log = logging.getLogger(__name__)
PATH = "/v1/traces"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_DRAIN_LIMIT = 64 * 1024  # refused bodies up to this size are read so the connection can be kept alive


class _Refused(Exception):
    def __init__(self, status: int, reason: str, message: str, *, close: bool = False) -> None:
        super().__init__(message)
        self.status, self.reason, self.close = status, reason, close


def decode_json_request(body: bytes) -> ExportTraceServiceRequest:
    """OTLP JSON -> request. OTLP JSON writes ids as hex, protobuf's JSON mapping expects base64: convert first."""
    data = json.loads(body)
    if not isinstance(data, dict):
        raise ValueError("the body is not a JSON object")
    for rs in data.get("resourceSpans") or ():
        for ss in rs.get("scopeSpans") or ():
            for span in ss.get("spans") or ():
                _ids_to_b64(span)
                for link in span.get("links") or ():
                    _ids_to_b64(link)
    request = ExportTraceServiceRequest()
    json_format.ParseDict(data, request, ignore_unknown_fields=True)
    return request


def _ids_to_b64(obj: dict[str, Any]) -> None:
    for key in ("traceId", "spanId", "parentSpanId"):
        value = obj.get(key)
        if isinstance(value, str) and value:
            obj[key] = base64.b64encode(bytes.fromhex(value)).decode()


class HttpReceiver:
    """A ``ThreadingHTTPServer`` on ``host:port`` (port 0 = any free port; see :attr:`port`)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        ingest: Callable[[ExportTraceServiceRequest, str, int, bytes | None], IngestResult],
        metrics: CollectorMetrics,
        token: str | None,
        max_request_bytes: int,
    ) -> None:
        receiver = self

        class Handler(_Handler):
            owner = receiver

        self.ingest = ingest
        self.metrics = metrics
        self.token = token
        self.max_request_bytes = max_request_bytes
        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.host = host
        self.port: int = self._server.server_address[1]
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.1,), name="otlp-http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner: HttpReceiver

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("otlp-http %s " + format, self.client_address[0], *args)

    def do_GET(self) -> None:
        self._fail(_Refused(405, REFUSE_NOT_FOUND, "only POST /v1/traces"), json_body=False)

    do_PUT = do_DELETE = do_PATCH = do_GET

    def do_POST(self) -> None:
        self._consumed = False
        media = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        as_json = media == JSON
        try:
            body = self._read_body(media)
            request = self._decode(body, as_json)
            result = self.owner.ingest(request, "http", len(body), None if as_json else body)
        except _Refused as refused:
            self._fail(refused, json_body=as_json)
            return
        except Backpressure as exc:
            self.owner.metrics.requests_refused.labels("http", REFUSE_BACKPRESSURE).inc()
            retry = max(1, round(exc.retry_after))
            self._reply(503, _status(code_pb2.UNAVAILABLE, str(exc)), as_json, {"Retry-After": str(retry)})
            return
        except Exception as exc:  # the store failed: nothing was acknowledged, so the client must retry
            _log.exception("could not store an Export request")
            self.owner.metrics.requests_refused.labels("http", REFUSE_INTERNAL).inc()
            message = f"could not store the spans: {type(exc).__name__}"
            self._reply(503, _status(code_pb2.UNAVAILABLE, message), as_json, {"Retry-After": "1"})
            return
        response = ExportTraceServiceResponse()
        if result.rejected:
            response.partial_success.rejected_spans = result.rejected
            response.partial_success.error_message = result.message
        self._reply(200, response, as_json)

    def _read_body(self, media: str) -> bytes:
        owner = self.owner
        if self.path.split("?")[0] != PATH:
            raise _Refused(404, REFUSE_NOT_FOUND, f"unknown path {self.path.split('?')[0]!r}; POST {PATH}")
        if not bearer_ok(self.headers.get("Authorization"), owner.token):
            raise _Refused(401, REFUSE_UNAUTHENTICATED, "missing or bad bearer token", close=True)
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            raise _Refused(411, REFUSE_MALFORMED, "Content-Length is required", close=True)
        try:
            length = int(length_header)
        except ValueError:
            raise _Refused(400, REFUSE_MALFORMED, "bad Content-Length", close=True) from None
        if length > owner.max_request_bytes:
            raise _Refused(
                413, REFUSE_TOO_LARGE, f"request of {length} bytes exceeds max_request_bytes={owner.max_request_bytes}",
                close=True,
            )  # fmt: skip
        body = self.rfile.read(length)
        self._consumed = True
        if media not in (PROTOBUF, JSON):
            raise _Refused(415, REFUSE_MEDIA_TYPE, f"Content-Type must be {PROTOBUF} or {JSON}, not {media!r}")
        encoding = (self.headers.get("Content-Encoding") or "identity").strip().lower()
        if encoding in ("gzip", "deflate"):
            body = self._inflate(body, encoding)
        elif encoding != "identity":
            raise _Refused(415, REFUSE_MEDIA_TYPE, f"Content-Encoding {encoding!r} is not supported (gzip, deflate)")
        return body

    def _inflate(self, body: bytes, encoding: str) -> bytes:
        limit = self.owner.max_request_bytes
        inflater = zlib.decompressobj(wbits=31 if encoding == "gzip" else 15)
        try:
            out = inflater.decompress(body, limit + 1)
        except zlib.error as exc:
            raise _Refused(400, REFUSE_MALFORMED, f"bad {encoding} body: {exc}") from None
        if len(out) > limit:
            raise _Refused(413, REFUSE_TOO_LARGE, f"decompressed request exceeds max_request_bytes={limit}")
        return out

    @staticmethod
    def _decode(body: bytes, as_json: bool) -> ExportTraceServiceRequest:
        try:
            if as_json:
                return decode_json_request(body)
            return ExportTraceServiceRequest.FromString(body)
        except (DecodeError, json_format.ParseError, ValueError, TypeError, AttributeError) as exc:
            kind = "OTLP JSON" if as_json else "an OTLP protobuf request"
            raise _Refused(400, REFUSE_MALFORMED, f"the body is not {kind}: {exc}") from None

    def _fail(self, refused: _Refused, *, json_body: bool) -> None:
        self.owner.metrics.requests_refused.labels("http", refused.reason).inc()
        if refused.close:
            self.close_connection = True
        else:
            self._drain()
        code = {400: code_pb2.INVALID_ARGUMENT, 401: code_pb2.UNAUTHENTICATED, 404: code_pb2.NOT_FOUND,
                413: code_pb2.RESOURCE_EXHAUSTED}.get(refused.status, code_pb2.INVALID_ARGUMENT)  # fmt: skip
        self._reply(refused.status, _status(code, str(refused)), json_body)

    def _drain(self) -> None:
        """Read what is left of a refused body so the keep-alive connection stays usable; else close it."""
        try:
            remaining = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            remaining = 0
        if getattr(self, "_consumed", False) or not remaining:
            return
        if remaining > _DRAIN_LIMIT:
            self.close_connection = True
        else:
            self._consumed = True
            self.rfile.read(remaining)

    def _reply(self, status: int, message: Message, as_json: bool, headers: dict[str, str] | None = None) -> None:
        if as_json:
            payload = json_format.MessageToJson(message, indent=None).encode()
        else:
            payload = message.SerializeToString()
        self.send_response(status)
        self.send_header("Content-Type", JSON if as_json else PROTOBUF)
        self.send_header("Content-Length", str(len(payload)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)


def _status(code: int, message: str) -> Message:
    status: Message = status_pb2.Status(code=code, message=message)
    return status
