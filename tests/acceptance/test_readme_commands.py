"""Every `failover-harness` command the README shows, copy-pasted: the ones that run offline are
run here, in a copy of the shipped providers.yaml, contracts and scenarios, and must exit and
print as the README (or docs/races.md, which shows their output) says; the printed replay
commands must reproduce. A README command that is in neither table below fails the first test:
decide where it belongs."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text("utf-8")
RACES = (ROOT / "docs" / "races.md").read_text("utf-8")  # the race commands' output, in full

# runs offline here: command (as the README writes it, comment dropped) -> its exit code
OFFLINE = {
    "failover-harness scenarios run --target mutant:last-write-wins "
    "scenarios/out_of_order_completion.yaml": 1,
    "failover-harness explore --target mutant:check-then-insert --workload double-click "
    "--budget 200": 1,
    "failover-harness certify": 0,
    "failover-harness certify --adaptive": 0,
    "failover-harness certify --record": 0,
    "failover-harness certify --replay": 0,
    "failover-harness certify --adaptive --no-progress": 0,
    "failover-harness gate --providers providers.yaml": 0,
}
# needs something this test does not start, and where it is exercised instead
ELSEWHERE = {
    "failover-harness check --target http://127.0.0.1:8801": "the example service "
    "(tests/cli/test_ci_recipe.py)",
    "failover-harness check --target http://127.0.0.1:8080": "the user's service "
    "(tests/cli/test_check_target.py, tests/acceptance/test_qa_service.py)",
    "failover-harness check --project examples/ci/failover-harness.yaml": "the example "
    "service started by the CI recipe (tests/cli)",
    "failover-harness gate --providers litellm:config.yaml": "a LiteLLM config (tests/gateways)",
    "failover-harness explore --target http://127.0.0.1:8811": "Redis and the example "
    "service (tests/explore)",
    "failover-harness scenarios run scenarios/detection --trials 20": "the gap example "
    "service (tests/detection)",
    "failover-harness drill --target http://127.0.0.1:8900": "the drill's example services "
    "and fakes (tests/drill/test_examples_drills.py)",
    "failover-harness serve": "a server (tests/service)",
    "failover-harness check": "the Quick start (tests/cli/test_readme_and_check.py)",
}


def readme_commands() -> list[str]:
    """Each `failover-harness …` command line in a fenced block of the README (a continued
    line is cut at its backslash; `run: ` and comments dropped)."""
    found = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", README, re.S):
        for line in block.splitlines():
            match = re.search(r"(?:^\s*|run: |\$ )(failover-harness [^#\\]*)", line)
            if match and not line.lstrip().startswith(("replay:", "repro:")):
                found.append(" ".join(match.group(1).split()))
    return found


def documented_output(command: str) -> str:
    """docs/races.md's output block right after the block that holds ``command``."""
    after = RACES.split(command, 1)[1]
    after = after[after.index("```") + 3:]  # past the end of the command's own block
    match = re.search(r"```[a-z]*\n(.*?)```", after, re.S)
    assert match, f"no output block after {command!r}"
    return match.group(1)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(ROOT / "providers.yaml", tmp_path / "providers.yaml")
    for folder in ("contracts", "scenarios"):
        shutil.copytree(ROOT / folder, tmp_path / folder,
                        ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(command: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    argv = shlex.split(command)
    assert argv[0] == "failover-harness"
    code = main(argv[1:])
    out, err = capsys.readouterr()
    return code, out + err


def test_every_readme_command_is_run_here_or_said_where() -> None:
    commands = readme_commands()
    assert len(commands) >= 6
    for command in commands:
        known = command in OFFLINE or any(command.startswith(k) for k in ELSEWHERE)
        assert known, f"README command not covered by a test: {command!r}"


def test_the_race_reproduction_runs_as_documented_and_its_replay_reproduces(
        workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    command = next(c for c in OFFLINE if c.startswith("failover-harness scenarios run"))
    code, text = run(command, capsys)
    assert code == OFFLINE[command], text
    doc = documented_output(command)
    assert "VIOLATED" in doc and "promise broken (" in doc
    for line in doc.splitlines():
        if line.startswith("VIOLATED"):
            assert line.split("(")[0].strip() in text
        if "promise broken (" in line:
            assert line.strip().split(":")[0] in text
    replay = re.search(r"replay: (failover-harness replay .+)", text)
    assert replay, text
    code, again = run(replay.group(1), capsys)
    assert code == 1 and "history: identical to the recorded run (22 ops)" in again, again
    # "on the reference store the same replay passes and reports exactly where the history
    # diverged (op #15: won → lost)"
    on_reference = replay.group(1).replace("--target mutant:last-write-wins", "--target sqlite")
    code, reference = run(on_reference, capsys)
    assert code == 0 and "DIVERGED" in reference and "op #15" in reference, reference


def test_explore_finds_the_documented_race_and_its_repro_replays_identically(
        workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    command = next(c for c in OFFLINE if c.startswith("failover-harness explore"))
    code, text = run(command, capsys)
    assert code == OFFLINE[command], text
    violated = next(line for line in documented_output(command).splitlines()
                    if line.startswith("VIOLATED"))
    assert violated.split(" after ")[0] in text  # "VIOLATED  duplicates_get_same_job"
    replay = re.search(r"replay: (failover-harness replay \S+ --target \S+)", text)
    assert replay, text
    code, again = run(replay.group(1), capsys)
    assert code == 1 and "identical" in again and "DIVERGED" not in again, again


def test_the_certify_and_gate_lines_run_offline_as_documented(
        workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in [c for c in OFFLINE if c.startswith(("failover-harness certify",
                                                        "failover-harness gate"))]:
        code, text = run(command, capsys)
        assert code == OFFLINE[command], f"{command}\n{text}"
        if command.endswith("--record"):
            assert any((workspace / "cassettes").rglob("*.json")), text
        if command.endswith("--replay"):
            assert "replay" in text, text
    assert (workspace / "providers.lock.json").exists()
