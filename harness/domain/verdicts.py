"""The verdict vocabulary: every word an engine, an event or a renderer uses for a judgement.

Four vocabularies that the engines speak, and the mappings to the words results@2 publishes::

    Promise      held | broken | unknown | not_applicable   a promise: a checker on one history,
                                                            a scenario run, a trial set, a schedule
    Verdict      pass | fail | unknown                      a run, a command, the gate
    Outcome      Verdict | skip                             one event's part in the run
    Eligibility  eligible | ineligible | undecided          a certification record

The published words of ``results@2`` (the events' fields, the JSON Schema, every rendering) are
kept as they were published; an engine's promise becomes them in one place, the mappings below,
which the engines' ``emit.py`` apply when they make an event::

    ScenarioVerdict  passed | failed | unknown | not_applicable   a scenario run, a trial series
    JudgedVerdict    passed | failed | unknown                    an explore result, a drill
    CheckVerdict     valid | invalid | unknown | not_applicable   a check in an event
    Decision         pass | fail | undecided                      a rate against its threshold
    CertCheckVerdict Decision | skipped                           one check of a certification
    FindingVerdict   held | broken | unknown | not_judged         a drill's promise on one intent

A message, a run folder (``runs/<time>-<scenario>/``) and a repro folder say a run's promise
in the words they always said (``passed`` / ``violated``): :data:`STATUS_WORD`;
:data:`FROM_STATUS_WORD` reads a folder's back.
"""

from __future__ import annotations

from typing import Literal

Promise = Literal["held", "broken", "unknown", "not_applicable"]
Verdict = Literal["pass", "fail", "unknown"]
Outcome = Literal["pass", "fail", "unknown", "skip"]
Eligibility = Literal["eligible", "ineligible", "undecided"]

# -- the published words of results@2 ----------------------------------------------------------
ScenarioVerdict = Literal["passed", "failed", "unknown", "not_applicable"]
JudgedVerdict = Literal["passed", "failed", "unknown"]
CheckVerdict = Literal["valid", "invalid", "unknown", "not_applicable"]
Decision = Literal["pass", "fail", "undecided"]
CertCheckVerdict = Literal["pass", "fail", "undecided", "skipped"]
FindingVerdict = Literal["held", "broken", "unknown", "not_judged"]

ELIGIBILITIES: tuple[Eligibility, ...] = ("eligible", "ineligible", "undecided")
PROMISES: tuple[Promise, ...] = ("held", "broken", "unknown", "not_applicable")

#: a run's promise as the results document says it (a scenario run, a trial series, a cell)
SCENARIO_VERDICT: dict[Promise, ScenarioVerdict] = {
    "held": "passed", "broken": "failed", "unknown": "unknown",
    "not_applicable": "not_applicable"}
#: a checker's promise as a check of the results document says it
CHECK_VERDICT: dict[Promise, CheckVerdict] = {
    "held": "valid", "broken": "invalid", "unknown": "unknown",
    "not_applicable": "not_applicable"}
#: a promise as its part in the command's verdict
OUTCOME: dict[Promise, Outcome] = {
    "held": "pass", "broken": "fail", "unknown": "unknown", "not_applicable": "skip"}
#: one explored schedule's promise, in the results document's words
EXPLORE_VERDICT: dict[Promise, JudgedVerdict] = {
    "held": "passed", "broken": "failed", "unknown": "unknown"}
#: a drill's promise on one intent as results@2 and drill.json publish it (a promise a drill does
#: not judge was published as "not_judged")
FINDING_VERDICT: dict[Promise, FindingVerdict] = {
    "held": "held", "broken": "broken", "unknown": "unknown", "not_applicable": "not_judged"}
#: a promise as messages say it, and run and repro folders keep it (written and read back)
STATUS_WORD: dict[Promise, str] = {
    "held": "passed", "broken": "violated", "unknown": "unknown",
    "not_applicable": "not_applicable"}
FROM_STATUS_WORD: dict[str, Promise] = {v: k for k, v in STATUS_WORD.items()}
#: the terminal's label for a run, by its promise and by its results@2 verdict
STATUS_LABEL: dict[Promise, str] = {
    "held": "PASS", "broken": "VIOLATED", "unknown": "UNKNOWN", "not_applicable": "N/A"}
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
