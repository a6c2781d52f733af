"""The pattern report as one self-contained HTML page: the statuses, a chart of each mode's rate over time (inline
SVG: the rate per point as a line, its 95% Wilson interval as a band, one colour per side of the comparison), and
the patterns table with links to example traces."""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import UTC, datetime

from mast_otel.collector.report.patterns import PatternReport, describe_slice, fmt_change, fmt_rate
from mast_otel.collector.report.rates import wilson
from mast_otel.collector.report.tally import ALL, HOUR_S, Tally
from mast_otel.taxonomy import MODES, mode

__all__ = ["render_patterns_html"]

SIDE_COLOURS = ("#d03b2f", "#6b7a8f")
_W, _H, _PAD = 360, 130, 28


def _mode_name(mode_id: str) -> str:
    try:
        return mode(mode_id).name
    except KeyError:
        return "unknown mode"


def _day(t: float) -> str:
    """A chart's axis end: month, day and hour (UTC)."""
    return datetime.fromtimestamp(t, UTC).strftime("%m-%d %H:%M")


def _series(t: Tally, mode_id: str) -> list[tuple[float, float, float, float]]:
    """(bucket start, rate, low, high) for each bucket with judged conversations."""
    out = []
    for at, judged in sorted(t.judged_over_time.items()):
        if judged:
            k = t.failed_over_time[(mode_id, at)]
            low, high = wilson(k, judged)
            out.append((at, k / judged, low, high))
    return out


def _chart(report: PatternReport, mode_id: str) -> str:
    """One mode's rate over time, every side on one time axis."""
    series = [_series(t, mode_id) for t in report.tallies]
    step = report.bucket_hours * HOUR_S
    start = min(s.start for s in report.sides)
    end = max(s.end for s in report.sides)
    top = max([high for s in series for _, _, _, high in s] + [0.05])
    top = min(1.0, top)

    def x(at: float) -> float:
        return _PAD + (_W - 2 * _PAD) * min(1.0, max(0.0, (at + step / 2 - start) / max(end - start, 1.0)))

    def y(rate: float) -> float:
        return _H - _PAD + (2 * _PAD - _H) * rate / top

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" role="img" '
        f'aria-label="rate of mode {html.escape(mode_id)} over time" data-mode="{html.escape(mode_id)}">',
        f'<text x="{_PAD}" y="14">{html.escape(mode_id)} {html.escape(_mode_name(mode_id))}</text>',
        f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - _PAD}" y2="{_H - _PAD}" stroke="#999"/>',
        f'<text x="2" y="{y(top) + 4:.0f}">{100 * top:.0f}%</text><text x="2" y="{_H - _PAD + 4}">0%</text>',
        f'<text x="{_PAD}" y="{_H - _PAD + 14}">{_day(start)}</text>',
        f'<text x="{_W - _PAD}" y="{_H - _PAD + 14}" text-anchor="end">{_day(end)}</text>',
    ]
    for colour, points in zip(SIDE_COLOURS, series, strict=False):
        if not points:
            continue
        band = [f"{x(a):.1f},{y(h):.1f}" for a, _, _, h in points] + [
            f"{x(a):.1f},{y(lo):.1f}" for a, _, lo, _ in reversed(points)
        ]
        parts.append(f'<polygon points="{" ".join(band)}" fill="{colour}" fill-opacity="0.15" stroke="none"/>')
        line = " ".join(f"{x(a):.1f},{y(r):.1f}" for a, r, _, _ in points)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        parts.extend(f'<circle cx="{x(a):.1f}" cy="{y(r):.1f}" r="2" fill="{colour}"><title>{100 * r:.1f}% '
                     f"[{100 * lo:.1f}-{100 * h:.1f}]</title></circle>" for a, r, lo, h in points)  # fmt: skip
    parts.append("</svg>")
    return "".join(parts)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Cells are HTML already escaped by the caller (links need their tags)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{v}</td>" for v in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_patterns_html(report: PatternReport, *, title: str = "MAST failure patterns", top: int = 200) -> str:
    q = report.question
    compared = q.compare is not None
    sides = "".join(
        f'<li><span class="key" style="background:{SIDE_COLOURS[i]}"></span>{html.escape(s.label)}: '
        f"{sum(t.statuses.values())} verdicts, {t.judged[ALL]} judged; "
        + html.escape(", ".join(f"{k} {v}" for k, v in sorted(t.statuses.items())))
        + "</li>"
        for i, (s, t) in enumerate(zip(report.sides, report.tallies, strict=True))
    )
    order = {m.id: i for i, m in enumerate(MODES)}
    charted = sorted({m for t in report.tallies for m, _ in t.failed_over_time}, key=lambda m: (order.get(m, 99), m))
    charts = "".join(f'<figure class="chart">{_chart(report, m)}</figure>' for m in charted)
    header = ["mode", "name", "where", "now" if compared else "rate"] + (["before", "change"] if compared else [])
    rows = []
    for p in report.patterns[:top]:
        verdict = p.change.verdict if p.change else ""
        row = [html.escape(p.mode), html.escape(p.name), html.escape(describe_slice(p.where)),
               html.escape(fmt_rate(p.now))]  # fmt: skip
        if compared:
            row += [html.escape(fmt_rate(p.before)), f'<span class="{verdict.replace(" ", "-")}">'
                    f"{html.escape(fmt_change(p.change))}</span>"]  # fmt: skip
        links = [f'<a href="{html.escape(e.url)}">{html.escape(e.trace_id[:12])}</a>' if e.url
                 else f"<code>{html.escape(e.trace_id)}</code>" for e in p.examples]  # fmt: skip
        rows.append([*row, " ".join(links)])
    folded = "".join(f"<p>{n} {html.escape(d)}s past the most frequent counted as <i>other</i>.</p>"
                     for d, n in report.folded.items())  # fmt: skip
    more = (f"<p>{len(report.patterns) - top} more patterns in the JSON report.</p>"
            if len(report.patterns) > top else "")  # fmt: skip
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }}
th {{ background: #f3f3f3; }} svg text {{ font: 11px system-ui, sans-serif; }}
.key {{ display: inline-block; width: 12px; height: 12px; margin-right: 6px; }}
.chart {{ display: inline-block; margin: 0 12px 12px 0; }}
.rose {{ color: #b00; font-weight: bold; }} .fell {{ color: #070; }} .within-noise {{ color: #777; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<ul>{sides}</ul>
{folded}
<h2>Rate of each mode over time</h2>
<p>Conversations with the mode / judged conversations, per {report.bucket_hours} h; the band is the 95% interval.</p>
{charts or "<p>No failure mode in this window.</p>"}
<h2>Patterns, worst first</h2>
<p>Rate = conversations with the mode / judged conversations (status ok, partial, truncated), with its count and 95%
Wilson interval{"; a change whose 95% interval holds 0 is within noise" if compared else ""}.</p>
{_table([*header, "examples"], rows)}
{more}
</body></html>
"""
