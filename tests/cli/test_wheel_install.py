"""A real wheel, really installed: ``check`` and ``scenarios`` run outside the repository (qa Q2).

The wheel is built from this checkout by hatchling (``pip wheel --no-build-isolation``: no
download) and installed by pip into a venv that holds only the base closure (linked, as
tests/cli/test_base_install.py does), then run in an empty folder holding only providers.yaml and
contracts/. About five seconds.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.cli.test_base_install import base_venv

# its module fixtures are made once: under xdist every test of it runs on one worker
pytestmark = pytest.mark.one_worker("wheel-install")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a venv with the base closure and the wheel built from this checkout."""
    pytest.importorskip("hatchling", reason="the test extra brings hatchling (the build backend)")
    if not Path(sysconfig.get_paths()["purelib"]).is_dir():  # pragma: no cover
        pytest.skip("no site-packages to link from")
    where = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "--no-index", "-w", str(where / "dist"), str(ROOT)],
                   check=True, capture_output=True, text=True, timeout=240)
    (wheel,) = (where / "dist").glob("failover_harness-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "harness/shipped/scenarios/double_click.yaml" in names, names
    assert any(n.startswith("harness/shipped/scenarios/detection/") for n in names)
    python = base_venv(where / "venv")
    site = Path(subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True).stdout.strip())
    (site / "harness").unlink()  # base_venv links the checkout: install the wheel instead
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--target", str(site), str(wheel)], check=True, capture_output=True,
                   text=True, timeout=240)
    return python


def clean_env() -> dict[str, str]:
    """This environment without PYTHON* (a PYTHONPATH naming the checkout) and VIRTUAL_ENV."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}


def harness(python: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_env()
    return subprocess.run([python, "-m", "harness.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A user's folder: providers.yaml and contracts/, no scenarios/."""
    shutil.copy(ROOT / "providers.yaml", tmp_path / "providers.yaml")
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


@pytest.mark.slow
def test_the_installed_wheel_is_used_not_the_checkout(installed: Path, elsewhere: Path) -> None:
    done = subprocess.run([installed, "-c", "import harness; print(harness.__file__)"],
                          cwd=elsewhere, env=clean_env(), capture_output=True, text=True,
                          check=True)
    assert not done.stdout.strip().startswith(str(ROOT / "harness")), done.stdout
    assert "site-packages" in done.stdout


@pytest.mark.slow
def test_check_runs_the_shipped_scenarios(installed: Path, elsewhere: Path) -> None:
    done = harness(installed, elsewhere, "check", "--no-certify", "--quiet")
    out = done.stdout + done.stderr
    # no lock file: the gate is unknown (3); the scenarios and the matrix ran and passed
    assert done.returncode == 3, out
    assert "no such file or folder" not in out, out  # the shipped scenarios were found
    found = re.search(r"(\d+) scenarios: \d+ passed, 0 violated, 0 unknown", out)
    assert found, out
    assert int(found[1]) == len(list((ROOT / "scenarios").glob("*.yaml"))), out


@pytest.mark.slow
def test_scenarios_run_list_and_matrix_fall_back_to_the_shipped_ones(installed: Path,
                                                                     elsewhere: Path) -> None:
    listed = harness(installed, elsewhere, "scenarios", "list")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "double_click" in listed.stdout
    ran = harness(installed, elsewhere, "scenarios", "run", "--quiet")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert not (elsewhere / "scenarios").exists()
