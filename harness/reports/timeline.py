"""Timelines as inline SVG: a lane per attempt or client, marks for what happened when
(Jepsen-style); with ``unit="step"`` the same drawing is explore's lane diagram of an
interleaving (x = the step number)."""

from __future__ import annotations

from html import escape

from harness.reports.model import Timeline

# One colour per state, and a shape per family, so that a reader who cannot tell the colours
# apart still can: ● on its way, ■ a success, ◆ unknown / waiting, ▼ a failure, ✕ lost or
# stopped. (tests/reports/test_renderings.py checks that no two states share a colour.)
COLOURS = {
    "started": "#6b7280", "dispatched": "#2563eb", "timed_out": "#d97706", "unknown": "#a16207",
    "result": "#0f766e", "won": "#16a34a", "lost": "#9ca3af", "failed": "#dc2626",
    "cancelled": "#7c3aed", "crash": "#111827", "created": "#65a30d", "replayed": "#0ea5e9",
    "refused": "#db2777", "statement": "#4338ca", "timer": "#ca8a04",
    "created_again": "#991b1b", "answered": "#0d9488", "abandoned": "#b45309",
    "late": "#6d28d9", "reset": "#e11d48", "cut": "#f97316", "released": "#374151",
    "succeeded": "#15803d", "running": "#93c5fd", "submitted": "#1e40af",
}
SHAPES = {
    "started": "circle", "dispatched": "circle", "result": "circle", "statement": "circle",
    "replayed": "square", "won": "square", "created": "square",
    "timed_out": "diamond", "unknown": "diamond", "timer": "diamond",
    "failed": "triangle", "refused": "triangle", "created_again": "triangle", "crash": "triangle",
    "lost": "cross", "cancelled": "cross", "released": "cross",
    "answered": "circle", "running": "circle", "submitted": "circle", "succeeded": "square",
    "abandoned": "diamond", "late": "diamond", "reset": "triangle", "cut": "triangle",
}


def mark(kind: str, cx: float, cy: float, *, r: float = 5, title: str = "") -> str:
    """One mark: the state's colour and shape (class ``mark mark-<kind>``)."""
    colour = COLOURS.get(kind, "#374151")
    shape = SHAPES.get(kind, "circle")
    head = f'class="mark mark-{escape(kind)}" fill="{colour}"'
    tail = f"<title>{title}</title>" if title else ""
    if shape == "circle":
        return f'<circle {head} cx="{cx:.1f}" cy="{cy:.1f}" r="{r:g}">{tail}</circle>'
    if shape == "square":
        return (f'<rect {head} x="{cx - r:.1f}" y="{cy - r:.1f}" width="{2 * r:g}" '
                f'height="{2 * r:g}">{tail}</rect>')
    points = {
        "diamond": [(0, -r - 1), (r + 1, 0), (0, r + 1), (-r - 1, 0)],
        "triangle": [(-r - 1, -r), (r + 1, -r), (0, r + 1)],
        "cross": [(-r, -r + 2), (-r + 2, -r), (0, -2), (r - 2, -r), (r, -r + 2), (2, 0),
                  (r, r - 2), (r - 2, r), (0, 2), (-r + 2, r), (-r, r - 2), (-2, 0)],
    }[shape]
    text = " ".join(f"{cx + dx:.1f},{cy + dy:.1f}" for dx, dy in points)
    return f'<polygon {head} points="{text}">{tail}</polygon>'


def legend_mark(kind: str) -> str:
    """A small standalone mark for the legend."""
    return (f'<svg width="12" height="12" viewBox="0 0 12 12" aria-hidden="true">'
            f'{mark(kind, 6, 6, r=4)}</svg>')


# the history's process names, as a reader calls them
LANE_NAMES = {"nemesis": "faults", "observer": "side-effect counter"}
LANE_H, LEFT, RIGHT, TOP = 34, 170, 30, 26
CHAR_W = 7.2  # a 12 px label character, at most (labels are never cut: the margin grows)


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
    names = [LANE_NAMES.get(lane.label, lane.label) for lane in lanes]
    longest = max((len(text) for lane, name in zip(lanes, names, strict=True)
                   for text in (name, lane.provider)), default=0)
    left = max(LEFT, round(16 + CHAR_W * longest))  # the labels' margin: as wide as they are
    width = max(width, left + 300 + RIGHT)  # …and the lanes keep room
    scale = (width - left - RIGHT) / span

    def x(t: float) -> float:
        return left + t * scale

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
    for row, (lane, name) in enumerate(zip(lanes, names, strict=True)):
        y = TOP + row * LANE_H + LANE_H / 2
        if lane.provider:  # the provider's role under the lane's name: neither is cut
            out.append(f'<text class="lane-label" x="8" y="{y - 2:.1f}" font-size="12" '
                       f'fill="#111827">{escape(name)}</text>'
                       f'<text class="lane-role" x="8" y="{y + 11:.1f}" font-size="11" '
                       f'fill="#6b7280">{escape(lane.provider)}</text>')
        else:
            out.append(f'<text class="lane-label" x="8" y="{y + 4:.1f}" font-size="12" '
                       f'fill="#111827">{escape(name)}</text>')
        if lane.events:
            start, end = lane.events[0].t, lane.events[-1].t
            colour = COLOURS.get(lane.outcome or "", "#93c5fd")
            out.append(
                f'<rect class="lane lane-{escape(lane.outcome or "open")}" x="{x(start):.1f}" '
                f'y="{y - 6:.1f}" width="{max(x(end) - x(start), 2):.1f}" height="12" rx="3" '
                f'fill="{colour}" fill-opacity="0.25" stroke="{colour}"/>'
            )
        for event in lane.events:
            detail = f": {event.label}" if event.label else ""
            title = escape(f"{event.kind} at {_fmt(event.t)}{detail}")
            out.append(mark(event.kind, x(event.t), y, title=title))
        if lane.outcome:
            version = f" v{lane.claim_version}" if lane.claim_version is not None else ""
            end_x = x(lane.events[-1].t) if lane.events else left
            out.append(f'<text x="{end_x + 9:.1f}" y="{y - 8:.1f}" font-size="11" '
                       f'fill="{COLOURS.get(lane.outcome, "#374151")}">'
                       f'{escape(lane.outcome)}{version}</text>')
    out.append("</svg>")
    return "".join(out)
