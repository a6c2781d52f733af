"""One run written as several traces: which units of different traces are one conversation, and the root that
holds them.

Some frameworks start a trace for every message they publish: Semantic Kernel's agent runtime writes each message
(``create``, ``send``, ``publish``, ``process``) as a trace of its own, so every agent's turn is in another trace.
What ties such traces together, read here as evidence (:func:`evidence`), and what each piece of evidence means:

- **a span link** names one span of another trace exactly: SK links each message's ``send``, ``publish`` and
  ``process`` to the span that created it, in the sender's trace; OTel messaging conventions do the same. A link
  ties its trace to the linked one.
- **a run id the user declares** (``run_id_attributes`` in the collector, ``run_keys`` here): an attribute whose
  value names one run (``app.run_id``). Equal values tie traces. Nothing is declared by default.
- **a conversation or session id** (``gen_ai.conversation.id``, OpenInference's ``session.id``) names a session: a
  chat thread, a user's session, often a small counter (``session_001``) that holds many runs. It ties nothing: two
  runs of one session, each with a root of its own, are two runs.
- **a shared history**: an answer an agent gave (an agent span's ``gen_ai.output.messages``), given again, under
  that agent's name, to a model in another trace (a ``gen_ai.assistant.message`` record or event with ``name`` and
  ``content``): the chat history a group chat hands the next agent. Semantic Kernel's AgentGroupChat writes each
  turn as a trace of its own with nothing else to tie them. A history ties its trace to the turn that gave the
  answer **last before** the history was written (:class:`HistoryTies`), so the same answer given in every run of a
  batch (a model at temperature 0, a scripted one) ties each run's next turn to its own run. When another turn
  giving the same answer was still running as that last one started (two runs at once), the history is
  **ambiguous** and ties nothing: guessing would merge two runs and leave one without a verdict. Only answers of
  at least :data:`MIN_SHARED_TEXT` characters count ("OK." repeats anywhere), by the agent's name and a digest of
  the text.

Evidence ties traces, whichever of their spans carries it (SK's links are on the runtime spans above an agent's
turn, outside the unit). Units are only ever joined across traces: a trace that holds several units (a later run
left under a finished root is its own, :func:`mast_otel.adapters.foreign_units`) is joined to nothing.

Joined units have no common root: :func:`joined_root` makes one (never exported; the labels go to the first
unit's root), in the convention the first unit's root is written in, so the adapter that reads that convention
reads the joined run as it reads a workflow of agents.
"""

from __future__ import annotations

import bisect
import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord

from ._bounds import json_of
from ._tree import Tree

__all__ = [
    "ANSWER_ATTRIBUTES",
    "ASSISTANT_MESSAGE_EVENT",
    "HistoryTies",
    "answer_keys",
    "evidence",
    "evidence_of",
    "group",
    "history_key",
    "joined_root",
    "runs_of",
]

# The attributes a shared history's answers are read from (with an agent's name): with no link, no declared run id
# and none of these, a span carries no evidence.
ANSWER_ATTRIBUTES = (sc.GEN_AI_OUTPUT_MESSAGES,)
# The GenAI event (a span event or a log record) of an earlier assistant message in a model's input.
ASSISTANT_MESSAGE_EVENT = "gen_ai.assistant.message"
MIN_SHARED_TEXT = 32
LINK, RUN = "trace:", "run:"  # untimed evidence: "trace:<hex>" (a link), "run:<key>=<value>" (a declared run id)
_ANSWER, _HISTORY = "answer:", "history:"  # timed: "answer:<said>@<start>-<end>", "history:<said>@<ns>"


def _said(agent: object, text: object) -> str | None:
    """``<agent>:<digest>`` of an answer (None: no agent, or a text too short to tell runs apart)."""
    if not isinstance(agent, str) or not agent or not isinstance(text, str):
        return None
    text = text.strip()
    if len(text) < MIN_SHARED_TEXT:
        return None
    return f"{agent}:{hashlib.blake2b(text.encode(), digest_size=12).hexdigest()}"


