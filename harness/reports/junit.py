"""``junit.xml``: a testcase per scenario × target, per checker × arrival pattern, per check ×
provider, per mutant, per explored workload and for the gate. A failure's message names the
promise (and its rate); its text holds the first failing trial and the exact replay command.
Written in the JUnit XML dialect CI tools read (Jenkins, GitLab, GitHub test reporters)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable

from harness.domain.published import word
from harness.domain.words import counted, of
from harness.reports.model import (
    Case,
    Certification,
    DetectionMatrix,
    DrillRun,
    ExploreResult,
    GateVerdict,
    ReplayComparison,
    Results,
    ScenarioRun,
    TrialSeries,
    Violation,
)
from harness.reports.redaction import scrub

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
SEQUENTIAL = "sequential"



def target_name(target: str) -> str:
    """A target as a JUnit class segment: a name, never a URL (a dot splits a class name, and
    CI reporters group by it): ``service`` for HTTP, ``mutant-<name>``, else the scheme."""
    if target.startswith(("http://", "https://")):
        return "service"
    if target.startswith("mutant:"):
        return "mutant-" + target.removeprefix("mutant:").split("@", 1)[0]
    return re.sub(r"[^\w-]+", "-", target.split(":", 1)[0]) or "target"

def _x(text: str) -> str:
    """Text as XML 1.0 can hold it (a service's answer may carry control characters)."""
    return _NOT_XML.sub("\ufffd", text)


class _Suites:
    def __init__(self, results: Results) -> None:
        self.root = ET.Element("testsuites", {"name": f"failover-harness {results.command}"})
        self.timestamp = results.started_at[:19]
        self.suites: dict[str, ET.Element] = {}

    def case(self, suite: str, classname: str, name: str, time_s: float = 0.0) -> ET.Element:
        if suite not in self.suites:
            self.suites[suite] = ET.SubElement(self.root, "testsuite", {
                "name": suite, "timestamp": self.timestamp, "hostname": "localhost"})
        return ET.SubElement(self.suites[suite], "testcase", {
            "classname": _x(classname), "name": _x(name), "time": f"{max(time_s, 0.0):.3f}"})

    def text(self) -> str:
        totals = [0, 0, 0, 0]
        for suite in self.root.findall("testsuite"):
            cases = suite.findall("testcase")
            counts = [len(cases),
                      sum(1 for c in cases if c.find("failure") is not None),
                      sum(1 for c in cases if c.find("error") is not None),
                      sum(1 for c in cases if c.find("skipped") is not None)]
            time_s = sum(float(c.get("time", "0")) for c in cases)
            suite.attrib.update(tests=str(counts[0]), failures=str(counts[1]),
                                errors=str(counts[2]), skipped=str(counts[3]),
                                time=f"{time_s:.3f}")
            totals = [a + b for a, b in zip(totals, counts, strict=True)]
        self.root.attrib.update(tests=str(totals[0]), failures=str(totals[1]),
                                errors=str(totals[2]))
        ET.indent(self.root)
        return ('<?xml version="1.0" encoding="UTF-8"?>\n'
                + ET.tostring(self.root, encoding="unicode") + "\n")


def _add(case: ET.Element, kind: str, message: str, text: Iterable[str] = (),
         type_: str = "") -> None:
    """A skipped, error or failure child (call in the JUnit order: skipped, errors, failures)."""
    attrs = {"message": _x(message)}
    if kind != "skipped":
        attrs["type"] = type_ or kind
    element = ET.SubElement(case, kind, attrs)
    body = "\n".join(text)
    if body:
        element.text = _x(body)


def _out(case: ET.Element, lines: Iterable[str]) -> None:
    body = "\n".join(lines)
    if body:
        ET.SubElement(case, "system-out").text = _x(body)


def _violation_lines(violations: Iterable[Violation], indent: str = "") -> list[str]:
    lines = []
    for v in violations:
        lines.append(f"{indent}- {v.message}")
        lines.extend(f"{indent}    {h}" for h in v.history)
    return lines


def _scenario(j: _Suites, s: ScenarioRun) -> None:
    case = j.case("scenarios", f"scenarios.{target_name(s.target)}", s.scenario, s.wall_s)
    if s.verdict == "not_applicable":
        _add(case, "skipped", s.reason or "not applicable")
        return
    unknown = [c for c in s.checks if c.verdict == "unknown"]
    if s.verdict == "unknown":
        reasons = [f"did not happen: {u.why}" + (f" (fix: {u.fix})" if u.fix else "")
                   for u in s.unrun]
        reasons += [f"{c.name}: {u.reason}" + (f" (fix: {u.fix})" if u.fix else "")
                    for c in unknown for u in c.unknowns]
        reasons += [f"  fix: {f}" for c in unknown for f in c.fixes]
        if not reasons and s.reason:
            reasons = [s.reason + (f" (fix: {s.fix})" if s.fix else "")]
        _add(case, "error", "verdict unknown: " + (reasons[0] if reasons else s.reason),
             [*reasons, *([f"reproduce: {s.replay_command}"] if s.replay_command else [])],
             "unknown")
    broken = [c for c in s.checks if c.verdict == "broken"]
    if broken:
        message = "; ".join(f"{c.name}: {c.promise}" for c in broken)
        body = [line for c in broken
                for line in [f"promise broken ({c.name}): {c.promise}",
                             *_violation_lines(c.violations, "  ")]]
        if s.replay_command:
            body.append(f"reproduce: {s.replay_command}")
        _add(case, "failure", message, body, "violation")


def _series(j: _Suites, ts: TrialSeries) -> None:
    classname = f"detection.{target_name(ts.target)}.{ts.scenario}"
    if ts.verdict == "not_applicable":
        _add(j.case("detection", classname, ts.scenario), "skipped",
             ts.reason or "not applicable")
        return
    per_case = ts.wall_s / max(len(ts.checkers) * len(ts.patterns), 1)
    for checker, promise in zip(ts.checkers, ts.promises, strict=False):
        for pattern in ts.patterns:
            name = checker if pattern.pattern == SEQUENTIAL else f"{checker} [{pattern.pattern}]"
            case = j.case("detection", classname, name, per_case)
            unknowns = [u for u in ts.unknowns if u.checker == checker]
            broken = [(f, r) for f in ts.failures if f.checker == checker
                      for r in f.rates if r.pattern == pattern.pattern and r.failed]
            if unknowns and not broken:
                _add(case, "error", f"verdict unknown in {max(u.count for u in unknowns)} of "
                     f"{counted(sum(p.trials for p in ts.patterns), 'trial')}: "
                     f"{unknowns[0].reason}",
                     [*(f"{counted(u.count, 'trial')}: {u.reason}"
                        + (f" (fix: {u.fix})" if u.fix else "")
                        for u in unknowns), *(f"fix: {f}" for f in ts.fixes),
                      *(line for u in unknowns if u.first for line in [
                          *_violation_lines(u.first.violations, "  "),
                          *([f"run that trial again: {u.first.replay_command}"]
                            if u.first.replay_command else [])])], "unknown")
            if broken:
                message = f"{promise}: " + "; ".join(f"{f.title}: {r.text}" for f, r in broken)
                body: list[str] = []
                for failure, rate in broken:
                    body.append(f"{failure.title} [{failure.id}]: {rate.text} ({pattern.pattern})")
                    first = failure.first
                    if first is None:
                        continue
                    where = f"{first.pattern}, " if first.pattern else ""
                    body.append(f"  first seen in {where}trial {first.trial} of {ts.trials} "
                                f"(seed {first.seed}):")
                    body.extend(_violation_lines(first.violations, "    "))
                    if first.replay_command:
                        body.append(f"  run this trial again: {first.replay_command}")
                    if first.measure_command:
                        body.append(f"  measure the rate again: {first.measure_command}")
                _add(case, "failure", message, body, "violation")
            elif not unknowns:
                _out(case, [f"{of(0, pattern.trials, 'trial')} broke it ({pattern.pattern})"])


def _matrix(j: _Suites, m: DetectionMatrix) -> None:
    for target in m.targets:
        if target == m.reference:
            case = j.case("matrix", "matrix", "the reference store is caught by no scenario")
            flagged = [s for s in m.scenarios if m.cell(s, target) in ("broken", "unknown")]
            if flagged:
                _add(case, "failure", f"the reference store is flagged by {', '.join(flagged)}",
                     type_="false_alarm")
            continue
        case = j.case("matrix", "matrix", f"mutant {target} is caught")
        caught = [s for s in m.scenarios if m.cell(s, target) == "broken"]
        if caught:
            _out(case, [f"caught by {', '.join(caught)}"])
        elif m.shard_part:
            _add(case, "skipped", "not caught by this shard's cells: judged by merge")
        else:
            _add(case, "failure", f"mutant {target} is caught by no scenario", type_="missed")


def _explore(j: _Suites, e: ExploreResult) -> None:
    case = j.case("explore", f"explore.{target_name(e.target)}", f"workload {e.workload}",
                  e.wall_s)
    broken = [c for c in e.checks if c.verdict == "broken"]
    if e.verdict == "unknown":
        _add(case, "error", "verdict unknown", [u.reason for c in e.checks for u in c.unknowns],
             "unknown")
    if broken:
        body = [line for c in broken for line in [f"promise broken ({c.name}): {c.promise}",
                                                   *_violation_lines(c.violations, "  ")]]
        body.append(f"the race, in {counted(len(e.schedule), 'step')}:")
        body.extend(f"  {s.n:>3} {s.client:<12} {s.operation:<22} {s.statement}"
                    for s in e.schedule)
        if e.repro_dir:
            body.append(f"repro: {e.repro_dir}")
        if e.replay_command:
            body.append(f"reproduce: {e.replay_command}")
        _add(case, "failure", "; ".join(f"{c.name}: {c.promise}" for c in broken), body,
             "violation")
    elif e.verdict == "pass":
        _out(case, [f"no violation in {counted(e.schedules_tried, 'schedule')}"])


def _certification(j: _Suites, c: Certification) -> None:
    classname = f"certification.{c.contract}.{c.provider}"
    honest = [f"provenance: {c.provenance}"] if c.provenance else []  # always said
    if not c.checks:
        case = j.case("certification", classname, "certification")
        if c.outcome in ("unknown", "fail"):
            _add(case, "error" if c.outcome == "unknown" else "failure",
                 c.why or c.verdict, [c.fix] if c.fix else [], c.verdict)
        return
    for check in c.checks:
        case = j.case("certification", classname, check.name)
        evidence = [f"[{e.input_id}] {e.reason}" + (f" — {e.excerpt}" if e.excerpt else "")
                    for e in check.evidence]
        if check.evidence_total > len(check.evidence):
            evidence.append(f"… and {check.evidence_total - len(check.evidence)} more")
        stats = [*honest, *(s.text or f"{s.name} {s.value:g}" for s in check.statistics)]
        if check.verdict == "not_applicable":
            _add(case, "skipped", check.summary or "skipped")
        elif check.verdict in ("broken", "unknown") and c.outcome == "skip":
            _add(case, "skipped", f"{word(check)}, but the link is {c.failover or 'not auto'} "
                 f"(not gated): {check.summary}")
            _out(case, [*stats, *evidence])
        elif check.verdict == "unknown":
            _add(case, "error", f"undecided: {check.summary}",
                 [*stats, *evidence, *([f"fix: {c.fix}"] if c.fix else [])], "undecided")
        elif check.verdict == "broken":
            _add(case, "failure", check.summary or "failed",
                 [*stats, *evidence, *([f"fix: {c.fix}"] if c.fix else [])], "ineligible")
        else:
            _out(case, [check.summary, *stats])
    if c.drift:
        case = j.case("certification", classname, "drift since the previous certification")
        _out(case, [d.text or f"{d.field}: {d.previous} → {d.current}" for d in c.drift])


def _gate(j: _Suites, g: GateVerdict) -> None:
    case = j.case("gate", "gate", "auto-failover links are certified")
    # errors (missing/stale: unknown) before failures, as the JUnit schema orders them
    for p in sorted(g.problems, key=lambda p: p.state == "failed"):
        _add(case, "failure" if p.state == "failed" else "error",
             f"{p.provider}/{p.contract}: {p.state}", [p.why, f"fix: {p.fix}"], p.state)
    certified = [] if g.problems else [f"{counted(g.links_checked, 'auto link')} certified"]
    if certified or g.fakes:
        _out(case, [*certified, *(f"certified {fake}" for fake in g.fakes)])


def _replay(j: _Suites, r: ReplayComparison) -> None:
    case = j.case("replay", f"replay.{target_name(r.target)}", f"replay {r.source}")
    if r.outcome == "fail":
        _add(case, "failure", f"diverged: {r.divergence}", [r.note] if r.note else [],
             "diverged")
    else:
        what = ("identical to the recorded run" if r.identical
                else f"diverged (expected here): {r.divergence}" if r.identical is False
                else "nothing recorded to compare")
        _out(case, [what, *([r.note] if r.note else [])])


def _case(j: _Suites, c: Case) -> None:
    case = j.case(c.suite, c.suite, c.name, c.wall_s)
    details = [*c.details, *([f"reproduce: {c.command}"] if c.command else [])]
    if c.outcome == "skip":
        _add(case, "skipped", c.message or "skipped")
    elif c.outcome == "unknown":
        _add(case, "error", c.message or "verdict unknown", details, "unknown")
    elif c.outcome == "fail":
        _add(case, "failure", c.message or "failed", details, "failure")
    else:
        _out(case, [c.message, *details] if c.message else details)


def _drill(j: _Suites, d: DrillRun) -> None:
    case = j.case("drills", f"drills.{d.target}", d.drill, d.wall_s)
    lines = [f"{p.title}: {p.text}" + (f" — {p.example}" if p.example else "")
             for p in d.promises if p.held or p.broken or p.unknown]
    lines += [f"unknown: {u.reason} (fix: {u.fix})" for u in d.unknowns]
    lines += [d.again_text] if d.again_text else []  # the intents the load left unjudged
    lines += [f"drill again: {d.command}"] if d.command else []
    broken = [p for p in d.promises if p.broken]
    if d.verdict == "fail":
        _add(case, "failure", f"{broken[0].title}: {broken[0].text}" if broken else "failed",
             lines, "failure")
    elif d.verdict == "unknown":
        _add(case, "error", d.unknowns[0].reason if d.unknowns else "verdict unknown", lines,
             "unknown")
    else:
        _out(case, lines)


RENDER = {ScenarioRun: _scenario, TrialSeries: _series, DetectionMatrix: _matrix,
          ExploreResult: _explore, Certification: _certification, GateVerdict: _gate,
          ReplayComparison: _replay, Case: _case, DrillRun: _drill}


def render_junit(results: Results) -> str:
    results = scrub(results)  # no secret, no raw escape, no lone surrogate reaches the file
    j = _Suites(results)
    for event in results.events:
        RENDER[type(event)](j, event)  # type: ignore[operator]
    return j.text()
