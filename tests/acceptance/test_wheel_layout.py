"""After `pip install failover-harness` (a wheel, no repository), `check` in an empty folder with
only providers.yaml and contracts/ runs the shipped scenarios (qa Q2: it used to exit 2 with
"site-packages/scenarios: no such file or folder").

The wheel's layout is rebuilt from pyproject.toml itself — the `harness` package plus every
`force-include` entry at its target — in a folder of its own, and a fresh interpreter that sees
only that folder (and the test environment's third-party packages) runs `check` in an empty
working directory."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def wheel_layout(site: Path) -> None:
    """What hatchling puts in the wheel: ``packages`` and ``force-include`` (source → target)."""
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))[
        "tool"]["hatch"]["build"]["targets"]["wheel"]
    for package in wheel["packages"]:
        shutil.copytree(ROOT / package, site / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    for source, target in wheel.get("force-include", {}).items():
        shutil.copytree(ROOT / source, site / target)


def test_the_wheel_ships_the_scenarios_and_check_runs_them_outside_the_repository(
        tmp_path: Path) -> None:
    site, work = tmp_path / "site", tmp_path / "work"
    site.mkdir()
    work.mkdir()
    wheel_layout(site)
    assert any((site / "harness" / "shipped" / "scenarios").glob("*.yaml"))
    shutil.copy(ROOT / "providers.yaml", work / "providers.yaml")
    shutil.copytree(ROOT / "contracts", work / "contracts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    # -P: the working directory is not put on sys.path; -c imports harness from `site` only
    code = ("import harness, sys; assert harness.__file__.startswith(sys.argv[1]), "
            "harness.__file__; from harness.cli import main; "
            "sys.exit(main(['check', '--no-certify', '--quiet']))")
    done = subprocess.run([sys.executable, "-P", "-c", code, str(site)], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    # no lock file: the gate is unknown (3); the scenarios and the matrix ran and passed
    assert done.returncode == 3, out
    assert "site-packages/scenarios" not in out and "no such file or folder" not in out, out
    assert re.search(r"\d+ scenarios: \d+ passed, 0 violated, 0 unknown", out), out
