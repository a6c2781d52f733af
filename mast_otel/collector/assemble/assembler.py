"""Assembly: group held spans by trace, find the conversations in each, and decide when each one is whole.

The unit judged is a conversation: the subtree under an outermost recorder root (``gen_ai.operation.name`` =
``invoke_workflow``). A trace may hold several; each is ready on its own when its root has arrived (OTLP only
carries ended spans) and none of its spans arrived for ``quiet_period``, or is judged *partial* once its first
span is ``max_age`` old. Spans whose parents have not arrived yet are placed by ``gen_ai.conversation.id`` (every
recorder span carries it), so a conversation whose root never ends is still judged, as partial, at max age.
Spans with no conversation above them leave untouched: at once when their ancestry is complete, after
``max_age`` when a parent never arrives.

Only what placement needs is kept in memory (parent, arrival time, conversation ids); bodies stay in the store.
Not thread-safe: the service calls it under its pipeline lock. The clock is the caller's ``now`` argument, and
``poll(now, release_all=True)`` is the "release now" hook tests and shutdown use.

Another instrumentation's root candidate (an agent or workflow span) is held with its (start, end): one that
starts after the root above it ended begins a unit of its own, with what is under it. Some instrumentations leave
their context attached on the thread, so the next run in that thread is parented on the finished root; it is
another run (the adapters read it so too, :meth:`mast_otel.adapters.Tree.below`), and is judged on its own.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from sys import intern
from typing import Final

__all__ = ["Assembler", "Root", "Unit", "Untouched"]

_EMPTY: Mapping[bytes, object] = {}
_NONE: frozenset[bytes] = frozenset()
_TOP = ("top", "")  # ancestry complete, no conversation on it
_FLOAT = ("float", "")  # a parent is missing, no conversation id on the way


Location = tuple[bytes, int, int]  # span id, segment id, index of the span in the segment
# Whether a span roots a conversation: False; True for a mast-otel root; (start ns, end ns) for another
# instrumentation's root candidate (a run that starts after the one above it ended is its own).
Root = bool | tuple[int, int]


@dataclass(frozen=True, slots=True)
class Unit:
    """One conversation to judge. ``key`` is the root span id (hex), or ``conv:<id>`` when the root is missing."""

    trace_id: bytes
    key: str
    root_id: bytes | None
    locations: tuple[Location, ...]
    conv_ids: tuple[str, ...]
    partial: bool
    parent_hint: bytes | None  # where a verdict span goes when the root is missing
    first_received: float
    last_received: float
    # When another instrumentation's root started (ns; None: unknown or a mast-otel root): orders joined units.
    root_start: int | None = None
    # A run written as several traces (:meth:`Assembler.join`): each other trace and its span ids; () for one trace.
    others: tuple[tuple[bytes, tuple[bytes, ...]], ...] = ()
    # Whose spans these are (.trace_groups: evidence ties runs only within a tenant); "" when none is named.
    tenant: str = ""

    @property
    def span_ids(self) -> tuple[bytes, ...]:
        """This unit's spans in ``trace_id`` (the spans of its other traces are in ``others``)."""
        if not self.others:
            return tuple(loc[0] for loc in self.locations)
        elsewhere = {sid for _, ids in self.others for sid in ids}
        return tuple(loc[0] for loc in self.locations if loc[0] not in elsewhere)

    @property
    def trace_ids(self) -> tuple[bytes, ...]:
        return (self.trace_id, *(t for t, _ in self.others))


@dataclass(frozen=True, slots=True)
class Untouched:
    """Spans no conversation holds; exported unlabelled. ``reason`` is a metrics.UNASSIGNED_* value."""

    trace_id: bytes
    locations: tuple[Location, ...]
    reason: str

    @property
    def span_ids(self) -> tuple[bytes, ...]:
        return tuple(loc[0] for loc in self.locations)


