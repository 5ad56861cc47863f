"""Pins for each wording and rendering fix a newcomer tripped on (issue 24)."""

from __future__ import annotations

import io
from dataclasses import replace

from harness.reports.html import LEGEND, render_html
from harness.reports.junit import target_name
from harness.reports.live import LiveOutput
from harness.reports.model import Certification, Lane, Timeline, TimelineEvent
from harness.reports.summary import summary_lines
from harness.reports.timeline import COLOURS, SHAPES, render_svg
from tests.reports.sample import sample_results


def test_every_state_has_its_own_colour_and_a_shape() -> None:
    shown = {k: COLOURS[k] for k in LEGEND}
    assert len(set(shown.values())) == len(shown), shown  # failed≠refused, won≠created, …
    assert all(k in SHAPES for k in LEGEND)
    page = render_html(sample_results())
    for kind in LEGEND:  # the legend draws each state's own mark, with its name
        assert f'class="mark mark-{kind}"' in page.split('class="legend"', 1)[1]


def test_a_caught_mutant_is_a_success_and_the_reference_failing_is_not() -> None:
    page = render_html(sample_results())
    matrix = page.split('id="matrix"', 1)[1].split("</section>", 1)[0]
    assert 'class="cell v-pass caught"' in matrix and "● caught" in matrix
    assert "v-failed" not in matrix  # the reference fails nothing in the sample


def test_each_matrix_symbol_has_one_meaning_and_a_legend() -> None:
    """✓ was "clean" in the reference column and "caught" in the mutants' (issue 34)."""
    page = render_html(sample_results())
    matrix = page.split('id="matrix"', 1)[1].split("</section>", 1)[0]
    table = matrix.split("<table>", 1)[1]
    cells = [cell.split(">", 1)[1].split("<", 1)[0] for cell in table.split('<td class="cell')[1:]]
    meanings: dict[str, set[str]] = {}
    for text in cells:
        if text[:1] in "✓●·✗?–":
            meanings.setdefault(text[0], set()).add(text)
    assert meanings["✓"] == {"✓ clean"} and meanings["●"] == {"● caught"}, meanings
    legend = matrix.split('class="legend matrix-legend"', 1)[1].split("</div>", 1)[0]
    assert all(f"<span>{mark} " in legend for mark in "✓●·✗?–")


def test_junit_classnames_are_names_not_urls() -> None:
    assert target_name("http://127.0.0.1:8802") == "service"
    assert target_name("http://a:1,http://b:2") == "service"
    assert target_name("mutant:check-then-insert@postgresql://x/y") == "mutant-check-then-insert"
    assert target_name("postgresql://app@db/jobs") == "postgresql"
    assert target_name("sqlite") == "sqlite"


def test_fault_lanes_are_called_faults() -> None:
    svg = render_svg(Timeline(2.0, (Lane("nemesis", "", (TimelineEvent(1, "crash"),)),)))
    assert ">faults<" in svg and "nemesis" not in svg


def test_a_fake_provider_is_said_once_per_certification_cell() -> None:
    results = sample_results()
    fake = "fake provider (answers from the golden file)"
    events = tuple(replace(e, why=f"schema: hallucinated key — {fake}")
                   if isinstance(e, Certification) and e.provenance else e
                   for e in results.events)
    page = render_html(replace(results, events=events))
    cell = page.split('<td class="v-ineligible">', 1)[1].split("</td>", 1)[0]
    assert cell.count(fake) == 1 and "schema: hallucinated key" in cell


def test_pass_k_is_said_once_and_plurals_agree() -> None:
    from harness.contracts.emit import _pass_k

    three = _pass_k("schema", {"rate": 0.95, "k": 3, "inputs": 20, "all_pass": 19})
    one = _pass_k("schema", {"rate": 1.0, "k": 1, "inputs": 3, "all_pass": 3})
    assert three is not None and one is not None
    assert f"{three.name}: {three.text}" == "schema pass^3: 19 of 20 inputs passed all 3 samples"
    assert one.text == "3 of 3 inputs passed their one sample"


def test_the_summary_names_each_broken_promise_once_with_where_and_one_replay() -> None:
    results = sample_results()
    lines = list(summary_lines(results))
    text = "\n".join(lines)
    assert lines[0].startswith("── summary")
    assert text.count("one_job_per_intent:") == 1
    assert "double_click 1/1" in text
    assert "replay: failover-harness replay reports/x/runs/y" in text
    assert "timeout_is_unknown" in text and "fix: raise the profile's timeout_s" in text
    assert len(lines) <= 25


def test_without_verbose_the_detail_waits_for_the_report_and_the_summary() -> None:
    out = io.StringIO()
    live = LiveOutput(out)
    results = sample_results()
    for event in results.events:
        live.handle(event)
    live.finish(results)
    text = out.getvalue()
    assert "promise broken (one_job_per_intent)" not in text and "#3-4 t=0" not in text
    assert "── summary" in text and text.rstrip().endswith("check: FAIL (exit 1)")
    verbose = io.StringIO()
    live = LiveOutput(verbose, verbose=True)
    for event in results.events:
        live.handle(event)
    assert "promise broken (one_job_per_intent)" in verbose.getvalue()


