"""The Phoenix annotation sink: what it posts, how it retries, what it counts. Against a real HTTP server that
answers the way Phoenix's ``POST /v1/span_annotations?sync=true`` does (404 until the spans are ingested)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry

from mast_otel import semconv as sc
from mast_otel.collector.release.annotations import PhoenixAnnotationSink, annotations_for
from mast_otel.judge.model import DecisiveStep, ModeLabel, Verdict

TRACE, ROOT, M1, M2 = "ab" * 16, "01" * 8, "02" * 8, "03" * 8
VERDICT = Verdict(
    status=sc.JUDGE_OK,
    source=sc.SOURCE_LLM,
    summary="the coder repeated itself",
    modes=(ModeLabel("1.3", (M1, M2), "same code twice"),),
    decisive=DecisiveStep(M2, 2, "coder", "resent the broken code"),
)


class FakePhoenix:
    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses  # one per request; the last repeats
        self.posts: list[tuple[str, dict[str, str], Any]] = []
        self.lock = threading.Lock()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake.lock:
                    fake.posts.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                    status = fake.statuses[min(len(fake.posts) - 1, len(fake.statuses) - 1)]
                data = b'{"data": []}'
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                if status == 429:
                    self.send_header("Retry-After", "0.1")
                self.end_headers()
                self.wfile.write(data)

        return Handler


@contextmanager
def phoenix(statuses: list[int]) -> Iterator[tuple[FakePhoenix, str]]:
    fake = FakePhoenix(statuses)
    server = ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _count(registry: CollectorRegistry, result: str) -> float:
    return registry.get_sample_value("mast_collector_annotations_total", {"result": result}) or 0.0


def _wait(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_records_per_mode_on_root_and_each_evidence_span_plus_the_decisive_step() -> None:
    records = annotations_for(VERDICT, TRACE, ROOT)
    summary = [(r["span_id"], r["name"], r["result"]["label"]) for r in records]
    assert summary == [
        (ROOT, "MAST verdict", "failed"),
        (ROOT, "MAST 1.3 Step repetition", "present"),
        (M1, "MAST 1.3 Step repetition", "evidence"),
        (M2, "MAST 1.3 Step repetition", "evidence"),
        (M2, "MAST decisive step", "coder"),
    ]
    assert all(r["annotator_kind"] == "LLM" for r in records)
    assert len({r["identifier"] for r in records}) == len(records)  # retries upsert, never duplicate
    assert records[0]["result"]["explanation"] == "the coder repeated itself"
    error = annotations_for(Verdict.error(sc.SOURCE_LLM, "judge timed out"), TRACE, ROOT)
    assert [(r["name"], r["result"]["label"], r["result"]["explanation"]) for r in error] == [
        ("MAST verdict", "error", "judge timed out")
    ]


def test_404_until_the_spans_are_ingested_is_retried_then_posted_with_the_headers() -> None:
    registry = CollectorRegistry()
    with phoenix([404, 404, 429, 200]) as (fake, url):
        sink = PhoenixAnnotationSink(url, registry=registry, headers={"authorization": "Bearer secret"})
        sink.start()
        sink.submit(VERDICT, TRACE, ROOT)
        _wait(lambda: _count(registry, "posted") == 5)
        sink.close()
    assert len(fake.posts) == 4
    path, headers, body = fake.posts[-1]
    assert path == "/v1/span_annotations?sync=true" and headers["authorization"] == "Bearer secret"
    assert [r["span_id"] for r in body["data"]] == [ROOT, ROOT, M1, M2, M2]
    assert _count(registry, "retried") == 15


def test_a_permanent_refusal_is_counted_and_not_retried() -> None:
    registry = CollectorRegistry()
    with phoenix([400]) as (fake, url):
        sink = PhoenixAnnotationSink(url, registry=registry)
        sink.start()
        sink.submit(VERDICT, TRACE, ROOT)
        _wait(lambda: _count(registry, "failed") == 5)
        time.sleep(0.3)
        sink.close()
    assert len(fake.posts) == 1


def test_retrying_stops_after_retry_for_and_a_full_queue_drops_without_blocking() -> None:
    registry = CollectorRegistry()
    with phoenix([503]) as (_, url):
        sink = PhoenixAnnotationSink(url, registry=registry, retry_for=0.3, queue_size=1)
        sink.start()
        sink.submit(VERDICT, TRACE, ROOT)  # taken by the worker, retried until given up
        _wait(lambda: _count(registry, "retried") > 0)
        started = time.monotonic()
        sink.submit(VERDICT, TRACE, ROOT)  # waits in the queue (size 1)
        sink.submit(VERDICT, TRACE, ROOT)  # no room: dropped, at once
        assert time.monotonic() - started < 0.1
        assert _count(registry, "dropped_queue_full") == 5
        _wait(lambda: _count(registry, "given_up") == 10)
        sink.close(grace=0)


def test_nothing_listening_is_retryable_and_close_is_bounded() -> None:
    registry = CollectorRegistry()
    sink = PhoenixAnnotationSink("http://127.0.0.1:9", registry=registry, retry_for=60, timeout=1)
    sink.start()
    sink.submit(VERDICT, TRACE, ROOT)
    _wait(lambda: _count(registry, "retried") > 0)
    started = time.monotonic()
    sink.close(grace=0.5)
    assert time.monotonic() - started < 3
    assert _count(registry, "posted") == 0
