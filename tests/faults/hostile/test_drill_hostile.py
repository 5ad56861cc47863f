"""The drill against hostile services (issue 33): ids are data, a cause for every unknown,
deadlines on every answer. Through the engine's entry point; the CLI is tested where exit
codes and outputs are the point (test_cli_hostile.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from harness.drill.engine import DrillResults, run_drills
from harness.drill.findings import IntentVerdict
from harness.target.drill_profile import load_drill
from tests.faults.hostile.probe import Answer, Probe, Request, call_provider, endless, sized

# over a few seconds each (drills, CI recipes): marked slow, so -n hands them out first
pytestmark = pytest.mark.slow


def drill(profile: Path, env: dict[str, str], url: str, drills: tuple[str, ...] = ("control",),
          ) -> DrillResults:
    return run_drills(load_drill(profile), target=url, env=env, drills=list(drills))


def only(results: DrillResults) -> IntentVerdict:
    [verdict] = [v for verdicts in results.verdicts.values() for v in verdicts]
    return verdict


def job_service(job_id: str, observed: Answer | None = None,
                primary: str | None = None) -> Callable[[Request], Answer]:
    """POST /jobs → 201 with ``job_id`` (after calling the ``primary`` port with the submitted
    text, if given); any GET → ``observed`` (default: a running job)."""
    def answer(request: Request) -> Answer:
        if request.method == "POST":
            if primary is not None:
                call_provider(primary, json.loads(request.body)["text"])
            return Answer.json({"id": job_id}, 201)
        return observed or Answer.json({"id": job_id, "status": "running", "result": None})
    return answer


def test_ids_with_url_syntax_reach_the_service_as_one_escaped_segment(
        drill_env: tuple[Path, dict[str, str]]) -> None:
    profile, env = drill_env
    for job_id, sent in [("../../x", "/jobs/..%2F..%2Fx"), ("a?a=b", "/jobs/a%3Fa%3Db"),
                         ("a#frag", "/jobs/a%23frag"), ("x/../../../../etc/passwd",
                                                        "/jobs/x%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd"),
                         ("..", "/jobs/%2E%2E")]:
        done = Answer.json({"status": "succeeded", "result": {"text": "ok"}})
        with Probe(job_service(job_id, done, env["PRIMARY_PORT"])) as probe:
            drill(profile, env, probe.url)
        gets = {r.target for r in probe.requests if r.method == "GET"}
        assert gets == {sent}, (job_id, gets)


def test_an_id_with_a_control_character_makes_the_intent_unknown_naming_it(
        drill_env: tuple[Path, dict[str, str]]) -> None:
    profile, env = drill_env
    for job_id, said in [("job\r\nX-Injected: 1", "control character"),
                         ("j" * 5000, "over 1,024 characters")]:
        with Probe(job_service(job_id)) as probe:
            verdict = only(drill(profile, env, probe.url))
        assert verdict.verdict == "unknown"
        finding = verdict.of("completed")
        assert finding is not None and said in finding.message
        assert repr(job_id[:20])[1:-1] in finding.message
        assert not [r for r in probe.requests if r.method == "GET"]  # never put into a URL


def test_invalid_json_on_submit_is_its_own_unknown(
        drill_env: tuple[Path, dict[str, str]]) -> None:
    profile, env = drill_env
    with Probe(lambda r: Answer(201, {"Content-Type": "application/json"}, b"{id: oops")
               ) as probe:
        finding = only(drill(profile, env, probe.url)).of("completed")
    assert finding is not None and finding.verdict == "unknown"
    assert "HTTP 201 and a body that is not JSON" in finding.message
    assert "{id: oops" in finding.message and "id_field" in finding.fix
    assert "never called" not in finding.message


def test_invalid_json_and_a_redirect_on_observe_are_unknown_with_the_cause(
        drill_env: tuple[Path, dict[str, str]]) -> None:
    profile, env = drill_env
    for observed, said in [(Answer(200, {}, b"<html>oops</html>"), "not JSON"),
                           (Answer(200, {}, b"[" * 500_000), "not JSON"),  # RecursionError
                           (Answer(302, {"Location": "http://127.0.0.1:1/login"}),
                            "a redirect to 'http://127.0.0.1:1/login'")]:
        with Probe(job_service("job-1", observed, env["PRIMARY_PORT"])) as probe:
            verdict = only(drill(profile, env, probe.url))
        assert verdict.evidence.calls  # the service did call the provider
        finding = verdict.of("completed")
        assert finding is not None and finding.verdict == "unknown", verdict.findings
        assert said in finding.message and "ended None" not in finding.message


def test_provider_calls_without_the_tag_are_named(
        drill_env: tuple[Path, dict[str, str]]) -> None:
    profile, env = drill_env

    def untagged(request: Request) -> Answer:
        if request.method == "POST":  # calls the primary, but drops the text it was given
            call_provider(env["PRIMARY_PORT"], "hi", wait=True)
            return Answer.json({"id": "job-1"}, 201)
        return Answer.json({"status": "succeeded", "result": {"text": "ok"}})

    with Probe(untagged) as probe:
        finding = only(drill(profile, env, probe.url)).of("completed")
    assert finding is not None and finding.verdict == "unknown"
    assert "none carrying a drill tag" in finding.message and "{tag}" in finding.fix


def test_headers_at_one_byte_a_second_end_within_the_intents_budget(
        drill_env: tuple[Path, dict[str, str]]) -> None:
    profile, env = drill_env
    started = time.monotonic()
    with Probe(lambda r: Answer(head_byte_s=1.0)) as probe:
        verdict = only(drill(profile, env, probe.url))
    assert time.monotonic() - started < 15  # the budget: job_s + late + 5 s per request
    assert verdict.verdict == "unknown"
    assert "DeadlineExceeded" in verdict.evidence.submissions[0].error


def test_endless_and_huge_observe_answers_are_bounded(
        drill_env: tuple[Path, dict[str, str]]) -> None:
    profile, env = drill_env
    process = psutil.Process()
    before = process.memory_info().rss
    for observed in (Answer(body=endless, chunked=True),
                     Answer(body=lambda: sized(50 * 1024 * 1024), chunked=True)):
        started = time.monotonic()
        with Probe(job_service("job-1", observed, env["PRIMARY_PORT"])) as probe:
            verdict = only(drill(profile, env, probe.url))
        assert time.monotonic() - started < 15
        finding = verdict.of("completed")
        assert finding is not None and finding.verdict == "unknown"
        assert "over the limit of 1,048,576 bytes" in finding.message, finding.message
    assert process.memory_info().rss - before < 200 * 1024 * 1024
