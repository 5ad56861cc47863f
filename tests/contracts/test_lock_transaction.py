"""The lock file is a transaction: concurrent certifies keep both records, the mode is kept."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

import harness.campaign.certification as certification
from harness.campaign.certification import CertifySettings, run_certify
from harness.contracts.lockfile import exclusive, read_lock
from harness.domain.stream import collect
from harness.gateways.options import ProvidersSource
from tests.contracts.conftest import Project, provider

WAIT = 60  # seconds: a barrier or an event that is not reached by then is a failure


@pytest.fixture
def two_providers(project: Project) -> Project:
    project.write_providers({"first": provider("conformant"), "second": provider("conformant")})
    return project


def test_two_certify_runs_at_once_keep_both_records(two_providers, monkeypatch) -> None:
    """Both runs read the lock before either writes (a barrier holds them after reading):
    the second writer must merge into what the first wrote, not into what it read."""
    project = two_providers
    both_read = threading.Barrier(2, timeout=WAIT)
    first_read = threading.Event()
    real_certify = certification.certify

    async def certify_after_both_read(*args, **kwargs):
        first_read.set()  # this run has opened its workspace (and read the lock)
        both_read.wait()
        return await real_certify(*args, **kwargs)

    monkeypatch.setattr(certification, "certify", certify_after_both_read)
    verdicts: dict[str, str] = {}

    def run(pid: str) -> None:  # the entry point, as the command runs it (no CLI, no cwd)
        settings = CertifySettings(source=ProvidersSource(providers=project.providers_path),
                                   provider=pid)
        verdicts[pid] = collect(run_certify(settings))[1]

    first = threading.Thread(target=run, args=("first",))
    first.start()
    # The second starts once the first has read the lock (loading the contract in two threads
    # of one process at once is not what two processes do), and reads it before either writes.
    assert first_read.wait(WAIT)
    second = threading.Thread(target=run, args=("second",))
    second.start()
    for thread in (first, second):
        thread.join(WAIT)
    assert verdicts == {"first": "pass", "second": "pass"}
    assert set(read_lock(project.lock_path).records) == {
        ("first", "ticket_triage"), ("second", "ticket_triage")}
    assert project.cli("gate") == 0


def test_a_writer_waits_for_the_lock_holder(two_providers) -> None:
    project = two_providers
    assert project.cli("certify", "--provider", "first", "--no-progress") == 0
    held, released, done = threading.Event(), threading.Event(), threading.Event()

    def holder() -> None:
        with exclusive(project.lock_path):
            held.set()
            released.wait(WAIT)

    def writer() -> None:
        lock = read_lock(project.lock_path)
        lock.commit(list(lock.records.values()))
        done.set()

    t1 = threading.Thread(target=holder)
    t1.start()
    assert held.wait(WAIT)
    t2 = threading.Thread(target=writer)
    t2.start()
    assert not done.wait(0.3), "the writer did not wait for the exclusive lock"
    released.set()
    assert done.wait(WAIT)
    t1.join(WAIT)
    t2.join(WAIT)


def test_certify_keeps_the_lock_files_mode(two_providers) -> None:
    project = two_providers
    assert project.cli("certify", "--provider", "first", "--no-progress") == 0
    os.chmod(project.lock_path, 0o644)
    assert project.cli("certify", "--provider", "second", "--no-progress") == 0
    assert stat.S_IMODE(project.lock_path.stat().st_mode) == 0o644
    assert len(json.loads(project.lock_path.read_text())["certifications"]) == 2
    leftovers = [p.name for p in Path(project.root).iterdir() if p.name.startswith(".providers")]
    assert leftovers == []
