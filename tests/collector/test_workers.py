"""The judge's worker threads (:mod:`mast_otel.collector.judge.workers`): calls run in order, and a call that raises
costs neither its worker nor the calls behind it."""

from __future__ import annotations

import logging
import threading

import pytest

from mast_otel.collector.judge.workers import Workers


def test_calls_run_in_order_and_one_that_raises_is_logged_and_the_worker_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    workers = Workers(1, "t")
    ran: list[int] = []
    finished = threading.Event()

    def fail(_: int) -> None:
        raise RuntimeError("boom")

    with caplog.at_level(logging.ERROR, logger="mast_otel.collector.judge.workers"):
        workers.call(ran.append, 1)
        workers.call(fail, 2)
        workers.call(ran.append, 3)
        workers.call(lambda _: finished.set(), 0)
        assert finished.wait(5)
    assert ran == [1, 3]
    assert [str(r.exc_info[1]) for r in caplog.records if r.exc_info] == ["boom"]
    workers.close()


def test_backlog_counts_calls_not_yet_taken_and_none_once_closed() -> None:
    workers = Workers(1, "t")
    gate, taken = threading.Event(), threading.Event()
    def hold(_: int) -> None:
        taken.set()
        gate.wait(5)

    workers.call(hold, 0)
    assert taken.wait(5)
    workers.call(lambda _: None, 0)
    workers.call(lambda _: None, 0)
    assert workers.backlog == 2
    workers.close()
    assert workers.backlog == 0
    gate.set()
