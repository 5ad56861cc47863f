"""Scenario files: the shipped ones load; a bad one is exit 2 naming the file, line and fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from harness.cli import main
from harness.domain.errors import ConfigError
from harness.scenarios.checkers import CHECKERS
from harness.scenarios.loader import load_scenario
from harness.scenarios.model import Scenario
from harness.scenarios.schema import scenario_schema
from tests.scenarios.conftest import SEED_FOUR

EXPECTED = {
    *SEED_FOUR, "reordered_json_same_intent", "same_key_other_owner", "same_key_two_owners",
    "cancel_then_late_result",
    "late_result_after_completion", "hedge_bound", "crash_mid_attempt",
    "timeout_while_still_running", "triple_click_across_replicas",
}


def test_every_listed_scenario_ships_and_loads(shipped: dict[str, Scenario]) -> None:
    assert set(shipped) == EXPECTED
    for scenario in shipped.values():
        assert scenario.checkers and scenario.steps and scenario.description


def test_the_schema_is_valid_and_names_exactly_the_checkers() -> None:
    schema = scenario_schema()
    Draft202012Validator.check_schema(schema)
    assert set(schema["properties"]["checkers"]["items"]["enum"]) == set(CHECKERS)


def test_capabilities_are_derived_from_the_steps(shipped: dict[str, Scenario]) -> None:
    assert shipped["double_click"].requires == {"jobs"}
    assert shipped["timeout_unknown"].requires == {"jobs", "attempts", "timeouts"}
    assert shipped["hedge_bound"].requires == {"jobs", "attempts", "hedge"}
    assert shipped["same_key_other_owner"].requires == {"jobs", "attempts", "owners"}
    assert "replicas" in shipped["triple_click_across_replicas"].requires
    assert shipped["out_of_order_completion"].duration == 35


def test_the_three_spellings_of_one_intent_have_one_fingerprint(
        shipped: dict[str, Scenario]) -> None:
    intents = shipped["reordered_json_same_intent"].intents
    assert len({i.fingerprint for i in intents.values()}) == 1
    assert len({i.text for i in intents.values()}) == 3


def test_a_step_acts_as_the_owner_of_what_it_names(write_scenario: Callable[..., Path]) -> None:
    path = write_scenario("owners", """
name: owners
actors: [alice, bob]
intents: {x: {contract: c, input: {}}}
providers: {p: {outcome: hang}}
steps:
  - {at: 0, as: bob, create: {key: k, intent: x}, save: job}
  - {at: 1, attempt: {job: job, provider: p, name: A}}
  - {at: 2, cancel: A}
  - {at: 3, read: job}
  - {at: 3, as: alice, read: job}
checkers: [owners_isolated]
""")
    assert [s.actor for s in load_scenario(path).steps] == ["bob", "bob", "bob", "bob", "alice"]


BAD = [
    ("typo", "steps:\n  - {at: 0, crate: {key: k, intent: x}}\n", 4,
     "unknown field 'crate'", "did you mean 'create'?"),
    ("latency", "providers:\n  p: {latency: soon, outcome: result, result: {}}\n"
     "steps:\n  - {at: 0, create: {key: k, intent: x}, save: job}\n", 4,
     '"soon" is not a number', "write a number of virtual seconds"),
    ("outcome", "providers:\n  p: {latency: 1, outcome: results}\n"
     "steps:\n  - {at: 0, create: {key: k, intent: x}}\n", 4,
     "'results' is not allowed here", "did you mean 'result'?"),
    ("reference", "steps:\n  - {at: 0, create: {key: k, intent: x}, save: job}\n"
     "  - {at: 1, read: jobb}\n", 5, "no earlier step saved a job named 'jobb'",
     "did you mean 'job'?"),
    ("missing", "steps:\n  - {at: 0, create: {intent: x}}\n", 4, "field 'key' is missing",
     "add key: click-1"),
    ("order", "steps:\n  - {at: 5, create: {key: k, intent: x}, save: job}\n"
     "  - {at: 1, read: job}\n", 5, "earlier than the step before it", "write at: 5 or more"),
    ("two_actions", "steps:\n  - {at: 0, create: {key: k, intent: x}, read: job}\n", 4,
     "this step has 2 actions (create, read)", "write exactly one of"),
    ("unknown_intent", "steps:\n  - {at: 0, create: {key: k, intent: y}}\n", 4,
     "no intent named 'y'", "define it under intents:"),
    ("no_result", "providers:\n  p: {latency: 1, outcome: result}\n"
     "steps:\n  - {at: 0, create: {key: k, intent: x}}\n", 4,
     "needs a result", "add result: {"),
    ("bad_actor", "steps:\n  - {at: 0, as: carol, create: {key: k, intent: x}}\n", 4,
     "actor 'carol' is not listed", "add it to actors:"),
    ("expect_key", "providers:\n  p: {outcome: hang}\n"
     "steps:\n  - {at: 0, create: {key: k, intent: x}, save: job}\n"
     "  - {at: 1, attempt: {job: job, provider: p, name: A}, expect: {strat: ok}}\n", 7,
     "no reply called 'strat'", "did you mean 'start'?"),
    ("group_attempt", "providers:\n  p: {outcome: hang}\n"
     "steps:\n  - {at: 0, create: {key: k, intent: x}, save: job}\n"
     "  - {at: 1, attempt: {job: job, provider: p, name: A}, concurrent: 3}\n", 7,
     "concurrent: applies to create and read", "remove concurrent:"),
]


@pytest.mark.parametrize(("name", "body", "line", "problem", "fix"), BAD,
                         ids=[b[0] for b in BAD])
def test_an_invalid_file_names_the_line_and_what_to_write(
        write_scenario: Callable[..., Path], name: str, body: str, line: int, problem: str,
        fix: str) -> None:
    text = f"name: {name}\nintents: {{x: {{contract: c, input: {{}}}}}}\n{body}" \
           "checkers: [one_job_per_intent]\n"
    path = write_scenario(name, text)
    with pytest.raises(ConfigError) as caught:
        load_scenario(path)
    error = caught.value
    assert error.file == str(path)
    assert error.line == line, error.message
    assert problem in error.message
    assert error.fix is not None and fix in error.fix


def test_the_cli_exits_2_naming_the_file_without_a_traceback(
        write_scenario: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    path = write_scenario("broken", "name: broken\nsteps: []\ncheckers: [one_job_per_intent]\n")
    assert main(["scenarios", "run", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2 (steps)" in err and "fix:" in err and "Traceback" not in err


def test_a_yaml_syntax_error_is_exit_2_with_the_line(
        write_scenario: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    path = write_scenario("syntax", "name: [unclosed\n")
    assert main(["scenarios", "run", str(path)]) == 2
    assert f"{path}:2: not valid YAML" in capsys.readouterr().err


def test_a_missing_path_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenarios", "run", str(tmp_path / "nope.yaml")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