def history_key(agent: object, text: object, at_ns: int, call: str = "", position: int = 0) -> str | None:
    """The evidence of ``agent``'s earlier answer ``text`` given to a model as history at ``at_ns``: the
    ``position``-th earlier answer in the history of the model call ``call`` (its span id; "" when unknown: then the
    answers given at the same time are one history)."""
    said = _said(agent, text)
    return f"{_HISTORY}{said}@{at_ns}#{call}.{position}" if said else None


def answer_keys(agent: object, output_messages: object, start_ns: int, end_ns: int | None = None) -> list[str]:
    """The evidence of each answer in a turn's ``gen_ai.output.messages`` (the parts format, or a message's
    ``content`` string), given by the turn that ran from ``start_ns`` to ``end_ns`` (None: no end known)."""
    messages = json_of(output_messages)  # (past the bounds on what is read: no answer, as the judge reads none)
    end = start_ns if end_ns is None or end_ns < start_ns else end_ns
    keys = []
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict) or message.get("role", "assistant") != "assistant":
            continue
        content = message.get("content")
        if not isinstance(content, str):
            parts = message.get("parts")
            texts = [p.get("content") for p in parts if isinstance(p, dict) and p.get("type") == "text"] if isinstance(
                parts, list
            ) else []  # fmt: skip
            content = "\n".join(t for t in texts if isinstance(t, str) and t)
        said = _said(agent, content)
        if said:
            keys.append(f"{_ANSWER}{said}@{start_ns}-{end}")
    return keys


_Giver = tuple[int, int, bytes]  # (turn start ns, turn end ns, trace)
_K = TypeVar("_K")
_AMBIGUOUS = b""  # a history whose source cannot be told (two turns giving its answer ran at once)
_RESOLUTIONS_PER_NOTE = 1024  # histories resolved again at most, per note (a constant: ~64 per answer, a few answers)


