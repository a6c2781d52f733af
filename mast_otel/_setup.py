"""A TracerProvider for programs that set none: OTLP, configured from the standard ``OTEL_*`` variables.

Two promises shape it (docs/robustness.md):

- **It never raises into the program.** The SDK raises on some values of its own variables (a negative span
  limit, a batch larger than the queue; the exporter's are checked in ``mast_otel._exporter``). Each variable the
  SDK would raise on is checked here first: a bad value is counted (kind ``config.<VARIABLE>`` in
  ``mast_otel.recording_failures()``), logged once without its value, and the SDK is handed what it would have
  used had the variable been absent. Anything else that fails while building the provider is counted as
  ``setup.provider`` and leaves the program without a provider of ours: nothing is exported, nothing raises.
- **It draws nothing from the program's randomness** (``mast_otel._ids``): ids from ``os.urandom``, the resource's
  ``service.instance.id`` from ``os.urandom`` instead of the SDK's ``uuid.uuid4()``, with or without the detectors
  ``OTEL_EXPERIMENTAL_RESOURCE_DETECTORS`` names; the exporter's imports and retries draw nothing either.
"""

from __future__ import annotations

import logging
import os
import sys
import uuid
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk import resources
from opentelemetry.sdk.resources import SERVICE_INSTANCE_ID, SERVICE_NAME, Resource, ResourceDetector
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from ._exporter import bad_value, env, otlp_exporter_from_env, parse_int
from ._ids import UrandomIdGenerator
from ._safety import record_failure

_log = logging.getLogger(__name__)


