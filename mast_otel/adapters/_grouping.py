"""One run written as several traces: which units of different traces are one conversation, and the root that
holds them.

Some frameworks start a trace for every message they publish: Semantic Kernel's agent runtime writes each message
(``create``, ``send``, ``publish``, ``process``) as a trace of its own, so every agent's turn is in another trace.
What ties such traces together, read here as evidence (:func:`evidence`):

- **span links**: a span that links to a span of another trace. SK links each message's ``send``, ``publish`` and
  ``process`` to the span that created it, in the sender's trace; OTel messaging conventions do the same.
- **a conversation or session id**: the same ``gen_ai.conversation.id`` (GenAI conventions) or ``session.id``
  (OpenInference) on spans of both traces.
- **a shared history**: an answer an agent gave (an agent span's ``gen_ai.output.messages``), given again, under
  that agent's name, to a model in another trace (a ``gen_ai.assistant.message`` record or event with ``name`` and
  ``content``): the chat history a group chat hands the next agent. Semantic Kernel's AgentGroupChat writes each
  turn as a trace of its own with nothing else to tie them. Unlike the others this evidence has a direction and a
  time: a history ties its trace to the trace whose agent turn, giving that answer, started **last before** the
  history was written (:class:`HistoryTies`), so the same answer given in every run of a batch (a model at
  temperature 0, a scripted one) ties each run's next turn to its own run, never the runs together. Every agent
  span's answers count, not only those of turns that are traces of their own: another run's giver must not be the
  last one only because this run's giver was not counted. Only answers of at least :data:`MIN_SHARED_TEXT`
  characters count ("OK." repeats anywhere), by the agent's name and a digest of the text.

Evidence ties traces, whichever of their spans carries it (SK's links are on the runtime spans above an agent's
turn, outside the unit). Units are only ever joined across traces: a trace that holds several units (a later run
left under a finished root is its own, :func:`mast_otel.adapters.foreign_units`) is joined to nothing.

Joined units have no common root: :func:`joined_root` makes one (never exported; the labels go to the first
unit's root), in the convention the first unit's root is written in, so the adapter that reads that convention
reads the joined run as it reads a workflow of agents.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord

__all__ = [
    "ASSISTANT_MESSAGE_EVENT",
    "EVIDENCE_ATTRIBUTES",
    "GROUP_KEYS",
    "HistoryTies",
    "answer_keys",
    "evidence",
    "evidence_of",
    "group",
    "history_key",
    "joined_root",
]

# Attributes whose value names a conversation across traces.
GROUP_KEYS = (sc.GEN_AI_CONVERSATION_ID, sc.OI_SESSION_ID)
# The attributes evidence is read from (with an agent's name): a span with none of them and no link has none.
EVIDENCE_ATTRIBUTES = (*GROUP_KEYS, sc.GEN_AI_OUTPUT_MESSAGES)
# The GenAI event (a span event or a log record) of an earlier assistant message in a model's input.
ASSISTANT_MESSAGE_EVENT = "gen_ai.assistant.message"
MIN_SHARED_TEXT = 32
_ANSWER, _HISTORY = "answer:", "history:"  # evidence with a time: "<kind><agent>:<digest>@<ns>"


def _said(agent: object, text: object) -> str | None:
    """``<agent>:<digest>`` of an answer (None: no agent, or a text too short to tell runs apart)."""
    if not isinstance(agent, str) or not agent or not isinstance(text, str):
        return None
    text = text.strip()
    if len(text) < MIN_SHARED_TEXT:
        return None
    return f"{agent}:{hashlib.blake2b(text.encode(), digest_size=12).hexdigest()}"


def history_key(agent: object, text: object, at_ns: int) -> str | None:
    """The evidence of ``agent``'s earlier answer ``text`` given to a model as history at ``at_ns``."""
    said = _said(agent, text)
    return f"{_HISTORY}{said}@{at_ns}" if said else None


def answer_keys(agent: object, output_messages: object, at_ns: int) -> list[str]:
    """The evidence of each answer in a turn's ``gen_ai.output.messages`` (the parts format, or a message's
    ``content`` string), given by the turn that started at ``at_ns``."""
    try:
        messages = json.loads(output_messages) if isinstance(output_messages, str) else None
    except (ValueError, RecursionError):
        return []
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
            keys.append(f"{_ANSWER}{said}@{at_ns}")
    return keys


