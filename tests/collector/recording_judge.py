"""A stand-in judge that records what it was given: ``--judge tests.collector.recording_judge:factory`` in a collector
subprocess appends one JSON line per judge call to the file named by ``MAST_TEST_JUDGE_LOG``, so a test can tell
which spans each verdict was reached on (never two runs' spans in one call) and what transcript the judge read.

A line: ``trace_ids`` and ``span_ids`` of the spans the judge was given (hex; the adapters' message spans too),
``senders`` of the message spans in transcript order, ``messages`` (their count), ``partial`` and the pid of the
process that judged (a shard, with ``--processes``). The verdict is ``ok`` (``partial`` when asked for one), with no
failure mode, so the conversation's root gets ``mast.judge.status=ok`` and no span is added in hold mode.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from mast_otel import semconv as sc
from mast_otel.judge.model import Verdict
from mast_otel.spans import SpanRecord


class RecordingJudge:
    name = "recording"

    def __init__(self, path: str) -> None:
        self._path = path

    def judge(self, spans: Sequence[SpanRecord], *, partial: bool = False) -> Verdict:
        messages = sorted((s for s in spans if s.span_type == sc.SPAN_TYPE_MESSAGE),
                          key=lambda s: int(s.get(sc.MESSAGE_INDEX) or 0))  # fmt: skip
        line = {
            "pid": os.getpid(),
            "partial": partial,
            "trace_ids": sorted({s.trace_id for s in spans}),
            "span_ids": sorted({s.span_id for s in spans}),
            "senders": [str(m.get(sc.MESSAGE_SENDER)) for m in messages],
            "messages": len(messages),
        }
        fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(line) + "\n").encode())  # one write with O_APPEND: whole lines across processes
        finally:
            os.close(fd)
        return Verdict(status=sc.JUDGE_PARTIAL if partial else sc.JUDGE_OK, source="test")


def factory() -> RecordingJudge:
    return RecordingJudge(os.environ["MAST_TEST_JUDGE_LOG"])
