"""Value parsers shared by flags, env and YAML (so every source gives the same error), and ConfigError."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "ConfigError", "choice", "endpoint", "headers", "integer", "number", "optional_text", "parse_hostport", "processes",
    "seconds", "size", "text", "text_list",
]  # fmt: skip


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the option and what it accepts."""


# --- value parsers (shared by flags, env and YAML, so every source gives the same error) -------------------------


def parse_hostport(value: Any) -> tuple[str, int]:
    """``"127.0.0.1:4317"`` -> ``("127.0.0.1", 4317)``; ``[::1]:4317`` works too. Port 0 = any free port."""
    text = str(value).strip()
    m = re.fullmatch(r"\[?([^\[\]]*?)\]?:(\d{1,5})", text)
    if not m or not m.group(1) or int(m.group(2)) > 65535:
        raise ConfigError(f"{text!r} is not HOST:PORT")
    return m.group(1), int(m.group(2))


def endpoint(value: Any) -> str | None:
    text = str(value).strip()
    if text.lower() in ("", "off", "none", "disabled"):
        return None
    parse_hostport(text)
    return text


def seconds(value: Any) -> float:
    text = str(value).strip().lower()
    m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h|d)?", text)
    if not m:
        raise ConfigError(f"{value!r} is not a duration (30, 30s, 5m, 1h, 7d)")
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}[m.group(2)]
    return float(m.group(1)) * scale


def size(value: Any) -> int:
    text = str(value).strip()
    m = re.fullmatch(r"(\d+)\s*([KMG]i?B?|B)?", text, flags=re.IGNORECASE)
    if not m:
        raise ConfigError(f"{value!r} is not a size (1048576, 512KiB, 16MiB, 1GiB)")
    unit = (m.group(2) or "B").upper().rstrip("B").rstrip("I")
    return int(m.group(1)) * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[unit]


def integer(value: Any) -> int:
    if isinstance(value, bool):
        raise ConfigError(f"{value!r} is not an integer")
    try:
        return int(str(value).strip().replace("_", ""))
    except ValueError:
        raise ConfigError(f"{value!r} is not an integer") from None


def processes(value: Any) -> int:
    """A process count, or ``auto`` (stored as 0: one per core the collector may use; 0 reads as auto too)."""
    if str(value).strip().lower() == "auto":
        return 0
    n = integer(value)
    if n < 0:
        raise ConfigError(f"{value!r} is not auto or a count >= 1")
    return n


def number(value: Any) -> float:
    try:
        return float(str(value).strip())
    except ValueError:
        raise ConfigError(f"{value!r} is not a number") from None


def text(value: Any) -> str:
    return str(value).strip()


def optional_text(value: Any) -> str | None:
    text = str(value).strip()
    return text or None


def choice(*allowed: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        text = str(value).strip().lower()
        if text not in allowed:
            raise ConfigError(f"{value!r} is not one of {', '.join(allowed)}")
        return text

    return parse


def text_list(value: Any) -> tuple[str, ...]:
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return tuple(str(i).strip() for i in items if str(i).strip())


def headers(value: Any) -> dict[str, str]:
    if isinstance(value, Mapping):
        return {str(k).strip().lower(): str(v) for k, v in value.items()}
    out: dict[str, str] = {}
    for item in str(value).split(","):
        if not item.strip():
            continue
        key, sep, val = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError("an item is not KEY=VALUE (the value is not shown: headers may hold secrets)")
        out[key.strip().lower()] = val.strip()
    return out
