"""``mast-otel collector``: flags generated from :class:`CollectorConfig`, so --help, env and YAML never drift."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import Any

from mast_otel.collector.config import ENV_PREFIX, ConfigError, default_of, load_config, option_fields

__all__ = ["build_parser", "register", "run"]

_DESCRIPTION = """\
Receive spans over OTLP (gRPC and HTTP), wait until each conversation is whole, have a judge label it with
MAST failure modes, attach the labels to the spans and export them to any OTLP endpoint; Prometheus /metrics.

Example:
  mast-otel collector --export-endpoint http://127.0.0.1:14317 --otlp-grpc 127.0.0.1:4317 \\
      --otlp-http 127.0.0.1:4318 --metrics 127.0.0.1:9464 --store /var/lib/mast-otel/collector.db
"""

_EPILOG = f"""\
Precedence: flags > environment ({ENV_PREFIX}<OPTION>, e.g. {ENV_PREFIX}QUIET_PERIOD=5) > the YAML file given by
--config or {ENV_PREFIX}CONFIG (keys are the option names, e.g. quiet_period: 5) > defaults.
Durations: 30, 30s, 5m, 1h. Sizes: 1048576, 512KiB, 16MiB, 1GiB. Unknown options fail at startup.
Secrets (auth token, judge API key, export header values) are never logged; pass them by environment.
Endpoints: --export-endpoint http://host:port is OTLP/gRPC, a URL ending in /v1/traces is OTLP/HTTP.
"""


def _help(f: Any) -> str:
    default = default_of(f.name)
    if f.metadata.get("secret"):
        shown = "unset"
    elif isinstance(default, tuple):
        shown = ",".join(default)
    else:
        shown = "none" if default is None else str(default)
    text: str = f.metadata["help"]
    return f"{text} Env {ENV_PREFIX}{f.name.upper()}. Default: {shown}."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", default=None, help=f"YAML file of options. Env {ENV_PREFIX}CONFIG.")
    for f in option_fields():
        kw: dict[str, Any] = {"dest": f.name, "default": None, "help": _help(f)}
        if f.metadata.get("metavar"):
            kw["metavar"] = f.metadata["metavar"]
        elif f.name in ("mode", "store_sync", "log_level"):
            kw["metavar"] = "|".join(_choices(f.name))
        parser.add_argument("--" + f.name.replace("_", "-"), **kw)


def _choices(name: str) -> tuple[str, ...]:
    from mast_otel.collector import config

    return {"mode": config.MODES, "store_sync": config.STORE_SYNC, "log_level": config.LOG_LEVELS}[name]


def register(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "collector",
        help="run the OTLP collector that labels conversations with MAST failure modes",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(func=run)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """A standalone parser (``python -m mast_otel.collector.cli``)."""
    parser = argparse.ArgumentParser(prog="mast-otel collector", description=_DESCRIPTION, epilog=_EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    add_arguments(parser)
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Load the configuration, start the service, serve until SIGTERM/SIGINT, stop cleanly."""
    flags = {f.name: getattr(args, f.name, None) for f in option_fields()}
    try:
        config = load_config(flags, config_file=args.config)
        config.require_export_endpoint()
    except ConfigError as exc:
        print(f"mast-otel collector: configuration error: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=config.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    log = logging.getLogger("mast_otel.collector")
    import prometheus_client

    from mast_otel.collector import gc_tuning
    from mast_otel.collector.scaleout.front import FrontService
    from mast_otel.collector.scaleout.shards import ShardStartError, leftover_stores
    from mast_otel.collector.service import CollectorService
    from mast_otel.collector.store.api import StoreError

    prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]  # *_created series are noise
    gc_tuning.tune()

    service: CollectorService | FrontService
    try:
        # One process, unless asked for more or a run with more left shard stores to drain (see .front).
        if config.process_count > 1 or leftover_stores(config.store, 1):
            service = FrontService(config)
        else:
            service = CollectorService(config)
        service.start()
    except (ConfigError, OSError, StoreError, ShardStartError) as exc:
        print(f"mast-otel collector: cannot start: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        log.info("received %s; stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info("configuration: %s", config.describe())
    log.info("listening: %s; exporting to %s (%s); mode %s; judge %s", service.addresses(),
             config.export_endpoint, config.export_protocol, config.mode, service.judge_name)  # fmt: skip
    print(f"mast-otel collector ready {service.addresses()}", file=sys.stderr, flush=True)
    stop.wait()
    service.stop()
    return 0


if __name__ == "__main__":
    parsed = build_parser().parse_args()
    sys.exit(parsed.func(parsed))
