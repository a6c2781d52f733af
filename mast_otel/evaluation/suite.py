"""``mast-otel eval --suite``: constructed conversations with one known failure mode each, and clean controls.

Nobody's labels are needed: each case is a scripted multi-agent run built to contain one MAST failure mode by
construction (or none, for the controls), run through a real integration and recorded as spans exactly as a live
run is. The configured judge (and the structural signals) are then scored per mode against what each case was
built to contain. These are constructed cases: a smoke test for a judge configuration (does this model, prompt
and endpoint find an obvious repetition, notice a missing clarification, ...), not a benchmark of real failures.

Integrations used: **AG2 Classic** (real group chats; the agents' replies come from AG2's own ``register_reply``
hook, so no model and no network are involved), a **home-grown MAS on the recorder API** (``mast_otel.Recorder``,
the path for systems without a framework), and **MetaGPT** teams whose actions return scripted text
(:mod:`mast_otel.evaluation.suite_metagpt`). MetaGPT needs its own environment: its cases run in this process when
MetaGPT is importable, else in the interpreter ``--metagpt-python`` names (default ``.nox/metagpt/bin/python``,
what ``nox -s metagpt`` creates) as a subprocess; without either they are left out and the output says so.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import semconv as sc
from mast_otel.config import CaptureConfig
from mast_otel.recorder import Recorder
from mast_otel.spans import SpanRecord, from_readable_span
from mast_otel.taxonomy import mode

from .steplist_input import Conversation
from .suite_metagpt import METAGPT_CASES

__all__ = ["CASES", "DISCLAIMER", "Case", "case_table", "run_case", "run_metagpt_cases"]

DISCLAIMER = (
    "These are constructed cases: scripted conversations each built to contain one failure mode (or none), a smoke "
    "test for a judge configuration, not a benchmark of real failures. Precision and recall here say whether the "
    "judge finds obvious, planted failures, not how it does on real traces."
)


@dataclass(frozen=True)
class Case:
    """One constructed conversation: what it contains by construction and how to run it."""

    name: str
    framework: str  # "ag2" or "home-grown"
    mode: str | None  # the failure mode it was built to contain; None = a clean control
    signal: str | None  # the structural signal it is built to raise, if the failure has a structural face
    story: str
    run: Callable[[TracerProvider], None] | None  # None: a MetaGPT case (suite_metagpt runs it)


# --- AG2 Classic ------------------------------------------------------------------------------------------------


def _ag2_agent(name: str, replies: Sequence[str], **kwargs: Any) -> Any:
    """An AG2 agent without a model whose replies come, in order, from AG2's ``register_reply`` hook."""
    from autogen import Agent, ConversableAgent

    agent = ConversableAgent(name, llm_config=False, human_input_mode="NEVER", **kwargs)
    script: Iterator[str] = iter(replies)

    def reply(recipient: Any, messages: Any = None, sender: Any = None, config: Any = None) -> tuple[bool, Any]:
        text = next(script, None)
        return (True, text) if text is not None else (True, None)

    agent.register_reply([Agent, None], reply, position=0)
    return agent


def _terminate(message: dict[str, Any]) -> bool:
    return "TERMINATE" in str(message.get("content") or "")


def _ag2_group(provider: TracerProvider, task: str, replies: dict[str, list[str]], *, max_round: int,
               stop_on_terminate: bool = True) -> None:  # fmt: skip
    """A round-robin AG2 group chat (user + scripted members) under mast-otel's AG2 instrumentation."""
    from autogen import ConversableAgent, GroupChat, GroupChatManager

    from mast_otel.integrations.ag2 import AG2Instrumentor

    instrumentor = AG2Instrumentor()
    instrumentor.instrument(tracer_provider=provider, config=CaptureConfig(capture_content=True))
    try:
        user = ConversableAgent("user", llm_config=False, human_input_mode="NEVER", default_auto_reply="")
        check = _terminate if stop_on_terminate else None
        members = [_ag2_agent(n, r, is_termination_msg=check) for n, r in replies.items()]
        chat = GroupChat(agents=[user, *members], messages=[], max_round=max_round,
                         speaker_selection_method="round_robin")  # fmt: skip
        manager = GroupChatManager(chat, llm_config=False, is_termination_msg=check)
        user.initiate_chat(manager, message=task)
    finally:
        instrumentor.uninstrument()


