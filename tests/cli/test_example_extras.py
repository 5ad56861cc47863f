"""An example started without its extra names the extra to install — exit 2, no traceback
(on a base-only install: tests/cli/test_base_install.py builds it from links, no download)."""

from __future__ import annotations

import os
import subprocess
import sysconfig
from pathlib import Path

import pytest

from tests.cli.test_base_install import base_venv

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def base_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not Path(sysconfig.get_paths()["purelib"]).is_dir():  # pragma: no cover
        pytest.skip("no site-packages to link from")
    return base_venv(tmp_path_factory.mktemp("base") / "venv")


@pytest.mark.parametrize(("script", "extra"), [
    ("correct_service.py", "serve"), ("gap_service.py", "serve"),
    ("redis_lock_service.py", "serve"), ("pg_claim_service.py", "serve"),
    ("drill/correct_service.py", "examples"),  # the official openai / anthropic SDKs
])
def test_an_example_without_its_extra_names_it(base_python: Path, script: str,
                                               extra: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    done = subprocess.run([base_python, str(EXAMPLES / script), "--port", "0"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"fix: pip install 'failover-harness[{extra}]'" in done.stderr, done.stderr
