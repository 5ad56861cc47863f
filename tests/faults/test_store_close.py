"""Closing the SQLite store while a worker thread executes on it: the statement is
interrupted, close() waits for the thread to leave it, and nothing crashes (Ctrl-C during
``certify`` closed the store in a ``finally`` under a worker thread: exit 139)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent("""
    import threading, time
    from harness.domain import StoreError
    from harness.store import open_store

    store = open_store("sqlite:///" + DB)
    running, left = threading.Event(), threading.Event()
    outcome = []

    def worker():
        conn = store.connection()
        conn.create_function("started", 0, lambda: (running.set(), 0)[1])
        try:
            with store.reads() as tx:
                tx.conn.execute(
                    "WITH RECURSIVE c(x) AS (SELECT started() UNION ALL "
                    "SELECT x + 1 FROM c WHERE x < 500000000) SELECT count(*) FROM c"
                ).fetchone()
            outcome.append("finished")
        except StoreError as exc:
            outcome.append("store error: " + exc.message)
        finally:
            left.set()

    thread = threading.Thread(target=worker)
    thread.start()
    assert running.wait(30), "the statement did not start"
    started = time.monotonic()
    store.close()
    assert left.is_set(), "close() returned while a thread was still executing on the store"
    thread.join(30)
    print(outcome[0], round(time.monotonic() - started, 2))
    try:
        with store.reads() as tx:
            pass
    except StoreError as exc:
        print("after close:", exc.message)
""")


def test_closing_under_a_running_statement_interrupts_and_waits(tmp_path: Path) -> None:
    code = f"DB = {str(tmp_path / 'h.db')!r}\n" + PROGRAM
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    first, after = done.stdout.splitlines()
    assert first.startswith("store error: SQLite error: OperationalError: interrupted"), first
    assert float(first.rsplit(" ", 1)[1]) < 10  # interrupted, not waited out
    assert after == "after close: the store is closed"