class HistoryTies:
    """Answers and the histories that repeat them, and which trace each history continues: the trace whose turn
    giving that answer started last at or before the history's time, never the history's own. A turn's end is no
    guide: a giver's span can end after the next agent read its answer (its runtime hands the answer on before the
    turn returns). Recomputed on every question, so an answer that arrives late (spans are often exported after the
    log records of the next turn) still wins over an earlier run's."""

    def __init__(self) -> None:
        self._answers: dict[str, list[tuple[int, bytes]]] = {}  # said -> (turn start ns, trace)
        self._histories: dict[bytes, list[tuple[str, int]]] = {}  # trace -> (said, ns)
        self._readers: dict[str, set[bytes]] = {}  # said -> traces with a history of it
        self._gave: dict[bytes, set[str]] = {}  # trace -> what it said

    def note(self, trace: bytes, key: str) -> bool:
        """Record one timed piece of evidence; False: ``key`` is not one (a link or an id: the caller's)."""
        kind = _ANSWER if key.startswith(_ANSWER) else _HISTORY if key.startswith(_HISTORY) else None
        if kind is None:
            return False
        said, _, at = key[len(kind) :].rpartition("@")
        ns = int(at) if at.isdigit() else 0
        if kind == _ANSWER:
            self._answers.setdefault(said, []).append((ns, trace))
            self._gave.setdefault(trace, set()).add(said)
        else:
            self._histories.setdefault(trace, []).append((said, ns))
            self._readers.setdefault(said, set()).add(trace)
        return True

    def tied(self, trace: bytes) -> set[bytes]:
        """The traces ``trace``'s histories continue, and those whose histories continue it."""
        out = {giver for said, ns in self._histories.get(trace, ()) if (giver := self._giver(said, ns, trace))}
        for said in self._gave.get(trace, ()):
            for reader in self._readers.get(said, ()):
                if any(self._giver(s, ns, reader) == trace for s, ns in self._histories.get(reader, ()) if s == said):
                    out.add(reader)
        return out

    def forget(self, traces: set[bytes]) -> None:
        for trace in traces:
            for said in self._gave.pop(trace, ()):
                kept = [a for a in self._answers.get(said, ()) if a[1] != trace]
                self._answers[said] = kept
                if not kept:
                    del self._answers[said]
            for said, _ in self._histories.pop(trace, ()):
                readers = self._readers.get(said)
                if readers is not None:
                    readers.discard(trace)
                    if not readers:
                        del self._readers[said]

    def _giver(self, said: str, ns: int, reader: bytes) -> bytes | None:
        best: tuple[int, bytes] | None = None
        for start, trace in self._answers.get(said, ()):
            if trace != reader and start <= ns and (best is None or start > best[0]):
                best = (start, trace)
        return best[1] if best else None


def evidence(span: SpanRecord) -> list[str]:
    """What ties ``span``'s trace to others: ``trace:<id>`` per link to another trace, ``<key>=<value>`` per group
    key it carries, and the timed evidence of a shared history (:class:`HistoryTies`): the answers of an agent span
    (at its start), the earlier answers its model was given (its ``gen_ai.assistant.message`` events, at the span's
    start)."""

    def get(key: str) -> str | None:
        value = span.get(key)
        return value if isinstance(value, str) else None

    keys = evidence_of(span.trace_id, (trace for trace, _ in span.links), get, start_ns=span.start_ns)
    for event in span.events:
        if event.name == ASSISTANT_MESSAGE_EVENT:
            key = history_key(event.attributes.get("name"), event.attributes.get("content"), span.start_ns)
            if key:
                keys.append(key)
    return keys


def evidence_of(
    trace_id: str, linked: Iterable[str], get: Callable[[str], str | None], *, start_ns: int = 0
) -> list[str]:
    """:func:`evidence` from a span's trace id (hex), the trace ids (hex) its links name, its attributes (``get``:
    key -> string value or None) and its start; the collector's ingest reads a span undecoded through this."""
    keys = [f"trace:{trace}" for trace in linked if trace != trace_id]
    for key in GROUP_KEYS:
        value = get(key)
        if value:
            keys.append(f"{key}={value}")
    agent = get(sc.GEN_AI_AGENT_NAME)
    if agent:
        keys += answer_keys(agent, get(sc.GEN_AI_OUTPUT_MESSAGES), start_ns)
    return keys


def group(units: Sequence[list[SpanRecord]], spans: Iterable[SpanRecord]) -> list[list[SpanRecord]]:
    """``units`` (each within one trace), with the units of the traces that the evidence on ``spans`` ties together
    merged into one, in the order of each group's first unit. Evidence ties traces; a trace holding several units
    (a later run left under a finished root) is tied to none, its units stay apart. Linear in the spans."""
    index: dict[str, int] = {}  # a trace id or a group key -> its node
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

    ties = HistoryTies()
    for s in spans:
        for key in evidence(s):
            if not ties.note(bytes.fromhex(s.trace_id), key):
                parent[find(node(key))] = find(node(f"trace:{s.trace_id}"))
    for trace in {s.trace_id for s in spans}:
        for other in ties.tied(bytes.fromhex(trace)):
            parent[find(node(f"trace:{other.hex()}"))] = find(node(f"trace:{trace}"))
    per_trace: dict[str, int] = {}
    for unit in units:
        if unit:
            per_trace[unit[0].trace_id] = per_trace.get(unit[0].trace_id, 0) + 1
    merged: dict[object, list[SpanRecord]] = {}
    for position, unit in enumerate(units):
        trace = unit[0].trace_id if unit else ""
        key = f"trace:{trace}"
        joined = per_trace.get(trace) == 1 and key in index
        merged.setdefault(find(index[key]) if joined else ("apart", position), []).extend(unit)
    return list(merged.values())


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