ANSWER = "17 * 23: 17 * 20 = 340 and 17 * 3 = 51, so the product is 391. The answer is 391."


def _ag2_repetition(provider: TracerProvider) -> None:
    code = ("def nth_prime(n):\n    primes = [p for p in range(2, 100) if all(p % d for d in range(2, p))]\n"
            "    return primes[n]")  # fmt: skip
    _ag2_group(provider, "Write nth_prime(n) returning the n-th prime (1-based) and have it reviewed.", {
        "coder": [f"Here is the implementation:\n{code}", f"Here is the implementation:\n{code}",
                  f"Here is the implementation:\n{code}"],
        "reviewer": ["nth_prime(1) returns 3, not 2: the list is indexed from 0. Use primes[n - 1].",
                     "Still wrong: you sent the same code again; primes[n] is off by one.",
                     "Same code a third time. I cannot approve this. TERMINATE"],
    }, max_round=12)  # fmt: skip


def _ag2_termination_ignored(provider: TracerProvider) -> None:
    _ag2_group(provider, "Compute 17 * 23 and say TERMINATE when you have the answer.", {
        "solver": [ANSWER + " TERMINATE", "Happy to elaborate on multiplication if useful.",
                   "Another way: 23 * 17 = 230 + 161 = 391.", "Let me know if anything else is needed."],
        "checker": ["I recomputed it as 23 * 17 = 391 by column multiplication: agreed.",
                    "Thanks. Shall we also discuss prime factorisations?", "391 = 17 * 23, both primes.",
                    "Anything else?"],
    }, max_round=9, stop_on_terminate=False)  # fmt: skip


def _ag2_unchecked_approval(provider: TracerProvider) -> None:
    _ag2_group(provider, "Compute 17 * 23. The verifier must check the result by running it before approving.", {
        "solver": ["17 * 23 = 381."],
        "verifier": ["Approved, the result looks correct. TERMINATE"],
    }, max_round=4)  # fmt: skip


def _ag2_no_clarification(provider: TracerProvider) -> None:
    _ag2_group(provider, "Move the weekly sync to the usual time for the new team and send the invite.", {
        "planner": ["I do not know which team is meant or what their usual time is, but I will assume the Berlin "
                    "team at 9:00 and go ahead.", "Done on my side. TERMINATE"],
        "scheduler": ["Invite sent for Mondays 9:00 Berlin time to the Berlin team, based on the planner's guess.",
                      "TERMINATE"],
    }, max_round=6)  # fmt: skip


def _ag2_clean(provider: TracerProvider) -> None:
    _ag2_group(provider, "Compute 17 * 23 and have the result double-checked independently.", {
        "solver": [ANSWER],
        "verifier": ["Independent check by a different route: 23 * 17 = 230 + 161 = 391, which agrees with the "
                     "solver's 391. TERMINATE"],
    }, max_round=4)  # fmt: skip


# --- a home-grown MAS on the recorder API -------------------------------------------------------------------------

# A home-grown run as data: ("say", agent, recipient, text) inside that agent's turn, ("tool", agent, tool, args,
# result, ok) inside that agent's turn (its next "say" joins the same turn), ("handoff", from, to).
Step = tuple[Any, ...]


