"""Crash safety: a worker SIGKILLed mid-attempt loses nothing and unblocks nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from harness.domain import AttemptInFlight, AttemptState, JobStatus
from harness.store import open_store

CHILD = textwrap.dedent(
    """
    import sys
    from harness.domain import Intent
    from harness.store import open_store

    store = open_store(sys.argv[1])
    job = store.create_job("alice", "crash-1", Intent(contract="c", input={"n": 1})).job
    attempt = store.start_attempt("alice", job.id, "primary")
    store.dispatch("alice", attempt.id)
    # A second job whose winning claim is in flight (executed, not committed) when we die.
    other = store.create_job("alice", "crash-2", Intent(contract="c", input={"n": 2})).job
    other_attempt = store.start_attempt("alice", other.id, "primary")
    with store.transaction() as tx:
        tx.run("claim_result", job_id=other.id, attempt_id=other_attempt.id,
               read_version=other_attempt.read_version, result=store._json_in({"v": 1}),
               now=store._now())
        print(job.id, attempt.id, other.id, other_attempt.id, flush=True)
        sys.stdin.readline()  # wait here, mid-transaction, until killed
    """
)


def test_sigkill_mid_attempt_keeps_the_attempt_open_and_loses_nothing(store_url: str) -> None:
    opener = open_store(store_url)  # migrate first, so the child does only the work
    opener.close()
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, store_url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        try:
            assert child.stdout is not None
            line = child.stdout.readline()  # blocks until the child is mid-transaction
            job_id, attempt_id, other_id, other_attempt_id = line.split()
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
    assert child.returncode == -signal.SIGKILL

    store = open_store(store_url)
    try:
        job = store.get_job("alice", job_id)
        assert job.status is JobStatus.RUNNING and job.result is None
        assert store.get_attempt("alice", attempt_id).state is AttemptState.RUNNING
        with pytest.raises(AttemptInFlight) as err:
            store.start_attempt("alice", job_id, "fallback")
        assert err.value.blocking_attempt_id == attempt_id
        # The uncommitted claim vanished with the process: the job is still claimable, once.
        other = store.get_job("alice", other_id)
        assert other.result is None and other.completed_by is None and other.version == 1
        won = store.succeed("alice", other_attempt_id, {"v": 2})
        assert won.outcome is not None and won.outcome.value == "won"
        assert store.get_job("alice", other_id).result == {"v": 2}
    finally:
        store.close()
