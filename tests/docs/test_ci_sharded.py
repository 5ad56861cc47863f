"""docs/ci.md's sharded recipes, run as a CI system would: the page holds exactly what
``failover-harness export github-workflow | gitlab-ci --shards 4`` writes; the YAML parses and
every ``failover-harness`` command line in it is one the CLI accepts; and the jobs' steps run in
bash as written — 4 shard jobs at once (certify on fake providers), their report folders passed
as artifacts (upload-artifact@v4 uploads the folder ``reports/latest`` points at), then the merge
job's very commands: one merged report with its JUnit and HTML, the merged lock gated and
committed."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import COMMANDS, build_parser, main
from harness.commands._workflows import github_workflow, gitlab_ci
from tests.contracts.test_certify_shards import four_pairings

# over a few seconds each (drills, CI recipes): marked slow, so -n hands them out first
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SHARDS = 4
STEP_TIMEOUT_S = 600  # bounds a hang only


def doc_block(heading: str) -> str:
    """The first ```yaml block after ``heading`` in docs/ci.md, as written (with its newline)."""
    text = (ROOT / "docs" / "ci.md").read_text("utf-8")
    assert heading in text, f"docs/ci.md lost its {heading!r} section"
    match = re.search(r"```yaml\n(.*?\n)```", text.split(heading, 1)[1], re.S)
    assert match, f"docs/ci.md: no ```yaml block after {heading!r}"
    return match.group(1)


GITHUB = doc_block("## Split a run over a CI matrix")
GITLAB = doc_block("### GitLab")


def test_the_page_holds_what_export_writes(capsys: pytest.CaptureFixture[str]) -> None:
    assert github_workflow(SHARDS) == GITHUB
    assert gitlab_ci(SHARDS) == GITLAB
    for what, expected in (("github-workflow", GITHUB), ("gitlab-ci", GITLAB)):
        assert main(["export", what, "--shards", str(SHARDS)]) == 0
        assert capsys.readouterr().out == expected


def _commands(script: str) -> list[list[str]]:
    """Every ``failover-harness …`` command line of a step's script (comments and ``||``
    tails off)."""
    out = []
    for line in script.replace(">-\n", "").splitlines():
        line = line.split(" #", 1)[0].strip()
        if line.startswith("failover-harness "):
            line = line.split("||", 1)[0].replace("${{ matrix.shard }}", "1")
            out.append(shlex.split(line)[1:])
    return out


def _scripts(document: dict[str, Any]) -> list[str]:
    if "jobs" in document:  # GitHub
        return [" ".join(step["run"].split("\n")) if "failover-harness" in step["run"] else ""
                for job in document["jobs"].values() for step in job["steps"] if "run" in step]
    return [line for job in document.values() if isinstance(job, dict)
            for line in job.get("script", [])]


@pytest.mark.parametrize("recipe", [GITHUB, GITLAB], ids=["github", "gitlab"])
def test_every_command_in_the_recipe_is_one_the_cli_accepts(recipe: str) -> None:
    document = yaml.safe_load(recipe)
    commands = [c for script in _scripts(document) for c in _commands(script)]
    assert {c[0] for c in commands} >= {"certify", "merge", "gate"}
    for words in commands:
        assert words[0] in COMMANDS, words
        build_parser(words[0]).parse_args(words)  # an unknown option exits 2 here