class HistoryTies:
    """Answers, the histories that repeat them, and which trace each history continues.

    A history's source is the turn that gave its answer last at or before the history was written; when that is a
    turn of the history's own trace (one holding several runs' pieces), it ties nothing elsewhere. A turn's end is
    no guide to that (a giver's span can end after the next agent read its answer: its runtime hands the answer on
    before the turn returns). The source is sure only if every earlier turn giving the same answer had been read on
    (a history known to continue it was written) before the last one gave it: in a batch, run 1's answer is read by
    run 1's next turn before run 2 repeats it. If an earlier turn's answer was still unread when another trace gave
    it too, two runs gave it at once: the history is ambiguous and ties nothing (counted in :attr:`ambiguous`).

    Each history is resolved when it is noted and again when an answer it may come from arrives (spans are often
    exported after the log records of the next turn), so asking what a trace is tied to costs only its ties. Per
    answer, the ``givers`` latest turns that gave it and the ``readers`` latest histories of it are kept: an answer
    given more often than that (a greeting) is a poor tie anyway, and the work per note stays constant. ``scope``
    keeps owners apart: an answer and a history tie only within one scope (the collector's tenant and service).
    """

    def __init__(self, *, givers: int = 16, readers: int = 64) -> None:
        self._max_givers = givers
        self._max_readers = readers
        self._givers: dict[bytes, list[_Giver]] = {}  # answer -> its latest givers, by start
        self._readers: dict[bytes, list[tuple[int, bytes]]] = {}  # answer -> its latest histories (ns, trace), by ns
        self._gave: dict[bytes, set[bytes]] = {}  # trace -> the answers it gave
        # trace -> its histories: (answer, ns) -> (the model call given it, its position in that call's history)
        self._read: dict[bytes, dict[tuple[bytes, int], tuple[str, int]]] = {}
        self._source: dict[tuple[bytes, bytes, int], bytes] = {}  # (reader, answer, ns) -> giver or _AMBIGUOUS
        self._ties: dict[bytes, Counter[bytes]] = {}  # trace -> the traces it is tied to, by histories making it
        self._read_from: dict[tuple[bytes, bytes], list[int]] = {}  # (answer, giver) -> when histories tied to it
        self._pending: dict[bytes, int] = {}  # answer -> the earliest of its histories to resolve again
        self._resolving = False
        self._reads_on: set[tuple[bytes, bytes, int]] = set()  # (reader, answer, ns) indexed in the two above
        self._entries = 0  # givers and histories kept
        self.ambiguous = 0  # histories found ambiguous (each time one becomes so)

    def note(self, trace: bytes, key: str, scope: str = "") -> bool:
        """Record one timed piece of evidence; False: ``key`` is not one (a link or a run id: the caller's)."""
        kind = _ANSWER if key.startswith(_ANSWER) else _HISTORY if key.startswith(_HISTORY) else None
        if kind is None:
            return False
        said, _, at = key[len(kind) :].rpartition("@")
        answer = hashlib.blake2b(f"{scope}\0{said}".encode(), digest_size=16).digest()
        if kind == _ANSWER:
            start, _, end = at.partition("-")
            ns = int(start) if start.isdigit() else 0
            self._give(trace, answer, ns, int(end) if end.isdigit() else ns)
        else:
            at, _, given = at.partition("#")
            call, _, position = given.rpartition(".")
            self._history(trace, answer, int(at) if at.isdigit() else 0, call, int(position or 0))
        return True

    def tied(self, trace: bytes) -> set[bytes]:
        """The traces ``trace``'s histories continue, and those whose histories continue it."""
        ties = self._ties.get(trace)
        return set(ties) if ties else set()

    def __len__(self) -> int:
        """Entries held (givers, histories, resolved sources): what the caller's memory bound counts."""
        return self._entries + len(self._source)

    def forget(self, traces: Iterable[bytes]) -> None:
        for trace in traces:
            for answer in self._gave.pop(trace, ()):
                givers = self._givers.get(answer, [])
                kept = [g for g in givers if g[2] != trace]
                self._entries -= len(givers) - len(kept)
                if kept:
                    self._givers[answer] = kept
                else:
                    self._givers.pop(answer, None)
                self._resolve_readers(answer, 0)
            for answer, ns in self._read.pop(trace, {}):
                self._set_source(trace, answer, ns, None)
                before = self._readers.get(answer, [])
                readers = [r for r in before if r[1] != trace]
                self._entries -= len(before) - len(readers)
                if readers:
                    self._readers[answer] = readers
                else:
                    self._readers.pop(answer, None)

    # -- inside --------------------------------------------------------------------------------------------------
    def _give(self, trace: bytes, answer: bytes, start: int, end: int) -> None:
        givers = self._givers.setdefault(answer, [])
        if (start, end, trace) in givers:
            return
        bisect.insort(givers, (start, end, trace))
        self._entries += 1
        self._gave.setdefault(trace, set()).add(answer)
        if len(givers) > self._max_givers:
            _, _, dropped = givers.pop(0)
            self._entries -= 1
            if all(g[2] != dropped for g in givers):
                gave = self._gave.get(dropped)
                if gave is not None:
                    gave.discard(answer)
            start = 0  # the dropped giver may have been a source: every history of the answer again
        self._resolve_readers(answer, start)

    def _history(self, trace: bytes, answer: bytes, ns: int, call: str, position: int) -> None:
        read = self._read.setdefault(trace, {})
        if (answer, ns) in read:
            return
        read[(answer, ns)] = (call, position)
        readers = self._readers.setdefault(answer, [])
        bisect.insort(readers, (ns, trace))
        self._entries += 1
        if len(readers) > self._max_readers:
            old_ns, old = readers.pop(0)
            self._entries -= 1
            self._set_source(old, answer, old_ns, None)
            self._read.get(old, {}).pop((answer, old_ns), None)
        # this history and the later ones of its answer (that it was read may settle which turn they continue)
        self._resolve_readers(answer, ns)

    def _resolve_readers(self, answer: bytes, since: int) -> None:
        """Resolve again the histories of ``answer`` written at or after ``since`` (a giver that started then may be
        their source now), and, in turn, the later histories of any answer whose reading that changed.

        A worklist, never a recursion: a history's source depends only on readings written before it, so one
        forward pass over an answer's histories settles them, and a change queues only another answer's later
        histories. Bounded (each answer's histories are at most ``readers``; a pass is cut after a fixed number of
        resolutions, the rest left as they were: never more work per note than a constant)."""
        pending = self._pending
        pending[answer] = min(since, pending.get(answer, since))
        if self._resolving:
            return  # the pass under way takes it
        self._resolving = True
        budget = _RESOLUTIONS_PER_NOTE
        try:
            while pending and budget > 0:
                answer, since = pending.popitem()
                readers = self._readers.get(answer, ())
                for ns, reader in list(readers[bisect.bisect_left(readers, (since, b"")) :]):
                    budget -= 1
                    for other, at in self._resolve_history(reader, ns):
                        if other != answer:  # (this answer's later histories come next in this pass)
                            pending[other] = min(at + 1, pending.get(other, at + 1))
                    if budget <= 0:
                        break
            pending.clear()
        finally:
            self._resolving = False

    def _resolve_history(self, reader: bytes, ns: int) -> list[tuple[bytes, int]]:
        """One history (the answers ``reader``'s model was given at ``ns``), resolved as a whole: the answers only
        one turn could have given tie it; if none is such, the answers' sources by the batch rule (:meth:`_resolve`),
        unless one of them is ambiguous: then the history ties nothing. (A group chat's later turn holds every
        earlier answer of its run, and another run may have given the oldest again meanwhile: the newest tells.)"""
        read = self._read.get(reader, {})
        calls = {call or at for (_, at), (call, _) in read.items() if at == ns}
        history = sorted((pos, a, at) for (a, at), (call, pos) in read.items() if (call or at) in calls)
        resolved = {(a, at): self._resolve(a, at, reader) for _, a, at in history}
        # Answers are given in their run's order: a source that started after the source of an answer given later in
        # the history is another run's (its turn gave the same text again meanwhile).
        limit: int | None = None
        for _, a, at in reversed(history):
            source, count, start = resolved[(a, at)]
            if source and limit is not None and start > limit:
                resolved[(a, at)] = (None, count, start)
            elif source:
                limit = start if limit is None else min(limit, start)
        unique = {k for k, (source, count, _) in resolved.items() if count == 1 and source}
        unsure = not unique and any(source == _AMBIGUOUS for source, _, _ in resolved.values())
        changed = []
        newest = history[-1][1:] if history else None  # the answer its run gave last: this turn reads it on
        for (answer, at), (source, _, _) in resolved.items():
            if unique and (answer, at) not in unique:
                source = None
            elif unsure and source is not None:
                source = _AMBIGUOUS  # one of its answers could be two runs': the history ties nothing
            if self._set_source(reader, answer, at, source, reads_on=(answer, at) == newest):
                changed.append((answer, at))
        return changed  # whether this history read its giver on may settle later histories' sources

    def _resolve(self, answer: bytes, ns: int, reader: bytes) -> tuple[bytes | None, int, int]:
        """(the source of a history of ``answer`` at ``ns``, or None, or _AMBIGUOUS; how many traces could be; when
        the source's turn started)."""
        givers = self._givers.get(answer, ())
        at = bisect.bisect_right(givers, (ns, 1 << 64, b"\xff" * 16))  # the givers that started by ``ns``
        best: _Giver | None = None
        rivals: dict[bytes, int] = {}  # other traces that gave it before: trace -> its latest start
        for giver in reversed(givers[:at]):
            if best is None:
                best = giver
            elif giver[2] != best[2] and giver[2] not in rivals:
                rivals[giver[2]] = giver[0]
        if best is None:
            return None, 0, 0
        if best[2] == reader:
            return None, len(rivals) + 1, best[0]  # its own trace (or piece) gave it last: nothing to tie elsewhere
        if any(not self._read_on(answer, trace, start, best[0]) for trace, start in rivals.items()):
            return _AMBIGUOUS, len(rivals) + 1, best[0]  # an earlier answer still unread: two runs at once
        return best[2], len(rivals) + 1, best[0]

    def _read_on(self, answer: bytes, giver: bytes, start: int, before: int) -> bool:
        """Whether ``giver``'s ``answer`` (given from ``start``) had been read on, by a history known to continue it,
        before ``before``: its run had moved past that answer when another turn gave it again."""
        times = self._read_from.get((answer, giver), ())
        at = bisect.bisect_left(times, start)
        return at < len(times) and times[at] < before

    def _set_source(
        self, reader: bytes, answer: bytes, ns: int, source: bytes | None, *, reads_on: bool = False
    ) -> bool:
        """Record the source of a history; whether it changed. ``reads_on``: the answer is its history's newest, so
        this turn is the one that read its giver's answer on (the later turns of a group chat read it again)."""
        key = (reader, answer, ns)
        old = self._source.get(key)
        reads_on = reads_on and bool(source)  # (an ambiguous history reads on no turn in particular)
        if old == source and (key in self._reads_on) == reads_on:
            return False
        if old is not None:
            if old:
                self._untie(reader, old)
            if key in self._reads_on:
                self._reads_on.discard(key)
                if old:
                    _remove(self._read_from, (answer, old), ns)
        if source is None:
            self._source.pop(key, None)
            return True
        self._source[key] = source
        if reads_on:
            self._reads_on.add(key)
            bisect.insort(self._read_from.setdefault((answer, source), []), ns)
        if source == _AMBIGUOUS:
            self.ambiguous += 1
            return True
        self._ties.setdefault(reader, Counter())[source] += 1
        self._ties.setdefault(source, Counter())[reader] += 1
        return True

    def _untie(self, a: bytes, b: bytes) -> None:
        for x, y in ((a, b), (b, a)):
            ties = self._ties.get(x)
            if ties is None:
                continue
            ties[y] -= 1
            if ties[y] <= 0:
                del ties[y]
            if not ties:
                del self._ties[x]


