"""``index.html``: one self-contained page (inline CSS and SVG, no script, no network) for people:
the verdicts, what to act on, the losers' histograms and the timeline of each first failing trial,
rates with their trial counts, explore's interleaving as a lane diagram, the certification
evidence and the gate."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import jinja2

from harness.domain.published import word
from harness.domain.verdicts import SCENARIO_WORD
from harness.domain.words import counted
from harness.reports.charts import histogram_svg
from harness.reports.model import (
    Case,
    Certification,
    DetectionMatrix,
    DrilledIntent,
    DrillRun,
    ExploreResult,
    GateVerdict,
    ReplayComparison,
    Results,
    ScenarioRun,
    TrialSeries,
)
from harness.reports.redaction import scrub
from harness.reports.summary import to_act_on
from harness.reports.timeline import legend_mark, render_svg

LEGEND = ("started", "dispatched", "timed_out", "result", "won", "lost", "failed", "cancelled",
          "crash", "created", "replayed", "refused", "unknown", "abandoned", "late", "reset",
          "cut", "released")


# a provider call's number and scripted behaviour: "gpt#12 (slow:750)" and "gpt#3 (hang)" are
# alike when their marks are (the marks say what happened)
_NUMBER = re.compile(r"#\d+| \([^)]*\)$")


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("harness.reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("index.html.j2")


def _first_runs(series: TrialSeries) -> list[tuple[str, object]]:
    """Each distinct first failing trial (several failures may share one), with its failures."""
    seen: dict[tuple[str | None, int], list[object]] = {}
    for failure in series.failures:
        if failure.first is not None:
            seen.setdefault((failure.first.pattern, failure.first.trial), []).append(failure)
    return [(", ".join(f.title for f in fs), fs) for fs in seen.values()]  # type: ignore[attr-defined]


@dataclass(frozen=True)
class DrillShape:
    """One distinct way intents failed: the first intent drawn, the others only named."""

    drill: DrillRun
    intent: DrilledIntent
    alike: list[tuple[str, DrilledIntent]]  # (drill name, intent) of the same shape


def _drill_shapes(drills: list[DrillRun]) -> list[DrillShape]:
    """The failing and unknown intents of every drill, one per distinct shape: the same
    verdict, promises found broken or unknown, and lanes (their providers, marks and endings;
    call numbers and scripts aside) — fifteen near-identical diagrams are one diagram "and 14
    more like it"."""
    shapes: dict[tuple[object, ...], DrillShape] = {}
    for drill in drills:
        for intent in drill.intents:
            findings = tuple(sorted((f.promise, f.verdict) for f in intent.findings
                                    if f.verdict in ("broken", "unknown")))
            lanes = tuple((_NUMBER.sub("#", lane.label), lane.provider,
                           tuple(e.kind for e in lane.events), lane.outcome)
                          for lane in (intent.timeline.lanes if intent.timeline else ()))
            key = (intent.verdict, findings, lanes)
            if key in shapes:
                shapes[key].alike.append((drill.drill, intent))
            else:
                shapes[key] = DrillShape(drill, intent, [])
    return list(shapes.values())


def _drill_legend(drills: list[DrillRun]) -> list[tuple[str, str]]:
    """The marks the drills' diagrams use, each with its name (the check report has one too)."""
    kinds: list[str] = []
    for drill in drills:
        for intent in drill.intents:
            for lane in intent.timeline.lanes if intent.timeline else ():
                for kind in (*(e.kind for e in lane.events), lane.outcome):
                    if kind and kind not in kinds:
                        kinds.append(kind)
    return [(k.replace("_", " "), legend_mark(k)) for k in kinds]


def _mutant_counts(m: DetectionMatrix) -> tuple[int, int]:
    mutants = [t for t in m.targets if t != m.reference]
    return sum(1 for t in mutants if m.caught(t)), len(mutants)


def render_html(results: Results) -> str:
    results = scrub(results)  # no secret, no raw escape, no lone surrogate reaches the file
    names: list[str] = []
    for cert in results.of(Certification):
        for check in cert.checks:
            if check.name not in names:
                names.append(check.name)
    return _template().render(
        r=results,
        act=to_act_on(results),
        counted=counted,
        scenarios=results.of(ScenarioRun),
        series=results.of(TrialSeries),
        matrices=results.of(DetectionMatrix),
        explores=results.of(ExploreResult),
        certs=results.of(Certification),
        gates=results.of(GateVerdict),
        replays=results.of(ReplayComparison),
        cases=results.of(Case),
        drills=results.of(DrillRun),
        drill_shapes=_drill_shapes(results.of(DrillRun)),
        drill_legend=_drill_legend(results.of(DrillRun)),
        check_names=names,
        svg=render_svg,
        histogram=histogram_svg,
        first_runs=_first_runs,
        mutant_counts=_mutant_counts,
        legend=[(k.replace("_", " "), legend_mark(k)) for k in LEGEND],
        word=word,  # an event's verdict in the published words (harness.domain.published)
        scenario_word=SCENARIO_WORD,  # a matrix cell's, likewise
    )
