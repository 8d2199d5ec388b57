"""The comparison's plot: per-query differences B - A as sorted bars, the mean's interval drawn, as SVG.

Drawn on the server as plain SVG text (no JavaScript, no image library): one bar per query,
sorted by its difference (then query_id), green above zero and red below for a metric where
higher is better (grey for one without direction), each bar a link to the query's page and
titled with its text and values. The mean difference is a line across, and its 95% interval
a band behind the bars, so a reader sees at once whether zero is inside it. The y axis runs
from the smallest to the largest of the differences, the interval and zero, padded by a tenth.
"""

from __future__ import annotations

from html import escape
from typing import Any

WIDTH = 880
HEIGHT = 320
MARGIN = (16, 16, 36, 56)  # top, right, bottom, left
COLOURS = {1: ("#1f7a3a", "#b3261e"), -1: ("#b3261e", "#1f7a3a"), 0: ("#6b7580", "#6b7580")}


def difference_bars(comparison: dict[str, Any], direction: int, link: str = "/set/query/") -> str:
    """The SVG of `comparison` (goldenset.explorer.data.compare): sorted bars, zero, the mean and its interval."""
    rows = comparison["queries"]
    paired = comparison["paired"] or {}
    top, right, bottom, left = MARGIN
    w, h = WIDTH - left - right, HEIGHT - top - bottom
    values = [r["diff"] for r in rows] + [0.0] + [v for v in (paired.get("lo"), paired.get("hi")) if v is not None]
    lo, hi = min(values), max(values)
    pad = (hi - lo) / 10 or 0.1
    lo, hi = lo - pad, hi + pad

    def y(v: float) -> float:
        return top + (hi - v) / (hi - lo) * h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="difference-plot" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{escape(_caption(comparison))}">',
        f"<title>{escape(_caption(comparison))}</title>",
    ]
    if paired.get("lo") is not None and paired.get("hi") is not None:
        parts.append(
            f'<rect id="interval" x="{left}" y="{y(paired["hi"]):.1f}" width="{w}" '
            f'height="{max(1.0, y(paired["lo"]) - y(paired["hi"])):.1f}" fill="#2457a6" fill-opacity="0.12"/>'
        )
    up, down = COLOURS[direction if direction in COLOURS else 0]
    step = w / max(1, len(rows))
    for i, r in enumerate(rows):
        v = r["diff"]
        y0, y1 = sorted((y(0.0), y(v)))
        title = f"{r['task'] or r['query_id']}: A {r['a']:.4f}, B {r['b']:.4f}, B - A {v:+.4f}"
        parts.append(
            f'<a href="{escape(link + r["query_id"])}"><rect class="diff-bar" data-query="{escape(r["query_id"])}" '
            f'x="{left + i * step + step * 0.1:.1f}" y="{y0:.1f}" width="{max(1.0, step * 0.8):.1f}" '
            f'height="{max(1.0, y1 - y0):.1f}" fill="{up if v > 0 else down if v < 0 else "#6b7580"}">'
            f"<title>{escape(title)}</title></rect></a>"
        )
    parts.append(f'<line x1="{left}" x2="{left + w}" y1="{y(0.0):.1f}" y2="{y(0.0):.1f}" stroke="#1d232b"/>')
    if paired.get("diff") is not None:
        parts.append(
            f'<line id="mean" x1="{left}" x2="{left + w}" y1="{y(paired["diff"]):.1f}" y2="{y(paired["diff"]):.1f}" '
            'stroke="#2457a6" stroke-width="2" stroke-dasharray="6 4"/>'
        )
    for v in (lo + pad, 0.0, hi - pad):
        parts.append(
            f'<text x="{left - 6}" y="{y(v) + 4:.1f}" font-size="11" text-anchor="end" fill="#5c6670">{v:+.2f}</text>'
        )
    parts.append(
        f'<text x="{left + w / 2:.1f}" y="{HEIGHT - 10}" font-size="12" text-anchor="middle" fill="#5c6670">'
        f"{len(rows)} queries, sorted by {escape(comparison['metric'])} of B - A; band: the mean's 95% interval</text>"
    )
    parts.append("</svg>")
    return "\n".join(parts)


def _caption(c: dict[str, Any]) -> str:
    p = c["paired"]
    if not p:
        return f"{c['metric']}: no query measured by both runs"
    lo = "-inf" if p["lo"] is None else f"{p['lo']:+.4f}"
    hi = "inf" if p["hi"] is None else f"{p['hi']:+.4f}"
    return f"{c['metric']} B - A per query; mean {p['diff']:+.4f} [{lo}, {hi}] over {p['n']} queries: {p['verdict']}"
