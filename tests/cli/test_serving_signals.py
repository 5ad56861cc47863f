"""The serving commands (``serve``, ``fake-provider``) stop on Ctrl-C or SIGTERM through
uvicorn: it shuts down gracefully, then raises the signal once more. That second signal must
unwind the command (exit 0), not reach the CLI's handler, whose hard exit with 130/143 — for a
run stuck in its work — fired one second later and cut short a clean stop that took longer
on a loaded machine."""

from __future__ import annotations

import signal

import pytest

from harness import cli
from harness.commands._serving import STOP_SIGNALS, stopped_by_uvicorn


@pytest.mark.parametrize("signum", STOP_SIGNALS)
def test_the_signal_uvicorn_raises_again_unwinds_without_the_hard_exit(signum: int) -> None:
    with cli._signals(hard_exit=False):  # the CLI's handlers, as around every command
        the_cli_s = signal.getsignal(signum)
        with pytest.raises(KeyboardInterrupt), stopped_by_uvicorn():
            signal.raise_signal(signum)  # what uvicorn does once it has shut down
        assert cli._signalled == []  # the CLI's handler never ran: no hard exit was armed
        assert signal.getsignal(signum) is the_cli_s  # put back for the rest of the command