# A held span: (parent id, received, is a conversation root, conversation id, parent conversation id, segment,
# index in the segment). A plain tuple rather than an object: a tuple of atomic values leaves the garbage
# collector's lists after its first collection, so the (often 100,000s of) held spans are not traversed again by
# every later collection, which otherwise cost about as much as the rest of holding a span.
_Span = tuple[bytes, float, Root, str | None, str | None, int, int]
_PARENT: Final = 0
_RECEIVED: Final = 1
_ROOT: Final = 2
_CONV_ID: Final = 3
_CONV_PARENT: Final = 4
_SEGMENT: Final = 5
_INDEX: Final = 6


def _span(
    parent: bytes, received: float, root: Root, conv_id: str | None, conv_parent: str | None, segment: int, index: int
) -> _Span:
    """A held span; conversation ids are interned (one string per conversation, not one per span)."""
    return (parent, received, root, intern(conv_id) if conv_id else None, intern(conv_parent) if conv_parent else None,
            segment, index)  # fmt: skip


class _Trace:
    __slots__ = ("gone", "scheduled", "spans", "tenant")

    def __init__(self, tenant: str = "") -> None:
        self.spans: dict[bytes, _Span] = {}
        self.scheduled: float | None = None
        self.gone: set[bytes] = set()  # released outside any conversation while the trace still holds spans
        self.tenant = tenant  # of the spans that opened the trace (a trace is one tenant's)


