"""Ctrl-C and SIGTERM during ``certify``: exit 130 / 143, the lock intact, nothing torn, and
no crash (the SQLite store was closed under a worker thread: exit 139, 12 runs in 30)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.providers.fake import FakeProvider
from harness.providers.fake_server import FakeServer
from tests.contracts.conftest import Project, provider

# its module fixtures are made once: under xdist every test of it runs on one worker
pytestmark = pytest.mark.one_worker("signals")

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 60.0
DELAY_S = 0.5  # each answer of the fake provider takes this long: the run lasts ~20 s
# (signal, seconds after the first call reached the provider): before any answer, as answers
# arrive (the runner is then writing to its store in worker threads), and in between.
MOMENTS = [(signal.SIGINT, 0.0), (signal.SIGTERM, 0.05), (signal.SIGINT, 0.5),
           (signal.SIGINT, 0.52), (signal.SIGTERM, 0.55), (signal.SIGINT, 1.03)]


@pytest.fixture(scope="module")
def slow_provider() -> Iterator[FakeServer]:
    app = FakeProvider("openai-chat", f"slow:{int(DELAY_S * 1000)}")
    with FakeServer(app) as server:
        yield server


@pytest.fixture(scope="module")
def certified(tmp_path_factory: pytest.TempPathFactory, slow_provider: FakeServer) -> Project:
    """A project whose lock holds records; its providers then become a real, slow HTTP fake."""
    project = Project(tmp_path_factory.mktemp("signals"))
    ids = ("primary", "second", "third")
    project.write_providers({pid: provider("conformant") for pid in ids})
    assert project.cli("certify", "--no-progress", "--report-dir",
                       str(project.root / "first-reports")) == 0
    project.write_providers({pid: provider("conformant", base_url=f"{slow_provider.url}/v1",
                                           api_key_env="FAKE_PROVIDER_KEY") for pid in ids})
    return project


def _wait_for_a_call(server: FakeServer, proc: subprocess.Popen[bytes]) -> None:
    """Until the first call reaches the provider (polled: the moment itself is under test)."""
    seen = len(server.app.deliveries.records())
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if len(server.app.deliveries.records()) > seen:
            return
        if proc.poll() is not None:
            raise AssertionError(f"certify ended early: {proc.returncode}")
        time.sleep(0.002)
    raise AssertionError("no call reached the provider within the deadline")


@pytest.mark.parametrize(("signum", "after_s"), MOMENTS,
                         ids=[f"{signal.Signals(s).name}-{a}s" for s, a in MOMENTS])
def test_a_signal_during_certify_exits_cleanly_with_the_lock_intact(
    certified: Project, slow_provider: FakeServer, tmp_path: Path, signum: int, after_s: float
) -> None:
    lock_before = certified.lock_path.read_bytes()
    reports = tmp_path / "reports"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path),
           "FAKE_PROVIDER_KEY": "sk-fake-signals-0000"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "certify", "--providers",
         str(certified.providers_path), "--no-progress", "--concurrency", "4",
         "--report-dir", str(reports)],
        cwd=certified.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        _wait_for_a_call(slow_provider, proc)
        time.sleep(after_s)  # the moment of the signal, not a synchronisation
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = (out + err).decode("utf-8", "replace")
    assert proc.returncode == (130 if signum == signal.SIGINT else 143), text
    assert "Traceback" not in text and "internal error" not in text, text
    assert certified.lock_path.read_bytes() == lock_before
    assert [p.name for p in certified.root.iterdir() if p.name.startswith(".providers")] == []
    assert list(tmp_path.glob("harness-certify-*")) == [], "the run's temporary store was left"
    assert not reports.exists() or not any(reports.iterdir())
