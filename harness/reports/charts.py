"""Small inline SVG charts for ``index.html``: the losers' histogram of an arrival pattern."""

from __future__ import annotations

from html import escape

from harness.reports.model import LoserCount

ALLOWED, REFUSED, NEUTRAL = "#16a34a", "#dc2626", "#9ca3af"
ROW_H, LABEL_W, BAR_W, TOP = 18, 190, 260, 4


def histogram_svg(pattern: str, bars: tuple[LoserCount, ...]) -> str:
    """One horizontal bar per answer class: how the concurrent duplicates were answered."""
    height = TOP * 2 + ROW_H * max(len(bars), 1)
    width = LABEL_W + BAR_W + 60
    peak = max((b.count for b in bars), default=0) or 1
    out = [f'<svg class="histogram" data-pattern="{escape(pattern)}" '
           f'xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="loser answers, {escape(pattern)}">']
    if not bars:
        out.append(f'<text x="4" y="{TOP + 13}" font-size="12" fill="#6b7280">no concurrent '
                   'duplicates</text>')
    for row, bar in enumerate(bars):
        y = TOP + row * ROW_H
        colour = NEUTRAL if bar.allowed is None else ALLOWED if bar.allowed else REFUSED
        length = max(BAR_W * bar.count / peak, 1.5 if bar.count else 0)
        kind = "allowed" if bar.allowed else "unknown" if bar.allowed is None else "refused"
        out.append(f'<text x="{LABEL_W - 6}" y="{y + 13}" font-size="12" text-anchor="end" '
                   f'fill="#111827">{escape(bar.answer)}</text>')
        out.append(f'<rect class="bar bar-{kind}" data-answer="{escape(bar.answer)}" '
                   f'data-count="{bar.count}" x="{LABEL_W}" y="{y + 3}" width="{length:.1f}" '
                   f'height="{ROW_H - 6}" rx="2" fill="{colour}">'
                   f'<title>{escape(bar.answer)}: {bar.count}</title></rect>')
        out.append(f'<text x="{LABEL_W + length + 5:.1f}" y="{y + 13}" font-size="12" '
                   f'fill="#374151">{bar.count}</text>')
    out.append("</svg>")
    return "".join(out)