class Assembler:
    """held spans -> (quiet period | max age) -> :class:`Unit` to judge, or :class:`Untouched` to export."""

    def __init__(self, *, quiet_period: float, max_age: float) -> None:
        self.quiet_period = quiet_period
        self.max_age = max_age
        self._traces: dict[bytes, _Trace] = {}
        self._due: list[tuple[float, bytes]] = []
        self._inflight: dict[bytes, list[tuple[Unit, set[bytes]]]] = {}
        self._segment_left: dict[int, int] = {}  # segment id -> spans in it not yet released
        self._held = 0  # spans stored and not yet released (being judged included)

    # -- input -----------------------------------------------------------------------------------------------
    def add(
        self,
        trace_id: bytes,
        span_id: bytes,
        parent_id: bytes,
        received: float,
        *,
        segment: int = 0,
        index: int = 0,
        conv_root: Root = False,
        conv_id: str | None = None,
        conv_parent: str | None = None,
        tenant: str = "",
    ) -> None:
        """Hold a span (idempotent per trace_id+span_id), the ``index``-th span stored in ``segment``."""
        trace = self._traces.get(trace_id)
        if trace is None:
            trace = self._traces[trace_id] = _Trace(intern(tenant))
        if span_id in trace.spans:
            return
        trace.spans[span_id] = _span(parent_id, received, conv_root, conv_id, conv_parent, segment, index)
        self._segment_left[segment] = self._segment_left.get(segment, 0) + 1
        self._held += 1
        due = received + self.quiet_period
        if trace.scheduled is None or trace.scheduled > due:
            self._schedule(trace_id, trace, due)

    def add_many(
        self, facts: Iterable[tuple[bytes, bytes, bytes, int, Root, str | None, str | None]], segment: int,
        received: float, tenant: str = "",
    ) -> None:  # fmt: skip
        """:meth:`add` for many spans of one segment (of one resource, so one ``tenant``): ``(trace, span, parent,
        index, root, conv, conv_parent)``."""
        traces = self._traces
        tenant = intern(tenant)
        due = received + self.quiet_period
        added = 0
        for tid, sid, parent, index, root, conv_id, conv_parent in facts:
            trace = traces.get(tid)
            if trace is None:
                trace = traces[tid] = _Trace(tenant)
            spans = trace.spans
            if sid in spans:
                continue
            spans[sid] = (  # _span(), inlined: this loop is on the receive path
                parent, received, root, intern(conv_id) if conv_id else None,
                intern(conv_parent) if conv_parent else None, segment, index,
            )  # fmt: skip
            added += 1
            if trace.scheduled is None or trace.scheduled > due:
                self._schedule(tid, trace, due)
        if added:
            self._segment_left[segment] = self._segment_left.get(segment, 0) + added
            self._held += added

    def _schedule(self, trace_id: bytes, trace: _Trace, due: float) -> None:
        trace.scheduled = due
        heapq.heappush(self._due, (due, trace_id))

    # -- queries ---------------------------------------------------------------------------------------------
    @property
    def pending_traces(self) -> int:
        return len(self._traces)

    @property
    def held_spans(self) -> int:
        """Spans stored and not yet released (being judged included)."""
        return self._held

    def holds(self, trace_id: bytes, span_id: bytes) -> bool:
        trace = self._traces.get(trace_id)
        return trace is not None and span_id in trace.spans

    def has_trace(self, trace_id: bytes) -> bool:
        return trace_id in self._traces

    def next_due(self) -> float | None:
        """When the earliest scheduled check is due (None when nothing is held); may be stale-early, never late."""
        return self._due[0][0] if self._due else None

    def held_map(self, trace_id: bytes) -> Mapping[bytes, object]:
        """The held span ids of a trace (read-only view; empty when none)."""
        trace = self._traces.get(trace_id)
        return trace.spans if trace is not None else _EMPTY

    def inflight_members(self, trace_id: bytes) -> AbstractSet[bytes]:
        """Span ids of this trace's conversations being judged right now (usually none)."""
        units = self._inflight.get(trace_id)
        if not units:
            return _NONE
        return set().union(*(members for _, members in units))

    def consume(self, locations: tuple[Location, ...]) -> list[int]:
        """Released spans leave their segments; returns the segments now empty (to delete with the release)."""
        emptied = []
        self._held -= len(locations)
        for _, segment, _ in locations:
            left = self._segment_left.get(segment, 0) - 1
            if left <= 0:
                self._segment_left.pop(segment, None)
                emptied.append(segment)
            else:
                self._segment_left[segment] = left
        return emptied

    def unconsume(self, locations: tuple[Location, ...]) -> None:
        """Undo :meth:`consume` after the release could not be stored."""
        self._held += len(locations)
        for _, segment, _ in locations:
            self._segment_left[segment] = self._segment_left.get(segment, 0) + 1

    def inflight_unit(self, trace_id: bytes, parent_id: bytes, conv_id: str | None) -> Unit | None:
        """The conversation being judged that a newly arrived span belongs to (by parent or conversation id)."""
        for unit, members in self._inflight.get(trace_id, ()):
            if parent_id in members or (conv_id is not None and conv_id in unit.conv_ids):
                return unit
        return None

    def adopt_late(self, unit: Unit, span_id: bytes) -> None:
        """A late span joins its in-flight unit's membership so its own late children are recognised."""
        for u, members in self._inflight.get(unit.trace_id, ()):
            if u is unit:
                members.add(span_id)

    def finished(self, unit: Unit) -> None:
        """The unit's verdict is stored; forget it (the store answers for late spans from now on)."""
        for trace_id in unit.trace_ids:
            units = self._inflight.get(trace_id)
            if not units:
                continue
            units[:] = [(u, m) for u, m in units if u is not unit]
            if not units:
                del self._inflight[trace_id]

    def join(self, units: list[Unit]) -> Unit:
        """Units that are one run as one unit to judge: the root is the unit's whose root started first (a root
        candidate's window says); the units of other traces (a trace per message) are its ``others``, those of its
        own trace (sibling runs under an application span that evidence ties) are part of it."""
        if len(units) == 1:
            return units[0]
        first = min(units, key=lambda u: (u.root_start is None, u.root_start or 0, u.first_received))
        rest = [u for u in units if u is not first]
        joined = Unit(
            trace_id=first.trace_id, key=first.key, root_id=first.root_id,
            locations=tuple(loc for u in (first, *rest) for loc in u.locations),
            conv_ids=tuple(sorted({c for u in units for c in u.conv_ids})), partial=any(u.partial for u in units),
            parent_hint=first.parent_hint, first_received=min(u.first_received for u in units),
            last_received=max(u.last_received for u in units),
            others=tuple((u.trace_id, u.span_ids) for u in rest if u.trace_id != first.trace_id),
            tenant=first.tenant,
        )  # fmt: skip
        for u in units:  # in flight as the joined unit in each of its traces
            entries = self._inflight.get(u.trace_id, [])
            members = next((m for v, m in entries if v is u), set(u.span_ids))
            entries[:] = [(v, m) for v, m in entries if v is not u]
            entries.append((joined, members))
            self._inflight[u.trace_id] = entries
        return joined


    @property
    def inflight(self) -> int:
        return sum(len(v) for v in self._inflight.values())

    # -- release -----------------------------------------------------------------------------------------------
    def poll(self, now: float, *, release_all: bool = False) -> list[Unit | Untouched]:
        """Everything due at ``now``; ``release_all`` releases every held span (quiet periods treated as over)."""
        out: list[Unit | Untouched] = []
        if release_all:
            self._due.clear()
            for trace_id in list(self._traces):
                self._evaluate(trace_id, now, out, release_all=True)
            return out
        while self._due and self._due[0][0] <= now:
            due, trace_id = heapq.heappop(self._due)
            trace = self._traces.get(trace_id)
            if trace is None or trace.scheduled != due:
                continue  # released already, or rescheduled earlier
            trace.scheduled = None
            self._evaluate(trace_id, now, out, release_all=False)
        return out

    def _evaluate(self, trace_id: bytes, now: float, out: list[Unit | Untouched], *, release_all: bool) -> None:
        trace = self._traces[trace_id]
        groups = self._place(trace)
        next_due: float | None = None
        quiet, max_age = self.quiet_period, self.max_age
        untouched: dict[str, list[bytes]] = {}
        for (kind, key), members in groups.items():
            if kind == "top":
                untouched.setdefault("no_conversation", []).extend(members)
                continue
            if kind == "float":
                for sid in members:
                    if release_all or now - trace.spans[sid][_RECEIVED] >= max_age:
                        untouched.setdefault("parent_timeout", []).append(sid)
                    else:
                        due = trace.spans[sid][_RECEIVED] + max_age
                        next_due = due if next_due is None else min(next_due, due)
                continue
            received = [trace.spans[s][_RECEIVED] for s in members]
            first, last = min(received), max(received)
            root_id = bytes.fromhex(key) if kind == "unit" else None
            if root_id is not None and root_id not in members:  # a root placed inside another conversation
                root_id, key = None, f"conv:{key}"
            elif root_id is None:
                key = f"conv:{key}"
            has_root = root_id is not None
            if has_root and (release_all or now - last >= quiet):
                out.append(self._unit(trace_id, trace, key, root_id, members, first, last, partial=False))
            elif release_all or now - first >= max_age:
                out.append(self._unit(trace_id, trace, key, root_id, members, first, last, partial=True))
            else:
                due = min(last + quiet, first + max_age) if has_root else first + max_age
                next_due = due if next_due is None else min(next_due, due)
        for reason, sids in untouched.items():
            out.append(Untouched(trace_id, tuple(self._location(trace, sid) for sid in sids), reason))
            for sid in sids:
                del trace.spans[sid]
            if reason == "no_conversation":
                trace.gone.update(sids)
        if not trace.spans:
            del self._traces[trace_id]
        elif next_due is not None:
            if trace.scheduled is None or trace.scheduled > next_due:
                self._schedule(trace_id, trace, next_due)

    def _unit(
        self, trace_id: bytes, trace: _Trace, key: str, root_id: bytes | None, members: list[bytes], first: float,
        last: float, *, partial: bool,
    ) -> Unit:  # fmt: skip
        spans = trace.spans
        conv_ids = sorted({c for s in members for c in (spans[s][_CONV_ID], spans[s][_CONV_PARENT]) if c})
        parents = [spans[s][_PARENT] for s in members]
        missing = Counter(p for p in parents if p and p not in spans)
        hint = missing.most_common(1)[0][0] if missing else None
        window = spans[root_id][_ROOT] if root_id is not None else None
        unit = Unit(
            trace_id=trace_id,
            key=key,
            root_id=root_id,
            locations=tuple(self._location(trace, sid) for sid in members),
            conv_ids=tuple(conv_ids),
            partial=partial,
            parent_hint=hint,
            first_received=first,
            last_received=last,
            root_start=window[0] if isinstance(window, tuple) else None,
            tenant=trace.tenant,
        )
        for sid in members:
            del spans[sid]
        self._inflight.setdefault(trace_id, []).append((unit, set(members)))
        return unit

    @staticmethod
    def _location(trace: _Trace, span_id: bytes) -> Location:
        s = trace.spans[span_id]
        return span_id, s[_SEGMENT], s[_INDEX]

    @staticmethod
    def _place(trace: _Trace) -> dict[tuple[str, str], list[bytes]]:
        """Each held span's group: ("unit", root hex) | ("conv", conversation id) | _TOP | _FLOAT."""
        spans = trace.spans
        outer_of: dict[str, str] = {}  # nested conversation id -> the conversation that started it
        root_of: dict[str, bytes] = {}  # outermost conversation id -> its root span id
        for sid, s in spans.items():
            if s[_ROOT] and s[_CONV_ID]:
                if s[_CONV_PARENT]:
                    outer_of[s[_CONV_ID]] = s[_CONV_PARENT]
                else:
                    root_of.setdefault(s[_CONV_ID], sid)

        def by_conversation(conv_id: str) -> tuple[str, str]:
            seen = {conv_id}
            while conv_id not in root_of and conv_id in outer_of and outer_of[conv_id] not in seen:
                conv_id = outer_of[conv_id]
                seen.add(conv_id)
            root = root_of.get(conv_id)
            return ("unit", root.hex()) if root is not None else ("conv", conv_id)

        placed: dict[bytes, tuple[str, str]] = {}
        for start in spans:
            if start in placed:
                continue
            path: list[bytes] = []
            on_path: set[bytes] = set()
            node: bytes | None = start
            while node is not None and node not in placed:
                path.append(node)
                on_path.add(node)
                parent = spans[node][_PARENT]
                node = parent if parent in spans else None
                if node is not None and node in on_path:  # a cycle in bad data: cut it here
                    node = None
            base = placed[node] if node is not None else None
            for sid in reversed(path):
                parent, _, root, conv_id, conv_parent, _, _ = spans[sid]
                if base is None:
                    base = _FLOAT if parent and parent not in spans else _TOP
                    if parent in spans:  # only reachable after a cycle was cut
                        base = _FLOAT
                if base[0] in ("unit", "conv"):
                    group = base
                    if root.__class__ is tuple and base[0] == "unit" and _after(root, spans, base[1]):
                        group = ("unit", sid.hex())  # a later run left under a finished root: its own
                elif root:
                    group = ("unit", sid.hex())
                    if conv_parent:
                        outer = by_conversation(conv_parent)
                        if outer[0] == "unit" or base == _FLOAT:
                            group = outer
                    elif base == _FLOAT and not conv_id and parent not in trace.gone:
                        group = _FLOAT  # another instrumentation's agent span: its parent may hold the conversation
                elif conv_id:
                    group = by_conversation(conv_id)
                else:
                    group = base
                placed[sid] = group
                base = group
        groups: dict[tuple[str, str], list[bytes]] = {}
        for sid, group in placed.items():
            groups.setdefault(group, []).append(sid)
        return groups


def _after(window: Root, spans: Mapping[bytes, _Span], root_hex: str) -> bool:
    """Whether a root candidate's ``window`` starts after the held root ``root_hex`` ended (an end not after its
    start is no end: never split on it)."""
    outer = spans.get(bytes.fromhex(root_hex))
    ended = outer[_ROOT] if outer is not None else None
    return isinstance(window, tuple) and isinstance(ended, tuple) and ended[1] > ended[0] and window[0] > ended[1]
