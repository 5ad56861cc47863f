"""The verdict vocabulary: every word an engine, an event or a renderer uses for a judgement.

Four vocabularies, and only these, that the engines and their events speak::

    Promise      held | broken | unknown | not_applicable   a promise: a checker on one history,
                                                            a scenario run, a trial set, a
                                                            schedule, a drill's promise on an
                                                            intent, a rate against its
                                                            threshold, a certification's check
    Verdict      pass | fail | unknown                      a run, a command, the gate, an
                                                            explore search, a drill, an intent
    Outcome      Verdict | skip                             one event's part in the run
    Eligibility  eligible | ineligible | undecided          a certification record

A rate against its threshold (and so a certification's check) is a promise: the rule held
(``pass``), was broken (``fail``), or the samples could not tell (``undecided``: unknown); a
check that did not run is not applicable (``skipped``). It is not an :data:`Eligibility`: that
is the verdict of a whole record, the checks and the drift together.

``results@2``, ``drill.json`` and the lock file publish other words, kept as they were
published. An event says its words in the engine's vocabulary; the one place that turns them
into the published words, and back when a document is read, is :mod:`harness.domain.published`,
with the tables below (an event's class names the table of each published field)::

    field                                       engine word  →  published word
    a scenario run's, a series', a cell's       held | broken | unknown | not_applicable
      verdict (SCENARIO_WORD)                   → passed | failed | unknown | not_applicable
    a check's verdict (CHECK_WORD)              → valid | invalid | unknown | not_applicable
    an explore result's, a drill's, a drilled   pass | fail | unknown
      intent's verdict (JUDGED_WORD)            → passed | failed | unknown
    a drill finding's verdict (FINDING_WORD)    → held | broken | unknown | not_judged
    a certification check's verdict, a rate's   held | broken | unknown | not_applicable
      decision (DECISION_WORD)                  → pass | fail | undecided | skipped

The JSON Schema (``harness/reports/results.schema.json``) lists the published words of each
field, so a document is still checked word by word.

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

ELIGIBILITIES: tuple[Eligibility, ...] = ("eligible", "ineligible", "undecided")
PROMISES: tuple[Promise, ...] = ("held", "broken", "unknown", "not_applicable")

# -- the published words (results@2, drill.json, the lock file) ---------------------------------
#: a run's promise as the results document says it (a scenario run, a trial series, a cell)
SCENARIO_WORD: dict[Promise, str] = {
    "held": "passed", "broken": "failed", "unknown": "unknown",
    "not_applicable": "not_applicable"}
#: a checker's promise as a check of the results document says it
CHECK_WORD: dict[Promise, str] = {
    "held": "valid", "broken": "invalid", "unknown": "unknown",
    "not_applicable": "not_applicable"}
#: an explore search's, a drill's or a drilled intent's verdict as results@2 says it
JUDGED_WORD: dict[Verdict, str] = {"pass": "passed", "fail": "failed", "unknown": "unknown"}
#: a drill's promise on one intent as results@2 and drill.json publish it (a promise a drill does
#: not judge was published as "not_judged")
FINDING_WORD: dict[Promise, str] = {
    "held": "held", "broken": "broken", "unknown": "unknown", "not_applicable": "not_judged"}
#: a rate's decision against its threshold, and a certification check's verdict, as results@2
#: and the lock file say them (a rate is never not applicable: only a check is skipped)
DECISION_WORD: dict[Promise, str] = {
    "held": "pass", "broken": "fail", "unknown": "undecided", "not_applicable": "skipped"}

#: a promise as its part in the command's verdict
OUTCOME: dict[Promise, Outcome] = {
    "held": "pass", "broken": "fail", "unknown": "unknown", "not_applicable": "skip"}
#: a judged promise as a verdict (an explore search's)
VERDICT: dict[Promise, Verdict] = {"held": "pass", "broken": "fail", "unknown": "unknown"}
#: a promise as messages say it, and run and repro folders keep it (written and read back)
STATUS_WORD: dict[Promise, str] = {
    "held": "passed", "broken": "violated", "unknown": "unknown",
    "not_applicable": "not_applicable"}
FROM_STATUS_WORD: dict[str, Promise] = {v: k for k, v in STATUS_WORD.items()}
#: the terminal's label for a run, by its promise
STATUS_LABEL: dict[Promise, str] = {
    "held": "PASS", "broken": "VIOLATED", "unknown": "UNKNOWN", "not_applicable": "N/A"}
#: the detection matrix's cell, by the run's promise (a mutant is CAUGHT)
MATRIX_CELL: dict[Promise, str] = {
    "held": "pass", "broken": "CAUGHT", "unknown": "unknown", "not_applicable": "n/a"}


def eligibility_outcome(verdict: Eligibility, gated: bool) -> Outcome:
    """A certification's part in the run: an ineligible or undecided pair fails (or is
    unknown) only when its verdict decides the run (``gated``: an auto link)."""
    if verdict == "eligible":
        return "pass"
    if verdict == "ineligible":
        return "fail" if gated else "skip"
    return "unknown" if gated else "skip"
