"""A TracerProvider for programs that set none: OTLP, configured from the standard ``OTEL_*`` variables.

Two promises shape it (docs/robustness.md):

- **It never raises into the program.** The SDK raises on some values of its own variables (a gRPC exporter with
  ``OTEL_EXPORTER_OTLP_COMPRESSION=bogus`` or ``OTEL_EXPORTER_OTLP_TIMEOUT=abc``, a negative span limit, a batch
  larger than the queue). Each variable the SDK would raise on is checked here first: a bad value is counted
  (kind ``config.<VARIABLE>`` in ``mast_otel.recording_failures()``), logged once, and the SDK is handed what it
  would have used had the variable been absent. Anything else that fails while building the provider is counted
  as ``setup.provider`` and leaves the program without a provider of ours: nothing is exported, nothing raises.
- **It draws nothing from the program's randomness** (``mast_otel._ids``): ids from ``os.urandom``, the resource's
  ``service.instance.id`` from ``os.urandom`` instead of the SDK's ``uuid.uuid4()`` (also while the exporter's
  modules are first imported: one of them builds a resource at import time), and the exporter's retry jitter from a
  ``random.Random`` of its own instead of the global ``random``.
"""

from __future__ import annotations

import importlib
import logging
import math
import os
import random
import sys
import types
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlparse

from opentelemetry import trace
from opentelemetry.sdk import resources
from opentelemetry.sdk.resources import SERVICE_INSTANCE_ID, SERVICE_NAME, Resource, ResourceDetector
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from ._ids import UrandomIdGenerator
from ._safety import record_failure

_log = logging.getLogger(__name__)

_GRPC_EXPORTER = "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"
_HTTP_EXPORTER = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
_DEFAULT_TIMEOUT_S = 10.0

# The exporters' retry back-off jitter: mast-otel's own stream, seeded from os.urandom, never the program's.
_JITTER = random.Random(int.from_bytes(os.urandom(16), "big"))


def has_tracer_provider() -> bool:
    """True once the program (or opentelemetry-instrument's configurator) has set a global provider."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def ensure_tracer_provider() -> None:
    """Install an SDK TracerProvider with a batching OTLP exporter unless the program already set one; never
    raises (see the module docstring)."""
    try:
        if has_tracer_provider() or _env("OTEL_SDK_DISABLED").strip().lower() == "true":
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


# -- the exporter -----------------------------------------------------------------------------------------------
def otlp_exporter_from_env() -> SpanExporter:
    """OTLP/gRPC by default (localhost:4317); ``OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL=http/protobuf`` for HTTP.

    Values the exporter would raise on are replaced by their defaults (counted); the exporter's retry jitter is
    mast-otel's own (:func:`private_jitter`)."""
    protocol = (_env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or _env("OTEL_EXPORTER_OTLP_PROTOCOL") or "grpc").strip()
    timeout = _first_valid(("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"), _timeout)
    if protocol.startswith("http"):
        http = _import_quietly(_HTTP_EXPORTER)
        compression = _first_valid(
            ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"),
            _compression(("none", "gzip", "deflate")),
        )
        exporter: SpanExporter = http.OTLPSpanExporter(
            timeout=_DEFAULT_TIMEOUT_S if timeout is None else timeout,
            compression=http.Compression(compression or "none"),
        )
        return private_jitter(exporter)
    if protocol != "grpc":
        _bad("OTEL_EXPORTER_OTLP_PROTOCOL", protocol, "grpc or http/protobuf", "grpc")
    grpc_exporter = _import_quietly(_GRPC_EXPORTER)
    import grpc

    compression = _first_valid(
        ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"), _compression(("none", "gzip"))
    )
    kwargs: dict[str, Any] = {
        "timeout": _DEFAULT_TIMEOUT_S if timeout is None else timeout,
        "compression": grpc.Compression.Gzip if compression == "gzip" else grpc.Compression.NoCompression,
        "endpoint": _first_valid(("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"), _endpoint)
        or "http://localhost:4317",
    }
    codes = _env("OTEL_PYTHON_EXPORTER_OTLP_GRPC_RETRYABLE_ERROR_CODES")
    if codes and not all(c.strip().upper() in grpc.StatusCode.__members__ for c in codes.split(",") if c.strip()):
        _bad("OTEL_PYTHON_EXPORTER_OTLP_GRPC_RETRYABLE_ERROR_CODES", codes, "gRPC status code names", "the default")
        kwargs["retryable_error_codes"] = importlib.import_module(
            "opentelemetry.exporter.otlp.proto.grpc.exporter"
        )._RETRYABLE_ERROR_CODES
    cls = grpc_exporter.OTLPSpanExporter
    if "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT" not in os.environ:
        return private_jitter(cls(**kwargs))
    # The gRPC span exporter parses this variable with float() even when given a timeout, and raises on a bad
    # value ("" included): its __init__ runs with an environment that lacks it (the timeout is given above).
    environ = {k: v for k, v in os.environ.items() if k != "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"}
    exporter = cls.__new__(cls)
    _with_global(cls.__init__, "environ", environ)(exporter, **kwargs)
    return private_jitter(exporter)


