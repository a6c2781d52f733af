"""A stand-in for a paid judge, counting its verdicts: ``--judge tests.collector.counting_judge:factory`` in a collector
subprocess appends one line per verdict reached (the conversation's root span id, or its trace id) to the file
named by ``MAST_TEST_JUDGE_LOG``, so a test can tell whether any conversation was judged twice across kill -9s.

Each call takes ``MAST_TEST_JUDGE_SECONDS`` (default 0.02) first, as a model call would (an LLM judge takes
seconds), and the line is written at the end, as a provider bills an answer: a kill during the sleep leaves a
claimed conversation with no line, a kill just after the write one with a line and no verdict in the collector.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from mast_otel import semconv as sc
from mast_otel.judge.model import Verdict
from mast_otel.spans import SpanRecord


class CountingJudge:
    name = "counting"

    def __init__(self, path: str, seconds: float) -> None:
        self._path = path
        self._seconds = seconds

    def judge(self, spans: Sequence[SpanRecord], *, partial: bool = False) -> Verdict:
        time.sleep(self._seconds)
        # usage reported as an LLM judge reports it: a verdict that was paid for (the collector keeps those at once)
        status = sc.JUDGE_PARTIAL if partial else sc.JUDGE_OK
        verdict = Verdict(status=status, source="test", tokens_in=10 * len(spans), tokens_out=20)
        root = next((s for s in spans if s.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_WORKFLOW), None)
        key = f"{spans[0].trace_id}/{root.span_id if root else '-'}\n" if spans else "-\n"
        fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, key.encode())  # one write with O_APPEND: whole lines even across processes
        finally:
            os.close(fd)
        return verdict


def factory() -> CountingJudge:
    seconds = float(os.environ.get("MAST_TEST_JUDGE_SECONDS", "0.02"))
    return CountingJudge(os.environ["MAST_TEST_JUDGE_LOG"], seconds)
