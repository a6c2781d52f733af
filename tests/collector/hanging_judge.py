"""A judge that never answers, for ``--judge tests.collector.hanging_judge:factory`` in a collector subprocess.

It touches the file named by ``MAST_TEST_JUDGE_STARTED`` (if set) when a call starts, so a test knows a judge
call is in flight, then blocks for an hour (like an LLM endpoint that accepted the request and went silent).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

from mast_otel.judge.model import Verdict
from mast_otel.spans import SpanRecord


class HangingJudge:
    name = "hanging"

    def judge(self, spans: Sequence[SpanRecord], *, partial: bool = False) -> Verdict:
        marker = os.environ.get("MAST_TEST_JUDGE_STARTED")
        if marker:
            Path(marker).touch()
        threading.Event().wait(3600)
        raise TimeoutError("the hanging judge gave up after an hour")


def factory() -> HangingJudge:
    return HangingJudge()
