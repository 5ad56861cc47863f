"""Target profiles: the engine drives a service with another API (IETF-draft style) through a
YAML profile; capabilities it lacks are not applicable; a bug behind it is still caught."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.domain.errors import ConfigError
from harness.scenarios.model import Scenario
from harness.scenarios.runner import run_scenario
from harness.scenarios.targets.service import load_profile
from harness.store import open_store
from harness.store.mutants import open_mutant
from tests._imported import Imported
from tests.scenarios.conftest import Opener

PROFILE = """\
name: draft-orders
capabilities: [jobs]
auth: {header: X-Api-Key, value: "{token}"}
conflict: {status: 422}
in_flight: {status: 409, code_field: error.type, code: request_in_progress}
operations:
  create_job:
    method: POST
    path: /orders
    key_header: Idempotency-Key
    fields: {id: data.id, status: data.state}
    values: {status: {new: pending}}
  get_job:
    method: GET
    path: /orders/{job_id}
    fields: {id: data.id, status: data.state}
    values: {status: {new: pending}}
"""
KEYS = {"key-alice-1": "alice", "key-bob-2": "bob"}
# FastAPI (~0.2 s of CPU): imported by the worker that runs these tests, not by every collection
draft: Any = Imported("tests.scenarios.draft_service")


@pytest.fixture
def profile_files(tmp_path: Path) -> tuple[Path, Path]:
    profile = tmp_path / "draft.profile.yaml"
    profile.write_text(PROFILE, encoding="utf-8")
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text("".join(f"{k}: {o}\n" for k, o in KEYS.items()), encoding="utf-8")
    return profile, tokens


@pytest.fixture(params=["reference", "no-fingerprint"])
def draft_service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    url = f"sqlite:///{tmp_path / 'draft.db'}"
    store = open_store(url) if request.param == "reference" else open_mutant(request.param, url)
    server = draft.LoopbackServer(draft.draft_app(store, KEYS))
    yield server.url, request.param
    server.stop()
    store.close()


def test_a_profiled_service_is_judged_like_any_other(
        open_targets: Opener, shipped: dict[str, Scenario], draft_service: tuple[str, str],
        profile_files: tuple[Path, Path]) -> None:
    url, store = draft_service
    profile, tokens = profile_files
    target = open_targets(url, tokens_file=tokens, profile=profile)
    statuses = {name: run_scenario(s, target).status for name, s in shipped.items()}
    # The draft service has no versions and its profile maps none: the scripts' version
    # expectations are no promise of it, left out (and said so); the buggy one is still caught.
    expected_mismatch = "held" if store == "reference" else "broken"
    assert statuses["mismatched_key"] == expected_mismatch
    for name in ("double_click", "reordered_json_same_intent"):
        assert statuses[name] == "held", name
    history = run_scenario(shipped["double_click"], target).history
    read = next(op for op in history if op.f == "read" and op.type == "invoke")
    assert read.value["unmapped"] == ["version"] and read.value["expect"] == {
        "status": "pending"}
    # one URL is one process: the replica scenario would pass vacuously
    assert statuses["triple_click_across_replicas"] == "not_applicable"
    attempts = {n for n, s in shipped.items() if "attempts" in s.requires}
    assert {n for n, st in statuses.items() if st == "not_applicable"} == {
        *attempts, "triple_click_across_replicas"}


def test_in_flight_answers_are_retried_until_the_same_job(
        open_targets: Opener, shipped: dict[str, Scenario], draft_service: tuple[str, str],
        profile_files: tuple[Path, Path]) -> None:
    url, _ = draft_service
    profile, tokens = profile_files
    result = run_scenario(shipped["double_click"], open_targets(url, tokens_file=tokens,
                                                               profile=profile))
    creates = [op for op in result.history if op.f == "create" and op.type != "invoke"]
    assert all(op.type == "ok" and op.value["job"] == "job" for op in creates)
    assert sum(op.value["created"] for op in creates) == 1


def test_a_capability_the_profile_lacks_is_named(
        open_targets: Opener, shipped: dict[str, Scenario],
        profile_files: tuple[Path, Path]) -> None:
    profile, tokens = profile_files
    target = open_targets("http://127.0.0.1:9", tokens_file=tokens, profile=profile)
    result = run_scenario(shipped["timeout_unknown"], target)
    assert result.status == "not_applicable"
    assert result.reason == ("needs attempts, timeouts, which profile 'draft-orders' does not "
                             "declare")


@pytest.mark.parametrize(("text", "line", "problem"), [
    (PROFILE.replace("conflict: {status: 422}", "conflict: {status: 4222}"), 4,
     "less than or equal to 599"),
    (PROFILE.replace("capabilities: [jobs]", "capabilities: [jobs, attempts]"), 6,
     "capability 'attempts' needs operation 'start_attempt'"),
    (PROFILE.replace("    key_header: Idempotency-Key\n", ""), 7, "create_job has no key_header"),
    (PROFILE.replace("method: POST", "methd: POST"), 8,
     "unknown field 'methd' (did you mean 'method'?)"),
])
def test_an_invalid_profile_names_the_line(tmp_path: Path, text: str, line: int,
                                           problem: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_profile(path)
    assert caught.value.line == line and problem in caught.value.message
    assert caught.value.file == str(path)
