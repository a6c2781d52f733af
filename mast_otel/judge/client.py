"""One chat completion against any OpenAI-compatible endpoint, with the retries a judge in production needs.

- **Structured output by what the server supports.** ``auto`` tries ``json_schema`` (OpenAI, vLLM), then
  ``json_object`` carrying the schema (llama.cpp's grammar-constrained form; it answers ``json_schema`` with an
  HTTP 500), then plain ``json_object``, then free text (the JSON is parsed out of it). A format the server
  rejects (400/415/422/501, or a first 500) is dropped once and the choice remembered for the judge's lifetime;
  once a format has worked, errors are treated as transport errors.
- **Retries with backoff** on 429, 408/409, 5xx, timeouts and connection errors: the server's ``Retry-After``
  (or ``retry-after-ms``) wins, else exponential backoff; every wait is capped. Other 4xx fail at once.
- **A concurrency limit** (a semaphore around the HTTP call) so a burst of conversations cannot flood the server.
- The API key goes to the ``openai`` client only; nothing here logs it, and log lines carry status codes only.

The ``sleep`` function is injectable so tests assert on the waits without waiting.
"""

from __future__ import annotations

import email.utils
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import openai

from .config import JudgeConfig

__all__ = ["ChatClient", "Completion", "JudgeCallError"]

_log = logging.getLogger(__name__)
_CHAIN = ("json_schema", "json_object", "json_object_plain", "text")
_FORMAT_REJECTED = frozenset({400, 415, 422, 500, 501})
_RETRYABLE = frozenset({408, 409, 429})


class JudgeCallError(RuntimeError):
    """The endpoint could not be reached or kept failing; the message is safe to log (no key, no prompt)."""


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    tokens_in: int | None
    tokens_out: int | None
    response_format: str
    finish_reason: str | None
    attempts: int


class ChatClient:
    """Sends chat requests for one judge; thread-safe, shares the format choice and the concurrency limit."""

    def __init__(
        self,
        config: JudgeConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        client: openai.OpenAI | None = None,
    ) -> None:
        self.config = config
        self._sleep = sleep
        self._client = client or openai.OpenAI(
            base_url=config.base_url,
            api_key=config.api_key or "unused",  # local servers need none; the client insists on a value
            timeout=config.timeout_s,
            max_retries=0,  # retries are ours: Retry-After, caps and the injected sleep
        )
        self._slots = threading.BoundedSemaphore(config.concurrency)
        self._lock = threading.Lock()
        start = "json_schema" if config.response_format == "auto" else config.response_format
        self._format = start
        self._confirmed = config.response_format != "auto"
        self._downgraded_on_500 = False

    @property
    def response_format(self) -> str:
        return self._format

    def _payload_format(self, fmt: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        if fmt == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": "mast_verdict", "schema": schema, "strict": True}}
        if fmt == "json_object":
            return {"type": "json_object", "schema": schema}
        if fmt == "json_object_plain":
            return {"type": "json_object"}
        return None

    def _downgrade(self, fmt: str, status: int) -> bool:
        """Drop a format the server rejected; False when there is nothing to drop to (or it already worked)."""
        with self._lock:
            if self._confirmed or fmt != self._format or fmt == _CHAIN[-1]:
                return fmt != self._format  # another thread already moved on: retry with the new format
            if status == 500:
                if self._downgraded_on_500:
                    return False  # a second 500 means the server is failing, not the format
                self._downgraded_on_500 = True
            self._format = _CHAIN[_CHAIN.index(fmt) + 1]
            _log.info("judge endpoint rejected response_format %s (HTTP %d); using %s", fmt, status, self._format)
            return True

    def complete(
        self, messages: Sequence[dict[str, str]], schema: dict[str, Any], grammar_schema: dict[str, Any] | None = None
    ) -> Completion:
        """One completion; raises :class:`JudgeCallError` when retries are exhausted or the error is final.

        ``grammar_schema`` (default ``schema``) is what a ``json_object`` server compiles into a grammar: it may
        carry length bounds that strict ``json_schema`` modes reject, so a small model cannot ramble forever.
        """
        attempt = 0
        while True:
            fmt = self._format
            kwargs: dict[str, Any] = {
                "model": self.config.model_name,
                "messages": list(messages),
                "temperature": self.config.temperature,
                "max_tokens": self.config.max_output_tokens,
            }
            payload = self._payload_format(fmt, grammar_schema if fmt == "json_object" and grammar_schema else schema)
            if payload is not None:
                kwargs["response_format"] = payload
            delay: float | None = None
            try:
                with self._slots:
                    resp = self._client.chat.completions.create(**kwargs)
            except openai.APIStatusError as exc:
                status = exc.status_code
                if status in _FORMAT_REJECTED and fmt != "text" and self._downgrade(fmt, status):
                    continue
                if status not in _RETRYABLE and status < 500:
                    raise JudgeCallError(f"judge endpoint answered HTTP {status}; not retried") from None
                delay = _retry_after(exc.response)
                why = f"HTTP {status}"
            except openai.APITimeoutError:
                why = "timeout"
            except openai.APIConnectionError:
                why = "connection error"
            else:
                with self._lock:
                    if fmt == self._format:
                        self._confirmed = True
                return _completion(resp, fmt, attempt + 1)
            if attempt >= self.config.max_retries:
                raise JudgeCallError(f"judge endpoint failed after {attempt + 1} attempt(s); last: {why}")
            wait = delay if delay is not None else self.config.backoff_base_s * (2**attempt)
            wait = min(max(wait, 0.0), self.config.backoff_max_s)
            _log.warning("judge request failed (%s); retry %d in %.1fs", why, attempt + 1, wait)
            self._sleep(wait)
            attempt += 1


def _completion(resp: Any, fmt: str, attempts: int) -> Completion:
    choice = resp.choices[0] if getattr(resp, "choices", None) else None
    message = getattr(choice, "message", None)
    text = getattr(message, "content", None) or ""
    usage = getattr(resp, "usage", None)
    return Completion(
        text=text,
        tokens_in=getattr(usage, "prompt_tokens", None),
        tokens_out=getattr(usage, "completion_tokens", None),
        response_format=fmt,
        finish_reason=getattr(choice, "finish_reason", None),
        attempts=attempts,
    )


def _retry_after(response: Any) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms``, ``Retry-After`` seconds or HTTP date."""
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)
