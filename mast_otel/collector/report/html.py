"""The HTML report: one self-contained page, charts as inline SVG, so it opens offline and can be mailed or archived.

Each mode row also gives the Jaeger tag and TraceQL query that find its evidence spans in a trace backend.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Sequence

from mast_otel import semconv as sc
from mast_otel.collector.report.aggregate import Report, category_of, pct
from mast_otel.taxonomy import CATEGORIES, MODES

__all__ = ["jaeger_tag", "render_html", "traceql"]

CATEGORY_COLOURS = {"FC1": "#4269d0", "FC2": "#efb118", "FC3": "#ff725c"}


def jaeger_tag(mode_id: str) -> str:
    """The Jaeger tag search that finds this mode's evidence spans."""
    return f"{sc.fm_attribute(mode_id)}=true"


def traceql(mode_id: str) -> str:
    """The TraceQL query (Tempo) that finds this mode's evidence spans."""
    return f"{{ span.{sc.fm_attribute(mode_id)} = true }}"


def _svg_mode_bars(report: Report) -> str:
    """One horizontal bar per mode (conversations), coloured by category: the paper's Figure 1 for this system."""
    judged = max(len(report.judged), 1)
    counts = report.by_mode()
    top = max([*counts.values(), 1])
    bar_w, label_w, row_h = 420, 300, 22
    height = row_h * len(MODES) + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 120}" height="{height}" '
             'role="img" aria-label="conversations per MAST failure mode">']  # fmt: skip
    for i, m in enumerate(MODES):
        y = 10 + i * row_h
        n = counts[m.id]
        w = round(bar_w * n / top)
        colour = CATEGORY_COLOURS.get(m.category.id, "#888")
        parts.append(
            f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end">{html.escape(m.id)} {html.escape(m.name)}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{w}" height="{row_h - 6}" fill="{colour}">'
            f"<title>{n} conversations</title></rect>"
            f'<text x="{label_w + w + 6}" y="{y + 15}">{n} ({pct(n, judged)})</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _svg_group_stacks(report: Report, key: str) -> str:
    """Per framework (or service): the share of its mode labels in each category, as one stacked bar."""
    groups = report.groups(key)[:12]
    bar_w, label_w, row_h = 420, 180, 24
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 180}" '
             f'height="{row_h * len(groups) + 20}" role="img" aria-label="categories by {key}">']  # fmt: skip
    for i, g in enumerate(groups):
        y = 10 + i * row_h
        counts = report.by_mode({key: g})
        per_cat = Counter[str]()
        for mode_id, n in counts.items():
            per_cat[category_of(mode_id)] += n
        total = sum(per_cat.values())
        parts.append(f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end">{html.escape(g)}</text>')
        x = float(label_w)
        for cat in CATEGORIES:
            if not total or not per_cat[cat.id]:
                continue
            w = bar_w * per_cat[cat.id] / total
            parts.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" '
                         f'fill="{CATEGORY_COLOURS[cat.id]}"><title>{cat.id} {html.escape(cat.name)}: '
                         f"{per_cat[cat.id]} labels</title></rect>")  # fmt: skip
            x += w
        judged = report.judged_in(key, g)
        parts.append(f'<text x="{label_w + bar_w + 8}" y="{y + 16}">{total} labels, {judged} judged</text>')
    parts.append("</svg>")
    return "".join(parts)


def _html_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain table with every cell escaped (span and service names come from the traced system)."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(report: Report, *, title: str = "MAST failure modes", pictures: Sequence[str] = ()) -> str:
    """A self-contained HTML page: totals, charts (inline SVG), the tables of the text report, failed conversations.

    ``pictures``: inline SVGs (:func:`~mast_otel.collector.report.picture.render_svg`), one section each.
    """
    judged = len(report.judged)
    by_mode, by_cat = report.by_mode(), report.by_category()
    legend = " ".join(
        f'<span class="key" style="background:{CATEGORY_COLOURS[c.id]}"></span>{c.id} {html.escape(c.name)}'
        for c in CATEGORIES
    )
    mode_rows = [[m.id, m.name, m.category.id, by_mode[m.id], pct(by_mode[m.id], judged), jaeger_tag(m.id),
                  traceql(m.id)] for m in MODES]  # fmt: skip
    cat_rows = [[c.id, c.name, by_cat[c.id], pct(by_cat[c.id], judged)] for c in CATEGORIES]
    sections = []
    for key in ("framework", "service"):
        groups = report.groups(key)[:12]
        counts = {g: report.by_mode({key: g}) for g in groups}
        rows = [[m.id, *(counts[g][m.id] for g in groups)] for m in MODES]
        sections.append(
            f"<h2>By {key}</h2>{_svg_group_stacks(report, key)}"
            + _html_table(["mode", *(f"{g} (n={report.judged_in(key, g)})" for g in groups)], rows)
        )
    failed_rows = [
        [c.trace_id, c.name, c.service, c.framework, c.source or "-",
         "; ".join(f"{m}: {', '.join(c.evidence.get(m, ())) or '-'}" for m in c.modes)]
        for c in report.failed
    ]  # fmt: skip
    statuses = ", ".join(f"{html.escape(k)} {v}" for k, v in sorted(report.statuses().items()))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }}
th {{ background: #f3f3f3; }} svg text {{ font: 12px system-ui, sans-serif; }}
.key {{ display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; }}
code {{ background: #f3f3f3; padding: 0 3px; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<p>{len(report.conversations)} conversations ({statuses}); {judged} judged;
<b>{len(report.failed)}</b> with at least one MAST failure mode ({pct(len(report.failed), judged)} of judged).
Taxonomy: Cemri et al., "Why Do Multi-Agent LLM Systems Fail?" (2025).</p>
<h2>Conversations per failure mode</h2><p>{legend}</p>
{_svg_mode_bars(report)}
{_html_table(["mode", "name", "category", "conversations", "% of judged", "Jaeger tag", "TraceQL"], mode_rows)}
<h2>By category</h2>
{_html_table(["category", "name", "conversations with a mode in it", "% of judged"], cat_rows)}
{"".join(sections)}
<h2>Structural signals</h2>
<p>Facts seen without a model (each hints at a mode; not a MAST verdict): <code>mast.signal.NAME=true</code>.</p>
{_html_table(["signal", "conversations"], [list(kv) for kv in report.by_signal().most_common()])}
<h2>Conversations with failure modes</h2>
{_html_table(["trace id", "conversation", "service", "framework", "source", "modes: evidence spans"], failed_rows)}
{"".join(f'<section class="picture">{svg}</section>' for svg in pictures)}
</body></html>
"""
