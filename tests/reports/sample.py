"""A realistic run with every kind of event, shared by the report tests."""

from __future__ import annotations

from harness.reports import (
    Case,
    CertCheck,
    Certification,
    Check,
    DetectionMatrix,
    Drift,
    Evidence,
    ExploreResult,
    FirstFailure,
    GateProblem,
    GateVerdict,
    Lane,
    LoserCount,
    MatrixCell,
    PatternSummary,
    Rate,
    Results,
    Sampling,
    ScenarioRun,
    ScheduleStep,
    Statistic,
    Timeline,
    TimelineEvent,
    TrialFailure,
    TrialSeries,
    Unknown,
    Violation,
)

FIX = "failover-harness certify --providers providers.yaml"
REPLAY = "failover-harness replay reports/x/runs/y --target mutant:check-then-insert"
TRIAL_REPLAY = ("failover-harness replay reports/x/runs/z --target http://127.0.0.1:8802 "
                "--target-profile examples/jobs.profile.yaml")

OUT_OF_ORDER = Timeline(
    duration=35.0,
    lanes=(
        Lane("A", "primary", (TimelineEvent(0, "started"), TimelineEvent(0, "dispatched"),
                              TimelineEvent(30, "result"), TimelineEvent(30, "lost")), "lost"),
        Lane("B", "fallback", (TimelineEvent(1, "started"), TimelineEvent(1, "dispatched"),
                               TimelineEvent(6, "result"), TimelineEvent(6, "won")), "won", 2),
    ),
)
BURST = Timeline(
    duration=0.2,
    lanes=tuple(Lane(f"client/{i}", "", (TimelineEvent(0.01 * i, kind, label),))
                for i, (kind, label) in enumerate([("created", "201 created"),
                                                   ("created", "201 created"),
                                                   ("replayed", "200 replayed")])),
)


def _series(broken: bool) -> TrialSeries:
    losers = (LoserCount("created", 20, True), LoserCount("same job", 100, True),
              LoserCount("created again", 18 if broken else 0, False),
              LoserCount("409 conflict", 2, False))
    failures = (TrialFailure(
        "one_side_effect_per_click", "one_side_effect_per_click",
        "the handler ran again for a duplicate (a second side effect)",
        "one click, one side effect",
        rates=(Rate("burst", 18, 20, "18 of 20 trials made a second side effect"),
               Rate("staggered", 0, 20, "0 of 20 trials made a second side effect")),
        first=FirstFailure(
            2, 1, "burst",
            (Violation("2 side effects for one click of alice's 'dup-1'", "", (3, 5),
                       ("#3-5     t=0      client/1    create(key=dup-1) -> ok created=true",)),),
            BURST, "reports/x/runs/z", TRIAL_REPLAY,
            "failover-harness scenarios run scenarios/detection/duplicate_arrivals.yaml "
            "--arrival burst --trials 20 --seed 0")),) if broken else ()
    return TrialSeries(
        "duplicate_arrivals", "http://127.0.0.1:8802", "broken" if broken else "held",
        "fail" if broken else "pass", seed=0, trials=20,
        checkers=("one_job_per_intent", "one_side_effect_per_click"),
        promises=("one intent, one job", "one click, one side effect"),
        patterns=(PatternSummary("burst", 20, 18 if broken else 0, losers),
                  PatternSummary("staggered", 20, 0, losers[:2])),
        failures=failures, wall_s=4.2)


