"""``junit.xml``: one testcase per scenario × target and per check × provider; failures carry
the evidence. Written in the JUnit XML dialect CI tools read (Jenkins, GitLab, GitHub actions)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from harness.reports.model import RunReport


def _suite(root: ET.Element, name: str, timestamp: str) -> ET.Element:
    return ET.SubElement(root, "testsuite", {"name": name, "timestamp": timestamp[:19],
                                              "hostname": "localhost"})


def _case(suite: ET.Element, classname: str, name: str, time_s: float = 0.0) -> ET.Element:
    return ET.SubElement(suite, "testcase", {"classname": classname, "name": name,
                                             "time": f"{time_s:.3f}"})


def _close(suite: ET.Element) -> tuple[int, int, int]:
    cases = suite.findall("testcase")
    failures = sum(1 for c in cases if c.find("failure") is not None)
    errors = sum(1 for c in cases if c.find("error") is not None)
    skipped = sum(1 for c in cases if c.find("skipped") is not None)
    total = sum(float(c.get("time", "0")) for c in cases)
    suite.attrib.update(tests=str(len(cases)), failures=str(failures), errors=str(errors),
                        skipped=str(skipped), time=f"{total:.3f}")
    return len(cases), failures, errors


def render_junit(report: RunReport) -> str:
    root = ET.Element("testsuites", {"name": f"failover-harness {report.command}"})
    if report.scenarios:
        suite = _suite(root, "scenarios", report.started_at)
        for s in report.scenarios:
            case = _case(suite, f"scenarios.{s.target}", s.name, s.wall_s)
            if s.verdict == "failed":
                broken = [c for c in s.checks if c.verdict == "invalid"]
                message = "; ".join(f"{c.name}: {c.promise}" for c in broken) or "failed"
                body = "\n".join(
                    [f"{c.name}: {v} (ops {list(c.ops)})" for c in broken for v in c.violations]
                    + ([f"reproduce: {s.replay_command}"] if s.replay_command else [])
                )
                failure = ET.SubElement(case, "failure", {"message": message, "type": "violation"})
                failure.text = body
            elif s.verdict == "not_applicable":
                ET.SubElement(case, "skipped", {"message": s.reason or "not applicable"})
            elif s.verdict == "unknown":
                error = ET.SubElement(case, "error", {"message": s.reason or "verdict unknown",
                                                      "type": "unknown"})
                error.text = s.reason
    if report.certifications:
        suite = _suite(root, "certification", report.started_at)
        for cert in report.certifications:
            for check in cert.checks:
                case = _case(suite, f"certification.{cert.contract}.{cert.provider}", check.name)
                if check.verdict == "fail":
                    failure = ET.SubElement(case, "failure", {"message": check.summary or "failed",
                                                              "type": "ineligible"})
                    failure.text = "\n".join(
                        f"[{e.input_id}] {e.reason}" + (f" — {e.excerpt}" if e.excerpt else "")
                        for e in check.evidence
                    )
                elif check.verdict == "skipped":
                    ET.SubElement(case, "skipped", {"message": check.summary or "skipped"})
    if report.gate is not None:
        suite = _suite(root, "gate", report.started_at)
        case = _case(suite, "gate", "auto-failover links are certified")
        # errors (missing/stale: unknown) before failures, as the JUnit schema orders them
        for p in sorted(report.gate.problems, key=lambda p: p.state == "failed"):
            kind = "failure" if p.state == "failed" else "error"
            el = ET.SubElement(case, kind, {"message": f"{p.provider}/{p.contract}: {p.state}",
                                            "type": p.state})
            el.text = f"{p.why}\nfix: {p.fix}"
    totals = [_close(s) for s in root.findall("testsuite")]
    root.attrib.update(
        tests=str(sum(t[0] for t in totals)), failures=str(sum(t[1] for t in totals)),
        errors=str(sum(t[2] for t in totals)),
    )
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
