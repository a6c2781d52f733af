"""Which traces are one run: the evidence ingest saw tying traces together, kept as groups with an owner.

Some frameworks write a run as a trace per message (Semantic Kernel's agent runtime), so the conversation to judge
is the units of several traces. Ingest submits, per span of another instrumentation and per log record, what ties
its trace to others (:func:`mast_otel.adapters.evidence`'s rules: a link to a span of another trace, a run id the
user declares, a shared history); what each one means is said once, in :mod:`mast_otel.adapters._grouping`.

**Evidence has an owner.** Every tie is made within a tenant (the resource attributes ``tenant_attributes`` name;
by default ``service.namespace``): a link, a declared run id or a history of one tenant never ties another
tenant's traces, whatever ids they share. A shared history ties only within one service of the tenant (the same
answer in two services is two programs given one prompt, not a run handed on). Each node of the index is a digest
of its owner and its key, so what is kept per tie is the same few bytes whatever the attribute's value was.

**Ingest never waits on grouping.** Receivers only append their notes to an inbox (:meth:`submit`, a deque's
append); the pipeline thread takes them (:meth:`take`, under the pipeline lock, an O(1) swap) and applies them
outside the lock (:meth:`apply`), so noting and resolving evidence never holds a receiver. Groups are merged small
into large (amortised logarithmic per node); a shared history is resolved when noted, within a constant number of
givers and readers per answer (:class:`mast_otel.adapters.HistoryTies`).

**Bounded in bytes.** The index counts what it keeps at a fixed cost per node, trace and history entry
(:data:`NODE_BYTES`, measured), and keeps it under ``memory`` bytes by dropping the groups noted least recently
(:attr:`evicted`); a group not noted for ``forget_after`` seconds is dropped as well (its traces were judged long
ago). Evicted evidence ties nothing: those traces are judged one by one. Only the pipeline thread touches the index
itself (after :meth:`take`), so it takes no lock of its own.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from mast_otel.adapters import HistoryTies
from mast_otel.adapters._grouping import LINK, RUN
from mast_otel.collector.assemble.assembler import Assembler, Unit

__all__ = ["NODE_BYTES", "Note", "RunJoiner", "TraceGroups"]

# What one entry of the index costs, in bytes of Python objects (measured with tracemalloc by
# tests/collector/test_trace_groups.py, which fails if the index outgrows its bound): a node (its 16-byte digest,
# its dict slot, its place in its group), a trace in a group, a history entry (a giver or a history and its
# resolution).
NODE_BYTES = 200
TRACE_BYTES = 150
GROUP_BYTES = 500
TIE_BYTES = 700


@dataclass(frozen=True, slots=True)
class Note:
    """What one span or log record says ties ``trace`` to others, and whose it is."""

    trace: bytes
    tenant: str
    service: str
    keys: Sequence[str]
    at: float


@dataclass(slots=True)
class _Group:
    nodes: list[bytes]  # digests of the owner's trace ids and keys
    traces: set[bytes] = field(default_factory=set)  # raw trace ids: its own and those its links name
    own: set[bytes] = field(default_factory=set)  # raw trace ids noted by this group's owner
    noted: float = 0.0


class TraceGroups:
    """Groups of traces tied by evidence, per owner; see the module docstring."""

    def __init__(self, *, memory: int = 64 << 20, forget_after: float = 1800.0) -> None:
        self._memory = memory
        self._forget_after = forget_after
        self._inbox: deque[Note] = deque()
        self._group_of: dict[bytes, int] = {}  # node digest -> group id
        self._groups: OrderedDict[int, _Group] = OrderedDict()  # least recently noted first
        self._next_id = 0
        self._ties = HistoryTies()
        self._bytes = 0  # nodes, traces and groups; the ties' entries are counted apart
        self.evicted = 0  # groups dropped to stay within ``memory``
        self.forgotten = 0  # groups dropped after ``forget_after`` unnoted
        # What the index held once the last note was applied and the bound kept (what /metrics shows: within the
        # bound; while one note is applied it may hold that note's entries more).
        self.settled_bytes = 0

    # -- the receivers' side: constant time, no lock ----------------------------------------------------------
    def submit(self, note: Note) -> None:
        """Queue ``note`` for the pipeline thread (thread-safe: a deque's append)."""
        self._inbox.append(note)

    def take(self) -> list[Note]:
        """Every note submitted so far (call under the pipeline lock, with the assembler's poll, so that every span
        the poll releases has had its evidence taken)."""
        taken: list[Note] = []
        inbox = self._inbox
        while inbox:
            taken.append(inbox.popleft())
        return taken

    # -- the pipeline thread's side ---------------------------------------------------------------------------
    def apply(self, notes: Iterable[Note]) -> None:
        for note in notes:
            self.note(note.trace, note.keys, note.at, tenant=note.tenant, service=note.service)
            self._bound()  # (after each note: a batch of many notes never holds more than ``memory`` either)
        self._bound()

    def note(self, trace_id: bytes, keys: Sequence[str], now: float, *, tenant: str = "", service: str = "") -> None:
        """``trace_id``'s spans (of ``tenant``'s ``service``) carry ``keys`` (``trace:<hex>`` for a link to another
        trace, ``run:<key>=<value>`` for a declared run id, a shared history's answers and histories)."""
        own = _digest("t", tenant, trace_id.hex())
        gid = self._group(own, now)
        group = self._groups[gid]
        if trace_id not in group.traces:
            group.traces.add(trace_id)
            self._bytes += TRACE_BYTES
        group.own.add(trace_id)
        scope = f"{tenant}\0{service}"
        for key in keys:
            if self._ties.note(trace_id, key, scope):
                continue
            if key.startswith(LINK) and len(key) == len(LINK) + 32:
                other = self._group(_digest("t", tenant, key[len(LINK) :]), now)
                if other != gid:
                    gid = self._union(gid, other)
                linked = bytes.fromhex(key[len(LINK) :])
                group = self._groups[gid]
                if linked not in group.traces:
                    group.traces.add(linked)
                    self._bytes += TRACE_BYTES
            elif key.startswith(RUN):
                other = self._group(_digest("r", tenant, key), now)
                if other != gid:
                    gid = self._union(gid, other)
        self._touch(gid, now)

    def run_of(self, tenant: str, trace_id: bytes) -> tuple[frozenset[bytes], float | None]:
        """Every trace tied to ``trace_id`` of ``tenant`` (itself included) and when evidence last joined any of
        them (None: never)."""
        found: set[bytes] = set()
        last: float | None = None
        frontier = [trace_id]
        seen_groups: set[int] = set()
        while frontier:
            trace = frontier.pop()
            if trace in found:
                continue
            gid = self._group_of.get(_digest("t", tenant, trace.hex()))
            if gid is None:
                members: set[bytes] = {trace}
            else:
                group = self._groups[gid]
                members = group.traces | {trace}
                if gid not in seen_groups:
                    seen_groups.add(gid)
                    last = group.noted if last is None else max(last, group.noted)
            found |= members
            for member in members:
                frontier.extend(self._ties.tied(member) - found)
        return frozenset(found), last

    def traces_with(self, trace_id: bytes, tenant: str = "") -> frozenset[bytes]:
        return self.run_of(tenant, trace_id)[0]

    def last_noted(self, trace_id: bytes, tenant: str = "") -> float | None:
        return self.run_of(tenant, trace_id)[1]

    @property
    def ambiguous(self) -> int:
        """Histories whose source could not be told (two runs gave the answer at once): they tied nothing."""
        return self._ties.ambiguous

    @property
    def held_bytes(self) -> int:
        """What the index holds, at its measured cost per entry."""
        return self._bytes + len(self._ties) * TIE_BYTES

    def forget_older_than(self, cutoff: float) -> int:
        """Drop the groups last noted before ``cutoff``; returns how many went."""
        gone = 0
        while self._groups:
            gid, group = next(iter(self._groups.items()))
            if group.noted >= cutoff:
                break
            self._drop(gid)
            gone += 1
        self.forgotten += gone
        self.settled_bytes = self.held_bytes
        return gone

    def __len__(self) -> int:
        """Nodes held."""
        return len(self._group_of)

    # -- inside ----------------------------------------------------------------------------------------------------
    def _bound(self) -> None:
        while self._groups and self.held_bytes > self._memory:
            self._drop(next(iter(self._groups)))
            self.evicted += 1
        self.settled_bytes = self.held_bytes

    def _group(self, node: bytes, now: float) -> int:
        gid = self._group_of.get(node)
        if gid is None:
            gid = self._next_id
            self._next_id += 1
            self._groups[gid] = _Group([node], noted=now)
            self._group_of[node] = gid
            self._bytes += NODE_BYTES + GROUP_BYTES
        return gid

    def _union(self, a: int, b: int) -> int:
        ga, gb = self._groups[a], self._groups[b]
        large, small, keep, drop = (ga, gb, a, b) if len(ga.nodes) >= len(gb.nodes) else (gb, ga, b, a)
        for node in small.nodes:
            self._group_of[node] = keep
        large.nodes += small.nodes
        self._bytes -= TRACE_BYTES * len(large.traces & small.traces) + GROUP_BYTES
        large.traces |= small.traces
        large.own |= small.own
        large.noted = max(large.noted, small.noted)
        del self._groups[drop]
        return keep

    def _touch(self, gid: int, now: float) -> None:
        group = self._groups[gid]
        group.noted = max(group.noted, now)
        self._groups.move_to_end(gid)

    def _drop(self, gid: int) -> None:
        group = self._groups.pop(gid)
        for node in group.nodes:
            del self._group_of[node]
        self._ties.forget(group.own)
        self._bytes -= NODE_BYTES * len(group.nodes) + TRACE_BYTES * len(group.traces) + GROUP_BYTES


def _digest(kind: str, tenant: str, key: str) -> bytes:
    """A node of the index: its kind, owner and key, in 16 bytes whatever the key's length."""
    return hashlib.blake2b(f"{kind}\0{tenant}\0{key}".encode(), digest_size=16).digest()


class RunJoiner:
    """Units of another instrumentation whose traces evidence ties, held until the run is quiet, then joined.

    A unit whose trace nothing ties to another passes at once (the usual case). Otherwise it waits until no
    evidence joined its run and none of the run's traces was held for ``quiet_period`` (or its first span is
    ``max_age`` old), then the run's waiting units are judged as one (:meth:`Assembler.join`). Units of different
    tenants are never one run: each is looked up under its own tenant. A trace that arrives after its run was judged
    is judged with whatever else of the run is still to come. A mast-otel unit (it carries conversation ids) never
    waits: its recorder roots it in one trace.
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
        if unit.conv_ids:
            return unit
        traces, _ = self._groups.run_of(unit.tenant, unit.trace_id)
        if len(traces) == 1:
            return unit  # nothing ties it to another trace (or only keys no other trace carries so far)
        self._waiting.append(unit)
        return None

    def poll(self, now: float, *, release_all: bool = False) -> list[list[Unit]]:
        """The runs whose wait is over, each as the units to join (:meth:`Assembler.join`, under the pipeline
        lock: it records the joined unit as in flight)."""
        if not self._waiting:
            return []
        runs: dict[tuple[str, frozenset[bytes]], tuple[list[Unit], float | None]] = {}
        for unit in self._waiting:
            key = unit.tenant
            traces, noted = self._groups.run_of(key, unit.trace_id)
            entry = runs.setdefault((key, traces), ([], noted))
            entry[0].append(unit)
        out: list[list[Unit]] = []
        self._waiting = []
        has = self._assembler.has_trace
        for (_, traces), (units, noted) in runs.items():
            last = max(noted or 0.0, *(u.last_received for u in units))
            first = min(u.first_received for u in units)
            if release_all or now - first >= self._max_age or (now - last >= self._quiet and not any(map(has, traces))):
                out.append(units)
            else:
                self._waiting.extend(units)
        return out
