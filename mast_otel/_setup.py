"""A TracerProvider for programs that set none: OTLP, configured from the standard ``OTEL_*`` variables."""

from __future__ import annotations

import logging
import os

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

_log = logging.getLogger(__name__)


def has_tracer_provider() -> bool:
    """True once the program (or opentelemetry-instrument's configurator) has set a global provider."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def otlp_exporter_from_env() -> SpanExporter:
    """OTLP/gRPC by default (localhost:4317); ``OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL=http/protobuf`` for HTTP."""
    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "grpc"
    ).strip()
    if protocol.startswith("http"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HTTPExporter

        return HTTPExporter()
    if protocol != "grpc":
        _log.warning("OTEL_EXPORTER_OTLP_PROTOCOL=%r is not grpc or http/protobuf; using grpc", protocol)
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GRPCExporter

    return GRPCExporter()


def ensure_tracer_provider() -> None:
    """Install an SDK TracerProvider with a batching OTLP exporter unless the program already set one."""
    if has_tracer_provider() or os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return
    provider = TracerProvider(resource=Resource.create())
    provider.add_span_processor(BatchSpanProcessor(otlp_exporter_from_env()))
    trace.set_tracer_provider(provider)
    _log.debug("mast-otel configured a TracerProvider exporting OTLP")
