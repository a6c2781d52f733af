"""Verdicts as Phoenix span annotations: the MAST labels where Phoenix users look (its Annotations tab).

The labels on the exported spans stay the record; this sink is a second, optional view of them. When a Phoenix
base URL is configured (``phoenix_url``), every verdict the collector stores is also posted to Phoenix's
annotation API (``POST /v1/span_annotations?sync=true``):

- on the conversation root, ``MAST verdict`` (label ``failed`` / ``no failure`` / the judge status, the summary
  or status reason as explanation, the modes in the metadata) and one ``MAST <id> <name>`` per mode present
  (label ``present``, the judge's reason, the evidence span ids);
- on each span cited as evidence, the same ``MAST <id> <name>`` annotation with label ``evidence``;
- on the decisive message, when the judge names one, ``MAST decisive step`` (label = the agent).

It never stands in the OTLP export's way: verdicts wait in a bounded queue (a full queue drops the newest, counted)
and one worker thread posts them. Phoenix answers 404 until it has ingested the spans the annotation points at,
so 404 is retried like 429, 5xx and connection errors, with backoff, for at most ``retry_for`` seconds; any
other refusal is permanent. Each annotation carries an identifier derived from the trace, span and name, so a
retry or a re-judged conversation updates instead of duplicating. Everything is counted in
``mast_collector_annotations_total{result}``. Annotations are best effort: a crash loses the queue, never a span.
"""

from __future__ import annotations

import http.client
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry, Counter

from mast_otel import semconv as sc
from mast_otel.judge.model import Verdict
from mast_otel.taxonomy import mode

__all__ = ["ANNOTATION_RESULTS", "PhoenixAnnotationSink", "annotations_for"]

_log = logging.getLogger(__name__)
ANNOTATION_RESULTS = ("posted", "retried", "dropped_queue_full", "failed", "given_up")
_RETRYABLE = {404, 408, 425, 429, 500, 502, 503, 504}
_PATH = "/v1/span_annotations?sync=true"


def _mode_name(mode_id: str) -> str:
    return f"MAST {mode_id} {mode(mode_id).name}"


def annotations_for(verdict: Verdict, trace_id: str, root_span_id: str | None) -> list[dict[str, Any]]:
    """The annotation records for one verdict (hex ids), in Phoenix's ``SpanAnnotationData`` shape."""

    def one(span_id: str, name: str, label: str, explanation: str, score: float | None = None,
            metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
        return {
            "span_id": span_id,
            "name": name,
            "annotator_kind": "LLM" if verdict.source == sc.SOURCE_LLM else "CODE",
            "result": {"label": label, "score": score, "explanation": explanation[:2000]},
            "metadata": {"trace_id": trace_id, "source": verdict.source, **(metadata or {})},
            "identifier": f"mast-otel:{trace_id}:{span_id}:{name}",
        }

    out: list[dict[str, Any]] = []
    if root_span_id is not None:
        judged = verdict.status in (sc.JUDGE_OK, sc.JUDGE_PARTIAL, sc.JUDGE_TRUNCATED)
        status_label = ("failed" if verdict.failed else "no failure") if judged else verdict.status
        out.append(one(root_span_id, "MAST verdict", status_label, verdict.summary or verdict.status_reason or "",
                       float(len(verdict.modes)) if judged else None,
                       {"status": verdict.status, "failure_modes": list(verdict.failure_modes),
                        "model": verdict.model}))  # fmt: skip
    for found in verdict.modes:
        name = _mode_name(found.mode_id)
        if root_span_id is not None:
            out.append(one(root_span_id, name, "present", found.reason, 1.0,
                           {"evidence_span_ids": list(found.evidence_span_ids)}))  # fmt: skip
        for span_id in found.evidence_span_ids:
            if span_id != root_span_id:
                out.append(one(span_id, name, "evidence", found.reason, 1.0))
    if verdict.decisive is not None:
        d = verdict.decisive
        out.append(one(d.span_id, "MAST decisive step", d.agent, d.reason, None, {"message_index": d.message_index}))
    return out


@dataclass(frozen=True, slots=True)
class _Post:
    body: bytes
    count: int
    first_try: float


class PhoenixAnnotationSink:
    """Posts verdicts to Phoenix from one worker thread; ``submit`` never blocks."""

    def __init__(
        self,
        base_url: str,
        *,
        registry: CollectorRegistry | None = None,
        headers: Mapping[str, str] | None = None,
        queue_size: int = 1000,
        retry_for: float = 120.0,
        timeout: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"phoenix_url {base_url!r}: use http(s)://host:port of the Phoenix server")
        self._parts = parts
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        self._queue: queue.Queue[_Post] = queue.Queue(maxsize=queue_size)
        self._retry_for = retry_for
        self._timeout = timeout
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.counts = Counter(
            "mast_collector_annotations", "Phoenix span annotations, by outcome.", ["result"], registry=registry
        )
        for result in ANNOTATION_RESULTS:
            self.counts.labels(result)

    def submit(self, verdict: Verdict, trace_id: str, root_span_id: str | None) -> None:
        records = annotations_for(verdict, trace_id, root_span_id)
        if not records:
            return
        post = _Post(json.dumps({"data": records}).encode(), len(records), self._clock())
        try:
            self._queue.put_nowait(post)
        except queue.Full:
            self.counts.labels("dropped_queue_full").inc(post.count)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="mast-annotations", daemon=True)
        self._thread.start()

    def close(self, grace: float = 5.0) -> None:
        """Post what is queued for up to ``grace`` seconds, then stop."""
        deadline = self._clock() + grace
        while not self._queue.empty() and self._clock() < deadline and self._thread is not None:
            time.sleep(0.05)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(0.0, deadline - self._clock()) + self._timeout)

    def _run(self) -> None:
        backoff = 0.25
        pending: _Post | None = None
        while not self._stop.is_set():
            if pending is None:
                try:
                    pending = self._queue.get(timeout=0.2)
                except queue.Empty:
                    continue
            outcome, retry_after = self._send(pending)
            if outcome == "retry":
                if self._clock() - pending.first_try > self._retry_for:
                    self.counts.labels("given_up").inc(pending.count)
                    _log.warning("phoenix annotations: gave up after %.0f s", self._retry_for)
                    pending = None
                    continue
                self.counts.labels("retried").inc(pending.count)
                self._stop.wait(retry_after if retry_after is not None else backoff)
                backoff = min(backoff * 2, 10.0)
                continue
            self.counts.labels("posted" if outcome == "ok" else "failed").inc(pending.count)
            pending, backoff = None, 0.25

    def _send(self, post: _Post) -> tuple[str, float | None]:
        """("ok" | "retry" | "failed", retry-after seconds)."""
        cls = http.client.HTTPSConnection if self._parts.scheme == "https" else http.client.HTTPConnection
        conn = cls(self._parts.hostname or "127.0.0.1", self._parts.port, timeout=self._timeout)
        try:
            conn.request("POST", self._parts.path + _PATH, body=post.body, headers=self._headers)
            response = conn.getresponse()
            detail = response.read(500)
        except OSError as exc:
            _log.debug("phoenix annotations: %s", exc)
            return "retry", None
        finally:
            conn.close()
        if 200 <= response.status < 300:
            return "ok", None
        if response.status in _RETRYABLE:
            return "retry", _seconds(response.getheader("Retry-After"))
        text = detail[:200].decode("utf-8", "replace")
        _log.warning("phoenix annotations refused: HTTP %d %s", response.status, text)
        return "failed", None


def _seconds(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None
