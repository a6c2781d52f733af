"""The collector's own attribute namespace: what only the collector may write on a span.

Labels (``mast.failed``, ``mast.fm.*``, ``mast.judge.*``...) and signals (``mast.signal.*``) are the collector's
output. A client that sets them itself could forge a verdict (a root carrying its own ``mast.failed=false`` next
to the collector's ``true``), so ingest removes them from incoming spans and counts them. The instrumentation's
own ``mast.*`` attributes (``mast.span.type``, ``mast.message.*``, ``mast.reference.fm.*``...) are input and stay.
"""

from __future__ import annotations

import re

from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans

from mast_otel import semconv as sc

__all__ = ["OWNED_PREFIXES", "is_owned", "may_carry_owned", "strip_owned"]

OWNED_PREFIXES: tuple[str, ...] = (
    "mast.judge.",
    "mast.label.",
    sc.FM_PREFIX,
    "mast.verdict.",
    "mast.signal.",
    "mast.decisive.",
    sc.FAILED,
    sc.FAILURE_MODES,  # also covers mast.failure_mode and mast.failure_mode.name
    sc.TASK_COMPLETED,
)
_EXACT = {sc.FAILED, sc.FAILURE_MODES, sc.FAILURE_MODE, sc.FAILURE_MODE_NAME, sc.TASK_COMPLETED, sc.SIGNALS,
          sc.DECISIVE, sc.MAST_SOURCE}
_DOTTED = tuple(p for p in OWNED_PREFIXES if p.endswith("."))
# A ScopeSpans in which this finds nothing cannot carry an owned key (one pass at C speed).
# Written as "mast\.(?:...)" so the regex engine scans for the literal prefix (a third faster than alternatives).
_NEEDLES = (*_DOTTED, sc.FAILED, sc.FAILURE_MODE, sc.TASK_COMPLETED, sc.SIGNALS, sc.DECISIVE, sc.MAST_SOURCE)
_NEEDLE = re.compile(rb"mast\.(?:" + b"|".join(re.escape(p.encode()[5:]) for p in _NEEDLES) + rb")")


def is_owned(key: str) -> bool:
    return key in _EXACT or key.startswith(_DOTTED)


def may_carry_owned(data: bytes) -> bool:
    """Cheap pre-check on a serialized ScopeSpans (false positives only: message text may contain the words)."""
    return _NEEDLE.search(data) is not None


def strip_owned(data: bytes) -> tuple[bytes, int]:
    """``data`` without owned attributes on its spans, and how many were removed (0: ``data`` unchanged)."""
    scope = ScopeSpans.FromString(data)
    removed = 0
    for span in scope.spans:
        doomed = [i for i, kv in enumerate(span.attributes) if is_owned(kv.key)]
        for i in reversed(doomed):
            del span.attributes[i]
        removed += len(doomed)
    if not removed:
        return data, 0
    return scope.SerializeToString(), removed
