"""Issue 24's unseen-mutant check on the adapters: hand-written one-line mutants of shapes mutmut does not make.

Each mutant is applied to the checkout this script runs in, ``tests/adapters`` is run (stop at the first
failure), and the file is restored with ``git checkout``. Run from the repository root:
``python3 scripts/adapter_hand_mutants.py [ID ...]`` (all), or ``batch2 [ID ...]``. Results (2026-11-26, on
f411d19's tests, before any test was added for them):

- batch 1 (20, written before any run): 20 caught.
- batch 2 (15, written after batch 1, before any new test): 12 caught. Not caught:
  C6 (a message span's name uses the last recipient, not the first: the synthetic span is never exported and
  nothing reads its name, so no user can see it); I7 (``graph.node.id`` read before ``agent.name``: every
  recorded instrumentor writes one of them, or both equal, so no recorded run tells them apart); G4 (an AG2
  reply's recipient read from its parent span rather than its nearest agent: a reply goes to "" when another
  library's span sits between the chat manager and its member).
- batch 3 (10, written after batch 2, before any test for them): 7 caught. Not caught: N8 (equivalent: every
  caller passes a non-empty target, so dropping ``target and`` changes nothing); N10 (``message.target_id`` read
  after ``message.destination_executor_id``: Agent Framework writes one of the two per span, never both); G5 (the
  task's recipient taken from any span under AG2's root, not the first agent span: the task went to no one when
  another library's span came first).

G4 and G5 are caught since tests/adapters/test_adapter_unseen.py; C6, I7 and N10 are left, none visible in any
recorded run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

A = "mast_otel/adapters/"
# (id, file, line, old text, new text, kind)
MUTANTS: list[tuple[str, str, int, str, str, str]] = [
    ("C1", "_conversation.py", 134, "        self._agents[sender] = None", "        pass", "delete statement"),
    (
        "C2",
        "_conversation.py",
        209,
        "{self.root.span_id: self.root.span_id, **self._origin}",
        "{**self._origin}",
        "drop element",
    ),
    (
        "C3",
        "_conversation.py",
        56,
        "parent_span_id=root.span_id) if",
        "parent_span_id=old) if",
        "wrong similar variable",
    ),
    (
        "T1",
        "_tree.py",
        16,
        "key=lambda s: (s.start_ns, s.span_id))",
        "key=lambda s: (s.start_ns, s.span_id), reverse=True)",
        "reverse sort",
    ),
    ("T2", "_tree.py", 54, "parent if match(parent) else", "s if match(s) else", "wrong similar variable"),
    ("T3", "_tree.py", 61, "(match(s) or s.span_id in out)", "(match(s) and s.span_id in out)", "or/and swap"),
    ("T4", "_tree.py", 116, '"\\n".join(texts)', '"\\n".join(texts[:1])', "slice off-by-one"),
    ("T5", "_tree.py", 111, "                continue", "                pass", "skip continue"),
    (
        "G1",
        "ag2_builtin.py",
        62,
        "conv.handoff(previous or initiator, target,",
        "conv.handoff(target, previous or initiator,",
        "swap arguments",
    ),
    ("G2", "ag2_builtin.py", 77, "if calls and not content else", "if calls or not content else", "and/or swap"),
    ("G3", "ag2_builtin.py", 80, "            previous = sender", "            pass", "delete statement"),
    ("L1", "openllmetry.py", 45, 'split(".", 1)[0]', 'split(".", 1)[-1]', "index off-by-one"),
    (
        "L2",
        "openllmetry.py",
        65,
        "target not in (previous, pending)",
        "target not in (previous,)",
        "drop tuple element",
    ),
    (
        "L3",
        "openllmetry.py",
        80,
        "[_RUNTIME] if calls else [_GRAPH]",
        "[_GRAPH] if calls else [_RUNTIME]",
        "swap arguments",
    ),
    ("I1", "openinference.py", 132, '"ag2.sender.name"', '"ag2.recipient.name"', "wrong attribute key"),
    (
        "I2",
        "openinference.py",
        125,
        "if not recorded or recorded == _START",
        "if not recorded and recorded == _START",
        "or/and swap",
    ),
    ("I3", "openinference.py", 128, "        started.add(agent.span_id)", "        pass", "delete statement"),
    (
        "N1",
        "genai.py",
        207,
        "hand(pending.source, who.agent, pending.origin, pending.reason)",
        "hand(pending.source, who.agent, pending.origin)",
        "drop argument",
    ),
    ("N2", "genai.py", 234, "[who.caller or _USER]", "[who.agent or _USER]", "wrong similar variable"),
    (
        "N3",
        "genai.py",
        269,
        "source = text(span.get(_EDGE_SOURCE))",
        "source = text(span.get(_EDGE_TARGET))",
        "wrong attribute key",
    ),
]

# Batch 2: written after batch 1's results (all caught), still before any new test, to probe further.
MUTANTS2: list[tuple[str, str, int, str, str, str]] = [
    (
        "C4",
        "_conversation.py",
        102,
        "max(self._clock + 1, origin.start_ns)",
        "max(self._clock, origin.start_ns)",
        "off-by-one",
    ),
    ("C5", "_conversation.py", 105, "end_ns=max(self._clock, origin.end_ns)", "end_ns=origin.end_ns", "drop bound"),
    ("C6", "_conversation.py", 135, "recipients[0] if recipients", "recipients[-1] if recipients", "index off-by-one"),
    ("I4", "openinference.py", 138, "if p != sender]", "if p != initiator]", "wrong similar variable"),
    (
        "I5",
        "openinference.py",
        96,
        "(pair[0].start_ns, pair[0].span_id))",
        "(pair[0].start_ns, pair[0].span_id), reverse=True)",
        "reverse sort",
    ),
    ("I6", "openinference.py", 104, "_speaker(tree, turns[0][1])", "_speaker(tree, turns[-1][1])", "index off-by-one"),
    (
        "I7",
        "openinference.py",
        56,
        "(sc.OI_AGENT_NAME, sc.OI_GRAPH_NODE_ID,",
        "(sc.OI_GRAPH_NODE_ID, sc.OI_AGENT_NAME,",
        "swap tuple elements",
    ),
    (
        "N4",
        "genai.py",
        194,
        "is not None and _is_llm(p)}",
        "is not None and _is_agent_span(p)}",
        "wrong similar function",
    ),
    ("N5", "genai.py", 283, "    pending.reason = pending.reason or new.reason", "    pass", "delete statement"),
    ("N6", "genai.py", 187, "for s in below if _is_llm(s)", "for s in reversed(below) if _is_llm(s)", "reverse order"),
    ("N7", "genai.py", 140, ' if _operation(root) == sc.OP_INVOKE_AGENT else ""', "", "drop condition"),
    (
        "G4",
        "ag2_builtin.py",
        72,
        "parent = owners.get(span.span_id)",
        "parent = tree.parent(span)",
        "wrong similar lookup",
    ),
    (
        "L4",
        "openllmetry.py",
        76,
        "previous, pending = sender, None",
        "previous, pending = sender, pending",
        "return earlier variable",
    ),
    (
        "L5",
        "openllmetry.py",
        69,
        "text(span.get(sc.GEN_AI_TOOL_NAME)) or span.name",
        "span.name or text(span.get(sc.GEN_AI_TOOL_NAME))",
        "swap operands",
    ),
    ("T6", "_tree.py", 78, "if s.span_id in out]", "if s.span_id in matched]", "wrong similar variable"),
]

# Batch 3: written after batch 2's results, before any test for them.
MUTANTS3: list[tuple[str, str, int, str, str, str]] = [
    (
        "N8",
        "genai.py",
        199,
        "if source and target and source != target:",
        "if source and source != target:",
        "drop conjunct",
    ),
    ("N9", "genai.py", 178, "        conv.agent(name)", "        pass", "delete statement"),
    (
        "N10",
        "genai.py",
        268,
        "text(span.get(_EDGE_TARGET) or span.get(_SEND_DESTINATION))",
        "text(span.get(_SEND_DESTINATION) or span.get(_EDGE_TARGET))",
        "swap operands",
    ),
    ("N12", "genai.py", 68, '("agent_name", "message"),', '("agent_name", "reason"),', "wrong dict key"),
    (
        "I8",
        "openinference.py",
        219,
        '("message", "task", "input", "content")',
        '("message", "input", "content")',
        "drop tuple element",
    ),
    (
        "I9",
        "openinference.py",
        104,
        'text(root.get("ag2.recipient.name"))',
        'text(root.get("ag2.sender.name"))',
        "wrong attribute key",
    ),
    ("I10", "openinference.py", 148, 'if raw.startswith("{"):', 'if raw.startswith("["):', "wrong literal"),
    (
        "G5",
        "ag2_builtin.py",
        53,
        "(s for s in agents if tree.parent(s) is root)",
        "(s for s in below if tree.parent(s) is root)",
        "wrong similar variable",
    ),
    (
        "L6",
        "openllmetry.py",
        93,
        "return json.dumps(inputs) if inputs",
        "return json.dumps(parsed) if inputs",
        "wrong similar variable",
    ),
    (
        "T7",
        "_tree.py",
        112,
        'if part.get("type") == "text" and part.get("content"):',
        'if part.get("type") == "text" or part.get("content"):',
        "and/or swap",
    ),
]

TESTS = ["tests/adapters"]


def run(ids: set[str] | None, mutants: list[tuple[str, str, int, str, str, str]] = MUTANTS) -> None:
    py = "/work/main/.venv/bin/pytest"
    for mid, name, line, old, new, kind in mutants:
        if ids and mid not in ids:
            continue
        path = Path(A + name)
        lines = path.read_text().split("\n")
        assert lines[line - 1].count(old) == 1, (mid, lines[line - 1])
        lines[line - 1] = lines[line - 1].replace(old, new)
        path.write_text("\n".join(lines))
        try:
            r = subprocess.run(
                [py, "-q", "-x", "-p", "no:cacheprovider", *TESTS],
                capture_output=True,
                text=True,
                env={"PYTHONPATH": str(Path.cwd()), "PATH": "/usr/bin:/bin"},
                timeout=300,
            )
        finally:
            subprocess.run(["git", "checkout", "--", str(path)], check=True)
        failed = [ln for ln in r.stdout.splitlines() if ln.startswith("FAILED")]
        verdict = "caught" if r.returncode != 0 else "NOT caught"
        print(f"{mid}\t{name}:{line}\t{kind}\t{old!r} -> {new!r}\t{verdict}\t{failed[:1]}", flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    batches = {"batch1": MUTANTS, "batch2": MUTANTS2, "batch3": MUTANTS3}
    if args[:1] and args[0] in batches:
        run(set(args[1:]) or None, batches[args[0]])
    else:
        run(set(args) or None, MUTANTS + MUTANTS2 + MUTANTS3)
