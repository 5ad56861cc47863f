"""The pytest plugin, exercised through pytester in a fresh project directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGIN: tuple[str, ...] = ()  # the installed pytest11 entry point loads the plugin


def test_the_shipped_scenarios_become_items_that_pass_on_the_reference(
    scenario_project: pytest.Pytester,
) -> None:
    shipped = len(list((ROOT / "scenarios").glob("*.yaml")))
    result = scenario_project.runpytest_subprocess(*PLUGIN, "--harness-target", "sqlite", "-rs")
    result.assert_outcomes(passed=shipped - 1, skipped=1)  # triple_click needs HTTP replicas
    result.stdout.fnmatch_lines(["*not applicable on sqlite*replicas*"])


def test_a_violated_scenario_fails_with_the_promise_and_the_replay_command(
    scenario_project: pytest.Pytester,
) -> None:
    result = scenario_project.runpytest_subprocess(
        *PLUGIN, "--harness-target", "mutant:last-write-wins",
        "--harness-report-dir", str(scenario_project.path / "out"), "-k", "out_of_order",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*one_winner_per_job*", "*failover-harness replay *"
                                 "--target mutant:last-write-wins*"])
    assert list((scenario_project.path / "out" / "runs").iterdir())


def test_without_a_target_scenario_files_are_not_collected(
        scenario_project: pytest.Pytester) -> None:
    scenario_project.makepyfile(test_nothing="def test_ok():\n    pass\n")
    result = scenario_project.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(passed=1)


def test_loading_the_plugin_imports_none_of_the_engine() -> None:
    """Every pytest run in a venv with failover-harness installed loads the plugin (the entry
    point): it must not pay for the engine (stores, targets, httpx, the runner) unless used."""
    probe = ("import sys, pytest, harness.pytest_plugin; "
             "print(sorted(m for m in sys.modules if m.startswith(('harness.', 'httpx'))))")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    assert out.strip() == "['harness.pytest_plugin']", out


def test_the_fixtures_and_the_marker(scenario_project: pytest.Pytester) -> None:
    scenario_project.makepyfile(
        test_fixtures=f'''
import httpx
import pytest

SCENARIOS = {str(ROOT / "scenarios")!r}


def test_store(harness_store):
    from harness.domain import Intent
    first = harness_store.create_job("alice", "k", Intent(contract="c", input={{}}))
    again = harness_store.create_job("alice", "k", Intent(contract="c", input={{}}))
    assert first.created and not again.created and first.job.id == again.job.id


@pytest.mark.harness_target("mutant:owner-leak")
def test_runner_uses_the_marker(scenario_runner):
    result = scenario_runner(SCENARIOS + "/same_key_other_owner.yaml")
    assert result.status == "broken"
    again = scenario_runner(SCENARIOS + "/same_key_other_owner.yaml", target="sqlite")
    assert again.status == "held"


def test_fake_provider(fake_provider):
    server = fake_provider("openai-chat", "status:429")
    reply = httpx.post(server.url + "/v1/chat/completions",
                       headers={{"authorization": "Bearer sk-test"}},
                       json={{"model": "m", "messages": [{{"role": "user", "content": "hi"}}]}})
    assert reply.status_code == 429
    assert server.app.deliveries.total == 1
'''
    )
    result = scenario_project.runpytest_subprocess(*PLUGIN, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_the_markers_are_registered_with_help(scenario_project: pytest.Pytester) -> None:
    result = scenario_project.runpytest_subprocess(*PLUGIN, "--markers")
    result.stdout.fnmatch_lines(["*harness_target(url): the target scenario_runner uses*"])
