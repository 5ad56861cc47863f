"""The drill section of index.html (issue 34): lane labels are never cut, the markers have a
legend, and near-identical failing intents are drawn once, "and N more like it"."""

from __future__ import annotations

import re

from harness.drill.events import DrilledIntent, DrillFinding, DrillRun
from harness.reports import render_html
from harness.reports.model import Lane, Results, Timeline, TimelineEvent
from harness.reports.timeline import CHAR_W


def intent(tag: str, call: int, *, late: bool = False) -> DrilledIntent:
    ending = "late" if late else "abandoned"
    lanes = (
        Lane("job", events=(TimelineEvent(0, "submitted"), TimelineEvent(0.9, "succeeded")),
             outcome="succeeded"),
        Lane(f"gpt#{call} (slow:750)", "primary",
             (TimelineEvent(0.01, "started"), TimelineEvent(0.76, ending)), ending),
        Lane(f"claude#{call + 1} (answer)", "fallback",
             (TimelineEvent(0.5, "started"), TimelineEvent(0.55, "won")), "won"),
    )
    return DrilledIntent(tag, 1, "fail", (DrillFinding("billed_within_bound", "broken",
                                                         "3 billed calls, at most 2"),),
                         timeline=Timeline(0.9, lanes))


def drill_page() -> str:
    drills = (
        DrillRun("hang", "http://127.0.0.1:8900", "fail", "fail",
                 intents=tuple(intent(f"drill-{n:012x}", 3 * n) for n in range(8)),
                 command="failover-harness drill --drills hang"),
        DrillRun("late", "http://127.0.0.1:8900", "fail", "fail",
                 intents=(*(intent(f"drill-{n:012x}", n) for n in range(8, 15)),
                          intent("drill-0000000000ff", 40, late=True)),
                 command="failover-harness drill --drills late"),
    )
    results = Results("drill", "fail", 1, "2026-12-04T14:00:00.000000Z",
                      "2026-12-04T14:00:09.000000Z", "0.1.0", events=drills)
    return render_html(results).split('id="drills"', 1)[1].split("</section>", 1)[0]


def test_near_identical_intents_are_drawn_once_and_counted() -> None:
    page = drill_page()
    assert page.count("<svg class=\"timeline\"") == 2  # two shapes among 16 failing intents
    assert "and 14 more intents like it: hang · drill-000000000001 (trial 1)" in page
    assert "late · drill-00000000000e (trial 1)" in page  # named across drills
    assert "drill late again: <code>failover-harness drill --drills late</code>" in page


def test_the_diagrams_have_a_legend_of_their_marks() -> None:
    legend = drill_page().split('class="legend drill-legend"', 1)[1].split("</div>", 1)[0]
    for kind in ("submitted", "succeeded", "started", "abandoned", "won", "late"):
        assert f'class="mark mark-{kind}"' in legend and f"</svg> {kind}</span>" in legend


def test_lane_labels_are_never_cut() -> None:
    svg = drill_page().split("<svg class=\"timeline\"", 1)[1].split("</svg>", 1)[0]
    labels = re.findall(r'class="lane-(?:label|role)" x="8" [^>]*>([^<]*)<', svg)
    assert "gpt#0 (slow:750)" in labels and "primary" in labels  # whole, each on its line
    first_lane = min(float(x) for x in re.findall(r'<rect class="lane [^"]*" x="([\d.]+)"', svg))
    assert first_lane >= 8 + CHAR_W * max(map(len, labels))  # the lanes start after them
