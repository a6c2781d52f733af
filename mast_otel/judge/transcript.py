"""The transcript a judge reads: one conversation's spans rendered as ordered, citable lines.

Each line starts with a short reference the judge cites as evidence, mapped back to the span it came from:
``R`` the conversation root (task, termination), ``M<n>`` a message (tool calls and results included, with their
kind), ``H<n>`` a handoff with its reason, ``T<n>`` a tool execution, ``E<n>`` an agent turn that failed.
Continuation lines of a multi-line message are indented with a tab, so only the renderer can start a line with a
reference: a message cannot forge one. Secrets are redacted here, before anything can reach a judge.

The rendered text carries no span ids, so a replayed or redelivered conversation renders identically and its
hash (the cache key) is stable while the reference map points at the new span ids.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from mast_otel import semconv as sc
from mast_otel.redaction import Redactor
from mast_otel.spans import SpanRecord

from .view import ConversationView, Event, build_view

__all__ = ["Line", "Transcript", "render", "render_view"]

ROOT_REF = "R"
OMITTED = "omitted"  # kind of a compaction marker line: no reference, not citable
DIGEST = "digest"  # kind of a chunk's digest of the parts before it: no reference, not citable
_PREFIX = {
    sc.SPAN_TYPE_MESSAGE: "M",
    sc.SPAN_TYPE_HANDOFF: "H",
    sc.SPAN_TYPE_TOOL_CALL: "T",
    sc.SPAN_TYPE_AGENT_TURN: "E",
}
# A tab, not a visible "  | " prefix: both keep every data line off column 0, and the tab costs no token where the
# prefix cost about two per line (a tenth of a code-heavy transcript).
CONTINUATION = "\n\t"


@dataclass(frozen=True, slots=True)
class Line:
    """One transcript line: ``[ref] head: body``. ``body`` is the part compaction may shorten."""

    ref: str
    span_id: str
    head: str
    body: str = ""
    sender: str = ""
    kind: str = ""  # span type, or "root" / "end"
    role: str = ""  # a message's mast.message.kind (tool_call, tool_result, ...): compaction treats output apart

    def text(self) -> str:
        if self.kind in (OMITTED, DIGEST):
            return self.head
        body = self.body.replace("\r\n", "\n").replace("\n", CONTINUATION)
        # Heads carry span data too (names, termination detail): one physical line, so they cannot forge a ref.
        head = self.head.replace("\r", " ").replace("\n", " ")
        return f"[{self.ref}] {head}: {body}" if body else f"[{self.ref}] {head}"

    def with_body(self, body: str) -> Line:
        return Line(self.ref, self.span_id, self.head, body, self.sender, self.kind, self.role)


@dataclass(frozen=True, slots=True)
class Transcript:
    """Rendered lines plus the reference map. ``view`` keeps the source for the structural signals."""

    lines: tuple[Line, ...]
    refs: dict[str, str]  # ref -> span id
    view: ConversationView
    redactions: int = 0
    notes: tuple[str, ...] = field(default=())  # compaction notes shown to the judge

    def text(self) -> str:
        return "\n".join(line.text() for line in self.lines)

    def sha256(self) -> str:
        return hashlib.sha256(self.text().encode("utf-8")).hexdigest()

    def ref_for(self, span_id: str) -> str | None:
        for ref, sid in self.refs.items():
            if sid == span_id:
                return ref
        return None


def render(spans: Sequence[SpanRecord], redactor: Redactor | None = None) -> Transcript:
    """Render one conversation (its spans) as a transcript, redacting with ``redactor`` (default built-ins)."""
    return render_view(build_view(spans), redactor)


def render_view(view: ConversationView, redactor: Redactor | None = None) -> Transcript:
    red = redactor if redactor is not None else Redactor(max_length=0)
    count = 0

    def clean(text: str) -> str:
        nonlocal count
        out, changed, _ = red.redact(text)
        count += changed
        return out

    lines: list[Line] = []
    refs: dict[str, str] = {}
    root = view.root
    everyone = [str(a) for a in (view.root_attr(sc.CONVERSATION_AGENTS) or view.agents)]
    if root is not None:
        name = view.root_attr(sc.GEN_AI_WORKFLOW_NAME) or root.name
        framework = view.root_attr(sc.MAST_FRAMEWORK) or "?"
        agents = ", ".join(everyone)
        head = f"conversation {name!s} (framework {framework!s}; agents: {agents or '?'}); task"
        lines.append(Line(ROOT_REF, root.span_id, clean(head), clean(view.task), kind="root"))
        refs[ROOT_REF] = root.span_id
    counters = dict.fromkeys(_PREFIX.values(), 0)
    for event in view.events:
        prefix = _PREFIX[event.kind]
        counters[prefix] += 1
        ref = f"{prefix}{counters[prefix]}"
        refs[ref] = event.span.span_id
        head, body = _describe(event)
        role = event.message_kind if event.kind == sc.SPAN_TYPE_MESSAGE else ""
        lines.append(Line(ref, event.span.span_id, clean(head), clean(body), event.sender, event.kind, role))
    if root is not None:
        lines.append(Line(ROOT_REF, root.span_id, clean(_termination(view)), kind="end"))
        first = next((x for x in lines if x.kind == sc.SPAN_TYPE_MESSAGE), None)
        if first is not None and lines[0].body and first.body.strip() == lines[0].body.strip():
            # The task is usually the opening message: say so instead of paying for it twice.
            lines[0] = lines[0].with_body(f"(the opening message {first.ref})")
    return Transcript(lines=tuple(lines), refs=refs, view=view, redactions=count)


def _describe(event: Event) -> tuple[str, str]:
    """(head, body) for one event."""
    a = event.attr
    if event.kind == sc.SPAN_TYPE_MESSAGE:
        recipients = ", ".join(str(r) for r in (a(sc.MESSAGE_RECIPIENTS) or ())) or "*"
        kind = event.message_kind
        head = f"{event.sender} -> {recipients}"
        if kind != sc.KIND_MESSAGE:
            head += f" ({kind})"
        if a(sc.MESSAGE_BROADCAST_TO):
            head += f" (relayed to {', '.join(str(r) for r in a(sc.MESSAGE_BROADCAST_TO))})"
        body = event.text
        calls = a(sc.MESSAGE_TOOL_CALLS)
        if calls:
            body = f"{body}\ntool calls: {calls}" if body else f"tool calls: {calls}"
        return head, body
    if event.kind == sc.SPAN_TYPE_HANDOFF:
        head = f"handoff {event.sender} -> {a(sc.HANDOFF_TO, '?')} (reason: {a(sc.HANDOFF_REASON, 'unknown')}"
        candidates = a(sc.HANDOFF_CANDIDATES)
        if candidates:
            head += f"; candidates: {', '.join(str(c) for c in candidates)}"
        # The reason in the speaker's or selector's own words (a ledger entry, a tool's arguments): often the
        # only place a handoff's intent shows. Agent text, so it is a body (compacted, never part of the head).
        detail = a(sc.HANDOFF_DETAIL)
        return head + ")", "" if detail is None else f"detail: {detail}"
    if event.kind == sc.SPAN_TYPE_TOOL_CALL:
        status = "failed" if event.span.error or a(sc.TOOL_SUCCESS) is False else "ok"
        head = f"tool {a(sc.GEN_AI_TOOL_NAME, '?')} ({status})"
        args, result = a(sc.GEN_AI_TOOL_CALL_ARGUMENTS), a(sc.GEN_AI_TOOL_CALL_RESULT)
        parts = [f"args: {args}" if args is not None else "", f"result: {result}" if result is not None else ""]
        return head, "\n".join(p for p in parts if p)
    return f"turn of {event.sender} failed ({a(sc.ERROR_TYPE, 'error')})", ""


def _termination(view: ConversationView) -> str:
    reason = view.termination or "unknown"
    parts = [f"termination: {reason}"]
    rounds, max_rounds = view.root_attr(sc.CONVERSATION_ROUNDS), view.root_attr(sc.CONVERSATION_MAX_ROUNDS)
    if rounds is not None:
        parts.append(f"after {rounds} messages" + (f" (max_rounds {max_rounds})" if max_rounds is not None else ""))
    if view.root_attr(sc.TERMINATION_AGENT):
        parts.append(f"by {view.root_attr(sc.TERMINATION_AGENT)}")
    if view.root_attr(sc.TERMINATION_DETAIL):
        parts.append(f"detail: {view.root_attr(sc.TERMINATION_DETAIL)}")
    if view.root is not None and view.root.error:
        parts.append("the run raised an error")
    return "; ".join(parts)
