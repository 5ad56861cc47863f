"""What CI enforces: lint, types, and every benchmark in smoke mode, before the tests."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CI = (ROOT / ".ci" / "run").read_text("utf-8")
BENCHES = sorted(p.stem for p in (ROOT / "bench").glob("*.py") if p.stem != "__init__")


def test_ci_runs_lint_types_and_every_bench_smoke_before_the_tests() -> None:
    tests_at = CI.rindex(".venv/bin/pytest")
    for gate in (".venv/bin/ruff check harness tests bench examples", ".venv/bin/mypy",
                 'for script in bench/*.py', '-m "bench.$name" --smoke', "smoke drill_recall",
                 'wait "${gate_pid[$i]}" || failed=1',
                 '[ "$failed" = 0 ] || { echo "a gate failed (above)" >&2; exit 1; }'):
        assert gate in CI and CI.index(gate) < tests_at, gate
    assert "set -euo pipefail" in CI  # a failing gate fails the run


@pytest.mark.parametrize("name", BENCHES)
def test_every_bench_script_has_a_smoke_mode(name: str) -> None:
    source = (ROOT / "bench" / f"{name}.py").read_text("utf-8")
    assert re.search(r"add_argument\(\s*\"--smoke\"", source), \
        f"bench/{name}.py needs --smoke (tiny sizes, no ratio judged)"


def test_the_store_benchmark_runs_with_a_size_that_is_not_a_multiple_of_its_rounds() -> None:
    # python -m bench.store used to die with IndexError in prepare_claims for such sizes.
    done = subprocess.run([sys.executable, "-m", "bench.store", "--n", "20", "--pg", ""],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "claim" in done.stdout
