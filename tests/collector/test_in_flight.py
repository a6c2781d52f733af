"""``mast_judge_in_flight`` counts conversations waiting for their verdict, each once: one whose release the
store refused (and is retried) is one conversation in flight, not two."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.collector.conftest import FakeClock, metric, recorded, scrape, wait_until
from tests.collector.sink import OtlpSink
from tests.collector.test_pipeline import send
from tests.collector.test_store import flaky_service


def test_a_conversation_whose_release_is_retried_is_in_flight_once(sink: OtlpSink, tmp_path: Path) -> None:
    # prepare: the store refuses every release until allowed
    clock = FakeClock()
    allowed = threading.Event()

    def refuse_releases(kw: dict[str, Sequence[Any]]) -> None:
        if kw.get("tombs") and not allowed.is_set():
            raise OSError("disk full")

    service = flaky_service(tmp_path, sink, clock, refuse_releases)
    try:
        service.start(pipeline=False)
        spans = recorded(1)
        send(service, spans)
        assert metric(scrape(service), "mast_judge_in_flight") == 0
        # test: judged, the release refused, then retried (and refused) on the next step
        clock.advance(1)
        service.tick()
        wait_until(lambda: metric(scrape(service), "mast_judge_errors_total", reason="store") == 1)
        assert metric(scrape(service), "mast_judge_in_flight") == 1
        service.tick()
        assert metric(scrape(service), "mast_judge_errors_total", reason="store") == 2
        assert metric(scrape(service), "mast_judge_in_flight") == 1
        # verify: released once the store takes it, and nothing is in flight any more
        allowed.set()
        assert service.flush()
        assert len(sink.wait_count(len(spans))) == len(spans)
        assert metric(scrape(service), "mast_judge_in_flight") == 0
    finally:
        service.stop(grace=0.2)