def _remove(index: dict[_K, list[int]], key: _K, ns: int) -> None:
    times = index.get(key, [])
    if ns in times:
        times.remove(ns)
    if not times:
        index.pop(key, None)


def evidence(span: SpanRecord, run_keys: Sequence[str] = ()) -> list[str]:
    """What ties ``span``'s trace to others: ``trace:<id>`` per link to another trace, ``run:<key>=<value>`` per
    declared run id it carries (``run_keys``), and the timed evidence of a shared history (:class:`HistoryTies`):
    the answers of an agent span (over its start and end), the earlier answers its model was given (its
    ``gen_ai.assistant.message`` events, at the span's start)."""

    def get(key: str) -> str | None:
        value = span.get(key)
        return value if isinstance(value, str) else None

    keys = evidence_of(span.trace_id, (trace for trace, _ in span.links), get, start_ns=span.start_ns,
                       end_ns=span.end_ns, run_keys=run_keys)  # fmt: skip
    given = [(e.attributes.get("name"), e.attributes.get("content")) for e in span.events
             if e.name == ASSISTANT_MESSAGE_EVENT] or _handed(span.get(sc.GEN_AI_INPUT_MESSAGES))  # fmt: skip
    for position, (agent, text) in enumerate(given):
        key = history_key(agent, text, span.start_ns, span.span_id, position)
        if key:
            keys.append(key)
    return keys


