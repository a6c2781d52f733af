"""The structural signals as properties a user relies on: they are facts about what happened, not about what the
agents are called. Renaming the agents (each to another name of the same kind: a verifier's name to another
verifier's, in any letter case, since the catalogue says names are read ignoring case; a system sender's to
another system sender's; any other to any other) changes no signal, none of its evidence and nothing in its
detail but the names. Conversations are generated (senders, texts, tool calls, terminations, round limits) and
recorded with the real recorder."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mast_otel import semconv as sc
from mast_otel.judge.signals import Signal, compute_signals
from mast_otel.judge.view import build_view
from mast_otel.recorder import Recorder
from mast_otel.spans import SpanRecord
from tests.judge.scenarios import record

# Names by kind, as the catalogue defines them (SIGNALS: "verify, review, test, critic, check, judge, QA, inspect";
# a system sender: system, environment, env, tool, function).
VERIFIERS = ["verifier", "Reviewer", "TESTER", "critic_2", "fact-checker", "Judge", "QA", "code inspector",
             "Verification_Agent", "reviewer-b"]  # fmt: skip
SYSTEMS = ["system", "System", "ENVIRONMENT", "tool", "Function"]
OTHERS = ["coder", "Planner", "WRITER", "alice", "math-solver", "DataAnalyst", "user", "Assistant_1", "bob"]

LOOP = "Please run the full test suite again and report every failing test with its traceback."
TEXTS = [
    LOOP, LOOP.replace("every", "each"), "Solve: a train leaves at 3pm at 60 km/h; when does it reach the city?",
    "The answer is 5.", "\\boxed{5}", "Approved: the result is correct.", "LGTM", "I cannot approve this yet.",
    "That failed; let's start over.", "I will verify this with unit tests first.", "ok", "2 + 3 = 5",
    "exitcode: 1 (execution failed)\nCode output: FAILED test_one AssertionError expected 5 got 4 in line 12",
    "Here is a long plan with many words: first we parse the data, then we compute the totals per region.",
]  # fmt: skip
TERMINATIONS = [None, sc.TERMINATION_MESSAGE, sc.TERMINATION_MAX_ROUNDS, sc.TERMINATION_MAX_TURNS, sc.TERMINATION_ERROR,
                sc.TERMINATION_NO_REPLY, sc.TERMINATION_IDLE, sc.TERMINATION_BUDGET]  # fmt: skip


@st.composite
def conversations(draw: st.DrawFn) -> tuple[list[SpanRecord], dict[str, str]]:
    """A recorded conversation and a renaming of its agents that keeps each one's kind (injective)."""
    kinds = {"verifier": VERIFIERS, "system": SYSTEMS, "other": OTHERS}
    cast = {k: draw(st.lists(st.sampled_from(pool), unique=True, min_size=2 if k == "other" else 0, max_size=3))
            for k, pool in kinds.items()}  # fmt: skip
    agents = [name for names in cast.values() for name in names]
    renaming: dict[str, str] = {}
    for kind, names in cast.items():
        new = draw(st.lists(st.sampled_from(kinds[kind]), unique=True, min_size=len(names), max_size=len(names)))
        for old, fresh in zip(names, new, strict=True):
            renaming[old] = draw(st.sampled_from([fresh, fresh.lower(), fresh.upper(), fresh.title()]))
    # injective in the end: names that only differ in case are still different senders
    if len(set(renaming.values())) < len(renaming):
        renaming = {old: f"{fresh}_{i}" if not fresh.lower().startswith(("system", "tool", "function", "env"))
                    else fresh for i, (old, fresh) in enumerate(renaming.items())}  # fmt: skip
    if len(set(renaming.values())) < len(renaming):
        renaming = {a: a for a in renaming}  # no usable renaming drawn: the identity (a trivial case)
    turns = draw(st.lists(st.tuples(st.sampled_from(agents), st.sampled_from(agents), st.sampled_from(TEXTS),
                                    st.sampled_from(["message", "tool", "tool_call", "tool_result"])),
                          max_size=9))  # fmt: skip
    termination = draw(st.sampled_from(TERMINATIONS))
    max_rounds = draw(st.sampled_from([None, 0, 2, 4, 9]))

    def body(rec: Recorder) -> None:
        for i, (sender, recipient, text, kind) in enumerate(turns):
            if i:
                rec.handoff(turns[i - 1][0], sender, reason=sc.HANDOFF_ROUND_ROBIN)
            with rec.agent_turn(sender):
                if kind == "tool":
                    with rec.tool_call("python", arguments={"code": "print(1)"}) as call:
                        if call is not None:
                            call.set_result(text)
                    rec.message(sender, [recipient], text)
                elif kind == "message":
                    rec.message(sender, [recipient], text)
                else:
                    rec.message(sender, [recipient], text, kind=kind)
        if termination:
            rec.terminate(termination)

    return record(body, max_rounds=max_rounds), renaming


