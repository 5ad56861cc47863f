"""The CI recipe for a service (examples/ci/failover-check.yml), run step by step as a runner would:
each ``run:`` step in bash with ``-eo pipefail`` (a step after a failure runs only when it says
``if: always()``), and the ``uses:`` steps checked for what they consume: the report folder
uploaded, junit.xml published (valid against the JUnit XSD). Against the correct example service
the check step exits 0; with the gap example started instead it exits 1 naming the flaws, and
the report is still uploaded and the service still stopped."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.reports.schema import validate_results
from tests._servers import free_port

# over a few seconds each (drills, CI recipes): marked slow, so -n hands them out first
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "ci" / "failover-check.yml"
XSD = ROOT / "tests" / "reports" / "junit.xsd"
STEP_TIMEOUT_S = 600


@dataclass
class Runner:
    """A workspace laid out like a checkout, and the environment a runner gives the steps."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)
    codes: dict[str, int] = field(default_factory=dict)

    @property
    def temp(self) -> Path:
        return self.root.parent / "runner-temp"

    def run_step(self, name: str, script: str) -> int:
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                              cwd=self.root, env=self.env, timeout=STEP_TIMEOUT_S, check=False)
        self.codes[name] = done.returncode
        return done.returncode

    def stop_leftovers(self) -> None:
        """Kill the service by its pid if the stop step did not run or failed."""
        pid_file = self.temp / "service.pid"
        if pid_file.is_file():
            pid = int(pid_file.read_text().strip())
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                return


@pytest.fixture
def runner(tmp_path: Path) -> Iterator[Runner]:
    root = tmp_path / "checkout"
    root.mkdir()
    for name in ("examples", "scenarios"):  # what the checkout holds, read-only
        (root / name).symlink_to(ROOT / name)
    bin_dir = Path(sys.executable).parent  # this venv: failover-harness, starlette, uvicorn
    job = yaml.safe_load(WORKFLOW.read_text("utf-8"))["jobs"]["failover-check"]
    env = {**os.environ, **{k: str(v) for k, v in job.get("env", {}).items()},
           "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "RUNNER_TEMP": str(tmp_path / "runner-temp"),
           "GITHUB_STEP_SUMMARY": str(tmp_path / "step-summary.md"),
           "SERVICE_PORT": str(free_port()), "NO_COLOR": "1"}
    (tmp_path / "runner-temp").mkdir()
    found = Runner(root, env)
    yield found
    found.stop_leftovers()


def run_workflow(runner: Runner, *, service: str | None = None) -> list[dict[str, Any]]:
    """Every step of the job, in order; ``service`` replaces the example service started."""
    steps = yaml.safe_load(WORKFLOW.read_text("utf-8"))["jobs"]["failover-check"]["steps"]
    failed = False
    for step in steps:
        name = step.get("name") or step.get("uses", "")
        if failed and step.get("if") != "always()":
            continue
        if "uses" in step:
            uses(runner, step)
            continue
        script = step["run"]
        if script.startswith("pip install"):  # installed already: this venv is the runner's
            assert "failover-harness" in script
            continue
        if service is not None:
            script = script.replace("examples/correct_service.py", service)
        failed = runner.run_step(name, script) != 0 or failed
    return steps


def uses(runner: Runner, step: dict[str, Any]) -> None:
    action = step["uses"].split("@")[0]
    given = step.get("with", {})
    if action == "actions/upload-artifact":
        folder = runner.root / given["path"]
        latest = folder / "latest"
        assert {p.name for p in latest.iterdir()} >= {
            "index.html", "junit.xml", "results.json", "summary.md"}
        validate_results(json.loads((latest / "results.json").read_text("utf-8")))
    elif action == "mikepenz/action-junit-report":
        xmlschema = pytest.importorskip("xmlschema")
        xmlschema.XMLSchema(str(XSD)).validate(
            (runner.root / given["report_paths"]).read_text("utf-8"))
    else:
        assert action in ("actions/checkout", "actions/setup-python"), action


def _service_stopped(runner: Runner, within_s: float = 30.0) -> bool:
    """The service the start step launched has exited (waited for on a pidfd, not slept)."""
    pid = int((runner.temp / "service.pid").read_text().strip())
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([fd], [], [], within_s)
        return bool(ready)
    finally:
        os.close(fd)


def test_the_recipe_passes_on_the_correct_service(runner: Runner) -> None:
    run_workflow(runner)
    assert runner.codes["failover-harness check"] == 0, runner.codes
    assert runner.codes["Stop the service"] == 0
    summary = Path(runner.env["GITHUB_STEP_SUMMARY"]).read_text("utf-8")
    assert summary.startswith("## failover-harness check: ✅ PASS")
    junit = ET.parse(runner.root / "reports" / "junit.xml").getroot()
    assert junit.get("failures") == "0" and int(junit.get("tests", "0")) >= 10


def test_the_recipe_fails_on_the_gap_service_and_still_keeps_the_evidence(
        runner: Runner) -> None:
    run_workflow(runner, service="examples/gap_service.py --flaws store-gap,raw-body-key "
                                 "--store-ms 60")
    assert runner.codes["failover-harness check"] == 1, runner.codes
    assert runner.codes["Summary"] == 0 and runner.codes["Stop the service"] == 0
    summary = Path(runner.env["GITHUB_STEP_SUMMARY"]).read_text("utf-8")
    assert "❌ FAIL" in summary and "failover-harness replay" in summary
    junit = (runner.root / "reports" / "junit.xml").read_text("utf-8")
    assert "the handler ran again for a duplicate (a second side effect)" in junit
    assert "a new job for the same intent sent again" in junit
    assert _service_stopped(runner)
