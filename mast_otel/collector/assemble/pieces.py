"""Runs side by side in one trace: which of the units one trace releases together are one run.

Whatever sits above a run (a web handler's span, a batch job's, a CLI's) is never its boundary. Under such a span
the assembler finds one unit per outermost agent or workflow span, and releases them together: a parent that has
not arrived holds its children, so they leave once the enclosing span has (it ends after the runs it holds) and
the trace has been quiet. Some of those units are pieces of one run (Semantic Kernel's runtime turns, linked to the
span that sent their message; AgentGroupChat's turns, tied by the history each model call is handed; a program
that calls its agents one after another, handing each the last one's answer), others are runs of their own (two
requests a batch job made). The evidence decides, read here from the pieces' spans and log records, with the
adapters' rules (:func:`mast_otel.adapters.runs_of`): the enclosing span belongs to no run and ties nothing.

Only traces that release two or more foreign units at once are read (the usual trace holds one run, and costs
nothing here); the spans are decoded once more, as the judge will. A mast-otel unit is never grouped: its recorder
roots its conversation itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mast_otel.adapters import runs_of
from mast_otel.collector.assemble.assembler import Location, Unit, Untouched
from mast_otel.spans import SpanRecord

__all__ = ["sibling_runs"]

# locations of one trace's spans -> their records (log records joined as events)
Reader = Callable[[bytes, Sequence[Location]], list[SpanRecord]]


def sibling_runs(
    decisions: Sequence[Unit | Untouched], read: Reader, run_keys: Sequence[str] = ()
) -> list[Unit | Untouched | list[Unit]]:
    """``decisions`` with the foreign units of one trace that evidence ties given as a list (to join), in place of
    the first of them; every other decision as it was."""
    by_trace: dict[bytes, list[Unit]] = {}
    for d in decisions:
        if isinstance(d, Unit) and not d.conv_ids:
            by_trace.setdefault(d.trace_id, []).append(d)
    side_by_side = {trace: units for trace, units in by_trace.items() if len(units) > 1}
    if not side_by_side:
        return list(decisions)
    joined: dict[int, list[Unit]] = {}  # id of a run's first unit -> the run
    absorbed: set[int] = set()
    for trace, units in side_by_side.items():
        above = [loc for d in decisions if isinstance(d, Untouched) and d.trace_id == trace for loc in d.locations]
        records = read(trace, [loc for u in units for loc in u.locations] + above)
        by_id = {bytes.fromhex(r.span_id): r for r in records}
        pieces = [[by_id[loc[0]] for loc in u.locations if loc[0] in by_id] for u in units]
        for run in runs_of(pieces, records, run_keys):
            if len(run) > 1:
                joined[id(units[run[0]])] = [units[n] for n in run]
                absorbed.update(id(units[n]) for n in run[1:])
    out: list[Unit | Untouched | list[Unit]] = []
    for d in decisions:
        if id(d) in joined:
            out.append(joined[id(d)])
        elif id(d) not in absorbed:
            out.append(d)
    return out