def _home_run(name: str, task: str, steps: Sequence[Step], end: str, detail: str | None = None) -> (
        Callable[[TracerProvider], None]):  # fmt: skip
    def run(provider: TracerProvider) -> None:
        rec = Recorder(provider, CaptureConfig(capture_content=True), framework="home-grown")
        with rec.conversation(name, task=task):
            rec.message("user", [steps[0][1]], task)
            pending: list[Step] = []
            for step in steps:
                if step[0] == "handoff":
                    rec.handoff(step[1], step[2], reason=sc.HANDOFF_DELEGATION)
                elif step[0] == "tool":
                    pending.append(step)
                else:
                    with rec.agent_turn(step[1]):
                        for _, _, tool, args, result, ok in pending:
                            with rec.tool_call(tool, arguments=args) as call:
                                if call is not None:
                                    call.set_result(result, success=ok)
                        pending = []
                        rec.message(step[1], [step[2]], step[3])
            rec.terminate(end, detail=detail)

    return run


_FIX = "Fix the failing build and confirm the tests pass."
_home_withheld = _home_run("report", "Report yesterday's sign-ups per hour in the Berlin time zone.", [
    ("tool", "analyst", "query_signups", {"day": "yesterday"},
     "NOTE: all timestamps are UTC. hour,signups\n08,12\n09,30\n10,25", True),
    ("say", "analyst", "writer", "Data fetched: 08h 12, 09h 30, 10h 25 sign-ups."),
    ("handoff", "analyst", "writer"),
    ("say", "writer", "user", "Berlin time: 08:00 had 12 sign-ups, 09:00 had 30, 10:00 had 25."),
], sc.TERMINATION_COMPLETED)  # fmt: skip
_home_premature_stop = _home_run("fix", _FIX, [
    ("say", "planner", "coder", "Run the tests first, then fix what fails."),
    ("handoff", "planner", "coder"),
    ("say", "coder", "planner", "Patched the import path in setup.py; running the tests next."),
], sc.TERMINATION_NO_REPLY, "the tester never answered")  # fmt: skip
_REPORT_TASK = "Summarise the three incident reports attached to ticket 4411 into one paragraph for the customer."
_home_reset = _home_run("summary", _REPORT_TASK, [
    ("say", "lead", "writer", "Reports 1 and 2 describe the same outage; report 3 is the follow-up."),
    ("say", "writer", "lead", "Draft: on 3 May the API was down for 40 minutes; a fix shipped on 4 May."),
    ("say", "lead", "writer", _REPORT_TASK),
    ("say", "writer", "lead", "Starting on the summary: which reports are there?"),
], sc.TERMINATION_COMPLETED)  # fmt: skip
_home_clean = _home_run("fix", _FIX, [
    ("tool", "coder", "run_tests", {"path": "tests/"}, "1 failed: test_import (ModuleNotFoundError: pkg.util)",
     False),
    ("say", "coder", "reviewer", "test_import fails on a moved module; I fixed the import in cli.py."),
    ("handoff", "coder", "reviewer"),
    ("tool", "reviewer", "run_tests", {"path": "tests/"}, "42 passed", True),
    ("say", "reviewer", "coder", "I ran the suite myself: 42 passed. The fix is right; merging."),
], sc.TERMINATION_COMPLETED)  # fmt: skip