def _handed(input_messages: object) -> list[tuple[object, object]]:
    """The earlier agents' answers a model or an agent was handed in its ``gen_ai.input.messages``: each assistant
    message that names its agent (``name``), with its text (a ``content`` string, or the parts format's text
    parts). What an agent was handed ties it to the answer it quotes, wherever that sits (attributes, span events,
    log records)."""
    if not isinstance(input_messages, str) or '"name"' not in input_messages:
        return []  # (the common case, at no parse: nothing handed on by name)
    messages = json_of(input_messages)
    out: list[tuple[object, object]] = []
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict) or message.get("role") != "assistant" or not message.get("name"):
            continue
        content = message.get("content")
        if not isinstance(content, str):
            parts = message.get("parts")
            content = "\n".join(str(p.get("content")) for p in parts if isinstance(p, dict) and p.get("type") == "text"
                                and isinstance(p.get("content"), str)) if isinstance(parts, list) else None  # fmt: skip
        out.append((message["name"], content))
    return out


def evidence_of(
    trace_id: str, linked: Iterable[str], get: Callable[[str], str | None], *, start_ns: int = 0,
    end_ns: int | None = None, run_keys: Sequence[str] = (),
) -> list[str]:  # fmt: skip
    """:func:`evidence` from a span's trace id (hex), the trace ids (hex) its links name, its attributes (``get``:
    key -> string value or None), its start and end, and the attributes declared to name a run; the collector's
    ingest reads a span undecoded through this."""
    keys = [f"{LINK}{trace}" for trace in linked if trace != trace_id]
    for key in run_keys:
        value = get(key)
        if value:
            keys.append(f"{RUN}{key}={value}")
    agent = get(sc.GEN_AI_AGENT_NAME)
    if agent:
        keys += answer_keys(agent, get(sc.GEN_AI_OUTPUT_MESSAGES), start_ns, end_ns)
    return keys