def sample_results(*, broken: bool = True) -> Results:
    events = (
        ScenarioRun("out_of_order_completion", "sqlite", "held", "pass",
                    description="A out first returns after 30 s; B out second after 5 s.",
                    checks=(Check("one_winner_per_job", "one winner per job", "held"),),
                    timeline=OUT_OF_ORDER, wall_s=0.012, virtual_s=35.0, ops=22),
        ScenarioRun("double_click", "mutant:check-then-insert",
                    "broken" if broken else "held", "fail" if broken else "pass",
                    checks=(Check(
                        "one_job_per_intent", "one intent, one job",
                        "broken" if broken else "held",
                        (Violation("2 jobs for one intent <owner alice, key k1>", "", (3, 5),
                                   ("#3-4 t=0 tab1 create(key=k1) -> ok created=true",)),)
                        if broken else ()),),
                    replay_command=REPLAY if broken else None),
        ScenarioRun("timeout_unknown", "sqlite", "unknown", "unknown",
                    checks=(Check("timeout_is_unknown", "a timeout is unknown", "unknown",
                                  unknowns=(Unknown("the timeout step did not run",
                                                    "raise the profile's timeout_s"),)),)),
        ScenarioRun("triple_click_across_replicas", "sqlite", "not_applicable", "skip",
                    reason="needs capability 'replicas' (HTTP targets)"),
        _series(broken),
        DetectionMatrix(
            scenarios=("double_click", "timeout_unknown"),
            targets=("reference", "check-then-insert", "timeout-marks-failed"),
            cells=(
                MatrixCell("double_click", "reference", "held"),
                MatrixCell("double_click", "check-then-insert", "broken"),
                MatrixCell("double_click", "timeout-marks-failed", "held"),
                MatrixCell("timeout_unknown", "reference", "held"),
                MatrixCell("timeout_unknown", "check-then-insert", "held"),
                MatrixCell("timeout_unknown", "timeout-marks-failed", "broken"),
            ), outcome="pass"),
        ExploreResult(
            "mutant:check-then-insert", "double-click", "fail", "fail", seed=7,
            schedules_tried=3, steps_tried=40, found_at=2,
            checks=(Check("duplicates_get_same_job", "a duplicate receives the same job",
                          "broken", (Violation("1 of 3 duplicates answered 503"),)),),
            schedule=(ScheduleStep(1, "tab1", "create k1", "job_by_key"),
                      ScheduleStep(2, "tab2", "create k1", "job_by_key"),
                      ScheduleStep(3, "tab1", "create k1", "insert jobs"),
                      ScheduleStep(4, "tab2", "create k1", "insert jobs", waited=True)),
            original_steps=9, shrunk_steps=4,
            story=("tab1 created job j1 (key 'k1', as alice)",),
            repro_dir="reports/x/repro/r", replay_command="failover-harness replay "
            "reports/x/repro/r --target mutant:check-then-insert", replayed_identical=True,
            timeline=Timeline(5.0, (Lane("tab1", "", (TimelineEvent(1, "statement", "a"),
                                                      TimelineEvent(3, "statement", "c"))),
                                    Lane("tab2", "", (TimelineEvent(2, "statement", "b"),
                                                      TimelineEvent(4, "statement", "d")))),
                              unit="step")),
        Certification("openai-primary", "ticket_triage", "eligible", "pass", model="gpt-x",
                      kind="openai-chat", failover="auto",
                      checks=(CertCheck("schema", "held", "30/30 samples valid",
                                        statistics=(Statistic(
                                            "schema", 1.0, 0.89, 1.0, 0.95, 30, 0.9,
                                            "clopper-pearson", "held",
                                            "30/30 (100.0%); 95% bounds [0.890, 1.000] vs "
                                            "threshold 0.90: the lower bound meets it"),)),
                              CertCheck("tokenization", "held", "20 inputs lossless"),
                              CertCheck("round_trip", "held", "20/20 match")),
                      latency_ms_p50=210.0),
        Certification("anthropic-fallback", "ticket_triage", "ineligible", "fail",
                      model="claude-x", kind="anthropic-messages", failover="auto",
                      checks=(CertCheck("schema", "broken", "hallucinated key",
                                        (Evidence("t-03", "hallucinated key 'confidence'",
                                                  '{"category": "billing", "confidence": 0.9}'),),
                                        1),
                              CertCheck("tokenization", "held"),
                              CertCheck("round_trip", "not_applicable")),
                      provenance="fake provider (answers from the golden file)",
                      sampling=Sampling("clopper-pearson", 0.95, 3, 60),
                      drift=(Drift("en-refund", "3/3", "1/3", "worse",
                                   "en-refund: 3/3 → 1/3, new failure: hallucinated key"),),
                      drift_since="2026-11-30T10:00:00.000000Z", previous_verdict="eligible",
                      why="schema: hallucinated key 'confidence'", fix=f"run: {FIX}",
                      latency_ms_p50=180.0),
        GateVerdict("fail", "fail", 3,
                    (GateProblem("anthropic-fallback", "ticket_triage", "failed",
                                 "schema: hallucinated key", f"run: {FIX}"),
                     GateProblem("local-llama", "ticket_triage", "missing",
                                 "no certification in providers.lock.json", f"run: {FIX}"))),
        Case("drill", "failover under a 30 s timeout", "pass", "failed over in 1.2 s"),
    )
    return Results(
        command="check", verdict="fail" if broken else "unknown",
        exit_code=1 if broken else 3,
        started_at="2026-12-02T14:00:00.000000Z", finished_at="2026-12-02T14:00:03.000000Z",
        harness_version="0.1.0", invocation="failover-harness check --target http://x",
        targets=("http://127.0.0.1:8802",), events=events,
    )
