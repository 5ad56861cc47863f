"""A realistic report with every section filled, shared by the report tests."""

from __future__ import annotations

from harness.reports import (
    CertCheck,
    CertReport,
    CheckReport,
    Evidence,
    GateProblem,
    GateReport,
    Lane,
    Matrix,
    MatrixCell,
    RunReport,
    ScenarioReport,
    Timeline,
    TimelineEvent,
)

FIX = "failover-harness certify --providers providers.yaml"

OUT_OF_ORDER = Timeline(
    duration=35.0,
    lanes=(
        Lane("A", "primary", (TimelineEvent(0, "started"), TimelineEvent(0, "dispatched"),
                              TimelineEvent(30, "result"), TimelineEvent(30, "lost")), "lost"),
        Lane("B", "fallback", (TimelineEvent(1, "started"), TimelineEvent(1, "dispatched"),
                               TimelineEvent(6, "result"), TimelineEvent(6, "won")), "won", 2),
    ),
)


def sample_report(*, broken: bool = True) -> RunReport:
    scenarios = (
        ScenarioReport("out_of_order_completion", "sqlite", "passed",
                       description="A out first returns after 30 s; B out second after 5 s.",
                       checks=(CheckReport("one_winner_per_job", "one winner per job", "valid"),),
                       timeline=OUT_OF_ORDER, wall_s=0.012, virtual_s=35.0),
        ScenarioReport("double_click", "mutant:check-then-insert",
                       "failed" if broken else "passed",
                       checks=(CheckReport(
                           "one_job_per_intent", "one intent, one job",
                           "invalid" if broken else "valid",
                           ("2 jobs for one intent <owner alice, key k1>",) if broken else (),
                           (3, 5) if broken else ()),),
                       replay_command="failover-harness replay reports/runs/x "
                                      "--target mutant:check-then-insert"),
        ScenarioReport("triple_click_across_replicas", "sqlite", "not_applicable",
                       reason="needs capability 'replicas' (HTTP targets)"),
    )
    matrix = Matrix(
        scenarios=("double_click", "timeout_unknown"),
        targets=("reference", "check-then-insert", "timeout-marks-failed"),
        cells=(
            MatrixCell("double_click", "reference", "passed"),
            MatrixCell("double_click", "check-then-insert", "failed"),
            MatrixCell("double_click", "timeout-marks-failed", "passed"),
            MatrixCell("timeout_unknown", "reference", "passed"),
            MatrixCell("timeout_unknown", "check-then-insert", "passed"),
            MatrixCell("timeout_unknown", "timeout-marks-failed", "failed"),
        ),
    )
    certs = (
        CertReport("openai-primary", "ticket_triage", "eligible", model="gpt-x", kind="openai-chat",
                   failover="auto", checks=(CertCheck("schema", "pass", "30/30 samples valid"),
                                            CertCheck("tokenization", "pass", "20 inputs lossless"),
                                            CertCheck("round_trip", "pass", "20/20 match")),
                   latency_ms_p50=210.0),
        CertReport("anthropic-fallback", "ticket_triage", "ineligible", model="claude-x",
                   kind="anthropic-messages", failover="auto",
                   checks=(CertCheck("schema", "fail", "hallucinated key",
                                     (Evidence("t-03", "hallucinated key 'confidence'",
                                               '{"category": "billing", "confidence": 0.9}'),)),
                           CertCheck("tokenization", "pass"), CertCheck("round_trip", "skipped")),
                   latency_ms_p50=180.0),
    )
    gate = GateReport("fail", 1, (GateProblem("anthropic-fallback", "ticket_triage", "failed",
                                              "schema: hallucinated key",
                                              FIX),
                                  GateProblem("local-llama", "ticket_triage", "missing",
                                              "no certification in providers.lock.json",
                                              FIX)),
                      links_checked=3)
    return RunReport(
        verdict="fail" if broken else "pass", exit_code=1 if broken else 0,
        started_at="2026-12-02T14:00:00.000000Z", finished_at="2026-12-02T14:00:03.000000Z",
        harness_version="0.1.0", store="sqlite", scenarios=scenarios, matrix=matrix,
        certifications=certs, gate=gate,
    )
