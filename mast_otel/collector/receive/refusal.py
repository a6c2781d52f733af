"""What the outcome of an Export request means, whichever OTLP transport carried it.

Both receivers must agree on which failures a client may retry and under which ``requests_refused`` label each is
counted; kept here once, so that gRPC and HTTP cannot drift apart. Each receiver only maps a :class:`RefusalKind` to its
own status code (gRPC status, HTTP status and headers) and counts the refusal under its transport.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from mast_otel.collector.limits import OverLimit
from mast_otel.collector.metrics import REFUSE_INTERNAL, REFUSE_MALFORMED, REFUSE_MEMORY_LIMIT, REFUSE_TOO_LARGE
from mast_otel.collector.receive.ingest import Backpressure, IngestResult, Malformed, TooLarge

__all__ = ["Refusal", "RefusalKind", "export_response", "ingest_refusal", "over_limit_refusal"]

STORE_FAILED_RETRY_AFTER = 1.0  # seconds: a failed store write is worth retrying soon


class RefusalKind(enum.Enum):
    """How the client should treat a refused request."""

    MALFORMED = "malformed"  # never retry: gRPC INVALID_ARGUMENT, HTTP 400
    TOO_LARGE = "too_large"  # do not retry as is: RESOURCE_EXHAUSTED without RetryInfo, HTTP 413
    RETRY_LATER = "retry_later"  # full for now: RESOURCE_EXHAUSTED with RetryInfo, HTTP 503 + Retry-After
    STORE_FAILED = "store_failed"  # nothing was acknowledged, retry: UNAVAILABLE, HTTP 503 + Retry-After


@dataclass(frozen=True, slots=True)
class Refusal:
    """A refused request: how to answer (``kind``), what to count (``reason``, a ``metrics.REFUSE_*`` value).

    ``message`` is what the client is told; for :attr:`RefusalKind.STORE_FAILED` it is only the failure's type name
    (the traceback is logged, never sent), which each receiver words in its own reply. ``retry_after`` is in
    seconds; 0 for kinds a delay cannot help."""

    kind: RefusalKind
    reason: str
    message: str
    retry_after: float = 0.0


def ingest_refusal(exc: Exception, log: logging.Logger) -> Refusal:
    """The refusal for an exception out of ingesting a request; a store failure is logged on the receiver's ``log``."""
    if isinstance(exc, Malformed):
        return Refusal(RefusalKind.MALFORMED, REFUSE_MALFORMED, str(exc))
    if isinstance(exc, TooLarge):
        return Refusal(RefusalKind.TOO_LARGE, REFUSE_TOO_LARGE, str(exc))
    if isinstance(exc, Backpressure):
        return Refusal(RefusalKind.RETRY_LATER, exc.reason, str(exc), exc.retry_after)
    log.exception("could not store an Export request", exc_info=exc)
    return Refusal(RefusalKind.STORE_FAILED, REFUSE_INTERNAL, type(exc).__name__, STORE_FAILED_RETRY_AFTER)


def over_limit_refusal(exc: OverLimit, retry_after: float) -> Refusal:
    """The refusal for a request the memory limit has no room for: never (``permanent``), or not now."""
    if exc.permanent:
        return Refusal(RefusalKind.TOO_LARGE, REFUSE_TOO_LARGE, str(exc))
    return Refusal(RefusalKind.RETRY_LATER, REFUSE_MEMORY_LIMIT, str(exc), retry_after)


def export_response(result: IngestResult) -> ExportTraceServiceResponse:
    """The answer to a stored request: empty, or a partial success naming the spans that were rejected."""
    response = ExportTraceServiceResponse()
    if result.rejected:
        response.partial_success.rejected_spans = result.rejected
        response.partial_success.error_message = result.message
    return response