def group(
    units: Sequence[list[SpanRecord]], spans: Iterable[SpanRecord], run_keys: Sequence[str] = ()
) -> list[list[SpanRecord]]:
    """``units`` (each within one trace), with the units that the evidence on ``spans`` ties together merged into
    one, in the order of each group's first unit (:func:`runs_of`)."""
    return [[s for n in run for s in units[n]] for run in runs_of(units, spans, run_keys)]


def runs_of(
    units: Sequence[list[SpanRecord]], spans: Iterable[SpanRecord], run_keys: Sequence[str] = ()
) -> list[list[int]]:
    """Which of ``units`` (each within one trace) the evidence on ``spans`` ties together: the units' positions,
    each run in the order of its first unit. Linear in the spans.

    Evidence ties **pieces**: a trace with at most one unit is one piece, every span of it (a run written as a trace
    per message); in a trace holding several units (runs under one application span: a web handler, a batch job), a
    span belongs to the unit it is in, or else to the one unit below its nearest ancestor that holds any (a runtime's
    message span above an agent's turn), or to none when that ancestor holds several (the handler itself: it is a
    boundary of nothing, and its evidence ties nothing). So sibling runs under one span are one run only when
    evidence ties them, and stay apart when nothing does. A history ties only within its service (the collector's
    scope is its tenant and service) and never to its own piece."""
    spans = list(spans)
    pieces = _pieces(units, spans)
    index: dict[str, int] = {}  # a piece or a run key -> its node
    parent: list[int] = []

    def node(key: str) -> int:
        found = index.get(key)
        if found is None:
            found = index[key] = len(parent)
            parent.append(found)
        return found

    def find(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    def piece(trace: str, span: str) -> str | None:
        return pieces.get((trace, span), f"{LINK}{trace}" if (trace, span) not in pieces else None)

    ties = HistoryTies()
    for s in spans:
        own = pieces.get((s.trace_id, s.span_id))
        if own is None:
            continue  # a span above several runs: a boundary of none of them
        for trace, span in s.links:
            other = piece(trace, span)
            if other is not None and other != own:
                parent[find(node(other))] = find(node(own))
        for key in evidence(s, run_keys):
            if key.startswith(LINK):
                continue  # (read from the links themselves above: the span they name decides the piece)
            if not ties.note(node(own).to_bytes(8, "big"), key, s.service_name or ""):
                parent[find(node(key))] = find(node(own))
    for n in range(len(parent)):
        for tied in ties.tied(n.to_bytes(8, "big")):
            parent[find(int.from_bytes(tied, "big"))] = find(n)
    merged: dict[object, list[int]] = {}
    for position, unit in enumerate(units):
        found = pieces.get((unit[0].trace_id, unit[0].span_id)) if unit else None
        merged.setdefault(find(index[found]) if found in index else ("apart", position), []).append(position)
    return list(merged.values())


def _pieces(units: Sequence[list[SpanRecord]], spans: Sequence[SpanRecord]) -> dict[tuple[str, str], str | None]:
    """Each span's piece (:func:`group`): ``trace:<id>`` in a trace with at most one unit, ``unit:<n>`` in one with
    several, None for a span above several units."""
    unit_of: dict[tuple[str, str], int] = {}
    per_trace: dict[str, list[int]] = {}
    for n, unit in enumerate(units):
        for s in unit:
            unit_of[(s.trace_id, s.span_id)] = n
        if unit:
            per_trace.setdefault(unit[0].trace_id, []).append(n)
    by_trace: dict[str, dict[str, SpanRecord]] = {}
    for s in (*spans, *(s for unit in units for s in unit)):
        by_trace.setdefault(s.trace_id, {}).setdefault(s.span_id, s)
    out: dict[tuple[str, str], str | None] = {}
    for trace, trace_spans in by_trace.items():
        if len(per_trace.get(trace, ())) <= 1:
            out.update(dict.fromkeys(((trace, span) for span in trace_spans), f"{LINK}{trace}"))
            continue
        tree = Tree(trace_spans.values())
        below: dict[str, set[int]] = {}  # span id -> the units below it or in it (at most two kept: one, or many)
        for s in reversed(tree.top_down()):
            found = below.setdefault(s.span_id, set())
            own = unit_of.get((trace, s.span_id))
            if own is not None:
                found.add(own)
            if s.parent_span_id in tree.by_id and len(below.setdefault(s.parent_span_id, set())) < 2:
                below[s.parent_span_id].update(list(found)[:2])
        for s in tree.top_down():
            own = unit_of.get((trace, s.span_id))
            if own is not None:
                out[(trace, s.span_id)] = f"unit:{own}"
                continue
            held = below.get(s.span_id, set())
            if len(held) == 1:
                out[(trace, s.span_id)] = f"unit:{next(iter(held))}"
            elif held:
                out[(trace, s.span_id)] = None
            else:  # nothing below: the piece of its nearest ancestor
                out[(trace, s.span_id)] = out.get((trace, s.parent_span_id or ""))
    return out


def joined_root(roots: Sequence[SpanRecord], marker: Mapping[str, str]) -> SpanRecord:
    """A root above ``roots`` (the outermost roots of several traces, start order): the first root's trace,
    resource and scope (the framework is read from it), from the first start to the last end, with ``marker``
    (the attribute its convention roots a workflow with)."""
    first = roots[0]
    span_id = f"{int(first.span_id, 16) ^ 0x6A6F696E65640000:016x}"  # not a real span's id: never exported
    return SpanRecord(
        trace_id=first.trace_id, span_id=span_id, parent_span_id=None, name="joined run",
        start_ns=min(r.start_ns for r in roots), end_ns=max(r.end_ns for r in roots), attributes=dict(marker),
        service_name=first.service_name, scope_name=first.scope_name,
    )  # fmt: skip
