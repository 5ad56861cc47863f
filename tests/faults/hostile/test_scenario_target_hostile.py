"""The scenario engine's profile target against hostile answers (issue 33): ids are one path
segment or refused by name, a body over the profile's limit is named with its size."""

from __future__ import annotations

from pathlib import Path

from harness.domain.clock import ManualClock
from harness.scenarios.targets.service import ProfileTarget
from tests.faults.hostile.probe import Answer, Probe

PROFILE = """\
name: ids
capabilities: [jobs]
limits: {body_bytes: 4096, deadline_s: 5}
operations:
  create_job: {method: POST, path: /jobs, key_header: Idempotency-Key}
  get_job: {method: GET, path: "/jobs/{job_id}"}
"""


def test_a_job_id_is_one_segment_or_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(PROFILE, encoding="utf-8")
    with Probe(lambda r: Answer.json({"id": "x", "status": "queued"})) as probe:
        target = ProfileTarget(probe.url, tmp_path / "p.yaml", env={})
        with target.session(ManualClock(), "run", 1) as session:
            session.get_job("", "../../x")
            session.get_job("", "a?b=c#d")
            refused = session.get_job("", "job\r\nX-Injected: 1")
    assert [r.target for r in probe.requests] == ["/jobs/..%2F..%2Fx", "/jobs/a%3Fb%3Dc%23d"]
    assert refused.status == 0 and refused.never_sent
    assert "'job\\r\\nX-Injected: 1'" in refused.detail and "control character" in refused.detail


def test_an_answer_over_the_profiles_limit_is_named_with_its_size(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(PROFILE, encoding="utf-8")
    with Probe(lambda r: Answer.json({"id": "x", "pad": "p" * 10_000})) as probe:
        target = ProfileTarget(probe.url, tmp_path / "p.yaml", env={})
        with target.session(ManualClock(), "run", 1) as session:
            reply = session.get_job("", "x")
    assert reply.status == 0
    assert "AnswerTooLarge" in reply.detail and "limit of 4,096 bytes" in reply.detail, \
        reply.detail
