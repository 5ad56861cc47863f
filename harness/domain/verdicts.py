"""The verdict vocabulary: every word an engine, an event or a renderer uses for a judgement.

One closed set of ``Literal`` types, and the mappings between them, for the whole package::

    CheckerVerdict   valid | invalid | unknown                  a checker on one history
    CheckVerdict     CheckerVerdict | not_applicable            a check in a results@2 event
    JudgedStatus     passed | violated | unknown                a history by its checks
    RunStatus        JudgedStatus | not_applicable              a scenario run, a trial set
    ScenarioVerdict  passed | failed | unknown | not_applicable the results@2 word for a run
    ExploreVerdict   passed | failed | unknown                  the results@2 word for explore
    Outcome          pass | fail | unknown | skip               one event's part in the run
    Verdict          pass | fail | unknown                      a command's verdict, the gate's
    Eligibility      eligible | ineligible | undecided          a certification record
    Decision         pass | fail | undecided                    a sequential rate test
    CertCheckVerdict pass | fail | undecided | skipped          one check of a certification

An engine speaks ``RunStatus`` (a promise was *violated*); the results document speaks
``ScenarioVerdict`` (the run *failed*), as results@2 has published. ``SCENARIO_VERDICT`` and
``OUTCOME`` are the only translations between the two.
"""

from __future__ import annotations

from typing import Literal

CheckerVerdict = Literal["valid", "invalid", "unknown"]
CheckVerdict = Literal["valid", "invalid", "unknown", "not_applicable"]
RunStatus = Literal["passed", "violated", "unknown", "not_applicable"]
JudgedStatus = Literal["passed", "violated", "unknown"]
ScenarioVerdict = Literal["passed", "failed", "unknown", "not_applicable"]
ExploreVerdict = Literal["passed", "failed", "unknown"]
Outcome = Literal["pass", "fail", "unknown", "skip"]
Verdict = Literal["pass", "fail", "unknown"]
Eligibility = Literal["eligible", "ineligible", "undecided"]
Decision = Literal["pass", "fail", "undecided"]
CertCheckVerdict = Literal["pass", "fail", "undecided", "skipped"]

ELIGIBILITIES: tuple[Eligibility, ...] = ("eligible", "ineligible", "undecided")
RUN_STATUSES: tuple[RunStatus, ...] = ("passed", "violated", "unknown", "not_applicable")

#: a run's status as the results document says it
SCENARIO_VERDICT: dict[RunStatus, ScenarioVerdict] = {
    "passed": "passed", "violated": "failed", "unknown": "unknown",
    "not_applicable": "not_applicable"}
#: a run's status as its part in the command's verdict
OUTCOME: dict[RunStatus, Outcome] = {
    "passed": "pass", "violated": "fail", "unknown": "unknown", "not_applicable": "skip"}
#: one explored schedule's status, in the results document's words
EXPLORE_VERDICT: dict[JudgedStatus, ExploreVerdict] = {
    "passed": "passed", "violated": "failed", "unknown": "unknown"}
EXPLORE_OUTCOME: dict[JudgedStatus, Outcome] = {
    "passed": "pass", "violated": "fail", "unknown": "unknown"}
#: the terminal's label for a run, by its status and by its results@2 verdict
STATUS_LABEL: dict[RunStatus, str] = {
    "passed": "PASS", "violated": "VIOLATED", "unknown": "UNKNOWN", "not_applicable": "N/A"}
VERDICT_LABEL: dict[ScenarioVerdict, str] = {
    "passed": "PASS", "failed": "VIOLATED", "unknown": "UNKNOWN", "not_applicable": "N/A"}
#: the detection matrix's cell, by the run's verdict (a mutant is CAUGHT)
MATRIX_CELL: dict[ScenarioVerdict, str] = {
    "passed": "pass", "failed": "CAUGHT", "unknown": "unknown", "not_applicable": "n/a"}


def eligibility_outcome(verdict: Eligibility, gated: bool) -> Outcome:
    """A certification's part in the run: an ineligible or undecided pair fails (or is
    unknown) only when its verdict decides the run (``gated``: an auto link)."""
    if verdict == "eligible":
        return "pass"
    if verdict == "ineligible":
        return "fail" if gated else "skip"
    return "unknown" if gated else "skip"
