"""The verdict history: every verdict a collector process gave, with its time and what it is about, kept for
``history_retention`` within ``history_max_bytes``, for ``mast-otel report``'s patterns across runs.

A row per verdict: time, trace id, status, the modes found, the service, ``service.version`` and framework of the
conversation's resource, the decisive agent and step where the judge attributed the failure, and the judge. Each
process keeps its own file beside its store (``STORE.history``, ``STORE.shard1.history``, ...); the report reads
them all as one. Exporting spans never touches it (the store forgets released spans; the history is another file).

- :mod:`.schema`: the tables and connection settings.
- :mod:`.entry`: a verdict as the history keeps it.
- :mod:`.writer`: the collector's side (append, retention, byte bound, drops counted).
- :mod:`.reader`: the report's side (read-only counts, single verdicts, examples).
"""

from mast_otel.collector.history.entry import VerdictEntry, entry_of
from mast_otel.collector.history.reader import HistoryFile
from mast_otel.collector.history.schema import HistoryFileError
from mast_otel.collector.history.writer import VerdictHistory, history_files, history_path

__all__ = [
    "HistoryFile", "HistoryFileError", "VerdictEntry", "VerdictHistory", "entry_of", "history_files", "history_path",
]  # fmt: skip