# -- running the recipes -------------------------------------------------------------------------
@dataclass
class Runner:
    """A checkout (a project of 4 fake providers, a git repository), and the environment a
    runner gives the steps."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)
    codes: dict[str, int] = field(default_factory=dict)

    def bash(self, script: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                                cwd=self.root, env={**self.env, **(env or {})}, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def run_step(self, name: str, script: str) -> int:
        proc = self.bash(script)
        output, _ = proc.communicate(timeout=STEP_TIMEOUT_S)
        assert "Traceback" not in output, output
        self.codes[name] = proc.returncode
        return proc.returncode


def checkout(root: Path, tmp: Path) -> Runner:
    """A fresh checkout: the providers file (a chain of 4, every auto link eligible), the
    contract, committed to git; ``failover-harness`` on PATH as this interpreter runs it."""
    four_pairings(root, last="manual")
    bin_dir = tmp / "bin"
    if not bin_dir.is_dir():
        bin_dir.mkdir()
        (bin_dir / "failover-harness").write_text(
            f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m harness.cli "$@"\n', "utf-8")
        (bin_dir / "failover-harness").chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin", "PYTHONPATH": str(ROOT),
           "HOME": str(tmp), "NO_COLOR": "1", "GIT_CONFIG_NOSYSTEM": "1",
           "GITHUB_STEP_SUMMARY": str(tmp / "step-summary.md")}
    runner = Runner(root, env)
    for script in ("git init -q -b main . && git add -A",
                   "git -c user.name=t -c user.email=t@localhost commit -qm checkout"):
        assert runner.run_step("git", script) == 0
    return runner


def _follow_links(source: Path, target: Path) -> None:
    """upload-artifact@v4 then download-artifact@v4: the files, a symlink as what it points at."""
    shutil.copytree(source, target, symlinks=False)


def test_the_github_workflow_runs_its_shards_and_merges_them(tmp_path: Path) -> None:
    workflow = yaml.safe_load(GITHUB)
    shard_job, merge_job = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
    matrix = shard_job["strategy"]["matrix"]["shard"]
    assert matrix == list(range(1, SHARDS + 1)) and merge_job["needs"] == "shard"
    artifacts = tmp_path / "artifacts"
    runners = {k: checkout(tmp_path / f"shard-{k}", tmp_path) for k in matrix}
    # the shard jobs, at once: each runs its steps on its own runner
    [step] = [s for s in shard_job["steps"] if "failover-harness" in s.get("run", "")
              and not s["run"].startswith("pip install")]
    procs = {k: runners[k].bash(step["run"].replace("${{ matrix.shard }}", str(k)))
             for k in matrix}
    for proc in procs.values():
        output, _ = proc.communicate(timeout=STEP_TIMEOUT_S)
        assert proc.returncode == 0, output  # every auto link eligible in every shard
    [upload] = [s for s in shard_job["steps"] if s.get("uses", "").startswith(
        "actions/upload-artifact@")]
    assert upload["if"] == "always()"
    for k in matrix:
        name = upload["with"]["name"].replace("${{ matrix.shard }}", str(k))
        _follow_links(runners[k].root / upload["with"]["path"], artifacts / name)
    # the merge job, on a fresh runner
    runner = checkout(tmp_path / "merge", tmp_path)
    failed = False
    for step in merge_job["steps"]:
        name = step.get("name") or step.get("uses") or step["run"]
        if failed and step.get("if") != "always()":
            continue
        if "uses" in step:
            _uses(runner, step, artifacts)
        elif not step["run"].startswith("pip install"):  # this venv is the runner's
            failed = runner.run_step(name, step["run"]) != 0 or failed
    assert runner.codes["Merge the shards"] == 0, runner.codes
    assert runner.codes["Gate on the merged lock"] == 0, runner.codes
    assert runner.codes["Commit the merged lock"] == 0, runner.codes
    latest = runner.root / "reports" / "latest"
    assert {p.name for p in latest.iterdir()} >= {"index.html", "results.json", "summary.md"}
    document = json.loads((latest / "results.json").read_text("utf-8"))
    assert document["command"] == "certify" and document["exit_code"] == 0
    assert [e["provider"] for e in document["events"]] == ["primary", "second", "halluc",
                                                          "ignores"]
    assert (runner.root / "reports" / "junit.xml").is_file()
    summary = Path(runner.env["GITHUB_STEP_SUMMARY"]).read_text("utf-8")
    assert "PASS" in summary
    lock = json.loads((runner.root / "providers.lock.json").read_text("utf-8"))
    assert len(lock["certifications"]) == 4 and "shard" not in lock
    show = runner.bash("git log -1 --format=%s --name-only")
    assert show.communicate(timeout=60)[0].split() == ["re-certification", "providers.lock.json"]


def _uses(runner: Runner, step: dict[str, Any], artifacts: Path) -> None:
    """What the merge job's actions do, or consume."""
    action, given = step["uses"].split("@")[0], step.get("with", {})
    if action == "actions/download-artifact":
        pattern = given["pattern"].removesuffix("*")
        for artifact in sorted(artifacts.iterdir()):  # one folder per artifact: no merge-multiple
            if artifact.name.startswith(pattern):
                shutil.copytree(artifact, runner.root / given["path"] / artifact.name)
    elif action == "actions/upload-artifact":
        assert (runner.root / given["path"] / "latest" / "index.html").is_file()
    elif action == "mikepenz/action-junit-report":
        assert (runner.root / given["report_paths"]).is_file()
    else:
        assert action in ("actions/checkout", "actions/setup-python"), action