CASES: tuple[Case, ...] = (
    Case("ag2-step-repetition", "ag2", "1.3", "repeated_message",
         "the coder re-sends the same code three times while the reviewer reports the same bug", _ag2_repetition),
    Case("ag2-termination-ignored", "ag2", "1.5", "round_limit",
         "the answer and TERMINATE come first, the agents chat on until max_round", _ag2_termination_ignored),
    Case("ag2-unchecked-approval", "ag2", "3.2", "unchecked_approval",
         "a wrong product (381) is approved without the check the task demanded", _ag2_unchecked_approval),
    Case("ag2-no-clarification", "ag2", "2.2", None,
         "an ambiguous request is acted on by a stated guess instead of a question", _ag2_no_clarification),
    Case("ag2-clean", "ag2", None, None, "answer, independent check by another route, stop", _ag2_clean),
    Case("home-information-withheld", "home-grown", "2.4", None,
         "the analyst sees that timestamps are UTC and does not tell the writer, who reports them as Berlin time",
         _home_withheld),
    Case("home-premature-stop", "home-grown", "3.1", "stopped_early",
         "the run ends before any test ran, with the fix unconfirmed", _home_premature_stop),
    Case("home-conversation-reset", "home-grown", "2.1", "task_resent",
         "the lead re-sends the original task after a draft exists; the writer starts from zero", _home_reset),
    Case("home-clean", "home-grown", None, None, "fix, then an independent test run, then sign-off", _home_clean),
    *(Case(c.name, "metagpt", c.mode, c.signal, c.story, None) for c in METAGPT_CASES),
)  # fmt: skip
DEFAULT_METAGPT_PYTHON = ".nox/metagpt/bin/python"


def _conversation(case: Case, spans: list[SpanRecord]) -> Conversation:
    reference = {case.mode: True} if case.mode else {}
    return Conversation(trace_key=case.name, spans=spans, reference=reference, framework=case.framework)


def run_metagpt_cases(python: str | None) -> tuple[list[Conversation], str | None]:
    """The MetaGPT cases' conversations, and why they were left out (None when they ran)."""
    cases = {c.name: c for c in CASES if c.run is None}
    if importlib.util.find_spec("metagpt") is not None:
        from .suite_metagpt import ensure_metagpt_config, run_metagpt_case

        ensure_metagpt_config()
        return [_conversation(cases[c.name], [SpanRecord(**d) for d in run_metagpt_case(c)])
                for c in METAGPT_CASES], None  # fmt: skip
    python = python or (DEFAULT_METAGPT_PYTHON if Path(DEFAULT_METAGPT_PYTHON).exists() else None)
    if python is None:
        return [], (f"MetaGPT cases left out: MetaGPT is not importable here and {DEFAULT_METAGPT_PYTHON} does not "
                    "exist (nox -s metagpt creates it; or pass --metagpt-python)")  # fmt: skip
    done = subprocess.run([python, "-m", "mast_otel.evaluation.suite_metagpt"], capture_output=True, text=True,
                          timeout=600, check=False)  # fmt: skip
    if done.returncode != 0:
        return [], f"MetaGPT cases left out: {python} failed ({done.returncode}): {done.stderr.strip()[-500:]}"
    out = []
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            out.append(_conversation(cases[row["case"]], [SpanRecord(**d) for d in row["spans"]]))
    return out, None


def run_case(case: Case) -> Conversation:
    """Run one AG2 or home-grown case through its integration into memory; reference = its mode."""
    if case.run is None:
        raise ValueError(f"{case.name} is a MetaGPT case: run_metagpt_cases runs it")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with contextlib.redirect_stdout(io.StringIO()):  # AG2 prints every message; the tables are the output
        case.run(provider)
    provider.shutdown()
    return _conversation(case, [from_readable_span(s) for s in exporter.get_finished_spans()])


def case_table(rows: Sequence[dict[str, Any]]) -> str:
    """Per case: what it contains, which signals it raised and what the judge labelled."""
    by_name = {c.name: c for c in CASES}
    lines = ["| case | framework | built to contain | signals raised | judge labelled |", "|---|---|---|---|---|"]
    for r in rows:
        case = by_name[r["trace_key"]]
        built = f"{case.mode} {mode(case.mode).name}" if case.mode else "nothing (control)"
        signals = ", ".join(f"{s['name']} ({s['mode']})" for s in r["signals"]) or "none"
        v = r.get("verdict")
        judged = "-" if v is None else (", ".join(v["failure_modes"]) or "none" if v["status"] == "ok"
                                        else f"({v['status']})")  # fmt: skip
        lines.append(f"| {case.name} | {case.framework} | {built} | {signals} | {judged} |")
    return "\n".join(lines)
