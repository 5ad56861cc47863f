"""``explore`` on a base install (``pip install failover-harness``, no extras).

Hypothesis is the ``explore`` extra. Only ``--choices hypothesis`` needs it (exit 2 naming the
extra, before anything runs); the seeded, PCT and exhaustive searches, ``--stress``,
``--through`` and the shrinker work without it: the shrinker skips its Hypothesis pass and says
so, the repro is written and replays, exit 1. The interpreter is a real venv holding only the base
closure (tests/cli/test_base_install.py builds it from links, no download).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.cli.test_base_install import base_venv
from tests.explore.test_through import SETTLE_MS

# its module fixtures are made once: under xdist every test of it runs on one worker
pytestmark = pytest.mark.one_worker("explore-base-install")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
README_COMMAND = ["explore", "--target", "mutant:check-then-insert", "--workload",
                  "double-click", "--budget", "200"]
SKIPPED = "interleaving pass skipped: it needs Hypothesis"


@pytest.fixture(scope="module")
def base_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not Path(sysconfig.get_paths()["purelib"]).is_dir():  # pragma: no cover
        pytest.skip("no site-packages to link from")
    python = base_venv(tmp_path_factory.mktemp("base") / "venv")
    probe = subprocess.run([python, "-c", "import hypothesis"], capture_output=True, text=True)
    assert probe.returncode != 0, "hypothesis is visible in the base-only venv"
    return python


def harness(python: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return subprocess.run([python, "-m", "harness.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)


def repro_of(out: str) -> str:
    match = re.search(r"^(?:repro|history and explanation): (\S+)", out, re.MULTILINE)
    assert match, out
    return match.group(1)


@pytest.mark.slow
def test_the_readme_command_finds_shrinks_writes_the_repro_and_exits_1(
        base_python: Path, tmp_path: Path) -> None:
    done = harness(base_python, tmp_path, *README_COMMAND, "--seed", "7")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "needs the 'explore' extra" not in done.stderr
    assert "VIOLATED  duplicates_get_same_job" in done.stdout
    assert f"interleaving: {SKIPPED}" in done.stdout  # said, not silently dropped
    assert "preemptions:" in done.stdout  # the passes that need no Hypothesis still ran
    folder = tmp_path / repro_of(done.stdout)
    assert (folder / "explanation.txt").is_file() and (folder / "history.jsonl").is_file()
    assert "replayed once: identical" in done.stdout
    again = harness(base_python, tmp_path, "replay", str(folder), "--target",
                    "mutant:check-then-insert")
    assert again.returncode == 1, again.stdout + again.stderr
    assert "identical to the recorded run" in again.stdout


@pytest.mark.slow
@pytest.mark.parametrize("choice", [["--choices", "pct"], ["--choices", "exhaustive"],
                                    ["--stress"]])
def test_every_other_search_runs_without_the_extra(base_python: Path, tmp_path: Path,
                                                   choice: list[str]) -> None:
    done = harness(base_python, tmp_path, *README_COMMAND, "--seed", "3", *choice)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "extra" not in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / repro_of(done.stdout)).is_dir()


@pytest.mark.slow
def test_choices_hypothesis_names_the_extra_before_anything_runs(base_python: Path,
                                                                 tmp_path: Path) -> None:
    done = harness(base_python, tmp_path, *README_COMMAND, "--choices", "hypothesis")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "explore --choices hypothesis" in done.stderr
    assert "pip install 'failover-harness[explore]'" in done.stderr
    assert "Traceback" not in done.stderr and "explore: seed" not in done.stdout
    assert not (tmp_path / "reports").exists()


@pytest.mark.slow
def test_through_a_service_runs_without_the_extra(base_python: Path, tmp_path: Path,
                                                  redis_url: str) -> None:
    with __import__("socket").socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    service = (f"{sys.executable} {EXAMPLES / 'redis_lock_service.py'} --port {port} "
               f"--db {tmp_path / 'jobs.db'} --redis {{proxy}}")
    done = harness(base_python, tmp_path, "explore", "--target", f"http://127.0.0.1:{port}",
                   "--target-profile", str(EXAMPLES / "redis-lock.profile.yaml"),
                   "--through", redis_url, "--service-cmd", service, "--workload",
                   "double-click", "--choices", "pct", "--seed", "7", "--budget", "200",
                   # each step controlled: with the default 100 ms a loaded machine's service can
                   # outlast a settle, and a replay of that uncontrolled order may diverge
                   "--settle-ms", SETTLE_MS)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"interleaving: {SKIPPED}" in done.stdout
    assert "replayed once: identical" in done.stdout
    folder = tmp_path / repro_of(done.stdout)
    assert (folder / "schedule.jsonl").is_file()
    meta = json.loads((folder / "results.json").read_text(encoding="utf-8"))["meta"]
    assert meta["settles_expired"] == 0, meta
