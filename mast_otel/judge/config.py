"""Judge configuration: one frozen dataclass, built from keyword arguments or the environment.

Precedence: keyword arguments to :meth:`JudgeConfig.from_env` win over environment variables, which win over
the defaults below. An unparsable value logs a warning naming the variable and keeps the default.

Environment variables:

``MAST_OTEL_JUDGE_BASE_URL``      OpenAI-compatible base URL (``http://127.0.0.1:8080/v1``). Default: the OpenAI API.
``MAST_OTEL_JUDGE_MODEL``         Model name. Setting this or the base URL turns the LLM judge on.
``MAST_OTEL_JUDGE_API_KEY``       API key (falls back to ``OPENAI_API_KEY``). Never logged, never in ``repr``.
``MAST_OTEL_JUDGE_TEMPERATURE``   Sampling temperature. Default 0.
``MAST_OTEL_JUDGE_TIMEOUT``       Seconds per HTTP request. Default 120.
``MAST_OTEL_JUDGE_MAX_RETRIES``   Retries after 429/5xx/timeouts/connection errors. Default 4.
``MAST_OTEL_JUDGE_INVALID_RETRIES`` Retries after output that is not schema-valid JSON. Default 2.
``MAST_OTEL_JUDGE_CONCURRENCY``   Requests in flight at once, per judge. Default 4.
``MAST_OTEL_JUDGE_TOKEN_BUDGET``  Prompt tokens (o200k_base) a request may carry. Default 12000.
``MAST_OTEL_JUDGE_MAX_TOKENS``    Completion tokens requested. Default 2048.
``MAST_OTEL_JUDGE_RESPONSE_FORMAT`` ``auto`` (json_schema, then json_object+schema, then text), or one of those.
``MAST_OTEL_JUDGE_CACHE``         Directory for the verdict cache (kept in memory only when unset).
``MAST_OTEL_JUDGE_PRICE_IN`` / ``MAST_OTEL_JUDGE_PRICE_OUT``  USD per million tokens, for the cost estimate.
``MAST_OTEL_REDACT_PATTERNS``     Extra redaction regexes (as for the in-process capture), applied before a call.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mast_otel.config import REDACT_PATTERNS_ENV, _parse_patterns
from mast_otel.redaction import Redactor

__all__ = ["RESPONSE_FORMATS", "JudgeConfig"]

_log = logging.getLogger(__name__)
_P = "MAST_OTEL_JUDGE_"
RESPONSE_FORMATS = ("auto", "json_schema", "json_object", "text")

# USD per million (input, output) tokens for a few common judges; env overrides. Unknown models cost 0 (local).
_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "o1-mini": (1.10, 4.40),
    "o1": (15.00, 60.00),
}


@dataclass(frozen=True, kw_only=True)
class JudgeConfig:
    """How the LLM judge reaches its model and what it may spend. ``api_key`` is excluded from ``repr``."""

    base_url: str | None = None  # OpenAI-compatible endpoint. Default: None (the OpenAI API).
    model: str | None = None  # Model name. Default: None (LLM judge off unless base_url is set).
    api_key: str | None = field(default=None, repr=False)  # Secret. Default: None ("unused" sent to local servers).
    temperature: float = 0.0  # Sampling temperature. Default: 0.
    timeout_s: float = 120.0  # Per-request timeout. Default: 120 s.
    max_retries: int = 4  # Transport retries (429, 5xx, timeouts). Default: 4.
    invalid_retries: int = 2  # Retries after schema-invalid output. Default: 2.
    backoff_base_s: float = 1.0  # First backoff; doubles per attempt unless Retry-After says otherwise.
    backoff_max_s: float = 60.0  # Longest single wait, Retry-After included. Default: 60 s.
    concurrency: int = 4  # Requests in flight per judge. Default: 4.
    token_budget: int = 12_000  # Prompt tokens per request (o200k_base). Default: 12000.
    max_output_tokens: int = 2048  # Completion tokens requested. Default: 2048.
    max_chunks: int = 6  # Chunks a long transcript may be split into before the tail is cut. Default: 6.
    response_format: str = "auto"  # One of RESPONSE_FORMATS. Default: auto.
    cache_dir: Path | None = None  # On-disk verdict cache. Default: None (in memory only).
    price_in_per_mtok: float | None = None  # USD per 1M prompt tokens. Default: table above, else 0.
    price_out_per_mtok: float | None = None  # USD per 1M completion tokens. Default: table above, else 0.
    redactor: Redactor = field(default_factory=lambda: Redactor(max_length=0))  # Applied before every call.

    def __post_init__(self) -> None:
        if self.response_format not in RESPONSE_FORMATS:
            allowed = ", ".join(RESPONSE_FORMATS)
            raise ValueError(f"response_format must be one of {allowed}, not {self.response_format!r}")
        if self.token_budget < 1500:
            raise ValueError("token_budget must be at least 1500 tokens (the definitions and schema alone need ~1.3k)")
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")

    @property
    def llm_configured(self) -> bool:
        return bool(self.base_url or self.model)

    @property
    def model_name(self) -> str:
        return self.model or "default"

    def prices(self) -> tuple[float, float]:
        """USD per million (prompt, completion) tokens: explicit config first, then the known-model table."""
        known = _PRICES.get(self.model or "", (0.0, 0.0))
        p_in = self.price_in_per_mtok if self.price_in_per_mtok is not None else known[0]
        p_out = self.price_out_per_mtok if self.price_out_per_mtok is not None else known[1]
        return p_in, p_out

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        p_in, p_out = self.prices()
        return round((tokens_in * p_in + tokens_out * p_out) / 1_000_000, 6)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> JudgeConfig:
        """Read ``MAST_OTEL_JUDGE_*`` (see the module docstring); keyword arguments win."""
        env = os.environ if environ is None else environ
        kw: dict[str, Any] = {}
        for key, var, conv in _ENV_FIELDS:
            raw = env.get(_P + var)
            if raw is None or not raw.strip():
                continue
            try:
                kw[key] = conv(raw.strip())
            except ValueError:
                _log.warning("%s%s=%r is not valid; using the default", _P, var, raw)
        api_key = env.get(_P + "API_KEY") or env.get("OPENAI_API_KEY")
        if api_key:
            kw["api_key"] = api_key
        patterns = _parse_patterns(env.get(REDACT_PATTERNS_ENV))
        if patterns:
            kw["redactor"] = Redactor(patterns=tuple(patterns), max_length=0)
        kw.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**kw)


_ENV_FIELDS: tuple[tuple[str, str, Any], ...] = (
    ("base_url", "BASE_URL", str),
    ("model", "MODEL", str),
    ("temperature", "TEMPERATURE", float),
    ("timeout_s", "TIMEOUT", float),
    ("max_retries", "MAX_RETRIES", int),
    ("invalid_retries", "INVALID_RETRIES", int),
    ("concurrency", "CONCURRENCY", int),
    ("token_budget", "TOKEN_BUDGET", int),
    ("max_output_tokens", "MAX_TOKENS", int),
    ("max_chunks", "MAX_CHUNKS", int),
    ("response_format", "RESPONSE_FORMAT", str),
    ("cache_dir", "CACHE", Path),
    ("price_in_per_mtok", "PRICE_IN", float),
    ("price_out_per_mtok", "PRICE_OUT", float),
)
