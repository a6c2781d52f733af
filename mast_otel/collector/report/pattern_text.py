"""The pattern report in a terminal: what was read, the window(s), the judge's statuses, then the patterns worst
first, each with its example traces on the line below."""

from __future__ import annotations

from collections.abc import Sequence

from mast_otel import semconv as sc
from mast_otel.collector.report.patterns import PatternReport, describe_slice, fmt_change, fmt_rate
from mast_otel.collector.report.tally import ALL

__all__ = ["render_patterns_text"]

_NOT_JUDGED = (sc.JUDGE_ERROR, sc.JUDGE_SKIPPED)


def _rows(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    cells = [list(header), *[list(r) for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def _statuses(report: PatternReport) -> list[str]:
    out = []
    for side, t in zip(report.sides, report.tallies, strict=True):
        total = sum(t.statuses.values())
        problems = {s: t.statuses[s] for s in _NOT_JUDGED if t.statuses[s]}
        health = ", ".join(f"{s} {n} ({100 * n / total:.0f}%)" for s, n in problems.items()) if total else ""
        out.append(f"  {side.label}: {total} verdicts, {t.judged[ALL]} judged (ok, partial, truncated)"
                   + (f"; not judged: {health}" if health else ""))  # fmt: skip
    return out


def render_patterns_text(report: PatternReport, *, top: int = 25) -> str:
    q = report.question
    files = report.sources
    verdicts = sum(int(s["verdicts"]) for s in files)
    lost = sum(int(s.get("dropped_max_bytes", 0)) for s in files)
    out = [f"Verdict history: {verdicts} verdicts in {len(files)} file(s) "
           f"({', '.join(str(s['path']) for s in files)})"
           + (f"; {lost} dropped for history_max_bytes" if lost else "") + "."]  # fmt: skip
    if q.compare is None:
        out.append(f"Window: {report.sides[0].label}" + (f", service {q.service}" if q.service else "") + ".")
    else:
        out.append(f"{report.sides[0].label} against {report.sides[1].label}"
                   + (f", service {q.service}" if q.service else "") + ".")  # fmt: skip
    out += _statuses(report)
    for dimension, n in report.folded.items():
        limit = q.max_agents if dimension == "agent" else q.max_versions
        out.append(f"{n} {dimension}s past the {limit} most frequent counted as other (--max-{dimension}s).")
    out.append("")
    if not report.patterns:
        out.append("No failure mode in this window.")
        return "\n".join(out) + "\n"
    shown = report.patterns[:top]
    compared = q.compare is not None
    header = ["mode", "name", "where", "now" if compared else "rate"]
    if compared:
        header += ["before", "change"]
    rows = []
    for p in shown:
        row = [p.mode, p.name[:34], describe_slice(p.where), fmt_rate(p.now)]
        if compared:
            row += [fmt_rate(p.before), fmt_change(p.change)]
        rows.append(row)
    out.append("Patterns, worst first (rate = conversations with the mode / judged conversations, 95% interval"
               + ("; a change whose 95% interval holds 0 is within noise):" if compared else "):"))  # fmt: skip
    table = _rows(header, rows)
    out += table[:2]
    for line, p in zip(table[2:], shown, strict=True):
        out.append(line)
        if p.examples:
            out.append("    e.g. " + "  ".join(e.url or e.trace_id for e in p.examples))
    if len(report.patterns) > top:
        out.append(f"... {len(report.patterns) - top} more patterns (--top N, or --json FILE for all).")
    return "\n".join(out) + "\n"
