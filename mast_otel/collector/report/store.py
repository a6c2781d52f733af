"""Recent verdicts from the collector's SQLite store, opened read-only so it is safe while the collector runs.

The store keeps verdicts only for ``tombstone_ttl`` (15 minutes by default) and drops span bodies once exported, so
this input gives recent verdicts by service without evidence span names. The store layout is the collector's
internal detail and has changed, so a query against a table or column this layout lacks is skipped, not fatal; a
file with no verdict table at all is refused as not a collector store.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from mast_otel.collector.report.conversations import JUDGED, UNKNOWN, UNLABELLED, Conversation, as_modes

__all__ = ["load_store"]


# Where each store layout keeps its verdicts (the store is the collector's internal detail and has changed once;
# a table that is missing is skipped). Columns: trace_id (bytes), conversation key, verdict JSON.
_VERDICT_QUERIES = (
    "SELECT trace_id, unit, verdict FROM tomb WHERE unit IS NOT NULL AND verdict IS NOT NULL ORDER BY at",
    "SELECT trace_id, unit, verdict FROM unit WHERE verdict IS NOT NULL ORDER BY released",
)


def _store_service(db: sqlite3.Connection, trace_id: bytes, unit: str) -> str | None:
    """service.name of the resource the conversation's spans arrived with, where the layout links the two."""
    try:
        from opentelemetry.proto.resource.v1.resource_pb2 import Resource
    except ImportError:  # the collector extra is not installed: no service names
        return None
    try:
        row = db.execute(
            "SELECT e.resource FROM span s JOIN envelope e ON e.id = s.envelope WHERE s.trace_id = ? AND s.unit = ?"
            " LIMIT 1",
            (trace_id, unit),
        ).fetchone()
    except sqlite3.OperationalError:  # a layout without span -> resource links
        return None
    if row is None:
        return None
    for kv in Resource.FromString(bytes(row[0])).attributes:
        if kv.key == "service.name":
            return str(kv.value.string_value)
    return None


def _verdict_modes(verdict: Mapping[str, Any]) -> tuple[str, ...]:
    found = []
    for m in verdict.get("modes") or ():
        mode_id = m.get("mode_id") if isinstance(m, Mapping) else m
        if mode_id:
            found.append(str(mode_id))
    if not found:
        found = list(as_modes(verdict.get("failure_modes")))
    return tuple(dict.fromkeys(found))


def _verdict_rows(db: sqlite3.Connection) -> list[tuple[bytes, str, str]]:
    rows: dict[tuple[bytes, str], str] = {}
    for query in _VERDICT_QUERIES:
        try:
            found = db.execute(query).fetchall()
        except sqlite3.OperationalError:  # no such table in this layout
            continue
        for trace_id, unit, text in found:
            rows.setdefault((bytes(trace_id), str(unit)), text)
    return [(t, u, v) for (t, u), v in rows.items()]


def _stored_conversation(db: sqlite3.Connection, trace_id: bytes, unit: str, text: str) -> Conversation | None:
    try:
        verdict = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(verdict, Mapping):
        return None
    status = str(verdict.get("status") or UNLABELLED)
    extra = verdict.get("extra")
    extra = extra if isinstance(extra, Mapping) else {}
    framework = verdict.get("framework") or extra.get("framework") or UNKNOWN
    service = verdict.get("service") or extra.get("service") or _store_service(db, trace_id, unit) or UNKNOWN
    completed = verdict.get("task_completed")
    return Conversation(
        trace_id=trace_id.hex(),
        name=str(verdict.get("name") or extra.get("name") or unit),
        service=str(service),
        framework=str(framework),
        status=status,
        source=verdict.get("source"),
        modes=_verdict_modes(verdict) if status in JUDGED else (),
        task_completed=completed if isinstance(completed, bool) else None,
        summary=str(verdict.get("summary") or ""),
        status_reason=str(verdict.get("status_reason") or ""),
    )


def load_store(path: str | Path) -> list[Conversation]:
    """Verdicts the collector's SQLite store still remembers, opened read-only (safe while the collector runs)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such store")
    db = sqlite3.connect(f"file:{quote(str(p.resolve()))}?mode=ro", uri=True)
    try:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables & {"tomb", "unit"}:
            raise ValueError(f"{p}: not a mast-otel collector store (no verdict table among {sorted(tables)})")
        found = (_stored_conversation(db, t, u, v) for t, u, v in _verdict_rows(db))
        return [c for c in found if c is not None]
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{p}: not a mast-otel collector store ({exc})") from None
    finally:
        db.close()