def renamed(spans: Sequence[SpanRecord], renaming: Mapping[str, str]) -> list[SpanRecord]:
    """The same spans with every attribute that names an agent (a whole string value, or an element of a list of
    them) renamed; message text is left as it is."""

    def value(v: Any) -> Any:
        if isinstance(v, str):
            return renaming.get(v, v)
        if isinstance(v, (list, tuple)):
            return type(v)(renaming.get(x, x) if isinstance(x, str) else x for x in v)
        return v

    return [dataclasses.replace(s, attributes={k: value(v) for k, v in s.attributes.items()}) for s in spans]


def _facts(signals: Sequence[Signal], names: Sequence[str]) -> list[tuple[str, str, tuple[str, ...], bool, str]]:
    """Each signal with its detail's agent names replaced by one placeholder (their order follows the names)."""
    pattern = re.compile("|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True)))
    return [(s.mode_id, s.name, s.evidence_span_ids, s.confident, pattern.sub("<agent>", s.detail)) for s in signals]


@settings(max_examples=120, deadline=None)
@given(case=conversations())
def test_renaming_the_agents_changes_no_signal(case: tuple[list[SpanRecord], dict[str, str]]) -> None:
    spans, renaming = case
    before = compute_signals(build_view(spans))
    after = compute_signals(build_view(renamed(spans, renaming)))
    names = [*renaming, *renaming.values()]
    assert _facts(after, names) == _facts(before, names)


def test_a_verifier_is_known_by_its_name_in_any_case() -> None:
    """The example the property generalises: an approval with no check run in between is an unchecked approval,
    and a verifier who spoke means the run had verification, whatever the case of the verifier's name."""

    def body(verifier: str) -> list[SpanRecord]:
        def run(rec: Recorder) -> None:
            rec.message("user", ["solver"], "Compute 17 * 23 and have it checked.")
            with rec.agent_turn("solver"):
                rec.message("solver", [verifier], "17 * 23 = 391.")
            with rec.agent_turn(verifier):
                rec.message(verifier, ["user"], "Approved: the result is correct.")

        return record(run)

    for name in ("verifier", "Verifier", "VERIFIER", "Code_Reviewer", "QA", "Fact-Checker"):
        found = {s.name for s in compute_signals(build_view(body(name)))}
        assert "unchecked_approval" in found and "no_verification" not in found, name


def test_a_system_sender_is_known_in_any_case() -> None:
    """A long message from the system or a tool is not an agent's work: its repeats are not repeated_message."""
    for sender in ("system", "SYSTEM", "Tool", "Environment", "function"):

        def body(rec: Recorder, s: str = sender) -> None:
            for _ in range(3):
                rec.message(s, ["coder"], LOOP)

        spans = record(body)
        assert "repeated_message" not in {x.name for x in compute_signals(build_view(spans))}, sender
