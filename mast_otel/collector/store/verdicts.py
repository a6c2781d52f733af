"""Verdicts kept until their release is written: an append-only journal next to the store (``STORE.verdicts``).

A verdict that was paid for must survive a crash between the judge's answer and the release that carries it, so
a restart does not judge (bill) the conversation again. The release is a SQLite transaction that waits for the
store behind ingest and other releases; a journal line is one ``write`` that waits for nothing, so the window in
which a ``kill -9`` loses a fresh verdict shrinks from that wait to microseconds. Durable against a killed
process (the page cache keeps it), like the store with ``store_sync=normal``.

A judge call that a crash cuts short may have been billed, yet left no verdict. So before a paid judge is called,
its conversation is *claimed* here (a line whose verdict is :data:`CLAIMED`); after a restart a claim without a
verdict tells the collector not to call the judge again for it (see ``judge_interrupted``).

Lines are JSON ``[trace_id hex, unit, verdict JSON or "", at]``; a torn last line (killed mid-write) is skipped.
The in-memory map holds only verdicts and claims whose release is not written yet; :meth:`VerdictJournal.compact`
rewrites the file from it.
"""

from __future__ import annotations

import json
import logging
import os
import threading

__all__ = ["CLAIMED", "VerdictJournal"]

_log = logging.getLogger(__name__)
# What :meth:`VerdictJournal.get` returns for a conversation whose judge call began and reached no verdict.
CLAIMED = ""


class VerdictJournal:
    """``path`` None: memory only (a ``:memory:`` store)."""

    def __init__(self, path: str | None) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._kept: dict[tuple[bytes, str], tuple[str, float]] = {}
        self._fd: int | None = None
        if path is None:
            return
        torn = False
        if os.path.exists(path):
            with open(path, "rb") as f:
                for line in f:
                    torn = not line.endswith(b"\n")
                    try:
                        trace_hex, unit, verdict, at = json.loads(line)
                        self._kept[(bytes.fromhex(trace_hex), str(unit))] = (str(verdict), float(at))
                    except (ValueError, TypeError):
                        continue  # a line torn by a kill
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        if torn:  # end the torn line, or the next verdict's line would be glued to it and lost at the next restart
            os.write(self._fd, b"\n")

    def __len__(self) -> int:
        return len(self._kept)

    def save(self, trace_id: bytes, unit: str, verdict: str, at: float) -> None:
        line = json.dumps([trace_id.hex(), unit, verdict, at]).encode() + b"\n"
        with self._lock:
            if self._fd is not None:
                os.write(self._fd, line)
            self._kept[(trace_id, unit)] = (verdict, at)

    def claim(self, trace_id: bytes, unit: str, at: float) -> None:
        """A judge call for this conversation is about to begin."""
        self.save(trace_id, unit, CLAIMED, at)

    def get(self, trace_id: bytes, unit: str) -> str | None:
        """The kept verdict JSON, :data:`CLAIMED` for a call that began and left none, or None."""
        found = self._kept.get((trace_id, unit))
        return None if found is None else found[0]

    def released(self, trace_id: bytes, unit: str) -> None:
        """The release carrying this verdict is committed: it need not be kept any more."""
        if self._kept:
            with self._lock:
                self._kept.pop((trace_id, unit), None)

    def compact(self, before: float) -> None:
        """Rewrite the file with the verdicts still kept, forgetting those older than ``before`` (their
        conversations were released long ago or will be judged again)."""
        with self._lock:
            self._kept = {k: v for k, v in self._kept.items() if v[1] >= before}
            if self._path is None or self._fd is None:
                return
            tmp = self._path + ".tmp"
            try:
                # created private like the journal itself (os.replace keeps the temporary file's mode)
                with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
                    for (trace_id, unit), (verdict, at) in self._kept.items():
                        f.write(json.dumps([trace_id.hex(), unit, verdict, at]).encode() + b"\n")
                os.replace(tmp, self._path)
            except OSError as exc:  # a full disk: the old file stays, with lines no longer needed
                _log.warning("could not compact the verdict journal %s: %s", self._path, exc)
                return
            os.close(self._fd)
            self._fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
