"""Links to a trace in the user's trace backend, for the report's example traces.

``--trace-url`` takes a backend and its base URL, or a template of your own:

- ``jaeger:http://localhost:16686`` -> ``http://localhost:16686/trace/TRACE_ID``
- ``tempo:http://localhost:3000`` -> Grafana's Explore with the Tempo data source (uid ``mast-tempo``, as the shipped
  provisioning names it; ``tempo:URL#UID`` for another uid) and the trace id as the query, around the verdict's
  time
- ``phoenix:http://localhost:6006`` -> ``http://localhost:6006/redirects/traces/TRACE_ID`` (Phoenix finds the
  project)
- a template with ``{trace_id}`` (and optionally ``{from_ms}``, ``{to_ms}``: an hour either side of the verdict, in
  milliseconds since the epoch), e.g. ``https://ui.example.com/traces/{trace_id}``
"""

from __future__ import annotations

import json
from collections.abc import Callable
from urllib.parse import quote

__all__ = ["BACKENDS", "link_maker"]

BACKENDS = ("jaeger", "tempo", "phoenix")
_DEFAULT_TEMPO_UID = "mast-tempo"
_AROUND_MS = 3_600_000


def _tempo(base: str, uid: str) -> Callable[[str, float], str]:
    def link(trace_id: str, at: float) -> str:
        ms = int(at * 1000)
        pane = {"datasource": uid, "queries": [{"refId": "A", "datasource": {"type": "tempo", "uid": uid},
                                                "queryType": "traceql", "query": trace_id}],
                "range": {"from": str(ms - _AROUND_MS), "to": str(ms + _AROUND_MS)}}  # fmt: skip
        panes = json.dumps({"mast": pane}, separators=(",", ":"))
        return f"{base}/explore?schemaVersion=1&orgId=1&panes={quote(panes, safe='')}"

    return link


def link_maker(spec: str | None) -> Callable[[str, float], str | None]:
    """(trace id hex, verdict time) -> URL, from ``--trace-url``; no spec: no links. Raises ValueError for a spec
    that is neither a known backend with a URL nor a template with ``{trace_id}``."""
    if not spec:
        return lambda trace_id, at: None
    backend, sep, rest = spec.partition(":")
    if sep and backend in BACKENDS:
        if not rest.startswith(("http://", "https://")):
            raise ValueError(f"--trace-url {spec!r}: {backend}: needs the UI's URL, e.g. {backend}:http://localhost:"
                             f"{ {'jaeger': 16686, 'tempo': 3000, 'phoenix': 6006}[backend]}")  # fmt: skip
        base, _, uid = rest.partition("#")
        base = base.rstrip("/")
        if backend == "jaeger":
            return lambda trace_id, at: f"{base}/trace/{trace_id}"
        if backend == "phoenix":
            return lambda trace_id, at: f"{base}/redirects/traces/{trace_id}"
        return _tempo(base, uid or _DEFAULT_TEMPO_UID)
    if "{trace_id}" not in spec:
        raise ValueError(f"--trace-url {spec!r}: give jaeger:URL, tempo:URL, phoenix:URL or a template with "
                         "{trace_id}")  # fmt: skip
    try:
        spec.format(trace_id="0", from_ms=0, to_ms=0)
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError(f"--trace-url {spec!r}: only {{trace_id}}, {{from_ms}} and {{to_ms}} are filled in "
                         f"({exc})") from None  # fmt: skip

    def templated(trace_id: str, at: float) -> str:
        ms = int(at * 1000)
        return spec.format(trace_id=trace_id, from_ms=ms - _AROUND_MS, to_ms=ms + _AROUND_MS)

    return templated
