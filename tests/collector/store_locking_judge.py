"""A paid judge (:mod:`.counting_judge`) that, once it has answered, holds the store's write lock from its own
SQLite connection until its process dies: the collector then has the verdict but cannot write the release, which
is the window a ``kill -9`` must not turn a paid verdict into an "interrupted" error in.

``--judge tests.collector.store_locking_judge:factory`` with ``MAST_TEST_JUDGE_LOG`` (as the counting judge) and
``MAST_TEST_LOCK_STORE`` (the store's path). The lock is taken after the answer, so the collector's own journal
write (which takes no store lock) is not held up; the release waits for the lock (SQLite's 5 s busy timeout).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence

from mast_otel.judge.model import Verdict
from mast_otel.spans import SpanRecord

from .counting_judge import CountingJudge

_held: list[sqlite3.Connection] = []  # kept open until the process is killed


class StoreLockingJudge(CountingJudge):
    name = "store-locking"

    def __init__(self, path: str, seconds: float, store: str) -> None:
        super().__init__(path, seconds)
        self._store = store

    def judge(self, spans: Sequence[SpanRecord], *, partial: bool = False) -> Verdict:
        verdict = super().judge(spans, partial=partial)
        db = sqlite3.connect(self._store, isolation_level=None, check_same_thread=False)
        db.execute("BEGIN IMMEDIATE")  # every writer now waits: the release cannot be committed
        _held.append(db)
        return verdict


def factory() -> StoreLockingJudge:
    return StoreLockingJudge(os.environ["MAST_TEST_JUDGE_LOG"], 0.0, os.environ["MAST_TEST_LOCK_STORE"])
