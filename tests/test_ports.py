"""tests/_servers.free_port: each test process has a block of ports of its own, held by a lock
on a file, so that two test runs on one machine at once (two checkouts, a developer's run beside
CI's) never hand out the same port: seen as EADDRINUSE when two runs' workers gw1 both took the
first block's ports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests import _servers

ROOT = Path(__file__).resolve().parents[1]
PROBE = ("from tests import _servers; print(_servers._port_block(), _servers.free_port(), "
         "flush=True); import sys; sys.stdin.read()")


def test_processes_of_two_runs_with_the_same_worker_name_get_blocks_of_their_own() -> None:
    env = {**os.environ, "PYTEST_XDIST_WORKER": "gw1"}
    mine = _servers._port_block()
    held = [subprocess.Popen([sys.executable, "-c", PROBE], cwd=ROOT, env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE) for _ in range(2)]
    try:
        seen = []
        for p in held:
            assert p.stdout is not None
            block, port = map(int, p.stdout.readline().split())
            seen.append((block, port))
        blocks = [b for b, _ in seen]
        assert len({mine, *blocks}) == 3, (mine, seen)  # all three alive at once: all apart
        for block, port in seen:
            assert _servers.PORTS_FROM + block * _servers.PORT_BLOCK <= port \
                < _servers.PORTS_FROM + (block + 1) * _servers.PORT_BLOCK
    finally:
        for p in held:
            assert p.stdin is not None
            p.stdin.close()
            p.wait(timeout=60)
            if p.stdout is not None:
                p.stdout.close()
    again = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, text=True,
                           input="", capture_output=True, timeout=60)
    assert int(again.stdout.split()[0]) in blocks  # theirs were released when they ended