def private_jitter(exporter: SpanExporter) -> SpanExporter:
    """Give ``exporter`` (and its HTTP client) a retry jitter of mast-otel's own; returns ``exporter``.

    The SDK's OTLP exporters compute their back-off with the module-level ``random.uniform`` (the HTTP exporter
    before every attempt, the gRPC one before every retry), which shifts what a seeded program draws next. Each of
    this object's methods that reads the global ``random`` gets a copy bound to this instance alone, identical but
    for that one global, which is :data:`_JITTER`: the same back-off law, the program's exporters untouched.
    """
    for target in (exporter, getattr(exporter, "_client", None)):
        if target is None:
            continue
        seen: set[str] = set()
        for klass in type(target).__mro__:
            for name, attr in vars(klass).items():
                if name in seen:
                    continue
                seen.add(name)
                if isinstance(attr, types.FunctionType) and attr.__globals__.get("random") is random:
                    if _reads_global(attr.__code__, "random"):
                        setattr(target, name, types.MethodType(_with_global(attr, "random", _JITTER), target))
    return exporter


def _reads_global(code: types.CodeType, name: str) -> bool:
    return name in code.co_names or any(
        isinstance(const, types.CodeType) and _reads_global(const, name) for const in code.co_consts
    )


def _with_global(fn: types.FunctionType, name: str, value: object) -> types.FunctionType:
    """``fn`` with the global ``name`` read as ``value`` (its module's other globals as they are now)."""
    copy = types.FunctionType(fn.__code__, {**fn.__globals__, name: value}, fn.__name__, fn.__defaults__,
                              fn.__closure__)  # fmt: skip
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__qualname__ = fn.__qualname__
    return copy


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
        elif raw.strip().lstrip("+").isdigit() and raw.strip().isascii():
            values[name] = int(raw.strip())
        else:
            _bad(name, raw, "a non-negative integer", "the SDK's default")
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
        raw = _env(name).strip()
        try:
            value = int(raw) if raw else default
        except ValueError:
            value = 0
        if value <= 0:
            _bad(name, raw, "a positive integer", str(default))
            value = default
        settings[argument] = value
    if settings["max_export_batch_size"] > settings["max_queue_size"]:
        batch = min(_BATCH_DEFAULTS["OTEL_BSP_MAX_EXPORT_BATCH_SIZE"][1], settings["max_queue_size"])
        _bad("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", _env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), "at most the queue size",
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


def _import_quietly(module: str) -> Any:
    """Import ``module`` without a ``uuid.uuid4()`` draw: importing the OTLP exporters imports the SDK's log
    module, whose class body calls ``Resource.create()``; in a process that has made no resource yet, that draws
    ``service.instance.id``. Until the import is done the SDK finds an id from ``os.urandom`` and draws nothing;
    then the id is forgotten again, so the program's own first resource draws just as it would without mast-otel."""
    if module in sys.modules:
        return sys.modules[module]
    with _instance_id_from_urandom():
        return importlib.import_module(module)


@contextmanager
def _instance_id_from_urandom() -> Iterator[None]:
    lent = str(uuid.UUID(bytes=os.urandom(16), version=4))
    with resources._service_instance_id_lock:
        lend = resources._service_instance_id is None
        if lend:
            resources._service_instance_id, resources._service_instance_id_pid = lent, os.getpid()
    try:
        yield
    finally:
        if lend:
            with resources._service_instance_id_lock:
                if resources._service_instance_id == lent:
                    resources._service_instance_id = resources._service_instance_id_pid = None


# -- reading the variables --------------------------------------------------------------------------------------
def _env(name: str) -> str:
    return os.environ.get(name) or ""


def _bad(name: str, raw: str, expected: str, default: str) -> None:
    """Count and log once (kind ``config.NAME``) a value the SDK cannot use; the value itself is not logged."""
    record_failure(
        f"config.{name}",
        ValueError(name),
        note=f"{name} ({len(raw)} characters) is not {expected}; using {default}",
    )


def _first_valid(names: tuple[str, ...], parse: Callable[[str, str], Any]) -> Any:
    """The first of ``names`` (the signal's own variable, then the general one) set to a value ``parse`` accepts;
    a bad one is counted and skipped, as if absent. None if none is set."""
    for name in names:
        raw = os.environ.get(name)
        if raw is None or raw.strip() == "":
            continue
        value = parse(name, raw)
        if value is not None:
            return value
    return None


def _timeout(name: str, raw: str) -> float | None:
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        _bad(name, raw, "a positive number of seconds", "the next variable, or 10")
        return None
    return value


def _compression(allowed: tuple[str, ...]) -> Callable[[str, str], str | None]:
    def parse(name: str, raw: str) -> str | None:
        value = raw.strip().lower()
        if value not in allowed:
            _bad(name, raw, " or ".join(allowed), "the next variable, or none")
            return None
        return value

    return parse


def _endpoint(name: str, raw: str) -> str | None:
    try:
        urlparse(raw)
    except ValueError:
        _bad(name, raw, "a URL", "the next variable, or http://localhost:4317")
        return None
    return raw
