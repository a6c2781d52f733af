"""Which traces are one run: the evidence ingest saw tying traces together, kept as connected groups.

Some frameworks write a run as a trace per message (Semantic Kernel's agent runtime), so the conversation to judge
is the units of several traces. Ingest notes, per span of another instrumentation and per log record, what ties its
trace to others (:func:`mast_otel.adapters.evidence`'s rules: a link to a span of another trace, a
``gen_ai.conversation.id`` or ``session.id``, kept by union-find, near-constant per note; and a shared history,
which has a direction and a time and is resolved when asked, :class:`mast_otel.adapters.HistoryTies`).

Bounded: a group not noted for ``forget_after`` seconds is dropped by :meth:`TraceGroups.forget_older_than` (its
traces were judged long ago), and at most ``max_entries`` traces and keys are kept; past that, new evidence is
not recorded and is counted (``dropped``): those traces are judged one by one, as if nothing tied them. Only ids
and keys are kept, never a body. Not thread-safe: the service calls it under its pipeline lock.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from mast_otel.adapters import HistoryTies
from mast_otel.collector.assemble.assembler import Assembler, Unit

__all__ = ["RunJoiner", "TraceGroups"]


class TraceGroups:
    """Union-find over trace ids and evidence keys; a group knows its traces and when it was last noted."""

    def __init__(self, *, max_entries: int = 1_000_000) -> None:
        self._parent: dict[object, object] = {}
        self._traces: dict[object, set[bytes]] = {}  # group root -> its traces
        self._noted: dict[object, float] = {}  # group root -> when evidence last joined it
        self._ties = HistoryTies()
        self._touched: dict[bytes, float] = {}  # trace -> when a shared history of it was last noted
        self._max = max_entries
        self.dropped = 0

    def note(self, trace_id: bytes, keys: list[str], now: float) -> None:
        """``trace_id``'s spans carry ``keys`` (``trace:<hex>`` for a link to another trace, ``<key>=<value>``)."""
        if len(self._parent) + len(keys) + 1 > self._max and trace_id not in self._parent:
            self.dropped += 1
            return
        root = self._find(trace_id, now)
        for key in keys:
            if self._ties.note(trace_id, key):
                self._touched[trace_id] = now
                continue
            other: object = bytes.fromhex(key[6:]) if key.startswith("trace:") and len(key) == 38 else key
            root = self._union(root, self._find(other, now))
        self._noted[root] = now

    def traces_with(self, trace_id: bytes) -> frozenset[bytes]:
        """Every trace tied to ``trace_id`` (itself included; only itself when nothing ties it)."""
        found: set[bytes] = set()
        frontier = [trace_id]
        while frontier:
            trace = frontier.pop()
            if trace in found:
                continue
            group = self._traces.get(self._root(trace), {trace}) if trace in self._parent else {trace}
            found |= group
            for member in group:
                frontier.extend(self._ties.tied(member) - found)
        return frozenset(found)

    def last_noted(self, trace_id: bytes) -> float | None:
        """When evidence last joined ``trace_id``'s group, or a shared history was noted in it (None: never)."""
        return self.last_noted_of(self.traces_with(trace_id))

    def last_noted_of(self, traces: AbstractSet[bytes]) -> float | None:
        """:meth:`last_noted` of a group already found by :meth:`traces_with` (not searched again)."""
        times = [self._touched[t] for t in traces if t in self._touched]
        roots = {self._root(t) for t in traces if t in self._parent}
        times += [self._noted[r] for r in roots if r in self._noted]
        return max(times) if times else None

    def forget_older_than(self, cutoff: float) -> int:
        """Drop the groups last noted before ``cutoff``; returns how many entries went."""
        quiet = {t for t, at in self._touched.items() if at < cutoff}
        self._ties.forget(quiet)
        for trace in quiet:
            del self._touched[trace]
        stale = {root for root, at in self._noted.items() if at < cutoff}
        if not stale:
            return len(quiet)
        gone = [n for n in self._parent if self._root(n) in stale]
        for n in gone:
            del self._parent[n]
        for root in stale:
            self._traces.pop(root, None)
            self._noted.pop(root, None)
        return len(gone) + len(quiet)

    def __len__(self) -> int:
        return len(self._parent)

    def _find(self, node: object, now: float) -> object:
        if node not in self._parent:
            self._parent[node] = node
            self._noted[node] = now
            if isinstance(node, bytes):
                self._traces[node] = {node}
        return self._root(node)

    def _root(self, node: object) -> object:
        parent = self._parent
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    def _union(self, a: object, b: object) -> object:
        if a == b:
            return a
        small, large = (a, b) if len(self._traces.get(a, ())) < len(self._traces.get(b, ())) else (b, a)
        self._parent[small] = large
        traces = self._traces.pop(small, None)
        if traces:
            self._traces.setdefault(large, set()).update(traces)
        noted = self._noted.pop(small, None)
        if noted is not None:
            self._noted[large] = max(noted, self._noted.get(large, noted))
        return large


class RunJoiner:
    """Units of another instrumentation whose traces evidence ties, held until the run is quiet, then joined.

    A unit whose trace nothing ties to another passes at once (the usual case). Otherwise it waits until no
    evidence joined its group and none of the group's traces was held for ``quiet_period`` (or its first span is
    ``max_age`` old), then the group's waiting units are judged as one (:meth:`Assembler.join`). A trace that
    arrives after its run was judged is judged with whatever else of the run is still to come. A mast-otel unit
    (it carries conversation ids) never waits: its recorder roots it in one trace.
    """

    def __init__(self, groups: TraceGroups, assembler: Assembler, *, quiet_period: float, max_age: float) -> None:
        self._groups = groups
        self._assembler = assembler
        self._quiet = quiet_period
        self._max_age = max_age
        self._waiting: list[Unit] = []

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def offer(self, unit: Unit) -> Unit | None:
        """``unit`` to judge now, or None: it waits for the rest of its run."""
        if unit.conv_ids or self._groups.last_noted(unit.trace_id) is None:
            return unit
        if len(self._groups.traces_with(unit.trace_id)) == 1:
            return unit  # evidence, but it names no other trace yet: keys only this trace carries so far
        self._waiting.append(unit)
        return None

    def poll(self, now: float, *, release_all: bool = False) -> list[Unit]:
        """The runs whose wait is over, each as one unit."""
        if not self._waiting:
            return []
        runs: dict[frozenset[bytes], list[Unit]] = {}
        for unit in self._waiting:
            runs.setdefault(self._groups.traces_with(unit.trace_id), []).append(unit)
        out: list[Unit] = []
        self._waiting = []
        for traces, units in runs.items():
            noted = self._groups.last_noted_of(traces) or 0.0
            last = max(noted, *(u.last_received for u in units))
            first = min(u.first_received for u in units)
            still_held = any(self._assembler.has_trace(t) for t in traces)
            if release_all or now - first >= self._max_age or (now - last >= self._quiet and not still_held):
                out.append(self._assembler.join(units))
            else:
                self._waiting.extend(units)
        return out
