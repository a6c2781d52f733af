"""The terminal report: totals, modes by category, modes by framework and by service, failed conversations."""

from __future__ import annotations

from collections.abc import Sequence

from mast_otel import semconv as sc
from mast_otel.collector.report.aggregate import Report, pct
from mast_otel.collector.report.conversations import UNLABELLED
from mast_otel.taxonomy import CATEGORIES, MODES

__all__ = ["render_text"]


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns under a dashed rule, plain text so it survives logs and CI output."""
    cells = [[str(h) for h in header], *[[str(v) for v in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render_text(report: Report, *, width_groups: int = 6) -> str:
    """The terminal report: totals, modes by category, modes by framework and by service, failed conversations."""
    judged = len(report.judged)
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(report.statuses().items()))
    out = [
        f"{len(report.conversations)} conversations ({statuses}); {judged} judged, {len(report.failed)} with at "
        f"least one MAST failure mode ({pct(len(report.failed), judged)} of judged).",
        "",
    ]
    by_mode, by_cat = report.by_mode(), report.by_category()
    total_labels = sum(by_mode.values())
    rows: list[list[object]] = []
    for cat in CATEGORIES:
        rows.append([cat.id, cat.name, by_cat[cat.id], pct(by_cat[cat.id], judged),
                     pct(sum(by_mode[m.id] for m in MODES if m.category == cat), total_labels)])  # fmt: skip
        for m in MODES:
            if m.category == cat:
                rows.append([f"  {m.id}", m.name, by_mode[m.id], pct(by_mode[m.id], judged),
                             pct(by_mode[m.id], total_labels)])  # fmt: skip
    extra = sorted(set(by_mode) - {m.id for m in MODES})
    rows.extend([[f"  {m}", "(unknown mode)", by_mode[m], pct(by_mode[m], judged), pct(by_mode[m], total_labels)]
                 for m in extra])  # fmt: skip
    out.append(_table(["mode", "name", "conversations", "% of judged", "% of labels"], rows))
    for key in ("framework", "service"):
        groups = report.groups(key)[:width_groups]
        if not groups:
            continue
        header = ["mode", *(f"{g} (n={report.judged_in(key, g)})" for g in groups)]
        counts = {g: report.by_mode({key: g}) for g in groups}
        grows = [[m.id, *(counts[g][m.id] for g in groups)] for m in MODES if any(counts[g][m.id] for g in groups)]
        out += ["", f"By {key}:", _table(header, grows) if grows else "  (no failure modes)"]
    if report.failed:
        out += ["", "Conversations with failure modes:"]
        frows = [[c.trace_id, c.name[:40], c.framework, c.source or "-", ",".join(c.modes)] for c in report.failed]
        out.append(_table(["trace id", "conversation", "framework", "source", "modes"], frows))
    signals = report.by_signal()
    if signals:
        out += ["", "Structural signals (facts seen without a model, not MAST verdicts):",
                _table(["signal", "conversations"], [list(kv) for kv in signals.most_common()])]
    problems = [c for c in report.conversations if c.status in (sc.JUDGE_ERROR, sc.JUDGE_SKIPPED, UNLABELLED)]
    if problems:
        out += ["", f"Not judged: {len(problems)} conversation(s) (error, skipped or no verdict): "
                    + ", ".join(sorted({c.trace_id[:8] for c in problems})[:10])]  # fmt: skip
    return "\n".join(out) + "\n"
