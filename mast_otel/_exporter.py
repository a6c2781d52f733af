"""The OTLP span exporter of mast-otel's own provider, from the standard ``OTEL_EXPORTER_OTLP_*`` variables.

- Values the SDK's exporters would raise on (``OTEL_EXPORTER_OTLP_COMPRESSION=bogus`` or
  ``OTEL_EXPORTER_OTLP_TIMEOUT=abc`` for gRPC, a credential provider that is not installed, an unparsable endpoint)
  and values that would abort the process inside gRPC's C core (a client key without its certificate) are checked
  first: each bad one is counted (kind ``config.<VARIABLE>`` in ``mast_otel.recording_failures()``), logged once
  without its value, and replaced by what the exporter would use were it absent.
- Nothing here draws from the program's randomness: the exporter modules are imported without the ``uuid.uuid4()``
  their import would otherwise make (:func:`import_quietly`), and the exporter's retry back-off jitter comes from a
  ``random.Random`` of mast-otel's own (:func:`private_jitter`).
"""

from __future__ import annotations

import importlib
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

from opentelemetry.sdk import resources
from opentelemetry.sdk.trace.export import SpanExporter

from ._safety import record_failure

_GRPC_EXPORTER = "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"
_HTTP_EXPORTER = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
_DEFAULT_TIMEOUT_S = 10.0

# The exporters' retry back-off jitter: mast-otel's own stream, seeded from os.urandom, never the program's.
_JITTER = random.Random(int.from_bytes(os.urandom(16), "big"))


def otlp_exporter_from_env() -> SpanExporter:
    """OTLP/gRPC by default (localhost:4317); ``OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL=http/protobuf`` for HTTP.

    Values the exporter would raise on are replaced by their defaults (counted); the exporter's retry jitter is
    mast-otel's own (:func:`private_jitter`)."""
    protocol = (env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env("OTEL_EXPORTER_OTLP_PROTOCOL") or "grpc").strip()
    timeout = _first_valid(("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"), _timeout)
    if protocol.startswith("http"):
        http = import_quietly(_HTTP_EXPORTER)
        compression = _first_valid(
            ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"),
            _compression(("none", "gzip", "deflate")),
        )
        http_kwargs: dict[str, Any] = {
            "timeout": _DEFAULT_TIMEOUT_S if timeout is None else timeout,
            "compression": http.Compression(compression or "none"),
        }
        if not _provider_found(("OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
                                "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER")):  # fmt: skip
            import requests

            http_kwargs["session"] = requests.Session()  # what the exporter makes when no provider is named
        exporter: SpanExporter = http.OTLPSpanExporter(**http_kwargs)
        return private_jitter(exporter)
    if protocol != "grpc":
        bad_value("OTEL_EXPORTER_OTLP_PROTOCOL", protocol, "grpc or http/protobuf", "grpc")
    grpc_exporter = import_quietly(_GRPC_EXPORTER)
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
    kwargs["insecure"] = _grpc_insecure(kwargs["endpoint"])
    if not kwargs["insecure"]:
        credentials = _grpc_credentials(grpc)
        if credentials is not None:
            kwargs["credentials"] = credentials
    codes = env("OTEL_PYTHON_EXPORTER_OTLP_GRPC_RETRYABLE_ERROR_CODES")
    if codes and not all(c.strip().upper() in grpc.StatusCode.__members__ for c in codes.split(",") if c.strip()):
        bad_value(
            "OTEL_PYTHON_EXPORTER_OTLP_GRPC_RETRYABLE_ERROR_CODES", codes, "gRPC status code names", "the default"
        )
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


def _grpc_insecure(endpoint: str) -> bool:
    """Whether the gRPC span exporter will use a plain channel, decided as it decides (https never is)."""
    scheme = urlparse(endpoint).scheme
    raw = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_INSECURE")
    insecure = None if raw is None else raw.lower() == "true"
    if scheme == "https":
        return False
    if insecure is None:
        raw = os.environ.get("OTEL_EXPORTER_OTLP_INSECURE")
        insecure = raw.lower() == "true" if raw is not None else scheme == "http"
    return insecure


def _grpc_credentials(grpc: Any) -> Any:
    """TLS credentials from the certificate variables, or None to let the exporter load a credential provider.

    The exporter reads the files itself and hands gRPC whatever it got: a client key without its certificate (or
    the other way round, or an empty file) aborts the whole process inside gRPC's C core, and a directory raises.
    Here a file that cannot be read is counted and left out, and the client pair is used only whole."""
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE") is not None
    prefix = "OTEL_EXPORTER_OTLP_TRACES_" if traces else "OTEL_EXPORTER_OTLP_"
    provider = f"OTEL_PYTHON_EXPORTER_OTLP_GRPC_{'TRACES_' if traces else ''}CREDENTIAL_PROVIDER"
    if _provider_found((provider,)):
        return None
    if not env(prefix + "CERTIFICATE"):
        return grpc.ssl_channel_credentials()  # as the exporter: the client pair is read only beside a root
    root = _read(prefix + "CERTIFICATE")
    key, chain = _read(prefix + "CLIENT_KEY"), _read(prefix + "CLIENT_CERTIFICATE")
    if (key is None) != (chain is None):
        given = prefix + ("CLIENT_KEY" if key is not None else "CLIENT_CERTIFICATE")
        bad_value(given, env(given), "one of a readable client key and certificate pair", "no client certificate")
        key = chain = None
    return grpc.ssl_channel_credentials(root_certificates=root, private_key=key, certificate_chain=chain)


def _read(name: str) -> bytes | None:
    path = env(name)
    if not path:
        return None
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError:
        data = b""
    if not data:
        bad_value(name, path, "a readable, non-empty file", "none")
        return None
    return data


def _provider_found(names: tuple[str, ...]) -> bool:
    """Whether the first of ``names`` that is set names an installed credential provider (an entry point of
    ``opentelemetry_otlp_credential_provider``); one that is not is counted, and the exporter is given the default."""
    for name in names:
        value = env(name)
        if value:
            from opentelemetry.util._importlib_metadata import entry_points

            if list(entry_points(group="opentelemetry_otlp_credential_provider", name=value)):
                return True
            bad_value(name, value, "an installed credential provider", "none")
            return False
    return False


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


def import_quietly(module: str) -> Any:
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
def parse_int(raw: str) -> int | None:
    try:
        return int(raw)
    except ValueError:
        return None


def env(name: str) -> str:
    return os.environ.get(name) or ""


def bad_value(name: str, raw: str, expected: str, default: str) -> None:
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
        bad_value(name, raw, "a positive number of seconds", "the next variable, or 10")
        return None
    return value


def _compression(allowed: tuple[str, ...]) -> Callable[[str, str], str | None]:
    def parse(name: str, raw: str) -> str | None:
        value = raw.strip().lower()
        if value not in allowed:
            bad_value(name, raw, " or ".join(allowed), "the next variable, or none")
            return None
        return value

    return parse


def _endpoint(name: str, raw: str) -> str | None:
    try:
        urlparse(raw)
    except ValueError:
        bad_value(name, raw, "a URL", "the next variable, or http://localhost:4317")
        return None
    return raw