def test_the_gitlab_pipeline_runs_its_parallel_jobs_and_merges_them(tmp_path: Path) -> None:
    pipeline = yaml.safe_load(GITLAB)
    shard_job, merge_job = pipeline["failover-shard"], pipeline["failover-merge"]
    assert merge_job["needs"] == ["failover-shard"] and shard_job["parallel"] == SHARDS
    runners = {k: checkout(tmp_path / f"shard-{k}", tmp_path) for k in range(1, SHARDS + 1)}
    script = "\n".join(line for line in shard_job["script"] if not line.startswith("pip "))
    procs = {k: runners[k].bash(script, {"CI_NODE_INDEX": str(k),
                                         "CI_NODE_TOTAL": str(SHARDS)}) for k in runners}
    for proc in procs.values():
        output, _ = proc.communicate(timeout=STEP_TIMEOUT_S)
        assert proc.returncode == 0, output
    runner = checkout(tmp_path / "merge", tmp_path)
    for shard in runners.values():  # `needs:` unpacks each job's artifacts, paths kept
        for path in shard_job["artifacts"]["paths"]:
            shutil.copytree(shard.root / path, runner.root / path, symlinks=True,
                            dirs_exist_ok=True)
    for line in merge_job["script"]:
        if not line.startswith("pip "):
            assert runner.run_step(line, line) == 0, (line, runner.codes)
    merged = runner.root / "merged"
    assert (merged / "junit.xml").is_file() and (merged / "latest" / "index.html").is_file()
    for path in merge_job["artifacts"]["paths"]:
        assert (runner.root / path).exists(), path
    lock = json.loads((runner.root / "providers.lock.json").read_text("utf-8"))
    assert len(lock["certifications"]) == 4


@pytest.mark.parametrize(("args", "said"), [
    (["--shards", "0"], "a matrix has 1 to 256 jobs"),
    (["--run", "serve"], "not a command that splits into shards"),
    (["--run", "check --shard 1/2"], "passes --shard and --report-dir itself"),
])
def test_export_refuses_a_recipe_it_cannot_write(args: list[str], said: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "github-workflow", *args]) == 2
    captured = capsys.readouterr()
    assert said in captured.err and not captured.out


def test_export_writes_the_recipe_of_another_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "github-workflow", "--shards", "3", "--run", "check"]) == 0
    workflow = yaml.safe_load(capsys.readouterr().out)
    assert workflow["jobs"]["shard"]["strategy"]["matrix"]["shard"] == [1, 2, 3]
    steps = workflow["jobs"]["merge"]["steps"]
    assert not [s for s in steps if "gate" in s.get("run", "") or "git " in s.get("run", "")]
    [shard] = [s for s in workflow["jobs"]["shard"]["steps"] if "--shard" in s.get("run", "")]
    assert shard["run"].startswith("failover-harness check --shard ${{ matrix.shard }}/3")
