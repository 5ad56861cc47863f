"""Timelines as inline SVG: a lane per attempt or client, marks for what happened when
(Jepsen-style); with ``unit="step"`` the same drawing is explore's lane diagram of an
interleaving (x = the step number)."""

from __future__ import annotations

from html import escape

from harness.reports.model import Timeline

COLOURS = {
    "started": "#6b7280", "dispatched": "#2563eb", "timed_out": "#d97706", "unknown": "#d97706",
    "result": "#0f766e", "won": "#16a34a", "lost": "#9ca3af", "failed": "#dc2626",
    "cancelled": "#7c3aed", "crash": "#111827", "created": "#16a34a", "replayed": "#0ea5e9",
    "refused": "#dc2626", "statement": "#2563eb", "timer": "#d97706",
    "created_again": "#dc2626", "answered": "#0f766e", "abandoned": "#d97706",
    "late": "#7c3aed", "reset": "#dc2626", "cut": "#dc2626", "released": "#111827",
    "succeeded": "#16a34a", "running": "#93c5fd", "submitted": "#2563eb",
}
LANE_H, LEFT, RIGHT, TOP = 34, 170, 30, 26


def _seconds(seconds: float) -> str:
    return f"{seconds:.4g}s" if seconds >= 1 or seconds == 0 else f"{seconds * 1000:.3g}ms"


def _step(step: float) -> str:
    return f"step {step:g}"


def render_svg(timeline: Timeline, *, width: int = 900, css: str = "timeline") -> str:
    """The timeline as a standalone ``<svg>`` element (no scripts, no external resources)."""
    _fmt = _step if timeline.unit == "step" else _seconds
    lanes = timeline.lanes
    height = TOP + LANE_H * max(len(lanes), 1) + 24
    last = max((e.t for lane in lanes for e in lane.events), default=1.0)
    span = timeline.duration or last or 1.0
    scale = (width - LEFT - RIGHT) / span

    def x(t: float) -> float:
        return LEFT + t * scale

    out = [
        f'<svg class="{css}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="timeline of {len(lanes)} lanes over {_fmt(span)}">'
    ]
    ticks = [span * i / 4 for i in range(5)]
    if timeline.unit == "step":
        ticks = sorted({round(t) for t in ticks})
    for t in ticks:  # time axis
        out.append(f'<line x1="{x(t):.1f}" y1="{TOP - 8}" x2="{x(t):.1f}" y2="{height - 20}" '
                   'stroke="#e5e7eb"/>')
        out.append(f'<text x="{x(t):.1f}" y="{height - 6}" font-size="11" text-anchor="middle" '
                   f'fill="#6b7280">{_fmt(t)}</text>')
    for row, lane in enumerate(lanes):
        y = TOP + row * LANE_H + LANE_H / 2
        label = escape(lane.label + (f" · {lane.provider}" if lane.provider else ""))
        out.append(f'<text x="8" y="{y + 4:.1f}" font-size="12" fill="#111827">{label}</text>')
        if lane.events:
            start, end = lane.events[0].t, lane.events[-1].t
            colour = COLOURS.get(lane.outcome or "", "#93c5fd")
            out.append(
                f'<rect class="lane lane-{escape(lane.outcome or "open")}" x="{x(start):.1f}" '
                f'y="{y - 6:.1f}" width="{max(x(end) - x(start), 2):.1f}" height="12" rx="3" '
                f'fill="{colour}" fill-opacity="0.25" stroke="{colour}"/>'
            )
        for event in lane.events:
            colour = COLOURS.get(event.kind, "#374151")
            detail = f": {event.label}" if event.label else ""
            title = escape(f"{event.kind} at {_fmt(event.t)}{detail}")
            out.append(
                f'<circle class="mark mark-{escape(event.kind)}" cx="{x(event.t):.1f}" '
                f'cy="{y:.1f}" '
                f'r="5" fill="{colour}"><title>{title}</title></circle>'
            )
        if lane.outcome:
            version = f" v{lane.claim_version}" if lane.claim_version is not None else ""
            end_x = x(lane.events[-1].t) if lane.events else LEFT
            out.append(f'<text x="{end_x + 9:.1f}" y="{y - 8:.1f}" font-size="11" '
                       f'fill="{COLOURS.get(lane.outcome, "#374151")}">'
                       f'{escape(lane.outcome)}{version}</text>')
    out.append("</svg>")
    return "".join(out)
