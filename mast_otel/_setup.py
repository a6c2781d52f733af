"""A TracerProvider for programs that set none: OTLP, configured from the standard ``OTEL_*`` variables."""

from __future__ import annotations

import logging
import os
import sys
import uuid

from opentelemetry import trace
from opentelemetry.sdk.environment_variables import OTEL_EXPERIMENTAL_RESOURCE_DETECTORS
from opentelemetry.sdk.resources import (
    SERVICE_INSTANCE_ID,
    SERVICE_NAME,
    TELEMETRY_SDK_LANGUAGE,
    TELEMETRY_SDK_NAME,
    TELEMETRY_SDK_VERSION,
    OTELResourceDetector,
    Resource,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.version import __version__ as sdk_version

from ._ids import UrandomIdGenerator

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
    """Install an SDK TracerProvider with a batching OTLP exporter unless the program already set one.

    Its ids come from ``os.urandom``, not the SDK's default (the global ``random``): see ``mast_otel._ids``.
    """
    if has_tracer_provider() or os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return
    provider = TracerProvider(resource=own_resource(), id_generator=UrandomIdGenerator())
    provider.add_span_processor(BatchSpanProcessor(otlp_exporter_from_env()))
    trace.set_tracer_provider(provider)
    _log.debug("mast-otel configured a TracerProvider exporting OTLP")


def own_resource() -> Resource:
    """What ``Resource.create()`` builds, minus its one ``uuid.uuid4()`` draw.

    The SDK's ``service.instance.id`` detector calls ``uuid.uuid4()``; here that id comes from ``os.urandom``.
    ``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME`` apply as usual. A program that configures extra detectors
    (``OTEL_EXPERIMENTAL_RESOURCE_DETECTORS``) gets ``Resource.create()`` itself: it asked for the SDK's detection.
    """
    if os.environ.get(OTEL_EXPERIMENTAL_RESOURCE_DETECTORS, "").strip():
        return Resource.create()
    resource = Resource(
        {
            TELEMETRY_SDK_LANGUAGE: "python",
            TELEMETRY_SDK_NAME: "opentelemetry",
            TELEMETRY_SDK_VERSION: sdk_version,
            SERVICE_INSTANCE_ID: str(uuid.UUID(bytes=os.urandom(16), version=4)),
        }
    ).merge(OTELResourceDetector().detect())
    if not resource.attributes.get(SERVICE_NAME):
        executable = f":{os.path.basename(sys.executable)}" if sys.executable else ""
        resource = resource.merge(Resource({SERVICE_NAME: f"unknown_service{executable}"}))
    return resource