def test_an_eligible_fake_certification_line_is_one_line() -> None:
    results = sample_results()
    cert = next(e for e in results.events if isinstance(e, Certification))
    out = io.StringIO()
    LiveOutput(out).handle(replace(cert, outcome="pass"))
    assert len(out.getvalue().splitlines()) == 1


def test_a_reproduced_replay_says_reproduced_first_and_the_difference_as_a_note() -> None:
    from harness.reports.model import ReplayComparison

    out = io.StringIO()
    LiveOutput(out).handle(ReplayComparison(
        "reports/x/runs/y", "http://127.0.0.1:8802", False, "pass",
        divergence="op #1 differs: recorded 'ok', now 'fail'",
        note="reproduced: violated again (the race showed in 18 of 20 straddle trials)"))
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("reproduced: violated again")
    assert "DIVERGED" not in out.getvalue()
    assert lines[1].startswith("  note: the history differs from the recorded run (op #1")


def test_scenarios_a_profile_cannot_run_are_one_line_and_other_reasons_their_own() -> None:
    from harness.reports.live import not_applicable_lines
    from harness.reports.model import ScenarioRun

    def na(name: str, reason: str) -> ScenarioRun:
        return ScenarioRun(name, "http://x", "not_applicable", "skip", reason=reason)

    lines = list(not_applicable_lines([
        na("a", "needs attempts, which profile 'p' does not declare"),
        na("b", "needs attempts, hedge, which profile 'p' does not declare"),
        na("c", "needs replicas (give two URLs or more), which profile 'p' does not declare"),
        na("d", "needs two owners: give --tokens-file with a bearer token per owner")]))
    assert lines == [
        "N/A       d: needs two owners: give --tokens-file with a bearer token per owner",
        "N/A       3 scenarios need attempts, hedge, replicas (not in profile 'p'; --verbose "
        "names them)"]


def test_counts_agree_with_their_noun_everywhere_a_person_reads_them() -> None:
    from harness.domain.words import counted, of
    from harness.reports.live import brief_lines, drill_lines, series_lines
    from harness.reports.model import DrillRun, PatternSummary, TrialSeries

    assert (counted(1, "trial"), counted(2, "trial"), counted(0, "intent")) == (
        "1 trial", "2 trials", "0 intents")
    assert (of(1, 1, "trial"), of(1, 20, "trial")) == ("1 of 1 trial", "1 of 20 trials")
    one = TrialSeries("replay_fidelity", "http://127.0.0.1:8802", "broken", "fail", trials=1,
                      patterns=(PatternSummary("sequential", 1, 1),))
    text = "\n".join([*series_lines(one), *brief_lines(one)])
    assert "1 pattern × 1 trial: 1 run in" in text and "1 of 1 trial broke" in text
    assert "(s)" not in text and "1 trials" not in text
    drill = DrillRun("hedge", "http://127.0.0.1:8802", "pass", "pass", trials=1,
                     provider_calls=1)
    assert "(1 intent, 1 provider call," in next(drill_lines(drill))


def test_the_report_lists_each_broken_promise_once_then_unknowns_then_the_verdict() -> None:
    from harness.reports.markdown import render_markdown

    results = sample_results()
    page = render_html(results)
    act = page.split('id="act"', 1)[1].split("</section>", 1)[0]
    assert act.count("<b>one_side_effect_per_click</b>") == 1
    assert "duplicate_arrivals (burst 18 of 20, staggered 0 of 20)" in act
    assert act.index("problem-fail") < act.index("problem-unknown") < act.index('id="act-verdict"')
    assert "(s)" not in act and "1 runs" not in act
    text = render_markdown(results)
    assert text.index("### What broke: 2 promises") < text.index("### Unknown") < text.index(
        "**Verdict:** ❌ FAIL (exit 1) — 2 promises broken, 3 other failures, 2 unknown")
    assert text.count("**one_job_per_intent**") == 1 and "double_click (1 of 1 run)" in text


def test_a_scenario_where_nothing_ran_says_so_not_zero_ops() -> None:
    from harness.reports.live import brief_lines
    from harness.reports.model import ScenarioRun

    run = ScenarioRun("same_key_two_owners", "http://127.0.0.1:8802", "unknown", "unknown")
    assert list(brief_lines(run)) == [
        "UNKNOWN   same_key_two_owners  (nothing ran: the summary says why)"]


def test_failures_are_other_failures_only_beside_broken_promises() -> None:
    """A drill or explore run's failures are all there is: "3 failures", not "3 other
    failures" (issue 34)."""
    from harness.reports.markdown import render_markdown

    alone = sample_results(broken=False)
    act = render_html(alone).split('id="act-verdict"', 1)[1].split("</p>", 1)[0]
    assert "· 3 failures" in act and "other" not in act, act
    assert "— 3 failures, 2 unknown" in render_markdown(alone)
    beside = render_html(sample_results()).split('id="act-verdict"', 1)[1].split("</p>", 1)[0]
    assert "· 2 promises broken · 3 other failures" in beside, beside
