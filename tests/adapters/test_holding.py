"""How the collector's assembler holds another instrumentation's conversation: a foreign agent / workflow span
(a root candidate with no conversation id) whose parent has not arrived waits for it, since the parent may be
the conversation's real root; once the parent has come and gone as a span outside any conversation (a web
request around the agent run), the candidate is the root of its own unit."""

from __future__ import annotations

import os

from mast_otel.collector.assemble.assembler import Assembler, Unit, Untouched

T = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")


def _split(out: list[Unit | Untouched]) -> tuple[list[Unit], list[Untouched]]:
    return [d for d in out if isinstance(d, Unit)], [d for d in out if isinstance(d, Untouched)]


def test_a_foreign_agent_span_waits_for_its_parent_agent_span() -> None:
    asm = Assembler(quiet_period=1.0, max_age=60.0)
    outer, inner, llm = os.urandom(8), os.urandom(8), os.urandom(8)
    asm.add(T, llm, inner, 0.0)
    asm.add(T, inner, outer, 0.0, conv_root=True)  # arrives before its parent, which is a candidate too
    units, untouched = _split(asm.poll(5.0))
    assert units == [] and untouched == []  # not judged on its own: it waits
    asm.add(T, outer, b"", 6.0, conv_root=True)
    units, _ = _split(asm.poll(8.0))
    (unit,) = units
    assert unit.root_id == outer and set(unit.span_ids) == {outer, inner, llm}


def test_a_foreign_root_under_a_released_plain_span_is_its_own_unit() -> None:
    asm = Assembler(quiet_period=1.0, max_age=60.0)
    http, agent, llm = os.urandom(8), os.urandom(8), os.urandom(8)
    asm.add(T, http, b"", 0.0)  # a web request span: no conversation on it, released at once
    asm.add(T, agent, http, 0.0, conv_root=True)
    asm.add(T, llm, agent, 0.9)  # the agent's subtree is not quiet yet when the web request span leaves
    units, untouched = _split(asm.poll(1.0))
    assert units == [] and [u.span_ids for u in untouched] == [(http,)]
    units, _ = _split(asm.poll(2.0))  # the parent is gone now: the agent span still roots its unit
    (unit,) = units
    assert unit.root_id == agent and set(unit.span_ids) == {agent, llm}