def has_tracer_provider() -> bool:
    """True once the program (or opentelemetry-instrument's configurator) has set a global provider."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def ensure_tracer_provider() -> None:
    """Install an SDK TracerProvider with a batching OTLP exporter unless the program already set one; never
    raises (see the module docstring)."""
    try:
        if has_tracer_provider() or env("OTEL_SDK_DISABLED").strip().lower() == "true":
            return
        provider = TracerProvider(resource=own_resource(), id_generator=UrandomIdGenerator(), span_limits=span_limits())
        provider.add_span_processor(BatchSpanProcessor(otlp_exporter_from_env(), **batch_settings()))
        trace.set_tracer_provider(provider)
        _log.debug("mast-otel configured a TracerProvider exporting OTLP")
    except Exception as exc:
        record_failure(
            "setup.provider",
            exc,
            note=f"mast-otel could not build its TracerProvider from the OTEL_* variables ({type(exc).__name__}); "
            "no span is exported",
        )


# -- limits and batching ----------------------------------------------------------------------------------------
_LIMIT_VARIABLES = (
    "OTEL_ATTRIBUTE_COUNT_LIMIT",
    "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT",
    "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT",
    "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT",
    "OTEL_SPAN_EVENT_COUNT_LIMIT",
    "OTEL_SPAN_LINK_COUNT_LIMIT",
    "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT",
    "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT",
)
_ABSENT = object()
_SDK_DEFAULT_COUNT = 128  # every count limit's default in the SDK (opentelemetry.sdk.trace._DEFAULT_OTEL_*)


def span_limits() -> SpanLimits | None:
    """None (the SDK reads the limits itself) unless a limit variable is bad; then the limits the SDK would read
    with each bad variable absent (it raises on a value that is not a non-negative integer)."""
    values: dict[str, Any] = {}
    for name in _LIMIT_VARIABLES:
        raw = os.environ.get(name)
        if raw is None:
            values[name] = _ABSENT
        elif raw.strip() == "":
            values[name] = None  # the SDK's "unset": no limit
        elif (value := parse_int(raw.strip().lower())) is not None and value >= 0:  # what the SDK accepts
            values[name] = value
        else:
            bad_value(name, raw, "a non-negative integer", "the SDK's default")
            values[name] = _ABSENT
    if not any(name in os.environ and values[name] is _ABSENT for name in _LIMIT_VARIABLES):
        return None

    def given(name: str, default: int | None) -> int:
        value = default if values[name] is _ABSENT else values[name]
        return SpanLimits.UNSET if value is None else int(value)

    overall = values["OTEL_ATTRIBUTE_COUNT_LIMIT"]
    per_kind = _SDK_DEFAULT_COUNT if overall is _ABSENT or overall is None else overall
    length = (
        None if values["OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"] is _ABSENT else values["OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"]
    )
    return SpanLimits(
        max_attributes=given("OTEL_ATTRIBUTE_COUNT_LIMIT", _SDK_DEFAULT_COUNT),
        max_events=given("OTEL_SPAN_EVENT_COUNT_LIMIT", _SDK_DEFAULT_COUNT),
        max_links=given("OTEL_SPAN_LINK_COUNT_LIMIT", _SDK_DEFAULT_COUNT),
        max_span_attributes=given("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", per_kind),
        max_event_attributes=given("OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", per_kind),
        max_link_attributes=given("OTEL_LINK_ATTRIBUTE_COUNT_LIMIT", per_kind),
        max_attribute_length=given("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", None),
        max_span_attribute_length=given("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", length),
    )


_BATCH_DEFAULTS = {  # variable: (BatchSpanProcessor argument, the SDK's default)
    "OTEL_BSP_MAX_QUEUE_SIZE": ("max_queue_size", 2048),
    "OTEL_BSP_SCHEDULE_DELAY": ("schedule_delay_millis", 5000),
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": ("max_export_batch_size", 512),
    "OTEL_BSP_EXPORT_TIMEOUT": ("export_timeout_millis", 30000),
}


def batch_settings() -> dict[str, Any]:
    """The BatchSpanProcessor's arguments, every one given (the SDK raises on a non-positive value, and on a batch
    larger than the queue); a bad value is replaced by the SDK's default."""
    settings: dict[str, Any] = {}
    for name, (argument, default) in _BATCH_DEFAULTS.items():
        raw = env(name).strip()
        try:
            value = int(raw) if raw else default
        except ValueError:
            value = 0
        if value <= 0:
            bad_value(name, raw, "a positive integer", str(default))
            value = default
        settings[argument] = value
    if settings["max_export_batch_size"] > settings["max_queue_size"]:
        batch = min(_BATCH_DEFAULTS["OTEL_BSP_MAX_EXPORT_BATCH_SIZE"][1], settings["max_queue_size"])
        bad_value("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), "at most the queue size",
             str(batch))  # fmt: skip
        settings["max_export_batch_size"] = batch
    return settings


# -- the resource -----------------------------------------------------------------------------------------------
class _InstanceId(ResourceDetector):
    """The SDK's ``service.instance.id`` detector, with the id from ``os.urandom`` instead of ``uuid.uuid4()``."""

    def __init__(self, instance_id: str) -> None:
        super().__init__()
        self.instance_id = instance_id

    def detect(self) -> Resource:
        return Resource({SERVICE_INSTANCE_ID: self.instance_id})


def own_resource() -> Resource:
    """What ``Resource.create()`` builds (with the detectors ``OTEL_EXPERIMENTAL_RESOURCE_DETECTORS`` names, if
    any), minus its one ``uuid.uuid4()`` draw: ``service.instance.id`` comes from ``os.urandom``."""
    instance = _InstanceId(str(uuid.UUID(bytes=os.urandom(16), version=4)))
    detectors = [
        instance if isinstance(d, resources.ServiceInstanceIdResourceDetector) else d
        for d in resources._build_resource_detectors()
    ]
    resource = resources.get_aggregated_resources(detectors, resources._DEFAULT_RESOURCE)
    if not resource.attributes.get(SERVICE_NAME):
        executable = f":{os.path.basename(sys.executable)}" if sys.executable else ""
        resource = resource.merge(Resource({SERVICE_NAME: f"unknown_service{executable}"}))
    return resource
